"""Edges of stopping, resuming and re-sending that a review found, over loopback.

Each test stages the timing with the emulator's ``before_requests`` hook (a slow request is a
hook that sleeps before the request is handled) and checks what the service ended up with.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import Session, ToolContext, Tools, run_to_completion
from req_managed_agents.drivers._loop import REPROMPT
from req_managed_agents.providers import _delivery
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.tools import CountingTools


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(ping_interval=0.2) as emulator:
        yield emulator


def ids(emulator: ClaudeEmulator, script: list[Any] | None = None) -> dict[str, str]:
    return {"agent_id": emulator.add_agent(script), "environment_id": emulator.add_environment()}


def logged(emulator: ClaudeEmulator, session_id: str) -> list[str]:
    return [event["type"] for event in emulator.events(session_id)]


def carrying(kind: str) -> Any:
    def match(request: Any) -> bool:
        return isinstance(request.body, dict) and request.body["events"][0]["type"] == kind

    return match


def test_a_timed_out_run_is_not_interrupted_later_by_close(emulator: ClaudeEmulator) -> None:
    # The result post takes 3 s, so the worker is still inside it when run() gives up.
    emulator.before_requests(
        "POST",
        r"/v1/sessions/.+/events",
        lambda: time.sleep(3),
        where=carrying("user.custom_tool_result"),
    )
    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text="done")]
    with emulator.provider() as provider, pytest.raises(TimeoutError) as caught:
        run_to_completion(
            provider, "go", handler=CountingTools(), timeout=0.5, **ids(emulator, script)
        )
    session_id = str(caught.value.session_id)  # type: ignore[attr-defined]
    assert emulator.wait_until(lambda: "user.custom_tool_result" in logged(emulator, session_id))
    assert "user.interrupt" not in logged(emulator, session_id)


def test_cancel_during_a_post_interrupts_after_it_lands(emulator: ClaudeEmulator) -> None:
    arrived = threading.Event()

    def slow_prompt() -> None:
        arrived.set()
        time.sleep(0.5)

    emulator.before_requests(
        "POST", r"/v1/sessions/.+/events", slow_prompt, where=carrying("user.message")
    )
    script = [Turn(text="a long answer", delay=2)]
    with emulator.provider() as provider:
        session = Session(provider, handler=CountingTools(), **ids(emulator, script))
        session.start("go")
        assert arrived.wait(10)
        session.cancel()
        assert session.wait(5).stop_reason == {"type": "cancelled"}
    session_id = str(session.session_id)
    assert emulator.wait_until(lambda: logged(emulator, session_id)[-1] == "session.status_idle")
    events = logged(emulator, session_id)
    assert events.index("user.interrupt") > events.index("user.message")
    assert "agent.message" not in events, "the interrupted turn never spoke"


def test_a_slow_prompt_post_is_not_sent_twice(
    emulator: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_delivery, "RESEND", _delivery.RESEND.but(base=0.5))
    # The prompt's post outlasts the client's 1 s timeout; the server still takes it.
    landed = threading.Event()

    def slow() -> None:
        time.sleep(2.0)
        landed.set()  # from here on the original post is handled, late but whole

    emulator.before_requests(
        "POST", r"/v1/sessions/.+/events", slow, where=carrying("user.message")
    )
    with emulator.provider(timeout=1) as provider:
        result = run_to_completion(
            provider, "once", handler=CountingTools(), timeout=20, **ids(emulator, ["hi"])
        )
    assert result.text == "hi"
    assert landed.wait(5)
    session_id = str(result.session_id)
    emulator.wait_until(lambda: logged(emulator, session_id).count("user.message") > 1, timeout=1)
    assert logged(emulator, session_id).count("user.message") == 1


def submit_tools() -> Tools:
    tools = Tools()

    @tools.tool
    def submit(answer: int) -> str:
        """Hand in the answer."""
        return "received"

    return tools


def test_a_reattached_session_that_already_answered_is_not_reprompted(
    emulator: ClaudeEmulator,
) -> None:
    script = [Turn(tool_calls=[call("submit", answer=42)]), Turn(text="Submitted.")]
    with emulator.provider() as provider:
        first = run_to_completion(
            provider,
            "go",
            handler=submit_tools(),
            terminal_tool="submit",
            timeout=10,
            **ids(emulator, script),
        )
        again = run_to_completion(
            provider,
            handler=submit_tools(),
            terminal_tool="submit",
            session_id=first.session_id,
            timeout=10,
        )
    assert (again.terminal, again.turns) == ("end_turn", 0)
    assert REPROMPT.format(tool="submit") not in str(emulator.events(str(first.session_id)))


def test_a_terminal_call_its_own_validation_refused_is_not_an_answer(
    emulator: ClaudeEmulator,
) -> None:
    script = [
        Turn(tool_calls=[call("submit", answer="very")]),
        Turn(text="Oops."),
        Turn(tool_calls=[call("submit", answer=7)]),
        Turn(text="Submitted."),
    ]
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "go",
            handler=submit_tools(),
            terminal_tool="submit",
            timeout=10,
            **ids(emulator, script),
        )
    assert result.terminal == "end_turn"
    assert result.terminal_tool_input == {"answer": 7}
    assert result.tool_results[0].is_error


def test_resuming_streams_no_old_text(emulator: ClaudeEmulator) -> None:
    with emulator.provider() as provider:
        first = run_to_completion(
            provider,
            "one",
            handler=CountingTools(),
            timeout=10,
            **ids(emulator, ["Old answer.", "New answer."]),
        )
        pieces: list[str] = []
        second = run_to_completion(
            provider,
            "two",
            handler=CountingTools(),
            on_text=pieces.append,
            session_id=first.session_id,
            timeout=10,
        )
    assert "".join(pieces) == "New answer."
    assert second.text == "New answer."
    assert second.events[0]["type"] == "user.message", "the old turn is not this run's"


def test_an_outcome_can_start_after_a_resume(emulator: ClaudeEmulator) -> None:
    script = ["hello", Turn(text="Graded work.", evaluation="satisfied")]
    with emulator.provider() as provider:
        first = run_to_completion(
            provider, "hi", handler=CountingTools(), timeout=10, **ids(emulator, script)
        )
        result = run_to_completion(
            provider,
            handler=CountingTools(),
            outcome={"description": "Do the work", "rubric": "It is done."},
            session_id=first.session_id,
            timeout=10,
        )
    assert result.outcome is not None
    assert result.outcome["result"] == "satisfied"
    assert result.text == "Graded work."


def test_stopping_does_not_wait_long_for_a_slow_interrupt(emulator: ClaudeEmulator) -> None:
    emulator.before_requests(
        "POST", r"/v1/sessions/.+/events", lambda: time.sleep(10), where=carrying("user.interrupt")
    )
    started = threading.Event()
    tools = Tools()

    @tools.tool
    def slow(context: ToolContext) -> str:
        """Work until told to stop."""
        started.set()
        context.cancelled.wait(10)
        return "stopped"

    with emulator.provider() as provider:
        session = Session(
            provider, handler=tools, **ids(emulator, [Turn(tool_calls=[call("slow")])])
        )
        session.start("go")
        assert started.wait(10)
        began = time.monotonic()
        session.cancel()
        assert time.monotonic() - began < 8


def test_netrc_credentials_are_never_sent(
    emulator: ClaudeEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("default login bob password hunter2secret\n")
    os.chmod(netrc, 0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with emulator.provider() as provider:
        provider.client.list_agents()
    assert "authorization" not in emulator.requests[-1].headers
