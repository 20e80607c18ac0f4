"""The events a scripted turn logs as it is told to (``Turn(events=...)``).

The SDK knows event types no behaviour of the emulator produces: the ``workflow_run.*``
family (background work the agent starts), ``session.status_rescheduled`` and
``session.thread_status_rescheduled`` (recovering from an error),
``span.outcome_evaluation_ongoing`` (an evaluation's heartbeat) and
``agent.thread_context_compacted``. A turn names them
(``_wire.NAMED_EVENTS``) and each is filled in with what its model requires, from the session
as it plays: the turn's thread, the outcome worked toward, and one workflow run per turn
(its one phase, the ``workflow_run.phase_started`` a ``phase_ended`` closes). Or a turn
gives an event as a mapping: its fields over those of a named type, or alone, for any other
type (one the SDK does not know yet, say). The log gives each its ``id`` and
``processed_at``; nothing else changes: a scripted event is an announcement only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_event
from req_managed_agents.testing.claude._wire import NAMED_EVENTS, WORKFLOW_EVENTS
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ScriptedEvent
    from req_managed_agents.testing.claude._model import _Session, _Thread

# Scripted events the service cross-posts from a subagent's thread to the primary one.
_CROSS_POSTED = frozenset({"session.thread_status_rescheduled"})


class ScriptedEvents:
    """The scripted events of one turn, played on ``thread`` (None: the primary one), and
    consistent with each other: one workflow run, with one phase."""

    def __init__(self, session: _Session, thread: _Thread | None) -> None:
        self._session = session
        self._thread = thread or session.primary
        self._run_id = new_id("wfrun")
        self._phase_id = new_id("wfphase")
        self._phase_started_id: str | None = None

    def event(self, scripted: ScriptedEvent) -> dict[str, Any]:
        """The event to log for what the script says (without its id and time)."""
        return scripted_event(scripted, NAMED_EVENTS, self._filled)

    def logged(self, event: dict[str, Any]) -> None:
        """Note an event as logged: a phase's end names the start logged last."""
        if event["type"] == "workflow_run.phase_started":
            self._phase_started_id = str(event["id"])

    @staticmethod
    def cross_posted(event: dict[str, Any]) -> bool:
        """Whether a subagent thread's event goes to the primary log too."""
        return event["type"] in _CROSS_POSTED

    def _filled(self, kind: str) -> dict[str, Any]:
        run = {"workflow_run_id": self._run_id}
        phase = {**run, "workflow_run_phase_id": self._phase_id}
        if kind == "workflow_run.created":
            phases = [{"id": self._phase_id, "name": "scripted phase"}]
            return {**run, "name": "scripted workflow", "phases": phases}
        if kind == "workflow_run.phase_started":
            return phase
        if kind == "workflow_run.phase_ended":
            return {**phase, "phase_started_id": self._phase_started_id or new_id("sevt")}
        if kind == "workflow_run.status_ended":
            return {**run, "result": {"type": "completed"}}
        if kind == "workflow_run.error":
            error = {"type": "unknown_error", "message": "The scripted workflow run failed."}
            return {**run, "error": error}
        if kind in WORKFLOW_EVENTS:  # its status, running or idle
            return run
        if kind == "session.thread_status_rescheduled":
            thread = self._thread
            return {"session_thread_id": thread.id, "agent_name": thread.name}
        if kind == "span.outcome_evaluation_ongoing":
            outcome = self._session.outcome
            if outcome is None:
                return {"outcome_id": new_id("outc"), "iteration": 0}
            record = outcome.record
            return {"outcome_id": record["outcome_id"], "iteration": record["iteration"]}
        return {}  # the rest need nothing but their type
