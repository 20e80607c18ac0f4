"""The OpenAI Agents runtime of the fault matrix.

What a correct library does here, beyond what every runtime does:

* stream faults at any position: recover (reconnect, catch up from the session's turns,
  items and status);
* ``handle_event`` sees every event of the log once: live, by its own id, or - for what
  happened while no stream was attached, which the service never replays - rebuilt by the
  catch-up from what the service recorded (a turn created or ended, an item added or done,
  the session's status). Only the events that record nothing (text deltas, content parts,
  progress notices) can be missing, and only when the stream was down;
* request faults: the streaming create is a POST that makes a session and starts its turn,
  so only refusals are retried and a burst longer than ``max_retries`` outlasts them (the
  test id says ``gives-up-<Error>``). The tool results carry idempotency keys, so every
  failure of their posts is retried; the catch-up reads (session, turns, a turn's items)
  are read with reconnects.

The second way (``echo_answers=False``: the service records the answers'
``function_call_output`` items but does not announce them) leaves only a catch-up to learn
of them - and rebuild them after whatever the stream delivered live. Its subset: every
stream fault at every position from the first ``requires_action`` on (before it the two
logs are the same event for event and no answer exists yet); and the representative
request faults on the two result posts, and on the stream and the catch-up reads after a
drop right before the final ``turn.completed``, where the catch-up has the unechoed answers
to rebuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents import SessionResult
from req_managed_agents.providers import _delivery
from req_managed_agents.providers.openai import _feed
from req_managed_agents.providers.openai.api import _core
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn
from tests.faults._matrix import (
    PING_INTERVAL,
    Checks,
    MatrixTools,
    RequestKind,
    Runtime,
    script,
)
from tests.faults._scenarios import posting, session_scenarios

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
_RESULT = "agent.session.input.tool_result"


def _output(event: dict[str, Any]) -> object:
    return event.get("output")


KINDS = {
    "create-session": RequestKind("POST", r"/v1/agents/sessions"),
    "stream": RequestKind("GET", SESSION + "/events"),
    "post-results-turn1": RequestKind(
        "POST", SESSION + "/events", posting(_RESULT, _output, "3", "12")
    ),
    "post-results-turn2": RequestKind("POST", SESSION + "/events", posting(_RESULT, _output, "30")),
    "session": RequestKind("GET", SESSION),
    "turns": RequestKind("GET", SESSION + "/turns"),
    "turn-items": RequestKind("GET", SESSION + "/turns/[^/]+/items"),
}
# The events stream and the catch-up reads only follow a reconnect (the first stream is the
# create's answer).
_AFTER_A_DROP = ["stream", "session", "turns", "turn-items"]
# The second way: where its log first differs from the first way's (no answer exists before).
FIRST_PAUSE = UNECHOED_LOG.index("agent.session.requires_action")


def _short(event_type: str) -> str:
    return ".".join(event_type.split(".")[-2:])


def _positions(echoed: bool) -> list[tuple[int, str]]:
    """Every position; unechoed, from the first pause on."""
    log, first = (LOG, 0) if echoed else (UNECHOED_LOG, FIRST_PAUSE)
    return [(at, _short(event_type)) for at, event_type in enumerate(log) if at >= first]


SCENARIOS = session_scenarios(
    _positions,
    KINDS,
    after_a_drop=_AFTER_A_DROP,
    # A drop at the first function call forces a reconnect.
    drop_at=LOG.index("agent.session.requires_action") - 3,
    after_answers=["post-results-turn1", "post-results-turn2", *_AFTER_A_DROP],
    # A drop before the final turn.completed: the catch-up must rebuild the unechoed answers.
    answers_drop_at=len(UNECHOED_LOG) - 2,
)


def _read_log(
    emulator: OpenAIAgentsEmulator, result: SessionResult, tools: MatrixTools
) -> list[str]:
    """The log's event types, each marked where it did not reach ``handle_event`` live."""
    delivered = {str(e.get("event_id")) for e in tools.events}
    return [
        e["type"] if str(e["event_id"]) in delivered else f"{e['type']} (not delivered)"
        for e in emulator.events(str(result.session_id))
    ]


def _fact(event: Mapping[str, Any]) -> tuple[str, str] | None:
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
    checks.delivered_once(delivered)
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
    checks.saw_the_log(missed, delivered, [str(e["event_id"]) for e in log], "live events")


OPENAI = Runtime(
    name="openai",
    start=lambda echoed: OpenAIAgentsEmulator(
        script(OpenAITurn), ping_interval=PING_INTERVAL, echo_answers=echoed
    ),
    connect=lambda emulator: {"agent_id": emulator.add_agent()},
    scenarios=SCENARIOS,
    log=_log,
    read_log=_read_log,
    check_events=_check_events,
    backoffs=[(_feed, "RECONNECT"), (_delivery, "RESEND"), (_core, "REQUESTS")],
)
