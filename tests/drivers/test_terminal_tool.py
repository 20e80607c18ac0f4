"""Terminal-tool enforcement: a run that must end by calling one tool (structured output)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ConfigurationError, Session, Tools, run_to_completion
from req_managed_agents.drivers._loop import REPROMPT
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator, ConverseTurn, Turn, call


def submit_tools() -> Tools:
    tools = Tools()

    @tools.tool
    def submit(answer: str, confidence: float) -> str:
        """Hand in the final answer."""
        return "received"

    return tools


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        yield emulator


def run_claude(emulator: ClaudeEmulator, script: list[Turn], **options: Any) -> Any:
    with emulator.provider() as provider:
        return run_to_completion(
            provider,
            "Answer, then submit.",
            handler=submit_tools(),
            terminal_tool="submit",
            timeout=20,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
            **options,
        )


def user_messages(emulator: ClaudeEmulator, session_id: str) -> list[str]:
    return [
        event["content"][0]["text"]
        for event in emulator.events(session_id)
        if event["type"] == "user.message"
    ]


def test_the_terminal_tools_input_is_on_the_result(emulator: ClaudeEmulator) -> None:
    script = [Turn(tool_calls=[call("submit", answer="42", confidence=0.9)]), Turn(text="Done.")]
    result = run_claude(emulator, script)
    assert (result.terminal, result.text) == ("end_turn", "Done.")
    assert result.terminal_tool_input == {"answer": "42", "confidence": 0.9}


def test_an_end_turn_without_the_call_is_reprompted_until_it_comes(
    emulator: ClaudeEmulator,
) -> None:
    script = [
        Turn(text="The answer is 42."),
        Turn(tool_calls=[call("submit", answer="42", confidence=1.0)]),
        Turn(text="Submitted."),
    ]
    result = run_claude(emulator, script)
    assert result.terminal == "end_turn"
    assert result.terminal_tool_input == {"answer": "42", "confidence": 1.0}
    prompts = user_messages(emulator, str(result.session_id))
    assert prompts == ["Answer, then submit.", REPROMPT.format(tool="submit")]
    assert result.turns == 3


def test_when_reprompts_run_out_the_run_is_terminated(emulator: ClaudeEmulator) -> None:
    result = run_claude(emulator, ["one", "two", "three", "four"], max_reprompts=2)
    assert result.terminal == "terminated"
    assert result.stop_reason == {"type": "no_terminal_tool", "terminal_tool": "submit"}
    assert result.terminal_tool_input is None
    assert len(user_messages(emulator, str(result.session_id))) == 3  # the prompt + 2 reprompts


def test_reprompt_turns_count_toward_max_turns(emulator: ClaudeEmulator) -> None:
    result = run_claude(emulator, ["one", "two", "three"], max_turns=2, max_reprompts=5)
    assert result.stop_reason == {"type": "max_turns_reached", "max_turns": 2}


def test_the_terminal_tool_works_the_same_on_agentcore() -> None:
    pytest.importorskip("botocore")
    script = [
        ConverseTurn(text="The answer is 42."),
        ConverseTurn(tool_calls=[call("submit", answer="42", confidence=0.5)]),
        ConverseTurn(text="Submitted."),
    ]
    with AgentCoreEmulator(script) as emulator, emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "Answer, then submit.",
            handler=submit_tools(),
            terminal_tool="submit",
            harness_arn=emulator.add_harness(name=f"h{uuid.uuid4().hex[:10]}"),
            timeout=20,
        )
    assert result.terminal == "end_turn"
    assert result.terminal_tool_input == {"answer": "42", "confidence": 0.5}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"terminal_tool": "missing"}, "not one of the handler's tools"),
        ({"terminal_tool": ""}, "must be a tool name"),
        ({"terminal_tool": "submit", "max_reprompts": -1}, "max_reprompts"),
    ],
)
def test_bad_terminal_tool_options_are_refused_up_front(
    emulator: ClaudeEmulator, options: dict[str, Any], message: str
) -> None:
    with emulator.provider() as provider, pytest.raises(ConfigurationError, match=message):
        Session(provider, handler=submit_tools(), agent_id="a", environment_id="e", **options)
