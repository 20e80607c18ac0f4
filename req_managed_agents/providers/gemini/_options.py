"""What a Gemini conversation may be opened with: the connect options the drivers pass on
(see :class:`~req_managed_agents.providers.GeminiManagedAgents`), typed once, so that a type
checker flags a misspelt one and the provider refuses one it does not know."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from typing_extensions import TypedDict

__all__ = ["CREATE_OPTIONS", "OPTIONS", "SESSION_OPTIONS", "GeminiOptions"]


class GeminiOptions(TypedDict, total=False):
    """Connect options of a Gemini conversation."""

    agent: Any  # an agent id, or a provisioned handle
    agent_config: Mapping[str, Any]
    environment: str | Mapping[str, Any]
    tools: Sequence[Mapping[str, Any]]
    system_instruction: str
    labels: Mapping[str, str]
    service_tier: str
    store: bool
    webhook_config: Mapping[str, Any]
    interaction_id: str
    idle_timeout: float
    max_continuations: int


# Options sent on every create of the chain, under the same names.
CREATE_OPTIONS = (
    "agent_config",
    "environment",
    "system_instruction",
    "service_tier",
    "store",
    "webhook_config",
)
OPTIONS = frozenset(GeminiOptions.__annotations__)
# Options that shape a new conversation (option -> the create's field).
SESSION_OPTIONS = MappingProxyType(
    {option: option for option in (*CREATE_OPTIONS, "labels", "tools")}
)
