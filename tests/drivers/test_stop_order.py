"""The stop rule's order, over loopback: a stop follows the input still on its way, reaches a
session still being opened, comes back at once, is no stop at all once the run has ended,
and reaches a confirmation hook too."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import Allow, Session, ToolContext, TurnEnded, telemetry
from req_managed_agents.errors import SessionError
from req_managed_agents.model import Decision, ToolUse
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    ConverseTurn,
    OpenAIAgentsEmulator,
    OpenAITurn,
    ToolCall,
    Turn,
    call,
)
from tests.support.tools import CountingTools

THREADS = ("rma-session", "rma-feed")


def ours(before: set[threading.Thread]) -> list[str]:
    """The session and feed threads started since ``before`` (a thread another test left
    is that test's failure, reported there)."""
    new = set(threading.enumerate()) - before
    return [t.name for t in new if t.name.startswith(THREADS)]


def ids(emulator: ClaudeEmulator, script: Any = None) -> dict[str, str]:
    return {"agent_id": emulator.add_agent(script), "environment_id": emulator.add_environment()}


def is_prompt(request: Any) -> bool:
    body = request.body
    return isinstance(body, dict) and body["events"][0]["type"] == "user.message"


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator([Turn(text="Working on it.", delay=2.0)]) as emulator:
        yield emulator


def test_a_cancel_while_the_prompt_is_on_its_way_stops_the_turn_that_prompt_starts(
    emulator: ClaudeEmulator,
) -> None:
    in_flight, let_go = threading.Event(), threading.Event()

    def slow_prompt() -> None:  # the prompt's POST is on the wire when the cancel comes
        in_flight.set()
        let_go.wait(5)

    path = r"/v1/sessions/[^/]+/events"
    emulator.before_requests("POST", path, slow_prompt, where=is_prompt)
    with emulator.provider() as provider:
        session = Session(provider, handler=CountingTools(), **ids(emulator))
        session.start("go")
        assert in_flight.wait(5)
        threading.Timer(0.5, let_go.set).start()  # it lands after the cancel began
        session.cancel()
        result = session.wait(5)
    assert result.stop_reason == {"type": "cancelled"}
    (session_id,) = emulator.session_ids()
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_idle", 10
    )
    kinds = [e["type"] for e in emulator.events(session_id)]
    assert kinds.index("user.interrupt") > kinds.index("user.message"), kinds
    assert "agent.message" not in kinds, "the turn the prompt started was stopped"


def test_closing_a_session_while_it_opens_stops_its_stream_and_threads(
    emulator: ClaudeEmulator,
) -> None:
    # The stream cannot attach (every attempt refused): opening goes on retrying it.
    stream = r"/v1/sessions/[^/]+/events/stream"
    emulator.fail_requests("GET", stream, 503, times=1000, retry_after=0.05)
    before = set(threading.enumerate())
    with emulator.provider() as provider:
        session = Session(provider, handler=CountingTools(), **ids(emulator))
        session.start("go")
        assert emulator.wait_until(lambda: emulator.stream_connections() or _attempts(emulator))
        started = time.monotonic()
        session.close()
        assert time.monotonic() - started < 3
        deadline = time.monotonic() + 3
        while ours(before) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ours(before) == []
        attempts = _attempts(emulator)
        time.sleep(1.0)
        assert _attempts(emulator) == attempts, "no stream request after close"


def test_closing_a_session_while_its_stream_catches_up_ends_the_feed_at_once(
    emulator: ClaudeEmulator,
) -> None:
    # The stream attaches; reading the history it missed is refused, to be asked again only
    # after 20 s: a stop must end that wait, not leave the feed to ask once more after it.
    history = r"/v1/sessions/[^/]+/events"
    emulator.fail_requests("GET", history, 429, times=1000, retry_after=20)
    before = set(threading.enumerate())
    with emulator.provider() as provider:
        session = Session(provider, handler=CountingTools(), **ids(emulator))
        session.start("go")
        assert emulator.wait_until(lambda: _history_reads(emulator) > 0, 10)
        new = set(threading.enumerate()) - before
        feeds = [thread for thread in new if thread.name.startswith("rma-feed")]
        session.close()
        for feed in feeds:
            feed.join(5)
        assert [feed.name for feed in feeds if feed.is_alive()] == []
    assert _history_reads(emulator) == 1


def test_closing_an_openai_session_while_its_stream_catches_up_ends_the_feed_at_once() -> None:
    # The stream drops; catching up begins with reading the session, refused until 20 s on.
    with OpenAIAgentsEmulator([OpenAITurn(text="Working on it.", delay=2.0)]) as emulator:
        emulator.drop_stream(1)
        emulator.fail_requests("GET", _SESSION, 429, times=1000, retry_after=20)
        before = set(threading.enumerate())
        with emulator.provider() as provider:
            session = Session(provider, handler=CountingTools(), agent_id=emulator.add_agent())
            session.start("go")
            assert emulator.wait_until(lambda: _session_reads(emulator) > 0, 10)
            new = set(threading.enumerate()) - before
            feeds = [t for t in new if t.name.startswith("rma-feed")]
            session.close()
            for feed in feeds:
                feed.join(5)
            assert [feed.name for feed in feeds if feed.is_alive()] == []
        assert _session_reads(emulator) == 1


