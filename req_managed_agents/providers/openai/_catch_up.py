"""What a session did while no one listened, rebuilt as the events its stream would have
carried.

The stream of an OpenAI Agents session never replays: an event sent while the connection
was down is gone from it. What the events announced is not: the session's turns, its items
and its status (with the actions it waits for) can be read back. So after every (re)connect
the feed lists them and rebuilds, in the shapes of the live events, what it has not
delivered yet - a turn created or ended, an item added or done, the session's status. The
rebuilt events carry ids of the form ``rma_catchup_...`` (the same id for the same rebuilt
fact, so a second catch-up never delivers it twice); text deltas are not rebuilt (the
finished message has the whole text).

:class:`Tracker` remembers which of those facts were delivered, live or rebuilt, and drops
a second report of one: a fact can reach us both ways when it happened around a reconnect.
A status announced again with no fact in between is dropped too.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from req_managed_agents.model._recent import RecentSet
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.providers.openai._events import (
    BOUNDARIES,
    BOUNDARY_OF_STATUS,
    ITEM_ADDED,
    ITEM_DONE,
    TURN_CREATED,
    TURN_ENDS,
)

__all__ = ["CATCH_UP_PREFIX", "Tracker", "catch_up"]

CATCH_UP_PREFIX = "rma_catchup_"
# How many delivered facts are remembered to drop a second report of one.
FACTS_KEPT = 20_000
_ENDED = frozenset(TURN_ENDS.values())
_FINISHED_ITEMS = frozenset({"completed", "incomplete", "failed"})
# Items that are not the turn's agent output - inputs, a subagent's report: added, never done.
_INPUT_ITEMS = frozenset(
    {"function_call_output", "computer_use_approval_request_result", "agent_message"}
)
_END_EVENT = {status: kind for kind, status in TURN_ENDS.items()}

Event = dict[str, Any]


class Tracker:
    """The facts delivered so far: turns created and ended, items added and done, and the
    last session status announced. Used by the feed's thread only."""

    def __init__(self, last_status: str | None = None) -> None:
        self._facts = RecentSet(FACTS_KEPT)
        # Turns seen created and not yet seen ending: a catch-up reads back to them.
        self.open_turns: set[str] = set()
        self.last_status = last_status

    def knows(self, fact: tuple[str, str]) -> bool:
        return fact in self._facts

    def note(self, event: Mapping[str, Any]) -> bool:
        """Take in a delivered event; ``False`` when it reports a fact already reported."""
        kind = event.get("type")
        if kind in BOUNDARIES:
            # A status announced again with nothing in between (the snapshot a stream opens
            # with, a catch-up's rebuilt status) is a repeat.
            session = event.get("session")
            status = session.get("status") if isinstance(session, Mapping) else None
            status = str(status) if status else str(kind).rsplit(".", 1)[-1]
            if status == self.last_status:
                return False
            self.last_status = status
            return True
        fact = _fact(event)
        if fact is None:
            return True
        if fact[0] == "added" and ("done", fact[1]) in self._facts:
            return False  # an item seen finished cannot start again
        if not self._facts.add(fact):
            return False
        self.last_status = None  # the session moved since its last announced status
        if fact[0] == "created":
            self.open_turns.add(fact[1])
        elif fact[0] == "ended":
            self.open_turns.discard(fact[1])
        return True


def _fact(event: Mapping[str, Any]) -> tuple[str, str] | None:
    """The fact an event reports, as ``(what, id)``; None for the rest (text deltas,
    errors, environment news), which are only ever delivered live."""
    kind = event.get("type")
    if kind == TURN_CREATED:
        return ("created", str(event.get("turn_id")))
    if kind in TURN_ENDS:
        return ("ended", str(event.get("turn_id")))
    if kind in (ITEM_ADDED, ITEM_DONE):
        item = event.get("item")
        item_id = item.get("id") if isinstance(item, Mapping) else None
        if isinstance(item_id, str) and item_id:
            return ("done" if kind == ITEM_DONE else "added", item_id)
    return None


