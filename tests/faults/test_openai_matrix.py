"""The fault matrix against the OpenAI Agents emulator: one fault per scenario, at every
position of the session log and on every kind of request a run makes.

What a correct library does, and so what each scenario asserts:

* stream faults - a dropped connection, a duplicated event, a stall past the idle timeout,
  a frame that is not JSON - at any position: recover (reconnect, catch up from the
  session's turns, items and status), with every tool call run once and the result the
  undisturbed run gives;
* ``handle_event`` sees every event of the log once: live, by its own id, or - for what
  happened while no stream was attached, which the service never replays - rebuilt by the
  catch-up from what the service recorded (a turn created or ended, an item added or done,
  the session's status). Only the events that record nothing (text deltas, content parts,
  progress notices) can be missing, and only when the stream was down;
* request faults recover, except where giving up is the only safe choice left (the test id
  then says ``gives-up-<Error>``): the streaming create is a POST that makes a session and
  starts its turn, so only refusals are retried and a burst longer than ``max_retries``
  outlasts them. The tool results carry idempotency keys, so every failure of their posts
  is retried; the catch-up reads (session, turns, a turn's items) are read with reconnects;
* after every answer carrying ``retry-after`` the next request of its kind waits that long.

The matrix runs two ways: against a service that streams the answers it receives (their
``function_call_output`` items announced), and against one that only records them (the
emulator's ``echo_answers=False``), where only a catch-up learns of them - and rebuilds
them after whatever the stream delivered live. The second way is a subset, chosen so that
it still puts every fault where the two ways can differ at about a third of the cost:

* every stream fault at every position from the first ``requires_action`` on. Before it,
  the two logs are the same event for event and no answer exists yet, so a fault there
  meets the same run either way;
* on each request that follows the answers - the two result posts, and the stream and the
  catch-up reads (session, turns, a turn's items) after a drop right before the final
  ``turn.completed``, where the catch-up has the unechoed answers to rebuild - a burst of
  503s longer than the HTTP retries, with ``retry-after``, and a reset before and after the
  service acted. The other statuses and bursts exercise the retry policy, which does not
  care whether answers are echoed: the first way covers them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest

from req_managed_agents import SessionResult, run_to_completion
from req_managed_agents.errors import ManagedAgentsError, RateLimitError, ServerError
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, RecordedRequest, call
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
    OpenAITurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    OpenAITurn(tool_calls=[call("mul", a=5, b=6)]),
    OpenAITurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
_TURN = "agent.session.turn."


def _log(echoed: bool) -> list[str]:
    """The session log of the undisturbed run, position by position; the answers'
    ``function_call_output`` items are announced only when the service echoes them."""
    answers = [_TURN + "item.added"] if echoed else []
    return [
        "agent.session.created",
        *(_TURN + "created", "agent.session.in_progress", _TURN + "in_progress"),
        *(_TURN + "item.added", _TURN + "item.added", _TURN + "content_part.added"),
        *(_TURN + "output_text.delta",) * 3,
        *(_TURN + "output_text.done", _TURN + "content_part.done", _TURN + "item.done"),
        *(_TURN + "item.added", _TURN + "item.done") * 2,
        "agent.session.requires_action",
        *answers * 2,
        *("agent.session.in_progress", _TURN + "in_progress"),
        *(_TURN + "item.added", _TURN + "item.done", "agent.session.requires_action"),
        *answers,
        *("agent.session.in_progress", _TURN + "in_progress"),
        *(_TURN + "item.added", _TURN + "content_part.added"),
        *(_TURN + "output_text.delta",) * 3,
        *(_TURN + "output_text.done", _TURN + "content_part.done", _TURN + "item.done"),
        *(_TURN + "completed", "agent.session.idle"),
    ]


LOG = _log(echoed=True)
UNECHOED_LOG = _log(echoed=False)
# Keep-alives well inside the idle timeout, so only a stall is silent for that long.
PING_INTERVAL = IDLE_TIMEOUT / 3
SESSION = r"/v1/agents/sessions/[^/]+"
# The session's status announcements: after a gap, a later one of the same status (a
# stream's opening snapshot, a catch-up's) stands for one that was missed.
STATUSES = frozenset({"agent.session.idle", "agent.session.requires_action"})
# What a rebuilt event reports, as the facts the catch-up keeps.
_FACTS = {
    _TURN + "created": "created",
    _TURN + "completed": "ended",
    _TURN + "failed": "ended",
    _TURN + "cancelled": "ended",
    _TURN + "item.added": "added",
    _TURN + "item.done": "done",
}


def _posted(request: RecordedRequest) -> list[dict[str, Any]]:
    body = request.body
    events = body.get("events") if isinstance(body, dict) else None
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def _posts_results(*outputs: str) -> Any:
    def where(request: RecordedRequest) -> bool:
        return any(
            e.get("type") == "agent.session.input.tool_result" and e.get("output") in outputs
            for e in _posted(request)
        )

    return where


KINDS = {
    "create-session": RequestKind("POST", r"/v1/agents/sessions"),
    "stream": RequestKind("GET", SESSION + "/events"),
    "post-results-turn1": RequestKind("POST", SESSION + "/events", _posts_results("3", "12")),
    "post-results-turn2": RequestKind("POST", SESSION + "/events", _posts_results("30")),
    "session": RequestKind("GET", SESSION),
    "turns": RequestKind("GET", SESSION + "/turns"),
    "turn-items": RequestKind("GET", SESSION + "/turns/[^/]+/items"),
}
# The events stream and the catch-up reads only follow a reconnect (the first stream is the
# create's answer): this drop (at the first function call) forces one.
CATCH_UP_AFTER_DROP_AT = LOG.index("agent.session.requires_action") - 3
_AFTER_DROP_KINDS = ("stream", "session", "turns", "turn-items")
# The second way: where its log first differs from the first way's (no answer exists before).
FIRST_PAUSE = UNECHOED_LOG.index("agent.session.requires_action")
# A drop before the final turn.completed: the catch-up must rebuild the unechoed answers.
CATCH_UP_AFTER_ANSWERS_AT = len(UNECHOED_LOG) - 2
_AFTER_ANSWERS_KINDS = ("post-results-turn1", "post-results-turn2", *_AFTER_DROP_KINDS)


def _expected_error(
    kind: str, status: int, burst: int, retry_after: bool
) -> type[ManagedAgentsError] | None:
    if kind == "create-session" and burst > RETRIES:
        return RateLimitError if status == 429 else ServerError
    return None


def _with_catch_up_drop(scenario: Scenario, at: int = CATCH_UP_AFTER_DROP_AT) -> Scenario:
    if scenario.kind not in [KINDS[name] for name in _AFTER_DROP_KINDS]:
        return scenario
    fault = scenario.inject

    def inject(emulator: OpenAIAgentsEmulator) -> None:
        emulator.drop_stream(at)
        fault(emulator)

    return dataclasses.replace(scenario, inject=inject)


_STREAM_FAULTS: dict[str, Callable[[OpenAIAgentsEmulator, int], None]] = {
    "drop": lambda emulator, at: emulator.drop_stream(at),
    "duplicate": lambda emulator, at: emulator.duplicate_stream(at),
    "stall": lambda emulator, at: emulator.stall_stream(at, STALL_SECONDS),
    "corrupt": lambda emulator, at: emulator.corrupt_stream(at),
}


def _at_event(fault: Callable[[OpenAIAgentsEmulator, int], None], position: int) -> Inject:
    def inject(emulator: OpenAIAgentsEmulator) -> None:
        fault(emulator, position)

    return inject


def _short(event_type: str) -> str:
    return ".".join(event_type.split(".")[-2:])


def _stream_scenarios(echoed: bool = True) -> list[Scenario]:
    """Each fault at each position; unechoed, from the first pause on."""
    log, first, suffix = (LOG, 0, "") if echoed else (UNECHOED_LOG, FIRST_PAUSE, "-unechoed")
    return [
        Scenario(
            f"{name}-at-{position:02d}-{_short(event_type)}{suffix}",
            _at_event(fault, position),
            echoed=echoed,
        )
        for position, event_type in enumerate(log)
        if position >= first
        for name, fault in _STREAM_FAULTS.items()
    ]


SCENARIOS = [
    Scenario("undisturbed", lambda emulator: None),
    *_stream_scenarios(),
    *(_with_catch_up_drop(s) for s in request_scenarios(KINDS, _expected_error)),
    Scenario("undisturbed-unechoed", lambda emulator: None, echoed=False),
    *_stream_scenarios(echoed=False),
    *second_way(
        [
            _with_catch_up_drop(s, CATCH_UP_AFTER_ANSWERS_AT)
            for s in request_scenarios(
                {name: KINDS[name] for name in _AFTER_ANSWERS_KINDS}, _expected_error
            )
        ]
    ),
]


def _start(echoed: bool = True) -> OpenAIAgentsEmulator:
    return OpenAIAgentsEmulator(SCRIPT, ping_interval=PING_INTERVAL, echo_answers=echoed)


def _run(emulator: OpenAIAgentsEmulator, tools: MatrixTools) -> SessionResult:
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            agent_id=emulator.add_agent(),
        )


def _fact(event: dict[str, Any]) -> tuple[str, str] | None:
    what = _FACTS.get(str(event.get("type")))
    if what is None:
        return None
    item = event.get("item")
    subject = item.get("id") if isinstance(item, dict) else event.get("turn_id")
    return (what, str(subject))


def _check_events(
    checks: Checks,
    emulator: OpenAIAgentsEmulator,
    tools: MatrixTools,
    result: SessionResult | None,
) -> None:
    """``handle_event`` saw each logged event once, in log order: by its id, or (what
    happened while no stream was attached) as the fact it recorded; events that record
    nothing may be missing only where the stream was down."""
    delivered = [str(event.get("event_id")) for event in tools.events]
    duplicates = sorted({i for i in delivered if delivered.count(i) > 1})
    checks.expect(not duplicates, f"events delivered more than once: {duplicates}")
    facts = [_fact(event) for event in tools.events]
    repeated = sorted({str(f) for f in facts if f is not None and facts.count(f) > 1})
    checks.expect(not repeated, f"facts reported more than once: {repeated}")
    if result is None or result.session_id is None:
        return
    log = emulator.events(result.session_id)
    gap = len(emulator.stream_connections()) > 1 or any(
        i.startswith("rma_catchup_") for i in delivered
    )
    logged = {str(e["event_id"]) for e in log}
    # Statuses announced by what no log holds: a stream's opening snapshot, a catch-up.
    announced = {
        str(event.get("type")) for event in tools.events if str(event.get("event_id")) not in logged
    }
    missed = []
    for position, event in enumerate(log):
        fact = _fact(event)
        if str(event["event_id"]) in delivered or (fact is not None and fact in facts):
            continue
        if fact is None and gap and (event["type"] not in STATUSES or event["type"] in announced):
            continue  # recorded nowhere: gone with the connection that would have carried it
        missed.append(f"{position}:{event['type']}")
    checks.expect(not missed, f"handle_event never saw {missed}")
    live = [i for i in delivered if i in logged]
    checks.expect(
        live == [str(e["event_id"]) for e in log if str(e["event_id"]) in live],
        "handle_event saw the live events out of log order",
    )


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """The undisturbed run's result, which every scenario must reproduce, whether the
    service echoes the answers or not."""
    shapes = []
    for echoed, expected in ((True, LOG), (False, UNECHOED_LOG)):
        with _start(echoed) as emulator:
            tools = MatrixTools()
            result = _run(emulator, tools)
            log = emulator.events(str(result.session_id))
            assert [e["type"] for e in log] == expected, json.dumps([e["type"] for e in log])
            delivered = {str(e.get("event_id")) for e in tools.events}
            assert {str(e["event_id"]) for e in log} <= delivered
        assert result.terminal == "end_turn"
        assert result.text == "The total is 30."
        assert [r.content for r in result.tool_results] == ["3", "12", "30"]
        shapes.append(shape(result))
    assert shapes[0] == shapes[1]
    return shapes[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_openai_fault(scenario: Scenario, reference: dict[str, Any]) -> None:
    run_checked(scenario, reference, lambda: _start(scenario.echoed), _run, _check_events)
