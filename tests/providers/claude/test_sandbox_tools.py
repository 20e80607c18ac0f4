"""A self-hosted environment's sandbox is this machine: the built-in tool calls the idle
waits on (``agent.tool_use``) are run here by the handler, like custom tools, and answered
with ``user.tool_result``; the built-in calls the service runs itself stay observed only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ToolContext, Tools, run_to_completion
from req_managed_agents.testing import ClaudeEmulator, Turn, call

SELF_HOSTED = {"type": "self_hosted"}


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    script = [
        Turn(
            text="Looking.",
            server_tool_calls=[call("bash", command="echo hi")],
            tool_calls=[call("note", text="seen")],
        ),
        Turn(text=lambda results: " | ".join(results)),
    ]
    with ClaudeEmulator(script) as emulator:
        yield emulator


def sandbox_tools(ran: list[tuple[str, Any]]) -> Tools:
    tools = Tools()

    @tools.tool
    def bash(command: str, context: ToolContext) -> str:
        """Run a command (stands in for the sandbox)."""
        ran.append(("bash", command))
        return f"ran {command}"

    @tools.tool
    def note(text: str) -> str:
        """Take a note."""
        ran.append(("note", text))
        return f"noted {text}"

    return tools


def test_a_built_in_call_the_idle_waits_on_runs_here_and_is_answered_with_a_tool_result(
    emulator: ClaudeEmulator,
) -> None:
    ran: list[tuple[str, Any]] = []
    environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "Look around.",
            handler=sandbox_tools(ran),
            agent_id=emulator.add_agent(),
            environment_id=environment_id,
            timeout=10,
        )
    assert sorted(ran) == [("bash", "echo hi"), ("note", "seen")]
    assert result.text == "ran echo hi | noted seen"
    events = emulator.events(str(result.session_id))
    answers = [e for e in events if e["type"] == "user.tool_result"]
    assert len(answers) == 1
    assert answers[0]["content"] == [{"type": "text", "text": "ran echo hi"}]
    assert [e["type"] for e in events].count("user.custom_tool_result") == 1
    assert {use.name for use in result.tool_uses} == {"bash", "note"}


def test_outside_a_self_hosted_environment_the_service_runs_its_built_in_tools(
    emulator: ClaudeEmulator,
) -> None:
    ran: list[tuple[str, Any]] = []
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "Look around.",
            handler=sandbox_tools(ran),
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=10,
        )
    assert ran == [("note", "seen")]
    events = emulator.events(str(result.session_id))
    assert not [e for e in events if e["type"] == "user.tool_result"]
    assert any(e["type"] == "agent.tool_result" for e in events)
