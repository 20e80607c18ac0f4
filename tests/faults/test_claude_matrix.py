"""The fault matrix against the Claude emulator: one fault per scenario, at every position of
the session log and on every kind of request a run makes.

What a correct library does, and so what each scenario asserts:

* stream faults - a dropped connection, a duplicated event, a stall past the idle timeout,
  a frame that is not JSON - at any position: recover (reconnect, page the history), with
  every event delivered once;
* request faults recover, except where giving up is the only safe choice left (the test id
  then says ``gives-up-<Error>``): creating the session is retried by the HTTP layer alone,
  like an idempotent call, so a burst of 3 errors outlasts ``max_retries=2``. Every other
  kind recovers from bursts of 1 and 3 and from resets: posted events (the ``user.message``
  and the tool results) are checked against the history, which shows whether they landed,
  and re-sent when missing; the stream and the history are read with reconnects;
* after every answer carrying ``retry-after`` the next request of its kind waits that long.

The matrix runs two ways: against a service that streams the answers it receives back
(``user.custom_tool_result`` echoed, as the docs say), and against one that only records
them in the history (the emulator's ``echo_answers=False``): the turn the answers resume
must then be followed without their echo, and ``handle_event`` sees the answers only where
a catch-up read them. The second way is a subset, chosen so that it still puts every fault
where the two ways can differ at about a third of the cost:

* every stream fault at every position from the first ``session.status_idle`` on that the
  stream carries (unechoed answers it does not, so no fault can meet them). Before that
  idle the two runs are the same event for event and no answer exists yet;
* on each request that follows the answers - the two result posts, and the history read
  after a drop at the ``status_running`` the first answers start, whose catch-up holds the
  unechoed answers - a burst of 503s longer than the HTTP retries, with ``retry-after``,
  and a reset before and after the service acted (the posts' "did it land?" look-up). The
  other statuses and bursts exercise the retry policy, which does not care whether answers
  are echoed: the first way covers them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from req_managed_agents import SessionResult, run_to_completion
from req_managed_agents.errors import ManagedAgentsError, RateLimitError, ServerError
from req_managed_agents.testing import ClaudeEmulator, RecordedRequest, Turn, call
from tests.faults._matrix import (
    IDLE_TIMEOUT,
    PROMPT,
    RETRIES,
    RUN_TIMEOUT,
    STALL_SECONDS,
    Checks,
    Inject,
    MatrixTools,
    RequestKind,
    Scenario,
    request_scenarios,
    run_checked,
    second_way,
    shape,
)

SCRIPT = [
    Turn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    Turn(tool_calls=[call("mul", a=5, b=6)]),
    Turn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
# The session log of the undisturbed run, position by position.
LOG = [
    "user.message",
    *("session.status_running", "span.model_request_start", "agent.message"),
    *("span.model_request_end", "agent.custom_tool_use", "agent.custom_tool_use"),
    *("session.usage", "session.status_idle"),
    *("user.custom_tool_result", "user.custom_tool_result"),
    *("session.status_running", "span.model_request_start", "span.model_request_end"),
    *("agent.custom_tool_use", "session.usage", "session.status_idle"),
    "user.custom_tool_result",
    *("session.status_running", "span.model_request_start", "agent.message"),
    *("span.model_request_end", "session.usage", "session.status_idle"),
]
# The answers the client sends: a service that does not echo them leaves them off the stream.
ANSWERS = frozenset({"user.custom_tool_result"})
# Heartbeats well inside the idle timeout, so only a stall is silent for that long.
PING_INTERVAL = IDLE_TIMEOUT / 3
EVENTS_PATH = r"/v1/sessions/[^/]+/events"


def _posted(request: RecordedRequest) -> list[dict[str, Any]]:
    body = request.body
    events = body.get("events") if isinstance(body, dict) else None
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _posts_message(request: RecordedRequest) -> bool:
    return any(e.get("type") == "user.message" for e in _posted(request))


def _result_text(event: dict[str, Any]) -> str:
    content = event.get("content")
    blocks = content if isinstance(content, list) else []
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def _posts_results(*texts: str) -> Any:
    def where(request: RecordedRequest) -> bool:
        return any(
            e.get("type") == "user.custom_tool_result" and _result_text(e) in texts
            for e in _posted(request)
        )

    return where


KINDS = {
    "create-session": RequestKind("POST", r"/v1/sessions"),
    "stream": RequestKind("GET", r"/v1/sessions/[^/]+/events/stream"),
    "post-message": RequestKind("POST", EVENTS_PATH, _posts_message),
    "post-results-turn1": RequestKind("POST", EVENTS_PATH, _posts_results("3", "12")),
    "post-results-turn2": RequestKind("POST", EVENTS_PATH, _posts_results("30")),
    "history": RequestKind("GET", EVENTS_PATH),
}
# The history is only read after a reconnect: this drop (at the first tool use) forces one.
HISTORY_AFTER_DROP_AT = LOG.index("agent.custom_tool_use")
# The second way: no answer exists before the first pause, where the two ways part.
FIRST_PAUSE = LOG.index("session.status_idle")
# A drop at the status_running the first answers start: the history holds the answers the
# stream never carried, and the reconnect reads them.
HISTORY_AFTER_ANSWERS_AT = LOG.index("user.custom_tool_result") + 2
_AFTER_ANSWERS_KINDS = ("post-results-turn1", "post-results-turn2", "history")


def _expected_error(
    kind: str, status: int, burst: int, retry_after: bool
) -> type[ManagedAgentsError] | None:
    if kind == "create-session" and burst > RETRIES:
        return RateLimitError if status == 429 else ServerError
    return None


def _with_history_drop(scenario: Scenario, at: int = HISTORY_AFTER_DROP_AT) -> Scenario:
    if scenario.kind is not KINDS["history"]:
        return scenario
    fault = scenario.inject

    def inject(emulator: ClaudeEmulator) -> None:
        emulator.drop_stream(at)
        fault(emulator)

    return dataclasses.replace(scenario, inject=inject)


_STREAM_FAULTS: dict[str, Callable[[ClaudeEmulator, int], None]] = {
    "drop": lambda emulator, at: emulator.drop_stream(at),
    "duplicate": lambda emulator, at: emulator.duplicate_stream(at),
    "stall": lambda emulator, at: emulator.stall_stream(at, STALL_SECONDS),
    "corrupt": lambda emulator, at: emulator.corrupt_stream(at),
}


def _at_event(fault: Callable[[ClaudeEmulator, int], None], position: int) -> Inject:
    def inject(emulator: ClaudeEmulator) -> None:
        fault(emulator, position)

    return inject


def _stream_scenarios(echoed: bool = True) -> list[Scenario]:
    """Each fault at each position; unechoed, from the first pause on, where the stream
    carries an event (the answers it does not)."""
    suffix = "" if echoed else "-unechoed"
    return [
        Scenario(
            f"{name}-at-{position:02d}-{event_type}{suffix}",
            _at_event(fault, position),
            echoed=echoed,
        )
        for position, event_type in enumerate(LOG)
        if echoed or (position >= FIRST_PAUSE and event_type not in ANSWERS)
        for name, fault in _STREAM_FAULTS.items()
    ]


SCENARIOS = [
    Scenario("undisturbed", lambda emulator: None),
    *_stream_scenarios(),
    *(_with_history_drop(s) for s in request_scenarios(KINDS, _expected_error)),
    Scenario("undisturbed-unechoed", lambda emulator: None, echoed=False),
    *_stream_scenarios(echoed=False),
    *second_way(
        [
            _with_history_drop(s, HISTORY_AFTER_ANSWERS_AT)
            for s in request_scenarios(
                {name: KINDS[name] for name in _AFTER_ANSWERS_KINDS}, _expected_error
            )
        ]
    ),
]


def _start(echoed: bool = True) -> ClaudeEmulator:
    return ClaudeEmulator(SCRIPT, ping_interval=PING_INTERVAL, echo_answers=echoed)


def _run(emulator: ClaudeEmulator, tools: MatrixTools) -> SessionResult:
    connect: dict[str, Any] = {
        "agent_id": emulator.add_agent(),
        "environment_id": emulator.add_environment(),
    }
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            **connect,
        )


def _check_events(
    checks: Checks, emulator: ClaudeEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """``handle_event`` saw each logged event once, in log order (only some of them when
    the run gave up; the answers only where a catch-up read them, when the service does not
    echo them)."""
    delivered = [str(event.get("id")) for event in tools.events]
    duplicates = sorted({i for i in delivered if delivered.count(i) > 1})
    checks.expect(not duplicates, f"events delivered more than once: {duplicates}")
    if result is None or result.session_id is None:
        logged = {str(e["id"]) for s in emulator.session_ids() for e in emulator.events(s)}
        unknown = [i for i in delivered if i not in logged]
        checks.expect(not unknown, f"delivered events the service never logged: {unknown}")
        return
    log = emulator.events(result.session_id)
    echoed = emulator.echo_answers
    missed = [
        f"{i}:{e['type']}"
        for i, e in enumerate(log)
        if str(e["id"]) not in delivered and (echoed or e["type"] not in ANSWERS)
    ]
    checks.expect(not missed, f"handle_event never saw {missed}")
    in_order = [i for i in delivered if i in {str(e["id"]) for e in log}]
    checks.expect(
        in_order == [str(e["id"]) for e in log if str(e["id"]) in in_order],
        "handle_event saw the events out of log order",
    )


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """The undisturbed run's result, which every scenario must reproduce, whether the
    service echoes the answers or not."""
    shapes = []
    for echoed in (True, False):
        with _start(echoed) as emulator:
            result = _run(emulator, MatrixTools())
            assert [e["type"] for e in emulator.events(str(result.session_id))] == LOG
        assert result.terminal == "end_turn"
        assert result.text == "The total is 30."
        assert [r.content for r in result.tool_results] == ["3", "12", "30"]
        shapes.append(shape(result))
    assert shapes[0] == shapes[1]
    return shapes[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_claude_fault(scenario: Scenario, reference: dict[str, Any]) -> None:
    run_checked(scenario, reference, lambda: _start(scenario.echoed), _run, _check_events)
