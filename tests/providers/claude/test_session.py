"""The drivers against the Claude emulator, over real loopback sockets.

Each test plays a scripted agent and checks what a user relies on: the result, that every
tool ran exactly once, that faults (dropped or stalled streams, duplicates, rate limits) leave
the outcome unchanged, and that timeouts really tear the stream down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from req_managed_agents import (
    SessionResult,
    SessionTimeoutError,
    ToolContext,
    Tools,
    run_to_completion,
    telemetry,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import AuthenticationError
from req_managed_agents.model import SessionInfo
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.tools import CountingTools

TWO_TOOL_TURNS = [
    Turn(text="Adding.", tool_calls=[call("add", a=1, b=2), call("add", a=10, b=20)]),
    Turn(tool_calls=[call("add", a=3, b=4)]),
    Turn(text=lambda results: f"The answer is {results[0]}.", usage=(7, 3)),
]


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(TWO_TOOL_TURNS, ping_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: ClaudeEmulator) -> Iterator[ClaudeManagedAgents]:
    with emulator.provider(timeout=5) as p:
        yield p


def ids(emulator: ClaudeEmulator, script: list[Turn] | None = None) -> dict[str, str]:
    agent_id = emulator.add_agent(script) if script is not None else emulator.add_agent()
    return {"agent_id": agent_id, "environment_id": emulator.add_environment()}


def run(
    provider: ClaudeManagedAgents,
    emulator: ClaudeEmulator,
    handler: Tools,
    script: list[Turn] | None = None,
    **options: Any,
) -> SessionResult:
    connect = ids(emulator, script)
    return run_to_completion(
        provider, "Add things", handler=handler, timeout=20, **connect, **options
    )


def shape(result: SessionResult) -> tuple[Any, ...]:
    """What must not change when the transport misbehaves (event ids are per session)."""
    return (
        result.terminal,
        result.text,
        result.turns,
        result.usage,
        result.stop_reason,
        [(r.content, r.is_error) for r in result.tool_results],
        [event["type"] for event in result.events],
    )


def test_happy_path_with_two_tool_turns(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    tools = CountingTools()
    result = run(provider, emulator, tools)
    assert result.terminal == "end_turn"
    assert result.text == "The answer is 7."
    assert result.turns == 3
    assert [r.content for r in result.tool_results] == ["3", "30", "7"]
    assert result.usage.input_tokens == 10 + 10 + 7
    assert result.turn_usage[-1].output_tokens == 3
    assert result.stop_reason == {"type": "end_turn"}
    assert set(tools.calls.values()) == {1}
    assert len(tools.calls) == 3
    assert [e["id"] for e in result.events] == [e["id"] for e in emulator.events(result.session_id)]
    assert tools.events == list(result.events), "handle_event saw every event, live, in order"


@pytest.mark.parametrize("at_event", [2, 5, 6, 8, 9, 12])
def test_a_dropped_stream_changes_nothing_and_runs_each_tool_once(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, at_event: int
) -> None:
    undisturbed = run(provider, emulator, CountingTools())
    # Positions in the log of the first turn: 0 user.message, 1 status_running,
    # 2 model_request_start, 3 agent.message, 4 model_request_end, 5-6 the two tool uses,
    # 7 session.usage, 8 the requires_action idle, 9-10 the echoed results, 12 next turn.
    emulator.drop_stream(at_event)
    tools = CountingTools()
    disturbed = run(provider, emulator, tools)
    assert shape(disturbed) == shape(undisturbed)
    assert list(tools.calls.values()) == [1, 1, 1]
    assert len(emulator.stream_connections(disturbed.session_id)) >= 2, "it did reconnect"


def test_duplicate_delivery_leaves_no_duplicate_events(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    emulator.duplicate_stream_events()
    tools = CountingTools()
    result = run(provider, emulator, tools)
    event_ids = [event["id"] for event in result.events]
    assert len(event_ids) == len(set(event_ids)) == len(emulator.events(result.session_id))
    assert list(tools.calls.values()) == [1, 1, 1]


def test_rate_limit_then_success_honours_retry_after(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    emulator.fail_requests("POST", r"^/v1/sessions$", 429, times=2, retry_after=0.3)
    result = run(provider, emulator, CountingTools())
    assert result.terminal == "end_turn"
    creates = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/sessions"]
    assert len(creates) == 3
    gaps = [later.received_at - earlier.received_at for earlier, later in zip(creates, creates[1:])]
    assert all(gap >= 0.29 for gap in gaps), gaps


def test_a_stalled_stream_reconnects_after_idle_timeout(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    emulator.stall_stream(at_event=5, seconds=10)
    started = time.monotonic()
    tools = CountingTools()
    result = run(provider, emulator, tools, idle_timeout=0.5)
    assert time.monotonic() - started < 5, "did not wait for the stall to end"
    assert result.text == "The answer is 7."
    assert list(tools.calls.values()) == [1, 1, 1]
    assert len(emulator.stream_connections(result.session_id)) >= 2


def test_run_timeout_returns_on_time_and_closes_the_stream(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    connect = ids(emulator, [Turn(text="slow", delay=30)])
    session = Session(provider, handler=CountingTools(), **connect)
    started = time.monotonic()
    with pytest.raises(SessionTimeoutError):
        session.run("Take your time", timeout=0.5)
    assert time.monotonic() - started < 1.5
    session_id = session.session_id
    assert session_id is not None
    assert emulator.wait_until(lambda: emulator.open_stream_count(session_id) == 0, timeout=1.0)


def test_raising_and_unknown_tools_become_error_results_and_the_session_goes_on(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    tools = Tools()

    @tools.tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    script = [
        Turn(tool_calls=[call("explode"), call("nonexistent", x=1)]),
        Turn(text=lambda results: " | ".join(results)),
    ]
    result = run(provider, emulator, tools, script)
    assert result.terminal == "end_turn"
    assert [r.is_error for r in result.tool_results] == [True, True]
    assert result.text.startswith("RuntimeError: disk on fire | unknown tool 'nonexistent'")
    sent = [e for e in emulator.events(result.session_id) if e["type"] == "user.custom_tool_result"]
    assert [e["is_error"] for e in sent] == [True, True]


def test_tool_timeout_answers_with_an_error_and_continues(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    release = threading.Event()
    tools = Tools()

    @tools.tool
    def hang(context: ToolContext) -> str:
        """Never returns in time."""
        release.wait(5)
        return "late"

    script = [Turn(tool_calls=[call("hang")]), Turn(text=lambda results: results[0])]
    try:
        result = run(provider, emulator, tools, script, tool_timeout=0.3)
    finally:
        release.set()
    assert result.text == "tool 'hang' timed out after 0.3 s"
    assert result.tool_results[0].is_error


def test_max_turns_stops_with_a_terminated_result(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    result = run(provider, emulator, CountingTools(), max_turns=2)
    assert result.terminal == "terminated"
    assert result.stop_reason == {"type": "max_turns_reached", "max_turns": 2}
    assert result.turns == 2


def test_turn_guard_halts_with_its_reason(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    seen: list[tuple[int, int, str]] = []

    def budget(usage: Any, turns: int, session_id: str) -> str | None:
        seen.append((usage.input_tokens, turns, session_id))
        return "token budget spent" if usage.input_tokens >= 20 else None

    result = run(provider, emulator, CountingTools(), turn_guard=budget)
    assert result.terminal == "terminated"
    assert result.stop_reason == {"type": "halted", "reason": "token budget spent"}
    assert [(tokens, turns) for tokens, turns, _ in seen] == [(10, 1), (20, 2)]
    assert seen[0][2] == result.session_id


def test_resume_redispatches_unanswered_tools_then_delivers_the_prompt(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [
        Turn(tool_calls=[call("add", a=2, b=2)]),
        Turn(text=lambda results: f"sum {results[0]}"),
        Turn(text=lambda inputs: f"you said {inputs[0]!r}"),
    ]
    connect = ids(emulator, script)
    client = provider.client
    session_id = client.create_session(connect["agent_id"], connect["environment_id"])["id"]
    client.send_events(
        session_id, [{"type": "user.message", "content": [{"type": "text", "text": "go"}]}]
    )
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_idle", timeout=5
    )
    tools = CountingTools()
    result = run_to_completion(
        provider, "and now?", handler=tools, session_id=session_id, timeout=20
    )
    assert result.terminal == "end_turn"
    assert result.text == "you said 'and now?'"
    assert [r.content for r in result.tool_results] == ["4"]
    assert list(tools.calls.values()) == [1]


def test_cancel_returns_a_cancelled_result_and_interrupts_the_turn(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    connect = ids(emulator, [Turn(text="slow", delay=30)])
    session = Session(provider, handler=CountingTools(), **connect)
    session.start("go")
    assert emulator.wait_until(
        lambda: (
            session.session_id is not None
            and any(
                e["type"] == "session.status_running" for e in emulator.events(session.session_id)
            )
        ),
        timeout=5,
    )
    session.cancel()
    result = session.wait(2)
    assert result.terminal == "terminated"
    assert result.stop_reason == {"type": "cancelled"}
    sent = [r.body for r in emulator.requests if r.method == "POST" and r.path.endswith("/events")]
    assert {"type": "user.interrupt"} in [event for body in sent for event in body["events"]]


def test_follow_up_runs_reuse_the_session(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [Turn(text="first"), Turn(text="second")]
    with Session(provider, handler=CountingTools(), **ids(emulator, script)) as session:
        first = session.run("one", timeout=10)
        second = session.run("two", timeout=10)
    assert (first.text, second.text) == ("first", "second")
    assert first.session_id == second.session_id
    assert second.turns == 1, "turn counts are per run"
    assert len(emulator.session_ids()) == 1


def test_telemetry_covers_requests_stream_tools_and_session_with_caller_tags(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with telemetry.attach(lambda name, m, md: seen.append((name, md))):
        result = run(provider, emulator, CountingTools(), telemetry_metadata={"tenant": "acme"})
    names = {name.removeprefix("req_managed_agents.") for name, _ in seen}
    assert {
        "request.start",
        "request.stop",
        "stream.connected",
        "stream.event",
        "tool.start",
        "tool.stop",
        "session.start",
        "session.turn",
        "session.stop",
    } <= names
    # Only this run's: tools abandoned by earlier tests may still be reporting.
    session_events = [
        md
        for name, md in seen
        if (".session." in name or ".tool." in name) and md.get("session_id") == result.session_id
    ]
    assert len(session_events) >= 6
    assert all(md["tenant"] == "acme" for md in session_events)
    stop = next(md for name, md in seen if name.endswith("session.stop"))
    assert (stop["terminal"], stop["session_id"]) == ("end_turn", result.session_id)


def test_a_terminated_session_ends_the_run_as_terminated(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    result = run(provider, emulator, CountingTools(), [Turn(text="bye", end="terminated")])
    assert result.terminal == "terminated"
    assert result.text == "bye"


def test_handler_errors_in_handle_event_do_not_break_the_session(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    class Fragile(CountingTools):
        def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
            raise ValueError("renderer bug")

    result = run(provider, emulator, Fragile())
    assert result.terminal == "end_turn"


def test_tool_results_reach_the_server_in_one_post_per_turn(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    run(provider, emulator, CountingTools())
    posts = [
        r.body["events"]
        for r in emulator.requests
        if r.path.endswith("/events") and r.method == "POST"
    ]
    assert [[event["type"] for event in events] for events in posts] == [
        ["user.message"],
        ["user.custom_tool_result", "user.custom_tool_result"],
        ["user.custom_tool_result"],
    ]


def test_a_turn_the_service_gave_up_on_does_not_leak_into_the_next_run(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [Turn(text="one"), Turn(text="never", delay=30), Turn(text="three")]
    with Session(provider, handler=CountingTools(), **ids(emulator, script)) as session:
        assert session.run("p1", timeout=10).text == "one"
        session.start("p2")
        assert emulator.wait_until(
            lambda: emulator.events(str(session.session_id))[-1]["type"] == "session.status_running"
        )
        emulator.fail_turn(str(session.session_id))
        failed = session.wait(10)
        assert failed.terminal == "terminated"
        assert failed.stop_reason["retry_status"] == {"type": "exhausted"}
        third = session.run("p3", timeout=10)
    assert (third.terminal, third.text) == ("end_turn", "three")
    assert third.events[0]["type"] == "user.message", "the turn starts at its own message"


def test_a_dead_event_stream_fails_later_runs_at_once_without_posting(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    # Heartbeats come every 0.2 s: an idle timeout of 0.1 s makes the feed reconnect.
    session = Session(
        provider, handler=CountingTools(), idle_timeout=0.1, **ids(emulator, ["one", "two"])
    )
    assert session.run("hi", timeout=10).text == "one"
    session_id = str(session.session_id)
    # Then every reconnect is refused for good (a revoked key, say).
    emulator.fail_requests("GET", rf"/v1/sessions/{session_id}/events/stream", 401, times=50)
    feed = session._conversation._feed  # type: ignore[union-attr]
    assert emulator.wait_until(lambda: not feed.alive, timeout=5)
    for _ in range(2):
        started = time.monotonic()
        with pytest.raises(AuthenticationError):
            session.run("again", timeout=10)
        assert time.monotonic() - started < 1
    assert sum(e["type"] == "user.message" for e in emulator.events(session_id)) == 1
    session.close()


def test_resuming_a_session_mid_turn_waits_for_that_turn_first(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [Turn(text="answer-1"), Turn(text="answer-2", delay=0.8), Turn(text="answer-3")]
    session = Session(provider, handler=CountingTools(), **ids(emulator, script))
    session.run("p1", timeout=10)
    session.start("p2")  # a process that dies with turn 2 running
    assert emulator.wait_until(
        lambda: emulator.events(str(session.session_id))[-1]["type"] == "session.status_running"
    )
    session.close()
    result = run_to_completion(
        provider, "p3", handler=CountingTools(), session_id=session.session_id, timeout=10
    )
    assert result.text == "answer-3"
