"""What an AgentCore runtime session may be opened with: the connect options the drivers pass
on (see :class:`~req_managed_agents.providers.BedrockAgentCore`), typed once, so that a type
checker flags a misspelt one and the provider refuses one it does not know."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict

__all__ = ["OPTIONS", "AgentCoreOptions"]


class AgentCoreOptions(TypedDict, total=False):
    """Connect options of a Bedrock AgentCore runtime session."""

    harness_arn: str
    harness: Any  # a provisioned harness handle, or an ARN
    runtime_session_id: str
    timeout_seconds: int
    max_iterations: int
    max_tokens: int
    idle_timeout: float
    system_prompt: str | Sequence[Mapping[str, Any]]
    model: str | Mapping[str, Any]
    tools: Any  # a Tools registry, neutral declarations or AgentCore tool objects
    harness_tools: bool  # False: send only the local tools, not the harness's deployed ones
    allowed_tools: Sequence[str]
    actor_id: str
    runtime_user_id: str
    qualifier: str
    invoke_retries: int


OPTIONS = frozenset(AgentCoreOptions.__annotations__)