def _history_reads(emulator: ClaudeEmulator) -> int:
    return sum(r.method == "GET" and r.path.endswith("/events") for r in emulator.requests)


_SESSION = r"(/v1)?/agents/sessions/[^/]+"


def _session_reads(emulator: OpenAIAgentsEmulator) -> int:
    return sum(
        r.method == "GET" and bool(re.fullmatch(_SESSION, r.path)) for r in emulator.requests
    )


def _attempts(emulator: ClaudeEmulator) -> int:
    return sum(r.path.endswith("/events/stream") for r in emulator.requests)


def test_a_cancel_comes_back_at_once_while_a_post_is_stuck(emulator: ClaudeEmulator) -> None:
    stuck, let_go = threading.Event(), threading.Event()

    def slow() -> None:
        stuck.set()
        let_go.wait(20)

    emulator.before_requests("POST", r"/v1/sessions/[^/]+/events", slow, where=is_prompt)
    with emulator.provider(timeout=30) as provider:
        session = Session(provider, handler=CountingTools(), **ids(emulator))
        session.start("go")
        try:
            assert stuck.wait(5)
            started = time.monotonic()
            session.cancel()
            result = session.wait(3)
            assert time.monotonic() - started < 3
        finally:
            let_go.set()
        # The post lands now and the stop follows it; both reach this emulator, not a
        # later test's (the run's thread sends them after cancel() has come back).
        (session_id,) = emulator.session_ids()
        assert emulator.wait_until(
            lambda: "user.interrupt" in [e["type"] for e in emulator.events(session_id)], 10
        )
    assert result.stop_reason == {"type": "cancelled"}


def test_breaking_out_at_the_final_turn_end_is_not_a_stop() -> None:
    pytest.importorskip("botocore")
    # A slow telemetry subscriber widens the window between the last item and the result.
    detach = telemetry.attach(lambda name, measurements, metadata: time.sleep(0.02))
    try:
        with AgentCoreEmulator([ConverseTurn(text="All done.")]) as emulator:
            with (
                emulator.provider() as provider,
                Session(
                    provider, handler=CountingTools(), harness_arn=emulator.add_harness()
                ) as session,
            ):
                for item in session.stream("go", timeout=20):
                    if isinstance(item, TurnEnded) and item.turn.terminal == "end_turn":
                        break
            assert emulator.stopped_sessions == [], "a finished conversation is not stopped"
    finally:
        detach()


ASKING = [
    Turn(server_tool_calls=[ToolCall("delete", {}, "deleted", permission="ask")]),
    Turn(text="done"),
]


class BlockingConfirmations(CountingTools):
    def __init__(self) -> None:
        super().__init__()
        self.asked = threading.Event()
        self.cancelled: list[bool] = []

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
        self.asked.set()
        self.cancelled.append(context.cancelled.wait(30))
        return Allow()


def test_a_blocking_confirmation_hook_is_bounded_by_the_tool_timeout(
    emulator: ClaudeEmulator,
) -> None:
    hook = BlockingConfirmations()
    with (
        emulator.provider() as provider,
        Session(provider, handler=hook, tool_timeout=0.5, **ids(emulator, ASKING)) as session,
    ):
        result = session.run("go", timeout=20)
    (session_id,) = emulator.session_ids()
    (answer,) = [e for e in emulator.events(session_id) if e["type"] == "user.tool_confirmation"]
    assert answer["result"] == "deny"
    assert "no answer within 0.5 s" in answer["deny_message"]
    assert result.terminal == "end_turn"
    assert hook.cancelled == [True], "the hook was told to stop"


def test_a_cancel_reaches_a_blocking_confirmation_hook(emulator: ClaudeEmulator) -> None:
    hook = BlockingConfirmations()
    with emulator.provider() as provider:
        session = Session(provider, handler=hook, **ids(emulator, ASKING))
        session.start("go")
        assert hook.asked.wait(10)
        started = time.monotonic()
        session.cancel()
        result = session.wait(3)
    assert time.monotonic() - started < 3
    assert result.stop_reason == {"type": "cancelled"}
    assert hook.cancelled == [True]
    with pytest.raises(SessionError):
        session.start("again")


def test_a_keyed_run_continued_after_a_crash_sends_its_prompt_once() -> None:
    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text=lambda r: f"sum {r[0]}")]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        from req_managed_agents import MemoryStore, ToolLedger, run_to_completion

        ledger = ToolLedger(MemoryStore())
        tools = CountingTools()
        options = ids(emulator)
        first = run_to_completion(
            provider, "add", handler=tools, ledger=ledger, idempotency_key="k-1", **options
        )
        again = run_to_completion(
            provider, "add", handler=tools, ledger=ledger, idempotency_key="k-1", **options
        )
        (session_id,) = emulator.session_ids()
        prompts = [e for e in emulator.events(session_id) if e["type"] == "user.message"]
    assert first.text == again.text == "sum 3"
    assert len(prompts) == 1
    assert sum(tools.calls.values()) == 1
