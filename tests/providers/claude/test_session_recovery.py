"""How the drivers recover a Claude session from what goes wrong mid-run, over loopback.

Each test plays a scripted agent on the emulator and breaks one thing a real network or
service can break: a rate-limited result post, an unreadable stream frame, a resumed session
whose last turn gave up, events from before the first attach, a caller interrupted by Ctrl-C.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ToolContext, Tools, run_to_completion, telemetry
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import RateLimitError
from req_managed_agents.providers import ClaudeManagedAgents, _delivery
from req_managed_agents.providers._base import Aborted, Opening
from req_managed_agents.providers.claude import _feed
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.api import Api
from tests.support.tools import CountingTools

TOOL_TURNS = [
    Turn(text="Adding.", tool_calls=[call("add", a=1, b=2), call("add", a=10, b=20)]),
    Turn(tool_calls=[call("add", a=3, b=4)]),
    Turn(text=lambda results: f"The answer is {results[0]}.", usage=(7, 3)),
]


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(TOOL_TURNS, ping_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: ClaudeEmulator) -> Iterator[ClaudeManagedAgents]:
    with emulator.provider(timeout=5) as p:
        yield p


@pytest.fixture
def fast_resend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_delivery, "RESEND", _delivery.RESEND.but(base=0.01))


def ids(emulator: ClaudeEmulator, script: list[Turn] | None = None) -> dict[str, str]:
    agent_id = emulator.add_agent(script) if script is not None else emulator.add_agent()
    return {"agent_id": agent_id, "environment_id": emulator.add_environment()}


def posts(emulator: ClaudeEmulator, kind: str) -> list[Any]:
    return [
        r
        for r in emulator.requests
        if r.method == "POST"
        and r.path.endswith("/events")
        and isinstance(r.body, dict)
        and r.body["events"][0]["type"] == kind
    ]


def test_rate_limits_on_the_result_post_are_waited_out_like_server_errors(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, fast_resend: None
) -> None:
    tools = CountingTools()

    @tools.tool
    def throttle_results() -> str:
        """Make the service refuse the next result posts."""
        emulator.fail_requests("POST", r"/v1/sessions/.+/events", 429, times=3, retry_after=0.05)
        return "armed"

    script = [Turn(tool_calls=[call("throttle_results")]), Turn(text="done")]
    result = run_to_completion(provider, "go", handler=tools, timeout=20, **ids(emulator, script))
    assert (result.terminal, result.text) == ("end_turn", "done")
    results = [e for e in emulator.events(str(result.session_id)) if e["type"].endswith("result")]
    assert len(results) == 1, "the result landed exactly once"


def test_a_rate_limit_asking_for_too_long_a_wait_is_raised(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, fast_resend: None
) -> None:
    tools = CountingTools()

    @tools.tool
    def throttle_results() -> str:
        """Make the service refuse result posts for a long while."""
        emulator.fail_requests("POST", r"/v1/sessions/.+/events", 429, times=9, retry_after=3600)
        return "armed"

    script = [Turn(tool_calls=[call("throttle_results")]), Turn(text="done")]
    with pytest.raises(RateLimitError) as caught:
        run_to_completion(provider, "go", handler=tools, timeout=20, **ids(emulator, script))
    assert caught.value.retry_after == 3600


@pytest.mark.parametrize(
    "position",
    [
        pytest.param(0, id="the-prompt-echo"),
        pytest.param(5, id="a-custom-tool-use"),
        pytest.param(8, id="the-idle"),
    ],
)
def test_an_unreadable_frame_is_caught_up_from_the_history(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, position: int
) -> None:
    # Log of turn 1: user.message, status_running, span start, agent.message, span end,
    # two custom tool uses (5, 6), usage, idle (8).
    tools = CountingTools()
    emulator.corrupt_stream(position)
    result = run_to_completion(provider, "Add", handler=tools, timeout=15, **ids(emulator))
    assert (result.terminal, result.text) == ("end_turn", "The answer is 7.")
    assert sorted(tools.calls.values()) == [1, 1, 1]
    logged = {e["id"] for e in emulator.events(str(result.session_id))}
    assert logged <= {e["id"] for e in tools.events}, "handle_event saw every logged event"


def test_resuming_with_a_prompt_after_a_turn_that_gave_up_delivers_the_prompt(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [Turn(text="never", delay=30), Turn(text="second")]
    session = Session(provider, handler=CountingTools(), **ids(emulator, script))
    session.start("p1")
    assert emulator.wait_until(lambda: session.session_id is not None)
    session_id = str(session.session_id)
    # The session exists before its prompt is posted: its log may still be empty.
    assert emulator.wait_until(
        lambda: [e["type"] for e in emulator.events(session_id)][-1:] == ["session.status_running"]
    )
    emulator.fail_turn(session_id)
    assert session.wait(10).stop_reason["retry_status"] == {"type": "exhausted"}
    session.close()

    result = run_to_completion(
        provider, "p2", handler=CountingTools(), session_id=session_id, timeout=10
    )
    assert (result.terminal, result.text) == ("end_turn", "second")
    assert len(posts(emulator, "user.message")) == 2


def test_resuming_an_archived_session_with_a_prompt_sends_nothing(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    first = run_to_completion(
        provider, "p1", handler=CountingTools(), timeout=10, **ids(emulator, ["one", "two"])
    )
    provider.client.archive_session(str(first.session_id))
    result = run_to_completion(
        provider, "p2", handler=CountingTools(), session_id=first.session_id, timeout=10
    )
    assert result.terminal == "terminated"
    assert len(posts(emulator, "user.message")) == 1


def test_events_logged_before_the_first_attach_cannot_end_a_later_turn(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    # Someone else prompts the session before this process attaches; its turn is over by
    # the time our stream opens. Our turn is then caught up after a drop: the old idle is
    # in that history too, and must not pass for the end of ours.
    script = [Turn(text="theirs"), Turn(text="ours", delay=0.5)]
    api = Api(emulator)

    def someone_else_prompts() -> None:
        session_id = emulator.session_ids()[-1]
        api.send(session_id, {"type": "user.message", "content": [{"type": "text", "text": "x"}]})
        emulator.wait_until(lambda: emulator.events(session_id)[-1]["type"].endswith("idle"))

    emulator.before_requests("GET", r"/v1/sessions/.+/events/stream", someone_else_prompts)
    # Log: their turn (0-6), our message (7), running (8), span start (9): drop there.
    emulator.drop_stream(9)
    tools = CountingTools()
    with api:
        result = run_to_completion(
            provider, "mine", handler=tools, timeout=15, **ids(emulator, script)
        )
    assert result.text == "ours"
    assert result.events[0]["type"] == "user.message"
    assert [e["type"] for e in tools.events].count("session.status_idle") == 2


def test_a_rate_limited_reconnect_waits_for_retry_after(
    emulator: ClaudeEmulator,
) -> None:
    # No retries in the HTTP layer: the feed alone decides when to reconnect.
    with emulator.provider(timeout=5, max_retries=0) as provider:
        session = Session(
            provider,
            handler=CountingTools(),
            idle_timeout=0.1,  # heartbeats every 0.2 s: the feed reconnects at once
            **ids(emulator, ["one", "two"]),
        )
        with session:
            assert session.run("hi", timeout=10).text == "one"
            session_id = str(session.session_id)
            path = f"/v1/sessions/{session_id}/events/stream"
            emulator.fail_requests("GET", path, 429, retry_after=1.5)
            assert emulator.wait_until(lambda: len(stream_gets(emulator, path)) >= 3, timeout=10)
    refused, retried = stream_gets(emulator, path)[1:3]
    assert retried.received_at - refused.received_at >= 1.4


def stream_gets(emulator: ClaudeEmulator, path: str) -> list[Any]:
    return [r for r in emulator.requests if r.method == "GET" and r.path == path]


def test_the_result_post_racing_a_cancel_ends_as_cancelled(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    conversation = provider.open_conversation(ids(emulator), Opening(lambda event: None))
    conversation.abort()  # cancel() got here first
    with pytest.raises(Aborted):
        conversation.send_prompt("hi")
    with pytest.raises(Aborted):
        conversation.send_tool_results([], [])
    conversation.close()


def test_ctrl_c_in_run_stops_the_worker_and_signals_the_tools(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    started = threading.Event()
    saw_cancel = threading.Event()
    tools = Tools()

    @tools.tool
    def slow(context: ToolContext) -> str:
        """Wait until told to stop."""
        started.set()
        if context.cancelled.wait(10):
            saw_cancel.set()
        return "stopped"

    main = threading.main_thread().ident
    assert main is not None

    def press_ctrl_c() -> None:
        if started.wait(10):
            signal.pthread_kill(main, signal.SIGINT)  # as the terminal does

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    session = Session(provider, handler=tools, **ids(emulator, [Turn(tool_calls=[call("slow")])]))
    with pytest.raises(KeyboardInterrupt):
        session.run("go", timeout=20)
    assert saw_cancel.wait(20), "the running tool saw its cancel signal"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and rma_threads():
        time.sleep(0.02)
    assert rma_threads() == []


def rma_threads() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.name.startswith(("rma-session", "rma-feed")) and t.is_alive()
    ]


def test_request_telemetry_carries_the_callers_tags(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with telemetry.attach(lambda name, m, md: seen.append((name, md))):
        result = run_to_completion(
            provider,
            "Add",
            handler=CountingTools(),
            telemetry_metadata={"tenant": "acme"},
            timeout=15,
            **ids(emulator),
        )
    requests_seen = [
        (md["method"], md["path"], md.get("tenant"))
        for name, md in seen
        if name.endswith("request.start") and result.session_id in md["path"]
    ] + [
        (md["method"], md["path"], md.get("tenant"))
        for name, md in seen
        if name.endswith("request.start") and md["path"] == "/v1/sessions"
    ]
    assert len(requests_seen) >= 5
    assert {tenant for *_, tenant in requests_seen} == {"acme"}


@pytest.mark.parametrize("after_acting", [False, True], ids=["before-acting", "after-acting"])
@pytest.mark.parametrize("kind", ["user.message", "user.custom_tool_result"])
def test_a_post_whose_connection_resets_is_sent_exactly_once(
    provider: ClaudeManagedAgents,
    emulator: ClaudeEmulator,
    fast_resend: None,
    kind: str,
    after_acting: bool,
) -> None:
    def carries(request: Any) -> bool:
        return isinstance(request.body, dict) and request.body["events"][0]["type"] == kind

    emulator.reset_requests(
        "POST", r"/v1/sessions/.+/events", after_acting=after_acting, where=carries
    )
    tools = CountingTools()
    result = run_to_completion(provider, "Add", handler=tools, timeout=15, **ids(emulator))
    assert (result.terminal, result.text) == ("end_turn", "The answer is 7.")
    logged = [e["type"] for e in emulator.events(str(result.session_id))]
    assert logged.count("user.message") == 1
    assert logged.count("user.custom_tool_result") == 3
    assert sorted(tools.calls.values()) == [1, 1, 1]


def test_an_event_too_large_for_the_stream_decoder_arrives_through_the_history(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The decoder's bound is 16 MiB; a small one stands in for a stream that never ends
    # its event.
    monkeypatch.setattr(_feed, "SSEDecoder", functools.partial(SSEDecoder, max_event_size=1024))
    script = [Turn(text="x" * 4000)]
    result = run_to_completion(
        provider, "go", handler=CountingTools(), timeout=15, **ids(emulator, script)
    )
    assert (result.terminal, result.text) == ("end_turn", "x" * 4000)
    assert len(emulator.stream_connections(str(result.session_id))) >= 2, "it reconnected"


def test_a_turn_resumed_by_answers_the_stream_never_echoes_still_ends() -> None:
    """The service records the results it receives but does not stream them back: the turn
    they resume is followed from its first event, not from their echo."""
    with ClaudeEmulator(TOOL_TURNS, ping_interval=0.2, echo_answers=False) as emulator:
        tools = CountingTools()
        with emulator.provider(timeout=5) as provider:
            result = run_to_completion(provider, "Add", handler=tools, timeout=10, **ids(emulator))
        log = emulator.events(str(result.session_id))
    assert (result.terminal, result.text) == ("end_turn", "The answer is 7.")
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert len(emulator.stream_connections()) == 1, "no reconnect stood in for the echo"
    answers = [e for e in log if e["type"] == "user.custom_tool_result"]
    assert len(answers) == 3, "the history records the answers"
    seen = {e["id"] for e in tools.events}
    assert {e["id"] for e in log} - seen == {e["id"] for e in answers}
