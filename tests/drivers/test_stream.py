"""Live runs: ``Session.stream``, ``on_text`` and the exactly-once text they rest on.

The text tracker is checked on its own first, then whole runs stream over loopback against
both emulators through the faults that make raw events arrive more than once: a dropped
Claude stream (its history is caught up) and a truncated AgentCore invocation (retried, so
the same text streams again).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from req_managed_agents import (
    MessageDone,
    Session,
    SessionResult,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallStarted,
    ToolContext,
    TurnEnded,
    run_to_completion,
)
from req_managed_agents.errors import InvocationOutcomeUnknownError
from req_managed_agents.model import StreamItem
from req_managed_agents.model._stream import TextTracker
from req_managed_agents.providers.agentcore import _conversation as agentcore_conversation
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator, ConverseTurn, Turn, call
from tests.support.tools import CountingTools

CLAUDE_TURNS = [
    Turn(
        text="Adding both pairs now.", tool_calls=[call("add", a=1, b=2), call("add", a=10, b=20)]
    ),
    Turn(text="One more sum to go.", tool_calls=[call("add", a=3, b=4)]),
    Turn(text=lambda results: f"The answer is {results[0]}, as computed.", usage=(7, 3)),
]
AGENTCORE_TURNS = [
    ConverseTurn(
        text="Adding both pairs now.", tool_calls=[call("add", a=1, b=2), call("add", a=10, b=20)]
    ),
    ConverseTurn(text="One more sum to go.", tool_calls=[call("add", a=3, b=4)]),
    ConverseTurn(text=lambda results: f"The answer is {results[0]}, as computed.", usage=(7, 3)),
]
FINAL_TEXTS = ["Adding both pairs now.", "One more sum to go.", "The answer is 7, as computed."]


# -- the tracker ----------------------------------------------------------------------------


def tracked(*reports: tuple[str, str, bool]) -> list[StreamItem]:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    for message, text, final in reports:
        tracker.update(message, text, final)
    return items


def test_growing_text_yields_only_what_is_new() -> None:
    assert tracked(("m", "Hel", False), ("m", "Hello", False), ("m", "Hello!", True)) == [
        TextDelta("Hel", "m"),
        TextDelta("lo", "m"),
        TextDelta("!", "m"),
        MessageDone("Hello!", "m"),
    ]


def test_a_replay_that_catches_up_yields_nothing_twice() -> None:
    # A retried attempt starts the message over and says the same thing again.
    items = tracked(("m", "Hello wor", False), ("m", "Hel", False), ("m", "Hello world", True))
    assert items == [
        TextDelta("Hello wor", "m"),
        TextDelta("ld", "m"),
        MessageDone("Hello world", "m"),
    ]


def test_text_that_changes_under_what_was_shown_is_reset_first() -> None:
    items = tracked(("m", "Hello wor", False), ("m", "Hi", False), ("m", "Hi there", True))
    assert items == [
        TextDelta("Hello wor", "m"),
        TextReset("m"),
        TextDelta("Hi", "m"),
        TextDelta(" there", "m"),
        MessageDone("Hi there", "m"),
    ]


def test_a_final_text_shorter_than_what_was_shown_is_a_reset() -> None:
    assert tracked(("m", "Hello wor", False), ("m", "Hello", True)) == [
        TextDelta("Hello wor", "m"),
        TextReset("m"),
        TextDelta("Hello", "m"),
        MessageDone("Hello", "m"),
    ]


def test_a_finished_message_reported_again_yields_nothing() -> None:
    assert tracked(("m", "Hi", True), ("m", "Hi", True), ("m", "Hi", False)) == [
        TextDelta("Hi", "m"),
        MessageDone("Hi", "m"),
    ]


# -- whole runs ------------------------------------------------------------------------------


def texts_by_message(items: list[StreamItem]) -> list[str]:
    """Each message's text as a consumer applying resets would show it, in order."""
    shown: dict[str, str] = {}
    for item in items:
        if isinstance(item, TextDelta):
            shown[item.message] = shown.get(item.message, "") + item.text
        elif isinstance(item, TextReset):
            shown[item.message] = ""
    return list(shown.values())


