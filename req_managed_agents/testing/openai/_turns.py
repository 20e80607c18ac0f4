"""How the API turns of a session begin, pause, resume and end, and what each logs.

A user message opens a root turn (``turn.created``, status ``queued``); it begins at once
when no other root turn is open (``agent.session.in_progress``, ``turn.in_progress``, one
``turn.item.added`` per user message), and otherwise waits its turn. A turn whose step
makes calls pauses (``waiting``; the session ``requires_action``) and resumes when every
call is answered (``agent.session.in_progress``, ``turn.in_progress``). A turn ends
``completed``, ``failed`` (after an ``error`` event) or ``cancelled``, and its subagents'
open turns end with it; then the next queued turn begins, or the session goes ``idle``
(``budget_reached`` once its spend has reached its limit: the turns still queued then fail
with ``session_budget_exceeded``). A failed session stays failed. Called with the
emulator's lock held; playing the steps is the player's job.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai import _items
from req_managed_agents.testing.openai._model import Turn, token_usage
from req_managed_agents.testing.openai._wire import now
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from collections.abc import Iterator

    from req_managed_agents.testing.openai._log import SessionLog
    from req_managed_agents.testing.openai._model import Session, Subagent

BUDGET_EXCEEDED = "session_budget_exceeded"


class TurnFlow:
    """The turn transitions of sessions, each logging what the API reports."""

    def __init__(self, log: SessionLog) -> None:
        self._log = log

    def new_turn(self, session: Session, subagent: Subagent | None = None) -> Turn:
        """A queued turn of the root agent (or of ``subagent``), logged as created."""
        record = {
            "id": new_id("turn"),
            "object": "agent.session.turn",
            "agent_id": session.root_agent_id if subagent is None else subagent.id,
            "completed_at": None,
            "created_at": now(),
            "error": None,
            "session_id": session.id,
            "started_at": None,
            "status": "queued",
            "subagent_id": None if subagent is None else subagent.id,
            "usage": None,
            "prompt_cache_options": copy.deepcopy(session.record["prompt_cache_options"]),
        }
        turn = Turn(record, subagent)
        session.turns[turn.id] = turn
        self._log.turn_event(session, turn, "created")
        return turn

    def open_root_turn(self, session: Session, messages: list[dict[str, Any]]) -> Turn | None:
        """Open a root turn for user ``messages``; return it if it began (its first step is
        to be played), None if it waits behind the open one."""
        turn = self.new_turn(session)
        turn.messages = messages
        if session.active is not None:
            session.queued.append(turn)
            return None
        self.begin(session, turn)
        return turn

    def begin(self, session: Session, turn: Turn) -> None:
        """Start a root turn: it becomes the active one and the step's performer."""
        session.active = session.performer = turn
        if session.status != "in_progress":
            self._log.set_status(session, "in_progress")
        self.start(session, turn)
        for message in turn.messages:
            content = copy.deepcopy(message["content"])
            self._log.add_item(session, turn, _items.user_message(turn, content), output=False)

    def start(self, session: Session, turn: Turn) -> None:
        """A turn (root or subagent) starts, or resumes, running."""
        turn.record["status"] = "in_progress"
        turn.record["started_at"] = turn.record["started_at"] or now()
        turn.record["usage"] = turn.record["usage"] or token_usage()
        self._log.turn_event(session, turn, "in_progress")

    def pause(self, session: Session) -> None:
        """The performing turn waits for the calls it made; the session requires action."""
        for turn in {a.turn.id: a.turn for a in session.awaiting.values()}.values():
            turn.record["status"] = "waiting"
        self._log.set_status(session, "requires_action")

    def resume(self, session: Session) -> list[str]:
        """Every call is answered: the session runs again. Return the answers' texts
        (function outputs in call order, then MCP decisions in call order)."""
        answers = [a for a in session.awaiting.values() if a.kind == "function"]
        answers += [a for a in session.awaiting.values() if a.kind == "mcp"]
        waiting = {a.turn.id: a.turn for a in session.awaiting.values()}
        session.awaiting = {}
        self._log.set_status(session, "in_progress")
        for turn in waiting.values():
            self.start(session, turn)
        return [str(a.answer) for a in answers]

    def finish_subagent(self, session: Session, subagent: Subagent, report: str) -> None:
        """A subagent's turn completes and it reports to the root agent's turn."""
        turn = subagent.turn
        root = session.active
        if turn is not None and turn.open:
            self._end(session, turn, "completed")
        subagent.turn = None
        if root is not None:
            message = _items.agent_message(root, subagent.id, session.root_agent_id, report)
            self._log.add_item(session, root, message, output=False)
            session.performer = root

    def complete(self, session: Session) -> Turn | None:
        """The active turn completes; return the next turn to play, if one begins."""
        return self._end_active(session, "completed")

    def cancel(self, session: Session) -> Turn | None:
        """The active turn is cancelled; return the next turn to play, if one begins."""
        return self._end_active(session, "cancelled")

    def fail(
        self, session: Session, code: str, message: str, *, session_failed: bool = False
    ) -> Turn | None:
        """The active turn fails (and with ``session_failed`` the session too); return the
        next turn to play, if one begins."""
        self._log.error(session, code, message)
        error = {"code": code, "message": message}
        if not session_failed:
            return self._end_active(session, "failed", error)
        for turn in [*self._open_turns(session), *session.queued]:
            self._end(session, turn, "failed", error)
        self._clear(session)
        session.queued.clear()
        session.record["error"] = message
        self._log.set_status(session, "failed")
        return None

    def abandon(self, session: Session) -> None:
        """The session is deleted: its open and queued turns are cancelled, nothing follows."""
        for turn in [*self._open_turns(session), *session.queued]:
            self._end(session, turn, "cancelled")
        session.queued.clear()
        self._clear(session)

    def _end_active(
        self, session: Session, status: str, error: dict[str, str] | None = None
    ) -> Turn | None:
        for turn in self._open_turns(session):
            self._end(session, turn, status, error)
        self._clear(session)
        if session.over_budget():
            budget = {"code": BUDGET_EXCEEDED, "message": "The session's spend limit is reached."}
            while session.queued:
                self._end(session, session.queued.popleft(), "failed", budget)
            self._log.set_status(session, "budget_reached")
            return None
        if session.queued:
            turn = session.queued.popleft()
            self.begin(session, turn)
            return turn
        self._log.set_status(session, "idle")
        return None

    def _open_turns(self, session: Session) -> Iterator[Turn]:
        """The open subagent turns, then the active root turn."""
        for subagent in session.subagents.values():
            if subagent.turn is not None and subagent.turn.open:
                yield subagent.turn
        if session.active is not None and session.active.open:
            yield session.active

    def _end(
        self, session: Session, turn: Turn, status: str, error: dict[str, str] | None = None
    ) -> None:
        turn.record.update(status=status, completed_at=now(), error=error)
        if turn.subagent is not None:
            turn.subagent.turn = None
        self._log.turn_event(session, turn, status)

    @staticmethod
    def _clear(session: Session) -> None:
        """No turn runs any more: nothing is awaited, and a step still thinking stops."""
        session.awaiting = {}
        session.active = session.performer = None
        session.generation += 1
