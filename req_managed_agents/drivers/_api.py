"""``run_to_completion``: to :class:`~req_managed_agents.Session` what ``requests.get`` is to
``requests.Session`` - open one, run once, close it.

Its overloads type the options per provider, so that a type checker flags a misspelt one:
the drivers' own (:class:`~req_managed_agents.drivers.SessionOptions`) plus the provider's connect
options. A provider of your own takes its options as ``connect={...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, overload

from req_managed_agents.drivers._options import SessionOptions
from req_managed_agents.drivers._session import Session
from req_managed_agents.model._vocabulary import SessionResult
from req_managed_agents.providers._base import Provider
from req_managed_agents.tools._handler import Handler

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from req_managed_agents.drivers._options import AgentCoreSessionOptions as _AgentCore
    from req_managed_agents.drivers._options import ClaudeBedrockSessionOptions as _Bedrock
    from req_managed_agents.drivers._options import ClaudeSessionOptions as _Claude
    from req_managed_agents.drivers._options import GeminiSessionOptions as _Gemini
    from req_managed_agents.drivers._options import OpenAISessionOptions as _OpenAI
    from req_managed_agents.providers.agentcore._provider import BedrockAgentCore
    from req_managed_agents.providers.claude._bedrock import ClaudeManagedAgentsBedrock
    from req_managed_agents.providers.claude._provider import ClaudeManagedAgents
    from req_managed_agents.providers.gemini._provider import GeminiManagedAgents
    from req_managed_agents.providers.openai._provider import OpenAIAgents

__all__ = ["run_to_completion"]


@overload
def run_to_completion(
    provider: ClaudeManagedAgentsBedrock,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    **options: Unpack[_Bedrock],
) -> SessionResult: ...
@overload
def run_to_completion(
    provider: ClaudeManagedAgents,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    **options: Unpack[_Claude],
) -> SessionResult: ...
@overload
def run_to_completion(
    provider: BedrockAgentCore,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    **options: Unpack[_AgentCore],
) -> SessionResult: ...
@overload
def run_to_completion(
    provider: OpenAIAgents,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    **options: Unpack[_OpenAI],
) -> SessionResult: ...
@overload
def run_to_completion(
    provider: GeminiManagedAgents,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    **options: Unpack[_Gemini],
) -> SessionResult: ...
@overload
def run_to_completion(
    provider: Provider,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    connect: Mapping[str, Any] | None = None,
    **options: Unpack[SessionOptions],
) -> SessionResult: ...
def run_to_completion(
    provider: Provider,
    prompt: str | None = None,
    *,
    handler: Handler,
    timeout: float | None = None,
    connect: Mapping[str, Any] | None = None,
    **options: Any,
) -> SessionResult:
    """Open a session, run ``prompt`` until the agent is done, close the session.

    Blocking; the tools of one turn run concurrently; ``on_text`` sees the agent's text as it
    is written. Options other than the drivers' own (``max_turns``, ``tool_timeout``,
    ``confirm``, ... see :class:`~req_managed_agents.drivers.SessionOptions`) are the provider's:
    Claude takes ``agent_id``/``agent=``, ``environment_id``/``environment=`` or
    ``session_id`` (resume); AgentCore takes ``harness_arn``/``harness=``,
    ``runtime_session_id`` and its per-invocation limits; OpenAI takes ``agent_id``/``agent=``,
    ``environment`` or ``session_id``; Gemini takes ``agent=`` or ``interaction_id``. What
    stops a run is described on :class:`~req_managed_agents.Session`.
    """
    with Session(provider, handler=handler, connect=connect, **options) as session:
        return session.run(prompt, timeout=timeout)