def check_stream(items: list[StreamItem], result: SessionResult, tools: CountingTools) -> None:
    assert isinstance(items[-1], SessionResult)
    assert items[-1] is result or items[-1] == result
    assert not any(isinstance(item, TextReset) for item in items), "no text was rewritten"
    assert texts_by_message(items) == FINAL_TEXTS
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "".join(FINAL_TEXTS)
    assert [i.text for i in items if isinstance(i, MessageDone)] == FINAL_TEXTS
    assert sorted(tools.calls.values()) == [1, 1, 1]
    started = [i.tool_use.id for i in items if isinstance(i, ToolCallStarted)]
    finished = [i.tool_use.id for i in items if isinstance(i, ToolCallFinished)]
    assert sorted(started) == sorted(finished) == sorted(tools.calls)
    ends = [i for i in items if isinstance(i, TurnEnded)]
    assert [end.number for end in ends] == [1, 2, 3]
    assert [end.turn.terminal for end in ends] == ["requires_action", "requires_action", "end_turn"]
    first_text = next(n for n, i in enumerate(items) if isinstance(i, TextDelta))
    assert first_text < items.index(ends[0]), "text arrives before its turn has ended"


@pytest.fixture
def claude() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(CLAUDE_TURNS, ping_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
def agentcore(monkeypatch: pytest.MonkeyPatch) -> Iterator[AgentCoreEmulator]:
    pytest.importorskip("botocore")
    monkeypatch.setattr(
        agentcore_conversation,
        "INVOKE_RETRY",
        agentcore_conversation.INVOKE_RETRY.but(base=0.01),
    )
    with AgentCoreEmulator(AGENTCORE_TURNS) as emulator:
        yield emulator


def claude_ids(emulator: ClaudeEmulator) -> dict[str, str]:
    return {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}


@pytest.mark.parametrize(
    "drop_at", [None, 3, 12], ids=["undisturbed", "drop-turn-1", "drop-turn-2"]
)
def test_a_claude_run_streams_each_piece_of_text_once(
    claude: ClaudeEmulator, drop_at: int | None
) -> None:
    if drop_at is not None:
        claude.drop_stream(drop_at)  # the agent.message of that turn: caught up from history
    tools = CountingTools()
    with (
        claude.provider() as provider,
        Session(provider, handler=tools, **claude_ids(claude)) as session,
    ):
        items = list(session.stream("Add things", timeout=20))
    check_stream(items, items[-1], tools)  # type: ignore[arg-type]


@pytest.mark.parametrize("throttled", [False, True], ids=["undisturbed", "throttled"])
def test_an_agentcore_run_streams_each_piece_of_text_once(
    agentcore: AgentCoreEmulator, throttled: bool
) -> None:
    if throttled:  # refused up front: invoked again, nothing shown twice
        agentcore.fail_requests("POST", "/harnesses/invoke", 429, retry_after=0.05)
    tools = CountingTools()
    with (
        agentcore.provider() as provider,
        Session(provider, handler=tools, harness_arn=agentcore.add_harness()) as session,
    ):
        items = list(session.stream("Add things", timeout=20))
    check_stream(items, items[-1], tools)  # type: ignore[arg-type]
    assert len(agentcore.invocations) == 3


def test_an_agentcore_stream_cut_mid_text_shows_that_text_once_then_stops(
    agentcore: AgentCoreEmulator,
) -> None:
    agentcore.truncate_stream(after_frames=2)
    items: list[object] = []
    with (
        agentcore.provider() as provider,
        Session(provider, handler=CountingTools(), harness_arn=agentcore.add_harness()) as session,
    ):
        stream = session.stream("Add things", timeout=20)
        with pytest.raises(InvocationOutcomeUnknownError):
            items.extend(stream)
    shown = "".join(item.text for item in items if isinstance(item, TextDelta))
    assert shown
    assert FINAL_TEXTS[0].startswith(shown)
    assert not [item for item in items if isinstance(item, TextReset)]
    assert len(agentcore.invocations) == 1, "a turn that may have happened is not sent again"


def test_on_text_sees_the_text_as_it_is_written(claude: ClaudeEmulator) -> None:
    pieces: list[str] = []
    with claude.provider() as provider:
        result = run_to_completion(
            provider,
            "Add things",
            handler=CountingTools(),
            on_text=pieces.append,
            timeout=20,
            **claude_ids(claude),
        )
    assert "".join(pieces) == "\n\n".join(FINAL_TEXTS)  # a blank line between messages
    assert result.text == FINAL_TEXTS[-1]


def test_a_raising_on_text_does_not_break_the_run(claude: ClaudeEmulator) -> None:
    def broken(text: str) -> None:
        raise ValueError("display bug")

    with claude.provider() as provider:
        result = run_to_completion(
            provider,
            "Add things",
            handler=CountingTools(),
            on_text=broken,
            timeout=20,
            **claude_ids(claude),
        )
    assert result.terminal == "end_turn"


def test_breaking_out_of_the_stream_interrupts_the_remote_turn(claude: ClaudeEmulator) -> None:
    cancelled = threading.Event()
    tools = CountingTools()

    @tools.tool
    def wait_for_cancel(context: ToolContext) -> str:
        """Work until told to stop."""
        if context.cancelled.wait(10):
            cancelled.set()
        return "stopped"

    script = [Turn(tool_calls=[call("wait_for_cancel")]), Turn(text="never reached")]
    ids = {"agent_id": claude.add_agent(script), "environment_id": claude.add_environment()}
    with claude.provider() as provider, Session(provider, handler=tools, **ids) as session:
        for item in session.stream("go", timeout=20):
            if isinstance(item, ToolCallStarted):
                break  # the consumer goes away while the tool runs
        session_id = str(session.session_id)
        assert cancelled.wait(1), "the running tool saw its cancel signal"
    logged = [event["type"] for event in claude.events(session_id)]
    assert "user.interrupt" in logged
    assert "user.custom_tool_result" not in logged, "the abandoned call was never answered"
    assert claude.wait_until(lambda: claude.open_stream_count(session_id) == 0, timeout=3)


def test_a_stream_that_is_never_iterated_starts_nothing(claude: ClaudeEmulator) -> None:
    with (
        claude.provider() as provider,
        Session(provider, handler=CountingTools(), **claude_ids(claude)) as session,
    ):
        session.stream("Add things")
    assert claude.session_ids() == []


def test_a_stream_timeout_stops_waiting_and_leaves_the_turn_resumable(
    claude: ClaudeEmulator,
) -> None:
    script = [Turn(text="ready"), Turn(text="slow", delay=60)]
    with claude.provider() as provider:
        session = Session(
            provider,
            handler=CountingTools(),
            agent_id=claude.add_agent(script),
            environment_id=claude.add_environment(),
        )
        with session:
            assert session.run("first", timeout=120).text == "ready"
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                for _ in session.stream("go", timeout=1):
                    pass
        # It stopped waiting long before the 60 s turn could end (with room for a busy machine).
        assert time.monotonic() - started < 30
        session_id = str(session.session_id)
    assert "user.interrupt" not in [event["type"] for event in claude.events(session_id)]


def test_claude_text_arrives_in_previews_before_the_message_is_recorded(
    claude: ClaudeEmulator,
) -> None:
    tools = CountingTools()
    with (
        claude.provider() as provider,
        Session(provider, handler=tools, **claude_ids(claude)) as session,
    ):
        items = list(session.stream("Add things", timeout=20))
    deltas = [item for item in items if isinstance(item, TextDelta)]
    assert len(deltas) > len(FINAL_TEXTS), "the previews split each message into pieces"
    stream_gets = [r for r in claude.requests if r.path.endswith("/events/stream")]
    assert stream_gets[0].query["event_deltas[]"] == ["agent.message"]
    previews = {"event_start", "event_delta"}
    assert not [e for e in tools.events if e["type"] in previews], "previews are not events"
    assert not [e for e in items[-1].events if e["type"] in previews]  # type: ignore[union-attr]


def test_a_drop_in_the_middle_of_a_preview_loses_and_repeats_nothing(
    claude: ClaudeEmulator,
) -> None:
    claude.drop_stream(3, after_deltas=1)  # turn 1's message, one preview piece shown
    tools = CountingTools()
    with (
        claude.provider() as provider,
        Session(provider, handler=tools, **claude_ids(claude)) as session,
    ):
        items = list(session.stream("Add things", timeout=20))
    check_stream(items, items[-1], tools)  # type: ignore[arg-type]
    assert len(claude.stream_connections()) >= 2, "it reconnected"
