"""The five runtimes' emulators as tests drive them: how each starts from a script, what a
run connects with, and its scripted turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from req_managed_agents.providers.agentcore import new_runtime_session_id
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    ConverseTurn,
    GeminiEmulator,
    GeminiTurn,
    OpenAIAgentsEmulator,
    OpenAITurn,
    Turn,
)

REGION = "us-west-2"
SANDBOX = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:sandbox/mcp-0123456789"


@dataclass(frozen=True)
class Runtime:
    """One runtime's emulator, as a test starts and connects to it."""

    name: str
    start: Callable[[list[Any]], Any]
    connect: Callable[[Any], dict[str, Any]]
    turn: Callable[..., Any]


RUNTIMES = [
    Runtime(
        "claude",
        ClaudeEmulator,
        lambda e: {"agent_id": e.add_agent(), "environment_id": e.add_environment()},
        Turn,
    ),
    Runtime(
        "claude-bedrock",
        lambda script: ClaudeEmulator(script, flavor="bedrock", region=REGION),
        lambda e: {"agent_id": e.add_agent(), "environment_id": SANDBOX},
        Turn,
    ),
    Runtime("openai", OpenAIAgentsEmulator, lambda e: {"agent_id": e.add_agent()}, OpenAITurn),
    Runtime(
        "agentcore",
        AgentCoreEmulator,
        lambda e: {"harness_arn": e.add_harness(), "runtime_session_id": new_runtime_session_id()},
        ConverseTurn,
    ),
    Runtime("gemini", GeminiEmulator, lambda e: {"agent": e.add_agent()}, GeminiTurn),
]
BY_NAME = {runtime.name: runtime for runtime in RUNTIMES}
