"""What a Claude session may be opened with: the connect options the drivers pass on (see
:class:`~req_managed_agents.providers.ClaudeManagedAgents`), typed once, so that a type
checker flags a misspelt one and the provider refuses one it does not know."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

__all__ = ["OPTIONS", "SESSION_OPTIONS", "ClaudeOptions"]


class ClaudeOptions(TypedDict, total=False):
    """Connect options of a Claude Managed Agents session."""

    agent_id: str
    agent: Any  # a provisioned handle, an agent reference mapping, or an id
    agent_version: int
    environment_id: str
    environment: Any  # a provisioned environment handle, or an id
    session_id: str
    idle_timeout: float
    vault_ids: Sequence[str]
    resources: Sequence[Mapping[str, Any]]
    session_metadata: Mapping[str, str]
    title: str
    budget: Mapping[str, Any]
    initial_events: Sequence[Mapping[str, Any]]


# Options that shape a new session, passed to create_session under these names.
SESSION_OPTIONS = {
    "vault_ids": "vault_ids",
    "resources": "resources",
    "session_metadata": "metadata",
    "title": "title",
    "budget": "budget",
    "initial_events": "initial_events",
}
OPTIONS = frozenset(ClaudeOptions.__annotations__)
