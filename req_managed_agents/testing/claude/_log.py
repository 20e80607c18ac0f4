"""The session log of the Claude emulator: events logged, and the status changes they report.

Every event gets a new id and a ``processed_at`` (null for a queued user event until its turn
begins) and goes to the primary log, or to a subagent thread's (cross-posted to the primary
one when it needs the client). A status change updates the session's (or thread's) record and
its ``stats``, which are taken at each status change, so that two reads in between answer the
same object. The endings every turn shares are here too: ``session.usage`` right before every
idle and terminal ending (and nowhere else), the idle, a terminal error and termination.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._model import _Session, _Thread
    from req_managed_agents.testing.server import Lifecycle


class SessionLog:
    """Logs events into sessions and their threads, announcing each to ``lifecycle`` (the
    emulator's, whose lock is held)."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle

    def append(
        self,
        session: _Session,
        event: Mapping[str, Any],
        *,
        thread: _Thread | None = None,
        cross_post: bool = False,
        processed: bool = True,
    ) -> dict[str, Any]:
        """Log an event, with a new id: to the primary log, or to a subagent ``thread``'s
        (and to the primary one as well with ``cross_post``). A queued user event is logged
        unprocessed (``processed_at`` null) until its turn begins."""
        fields = {k: v for k, v in event.items() if k not in ("type", "id", "processed_at")}
        logged = {
            "type": event["type"],
            "id": new_id("sevt"),
            **fields,
            "processed_at": utc_timestamp() if processed else None,
        }
        if thread is None or thread.primary:
            session.log.append(logged)
        else:
            thread.log.append(logged)
            if cross_post:
                session.log.append(logged)
        self._lifecycle.announce(session.record["id"])
        return logged

    def set_status(self, session: _Session, status: str) -> None:
        """Change the session's status (and its primary thread's), taking its stats."""
        now = utc_timestamp()
        session.clock.set_running(status == "running")
        if status == "terminated":
            session.clock.frozen = session.clock.stats()["duration_seconds"]
        stats = session.clock.stats()
        session.record.update(status=status, updated_at=now, stats=stats)
        session.primary.record.update(status=status, updated_at=now, stats=dict(stats))

    def set_thread_status(self, thread: _Thread, status: str) -> None:
        """Change a subagent thread's status, taking its stats."""
        thread.clock.set_running(status == "running")
        stats = {**thread.clock.stats(), "startup_seconds": 0.0}
        thread.record.update(status=status, updated_at=utc_timestamp(), stats=stats)

    def append_thread_status(
        self, session: _Session, thread: _Thread, kind: str, **fields: Any
    ) -> None:
        """Log a subagent thread's status event to its log and the primary one."""
        event = {"type": kind, "session_thread_id": thread.id, "agent_name": thread.name}
        self.append(session, {**event, **fields}, thread=thread, cross_post=True)

    # --- endings --------------------------------------------------------------------------

    def append_usage(self, session: _Session) -> None:
        """Log ``session.usage``: the session's usage and budget so far."""
        usage = copy.deepcopy(session.record["usage"])
        budget = copy.deepcopy(session.record["budget"])
        self.append(session, {"type": "session.usage", "usage": usage, "budget": budget})

    def finish_turn(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        """End a turn idle, with its ``stop_reason``."""
        self.append_usage(session)  # the API always reports usage right before an idle
        self.set_status(session, "idle")
        self.append(session, {"type": "session.status_idle", "stop_reason": stop_reason})

    def fail(self, session: _Session, message: str) -> None:
        """End the session with a terminal ``session.error``."""
        error = {"type": "unknown_error", "message": message, "retry_status": {"type": "terminal"}}
        self.append(session, {"type": "session.error", "error": error})
        self.terminate(session)

    def terminate(self, session: _Session) -> None:
        """Terminate the session, its subagent threads and what it waited for."""
        for thread in session.threads.values():
            if not thread.primary and thread.record["status"] != "terminated":
                self.set_thread_status(thread, "terminated")
                self.append_thread_status(session, thread, "session.thread_status_terminated")
        self.set_status(session, "terminated")
        session.queued_inputs.clear()
        session.awaiting = {}
        session.outcome = None
        session.turn_thread = None
        self.append(session, {"type": "session.status_terminated"})
