"""The session log of the OpenAI emulator: events logged, and the items they report.

Every event gets a new ``event_id`` and goes into the session's log, a copy of everything
it says as it was at that moment (a later change to an item or a turn shows in later
events only). Session-level events (``agent.session.<status>``) carry the session's view;
turn events the turn; item events the item, with its ``output_index`` when it is agent
output (null for a user message, a function call output or a message between agents).
Called with the emulator's lock held.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._wire import now
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.openai._model import Session, Turn
    from req_managed_agents.testing.server import Lifecycle


class SessionLog:
    """Logs events into sessions, announcing each to ``lifecycle`` (the emulator's, whose
    lock is held): a change its waiters and the session's streams wake for."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle

    def announce(self, session: Session) -> None:
        """Wake what waits for a change of ``session``, its streams among them."""
        self._lifecycle.announce(session.id)

    def append(self, session: Session, event: dict[str, Any]) -> dict[str, Any]:
        """Log an event with a new ``event_id``; return the logged copy."""
        logged = {"event_id": new_id("event"), **copy.deepcopy(event)}
        session.log.append(logged)
        session.record["last_active_at"] = now()
        self.announce(session)
        return logged

    def session_event(self, session: Session) -> dict[str, Any]:
        """Log ``agent.session.<status>`` with the session as it is now."""
        return self.append(session, status_event(session))

    def set_status(self, session: Session, status: str) -> None:
        """Change the session's status and log the event that says so."""
        session.record["status"] = status
        self.session_event(session)

    def turn_event(self, session: Session, turn: Turn, kind: str) -> None:
        """Log ``agent.session.turn.<kind>`` with the turn as it is now."""
        event: dict[str, Any] = {
            "type": f"agent.session.turn.{kind}",
            "session_id": session.id,
            "turn_id": turn.id,
            "turn": turn.record,
        }
        if kind in ("completed", "failed", "cancelled"):
            event["usage"] = turn.record["usage"]
        self.append(session, event)

    def add_item(
        self, session: Session, turn: Turn, item: dict[str, Any], *, output: bool
    ) -> int | None:
        """Record an item of ``turn`` and log ``turn.item.added``; return its output index
        (None unless it is agent ``output``)."""
        index = None
        if output:
            index = turn.outputs
            turn.outputs += 1
        self.record_item(session, turn, item)
        self.append(session, self._item_event("item.added", session, turn, item, index))
        return index

    @staticmethod
    def record_item(session: Session, turn: Turn, item: dict[str, Any]) -> None:
        """Record an item of ``turn`` without announcing it (the items list it)."""
        owner = turn.subagent.id if turn.subagent is not None else None
        session.items.append((owner, item))

    def finish_item(
        self, session: Session, turn: Turn, item: dict[str, Any], index: int | None, status: str
    ) -> None:
        """Set an output item's final ``status`` and log ``turn.item.done``."""
        item["status"] = status
        self.append(session, self._item_event("item.done", session, turn, item, index))

    def part_event(
        self, session: Session, turn: Turn, item: dict[str, Any], kind: str, **fields: Any
    ) -> None:
        """Log a content event of an assistant message's only part (``content_part.added``,
        ``output_text.delta``, ...)."""
        event = {
            "type": f"agent.session.turn.{kind}",
            "session_id": session.id,
            "turn_id": turn.id,
            "item_id": item["id"],
            "output_index": fields.pop("output_index"),
            "content_index": 0,
            **fields,
        }
        self.append(session, event)

    def error(self, session: Session, code: str, message: str) -> None:
        """Log the ``error`` event that comes before a failed turn."""
        error = {"code": code, "message": message, "param": None, "type": _error_type(code)}
        self.append(session, {"type": "error", "session_id": session.id, "error": error})

    @staticmethod
    def _item_event(
        kind: str, session: Session, turn: Turn, item: dict[str, Any], index: int | None
    ) -> dict[str, Any]:
        return {
            "type": f"agent.session.turn.{kind}",
            "session_id": session.id,
            "turn_id": turn.id,
            "item": item,
            "output_index": index,
        }


def status_event(session: Session) -> dict[str, Any]:
    """``agent.session.<status>`` for the session as it is now (unlogged, no id yet)."""
    return {"type": f"agent.session.{session.status}", "session": session.view()}


def _error_type(code: str) -> str:
    if code in ("invalid_request", "context_length_exceeded", "session_budget_exceeded"):
        return "invalid_request_error"
    return "server_error"