def catch_up(
    client: OpenAIClient,
    session_id: str,
    tracker: Tracker,
    telemetry_metadata: Mapping[str, Any],
    cancelled: threading.Event | None = None,
) -> list[Event]:
    """The events the feed has not delivered, rebuilt from the session's turns, the items
    of its root turns that were running, and its status - oldest first. Once ``cancelled``
    is set (the feed stopped), a retry's wait ends and no further page is read.

    The status is read first: the turns and items read after it are at least as recent, so
    a status that says a turn ended never comes without that turn's end (read the other way
    round, a turn could end between the two reads, and its idle arrive without it)."""
    session = client.get_session(
        session_id, telemetry_metadata=telemetry_metadata, cancelled=cancelled
    )
    rebuilt: list[Event] = []
    turns = _turns_since(client, session_id, tracker, telemetry_metadata, cancelled)
    for turn in reversed(turns):
        turn_id = str(turn.get("id"))
        if not tracker.knows(("created", turn_id)):
            rebuilt.append(_turn_event(TURN_CREATED, "created", session_id, turn))
        if turn.get("subagent_id") is None:
            items = client.list_turn_items(
                session_id, turn_id, telemetry_metadata=telemetry_metadata, cancelled=cancelled
            )
            rebuilt += _item_events(session_id, turn_id, items, tracker)
        status = turn.get("status")
        if status in _ENDED and not tracker.knows(("ended", turn_id)):
            rebuilt.append(_turn_event(_END_EVENT[str(status)], str(status), session_id, turn))
    status = session.get("status")
    boundary = BOUNDARY_OF_STATUS.get(str(status))
    if boundary is not None and (rebuilt or tracker.last_status != status):
        digest = hashlib.sha256(
            json.dumps(
                [session.get("last_active_at"), session.get("required_actions")],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()[:16]
        rebuilt.append(
            {
                "type": boundary,
                "event_id": f"{CATCH_UP_PREFIX}session_{status}_{digest}",
                "session": session,
            }
        )
    return rebuilt


def _turns_since(
    client: OpenAIClient,
    session_id: str,
    tracker: Tracker,
    telemetry_metadata: Mapping[str, Any],
    cancelled: threading.Event | None,
) -> list[Mapping[str, Any]]:
    """The turns that are new or were running, newest first: read back until a turn seen
    ending, once every turn seen running has been passed."""
    waiting = set(tracker.open_turns)
    found: list[Mapping[str, Any]] = []
    turns = client.iter_turns(
        session_id, telemetry_metadata=telemetry_metadata, cancelled=cancelled
    )
    for turn in turns:
        turn_id = str(turn.get("id"))
        if tracker.knows(("ended", turn_id)) and not waiting:
            break
        waiting.discard(turn_id)
        if not tracker.knows(("ended", turn_id)):
            found.append(turn)
    return found


def _turn_event(kind: str, what: str, session_id: str, turn: Mapping[str, Any]) -> Event:
    turn_id = str(turn.get("id"))
    event: Event = {
        "type": kind,
        "event_id": f"{CATCH_UP_PREFIX}{turn_id}_{what}",
        "session_id": session_id,
        "turn": dict(turn),
        "turn_id": turn_id,
    }
    if kind in TURN_ENDS:
        event["usage"] = turn.get("usage")
    return event


def _item_events(
    session_id: str, turn_id: str, items: Iterable[Mapping[str, Any]], tracker: Tracker
) -> list[Event]:
    """An item's ``added`` and, once it finished, its ``done`` - for agent output; inputs
    (the user's message, a function's output) are only ever added. Each in the service's
    item order, with the ``output_index`` the stream gives it: its place among the turn's
    agent output (none for the rest)."""
    rebuilt: list[Event] = []
    outputs = 0
    for item in items:
        item_id = item.get("id")
        is_input = item.get("type") in _INPUT_ITEMS or (
            item.get("type") == "message" and item.get("role") == "user"
        )
        index = None if is_input else outputs
        outputs += 0 if is_input else 1
        if not isinstance(item_id, str) or not item_id:
            continue
        finished = not is_input and item.get("status", "completed") in _FINISHED_ITEMS
        base = {"session_id": session_id, "turn_id": str(item.get("turn_id") or turn_id)}
        if not tracker.knows(("added", item_id)) and not tracker.knows(("done", item_id)):
            rebuilt.append(
                {
                    "type": ITEM_ADDED,
                    "event_id": f"{CATCH_UP_PREFIX}{item_id}_added",
                    "item": dict(item),
                    "output_index": index,
                    **base,
                }
            )
        if finished and not tracker.knows(("done", item_id)):
            rebuilt.append(
                {
                    "type": ITEM_DONE,
                    "event_id": f"{CATCH_UP_PREFIX}{item_id}_done",
                    "item": dict(item),
                    "output_index": index,
                    **base,
                }
            )
    return rebuilt
