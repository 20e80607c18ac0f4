"""One retry budget per input: the HTTP client's retries, the deliveries' resends and the
re-posts of a result that overtook its call draw from one count, so a failing server never
sees one input more than ``INPUT_SENDS`` times, however the layers' policies add up."""

from __future__ import annotations

from typing import Any

import pytest

from req_managed_agents import ManagedAgentsError, Tools, run_to_completion
from req_managed_agents.providers._delivery import INPUT_SENDS
from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator, OpenAITurn, Turn, call

CLAUDE_SENDS = OPENAI_SENDS = INPUT_SENDS


def adding() -> Tools:
    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return tools


def carries(kind: str) -> Any:
    def where(request: Any) -> bool:
        events = request.body.get("events") if isinstance(request.body, dict) else None
        return bool(events) and events[0].get("type") == kind

    return where


def posts(emulator: Any, kind: str) -> int:
    where = carries(kind)
    return sum(1 for r in emulator.requests if r.method == "POST" and where(r))


@pytest.mark.parametrize(
    ("status", "retry_after"), [(500, None), (503, 0.01), (429, 0.01)], ids=["500", "503", "429"]
)
def test_an_openai_tool_result_goes_out_at_most_the_named_number_of_times(
    status: int, retry_after: float | None
) -> None:
    script = [OpenAITurn(tool_calls=[call("add", a=1, b=2)]), OpenAITurn(text="3")]
    result_kind = "agent.session.input.tool_result"
    with OpenAIAgentsEmulator(script) as emulator, emulator.provider() as provider:
        path = r"/v1/agents/sessions/.+/events"
        where = carries(result_kind)
        emulator.fail_requests(
            "POST", path, status, times=100, retry_after=retry_after, where=where
        )
        with pytest.raises(ManagedAgentsError):
            run_to_completion(
                provider, "Add.", handler=adding(), agent_id=emulator.add_agent(), timeout=60
            )
        sent = posts(emulator, result_kind)
    assert 1 < sent <= OPENAI_SENDS, f"the result went out {sent} times"


@pytest.mark.parametrize(
    ("status", "retry_after"), [(500, None), (503, 0.01), (429, 0.01)], ids=["500", "503", "429"]
)
def test_a_claude_tool_result_goes_out_at_most_the_named_number_of_times(
    status: int, retry_after: float | None
) -> None:
    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text="3")]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        where = carries("user.custom_tool_result")
        emulator.fail_requests(
            "POST",
            r"/v1/sessions/.+/events",
            status,
            times=100,
            retry_after=retry_after,
            where=where,
        )
        with pytest.raises(ManagedAgentsError):
            run_to_completion(
                provider,
                "Add.",
                handler=adding(),
                agent_id=emulator.add_agent(),
                environment_id=emulator.add_environment(),
                timeout=60,
            )
        sent = posts(emulator, "user.custom_tool_result")
    assert 1 < sent <= CLAUDE_SENDS, f"the result went out {sent} times"


def test_a_result_that_lands_on_the_last_send_of_its_budget_still_lands() -> None:
    script = [OpenAITurn(tool_calls=[call("add", a=1, b=2)]), OpenAITurn(text="3")]
    result_kind = "agent.session.input.tool_result"
    with OpenAIAgentsEmulator(script) as emulator, emulator.provider() as provider:
        where = carries(result_kind)
        emulator.fail_requests(
            "POST", r"/v1/agents/sessions/.+/events", 500, times=OPENAI_SENDS - 1, where=where
        )
        result = run_to_completion(
            provider, "Add.", handler=adding(), agent_id=emulator.add_agent(), timeout=60
        )
        sent = posts(emulator, result_kind)
    assert result.text == "3"
    assert sent == OPENAI_SENDS
