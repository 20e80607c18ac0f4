"""Session events of the Claude emulator: what a client sends, and the paged history.

Events sent to a session (``POST /v1/sessions/{id}/events``) are checked
(``_inputs``), echoed into its log and acted on: a ``user.message`` or
``user.define_outcome`` plays the next turn (``_player``), the answers a paused turn
waits for (a ``user.custom_tool_result`` per custom tool use, a ``user.tool_confirmation``
per call that asks, a ``user.tool_result`` per built-in call of a self-hosted environment)
resume it once all are in, matched by tool use id wherever the use was made, and a
``user.interrupt`` stops the running or paused turn (of one thread with
``session_thread_id``). A ``system.message`` is logged with the event it follows.

A ``user.message`` (and the ``system.message`` after it) sent while a turn plays is queued:
its echo, in the answer and in the history, keeps ``processed_at`` null until its turn
begins. Answers, outcomes and interrupts are processed on receipt.

The history (``GET /v1/sessions/{id}/events``) pages through the log oldest first, or
newest first with ``order=desc``, filtered by ``types[]`` and by ``created_at[...]`` bounds
on ``processed_at``.

Input to a session of a self-hosted environment (any event but ``user.interrupt``) queues a
work item for it when none is queued or running (``_work_items``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._inputs import ANSWERS, check_event, check_request
from req_managed_agents.testing.claude._model import _Input
from req_managed_agents.testing.claude._shapes import _denial, _tool_result
from req_managed_agents.testing.claude._wire import (
    _MAX_EVENTS_PAGE,
    SESSION_PATH,
    _invalid,
    _json_object,
    _query_choice,
    _query_values,
    _time_filter,
)
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._log import SessionLog
    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.claude._outcomes import Outcomes
    from req_managed_agents.testing.claude._player import Player
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._work_items import WorkItems
    from req_managed_agents.testing.server import Exchange, Route

# Every event type the API can log, for the ``types[]`` filter.
EVENT_TYPES = frozenset(
    {
        "agent.custom_tool_use",
        "agent.mcp_elicitation",
        "agent.mcp_tool_result",
        "agent.mcp_tool_use",
        "agent.message",
        "agent.thinking",
        "agent.thread_context_compacted",
        "agent.thread_message_received",
        "agent.thread_message_sent",
        "agent.tool_result",
        "agent.tool_use",
        "session.deleted",
        "session.error",
        "session.status_idle",
        "session.status_rescheduled",
        "session.status_running",
        "session.status_terminated",
        "session.thread_created",
        "session.thread_status_idle",
        "session.thread_status_rescheduled",
        "session.thread_status_running",
        "session.thread_status_terminated",
        "session.updated",
        "session.usage",
        "span.model_request_end",
        "span.model_request_start",
        "span.outcome_evaluation_end",
        "span.outcome_evaluation_ongoing",
        "span.outcome_evaluation_start",
        "system.message",
        "user.custom_tool_result",
        "user.define_outcome",
        "user.interrupt",
        "user.mcp_elicitation_response",
        "user.message",
        "user.tool_confirmation",
        "user.tool_result",
        "workflow_run.created",
        "workflow_run.error",
        "workflow_run.phase_ended",
        "workflow_run.phase_started",
        "workflow_run.status_ended",
        "workflow_run.status_idle",
        "workflow_run.status_running",
    }
)


def _text_of(content: Any) -> str:
    """The text blocks of a content list, joined; what a scripted turn receives as input."""
    if not isinstance(content, list):
        return ""
    blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(str(b.get("text", "")) for b in blocks)


class Events:
    """The event routes: sending, with what each event does, and the history."""

    def __init__(
        self,
        state: ClaudeState,
        log: SessionLog,
        player: Player,
        outcomes: Outcomes,
        work: WorkItems,
    ) -> None:
        self._state = state
        self._log = log
        self._player = player
        self._outcomes = outcomes
        self._work = work

    def routes(self) -> list[Route]:
        return [
            ("POST", f"{SESSION_PATH}/events", self._post_events),
            ("GET", f"{SESSION_PATH}/events", self._list_events),
        ]

    def _post_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        if "events" not in body:
            raise _invalid("events: Field required (send {'events': [...]})")
        events = body["events"]
        if not isinstance(events, list):
            raise _invalid("events: Input should be a valid list")
        if not events:
            raise _invalid("events: value must contain at least 1 item")
        check_request(events)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            if session.record["archived_at"]:
                raise _invalid("the session is archived")
            if session.status == "terminated":
                raise _invalid("the session is terminated")
            for index, event in enumerate(events):
                check_event(session, index, event, events[:index], self._state.files.__contains__)
            echoes = [self.accept(session, event) for event in events]
            if any(event["type"] != "user.interrupt" for event in events):
                self._work.wake(session)
            answering = any(event["type"] in ANSWERS for event in events)
            if answering and not session.busy and session.awaiting:
                # Some of the awaited answers are still missing: idle again, naming them.
                missing = [use_id for use_id, a in session.awaiting.items() if a.answer is None]
                self._log.finish_turn(session, {"type": "requires_action", "event_ids": missing})
            return {"data": copy.deepcopy(echoes)}

    def accept(self, session: _Session, event: dict[str, Any]) -> dict[str, Any]:
        """Log a checked user event and act on it; return its echo."""
        kind = event["type"]
        if kind == "user.define_outcome":
            event = {**event, "outcome_id": new_id("outc")}
        if kind in ANSWERS:
            event = self._on_thread(session, event)
        # A message waits for the running turn; a system message goes with the message it
        # follows, which waits with it, or plays now.
        queued = session.busy and (
            kind == "user.message" or (kind == "system.message" and bool(session.queued_inputs))
        )
        echo = self._log.append(session, event, processed=not queued)
        if kind == "user.message":
            given = _Input([_text_of(event["content"])], echoes=[echo] if queued else [])
            self._player.give_input(session, given)
        elif kind == "system.message" and queued:
            session.queued_inputs[-1].echoes.append(echo)
        elif kind == "user.define_outcome":
            self._player.give_input(session, self._outcomes.define(session, echo))
        elif kind in ("user.custom_tool_result", "user.tool_result"):
            field = "custom_tool_use_id" if kind == "user.custom_tool_result" else "tool_use_id"
            use_id = event[field]
            session.answered.add(use_id)
            awaited = session.awaiting.get(use_id)
            if awaited is not None:  # an interrupt earlier in the request may have ended it
                awaited.answer = _text_of(event.get("content"))
                self._resume_if_answered(session)
        elif kind == "user.tool_confirmation":
            self._confirm(session, event)
        elif kind == "user.mcp_elicitation_response":
            self._elicited(session, event)
        elif kind == "user.interrupt":
            self._interrupt(session, event.get("session_thread_id"))
        return echo

    def _on_thread(self, session: _Session, event: dict[str, Any]) -> dict[str, Any]:
        """An answer is routed by the tool use it answers: its echo names the thread that
        tool use was made on, when a subagent's."""
        field = next(
            key
            for key in ("custom_tool_use_id", "mcp_elicitation_id", "tool_use_id")
            if key in event
        )
        awaited = session.awaiting.get(event[field])
        if awaited is None or awaited.thread is None:
            return event
        return {**event, "session_thread_id": awaited.thread.id}

    def _confirm(self, session: _Session, event: dict[str, Any]) -> None:
        use_id = event["tool_use_id"]
        session.answered.add(use_id)
        awaited = session.awaiting.get(use_id)
        if awaited is None or awaited.call is None:
            return  # an interrupt earlier in the request ended the wait
        if event["result"] == "allow":
            awaited.answer = "allowed"
            awaited.result = _tool_result(awaited.call, use_id, awaited.call.result, is_error=False)
        else:
            message = event.get("deny_message")
            awaited.answer = f"denied: {message}" if message else "denied"
            awaited.result = _denial(awaited.call, use_id, message)
        self._resume_if_answered(session)

    def _elicited(self, session: _Session, event: dict[str, Any]) -> None:
        """Only the first answer counts: ``accept`` runs the waiting call, ``decline`` and
        ``cancel`` end it with an error result."""
        awaited = session.awaiting.get(event["mcp_elicitation_id"])
        if awaited is None or awaited.call is None or awaited.answer is not None:
            return
        call, use_id = awaited.call, str(awaited.use_id)
        answer = event["response"]["type"]
        awaited.answer = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}[
            answer
        ]
        if answer == "accept":
            awaited.result = _tool_result(call, use_id, call.result, is_error=False)
        else:
            text = f"The person did not sign in to {call.mcp_server} ({answer})."
            awaited.result = _tool_result(call, use_id, text, is_error=True)
        self._resume_if_answered(session)

    def _resume_if_answered(self, session: _Session) -> None:
        """Once every awaited answer is in, play the next turn: it opens with the results of
        the confirmed calls and receives the tool results, then the confirmations."""
        awaited = list(session.awaiting.values())
        answers = [a.answer for a in awaited if a.answer is not None]
        if len(answers) < len(awaited):
            return
        session.awaiting = {}
        opened = ("confirm", "elicit")  # answers whose tool result opens the next turn
        results = [a.answer for a in awaited if a.kind not in opened and a.answer is not None]
        confirmed = [a for a in awaited if a.kind in opened]
        texts = results + [a.answer for a in confirmed if a.answer is not None]
        opening = tuple((a.thread, a.result) for a in confirmed if a.result is not None)
        self._player.give_input(session, _Input(texts, opening))

    def _interrupt(self, session: _Session, thread_id: str | None) -> None:
        """Stop the running turn, or end the wait of a paused one; an idle session that waits
        for nothing ignores it, and so does a turn on another thread than the one named."""
        if thread_id is not None:
            named = session.threads[thread_id]
            if (None if named.primary else named.name) != session.turn_name:
                return  # the turn is another thread's
        if session.busy:
            session.interrupted = True
        elif session.awaiting:
            session.awaiting = {}
            session.turn_thread = None
            self._outcomes.interrupt(session)
            self._log.finish_turn(session, {"type": "end_turn"})

    def _list_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        request = exchange.request
        order = _query_choice(request, "order", ("asc", "desc")) or "asc"
        types = _query_values(request, "types", EVENT_TYPES)
        processed = _time_filter(request)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            events = [
                e
                for e in session.log
                if (not types or e["type"] in types) and processed(e["processed_at"])
            ]
            if order == "desc":
                events.reverse()
            return self._state.page(request, events, max_limit=_MAX_EVENTS_PAGE)
