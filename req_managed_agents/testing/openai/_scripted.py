"""The events a scripted step logs as it is told to (``OpenAITurn(events=...)``).

The SDK knows event types no behaviour of the emulator produces: an environment's lifecycle
(``agent.session.environment.pending``, ``connected``, ``ready``, ``suspended``, ``expired``,
``disconnected``, ``failed``, ``reset``), a subagent becoming ``active`` or ``closed``,
reasoning summaries (``agent.session.turn.reasoning_summary_part.added`` and ``.done``,
``reasoning_summary_text.delta`` and ``.done``) and a command's output as it is written
(``agent.output.command_execution_output.delta``). A step names them
(``_wire.NAMED_EVENTS``) and each is filled in with what its model requires, from the session
as it plays: the step's turn, the session's environment, the subagent playing the step (or
the last one made), and one reasoning item and one command per step, at the turn's next
output index. Or a step gives an event as a mapping: its fields over those of a named type,
or alone, for any other type (one the SDK does not know yet, say). The log gives each its
``event_id``; nothing else changes: a scripted event is an announcement only (the items
its ids name are not listed, a subagent it closes plays on).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_event
from req_managed_agents.testing.openai._wire import (
    COMMAND_OUTPUT_EVENT,
    ENVIRONMENT_EVENT,
    NAMED_EVENTS,
    SUBAGENT_EVENT,
    SUMMARY_EVENT,
    now,
)
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ScriptedEvent
    from req_managed_agents.testing.openai._model import Session, Turn

_SUMMARY_TEXT = "Weighing the request."


class ScriptedEvents:
    """The scripted events of one step, played in ``turn``, consistent with each other."""

    def __init__(self, session: Session, turn: Turn) -> None:
        self._session = session
        self._turn = turn
        self._reasoning_id = new_id("rs")
        self._command_id = new_id("cmd")
        self._resets = 0

    def event(self, scripted: ScriptedEvent) -> dict[str, Any]:
        """The event to log for what the script says (without its id)."""
        return scripted_event(scripted, NAMED_EVENTS, self._filled)

    def _filled(self, kind: str) -> dict[str, Any]:
        session, turn = self._session, self._turn
        if kind.startswith(SUBAGENT_EVENT):
            return {"subagent": self._subagent(kind[len(SUBAGENT_EVENT) :])}
        where = {"session_id": session.id, "turn_id": turn.id}
        environment = session.record["environment"]
        environment_id = str(environment.get("id") or new_id("env"))
        if kind == ENVIRONMENT_EVENT + "reset":
            self._resets += 1
            return {**where, "environment_id": environment_id, "reset_count": self._resets}
        if kind.startswith(ENVIRONMENT_EVENT):
            state = kind[len(ENVIRONMENT_EVENT) :]
            described = {"id": environment_id, "status": state, "type": environment["type"]}
            if state == "failed":
                described["error"] = {
                    "code": "environment_failed",
                    "message": "The scripted environment failed.",
                    "type": "server_error",
                }
            return {**where, "environment": described}
        output = {**where, "output_index": turn.outputs}
        if kind == COMMAND_OUTPUT_EVENT:
            return {**output, "item_id": self._command_id, "delta": "ok\n"}
        summary = {**output, "item_id": self._reasoning_id, "summary_index": 0}
        if kind == SUMMARY_EVENT + "part.added":
            return {**summary, "part": {"type": "summary_text", "text": ""}}
        if kind == SUMMARY_EVENT + "part.done":
            return {**summary, "part": {"type": "summary_text", "text": _SUMMARY_TEXT}}
        if kind == SUMMARY_EVENT + "text.delta":
            return {**summary, "delta": _SUMMARY_TEXT}
        return {**summary, "text": _SUMMARY_TEXT}  # reasoning_summary_text.done

    def _subagent(self, status: str) -> dict[str, Any]:
        """The subagent playing the step (else the last one made), as ``status`` shows it."""
        session = self._session
        subagent = self._turn.subagent
        if subagent is None and session.subagents:
            subagent = list(session.subagents.values())[-1]
        if subagent is not None:
            record = copy.deepcopy(subagent.record)
        else:
            record = {
                "id": new_id("subagent"),
                "object": "agent.session.subagent",
                "closed_at": None,
                "instructions": [],
                "name": "subagent",
                "opened_at": now(),
                "parent_agent_id": session.root_agent_id,
                "session_id": session.id,
            }
        record["status"] = status
        record["closed_at"] = now() if status == "closed" else None
        return record
