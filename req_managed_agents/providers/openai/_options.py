"""What an OpenAI Agents session may be opened with: the connect options the drivers pass on
(see :class:`~req_managed_agents.providers.OpenAIAgents`), typed once, so that a type checker
flags a misspelt one and the provider refuses one it does not know."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

__all__ = ["OPTIONS", "SESSION_OPTIONS", "OpenAIOptions"]


class OpenAIOptions(TypedDict, total=False):
    """Connect options of an OpenAI Agents session."""

    agent_id: str
    agent: Any  # a provisioned handle, or a mapping of session overrides of the agent
    environment: str | Mapping[str, Any]
    session_id: str
    idle_timeout: float
    session_metadata: Mapping[str, str]
    spend_control: int | Mapping[str, Any]
    vault_ids: Sequence[str]
    review: str
    prompt_cache_options: Mapping[str, Any]


# Options that shape a new session, passed to create_session under these names.
SESSION_OPTIONS = {
    "session_metadata": "metadata",
    "spend_control": "spend_control",
    "vault_ids": "vault_ids",
    "review": "review",
    "prompt_cache_options": "prompt_cache_options",
}
OPTIONS = frozenset(OpenAIOptions.__annotations__)
