"""The scripted-turn player of the Claude emulator: a session's inputs in, turns, events out.

An input plays the session's next :class:`~req_managed_agents.testing.claude._turn.Turn` on a
background thread (queued while a turn plays): a ``user.message``, a ``user.define_outcome``,
or the last of the answers a paused turn waits for (``_events`` takes them in). A turn logs
its events in the order the service does and ends idle (``end_turn``, or ``requires_action``
naming what it waits for), terminated or in error. While an outcome is worked toward, a
grader evaluates each turn that would end ``end_turn`` (``_outcomes``); a ``needs_revision``
verdict plays the next turn at once. A turn with a ``thread`` is played by a subagent
(``_subagents``). Interrupts, ``fail_turn``, termination and closing the emulator cut a turn
short.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_text
from req_managed_agents.testing.claude._builtin_tools import is_sandbox_call
from req_managed_agents.testing.claude._model import _Awaited
from req_managed_agents.testing.claude._scripted import ScriptedEvents
from req_managed_agents.testing.claude._shapes import (
    _denial,
    _span_usage,
    _tool_result,
    _tool_use,
)
from req_managed_agents.testing.claude._turn import _SCRIPT_FINISHED
from req_managed_agents.testing.server import utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing.claude._files import Files
    from req_managed_agents.testing.claude._log import SessionLog
    from req_managed_agents.testing.claude._model import _Input, _Session, _Thread
    from req_managed_agents.testing.claude._outcomes import Outcomes
    from req_managed_agents.testing.claude._subagents import Subagents
    from req_managed_agents.testing.claude._turn import Turn
    from req_managed_agents.testing.server import Lifecycle


class Player:
    """Plays sessions' scripted turns on threads of the emulator's ``lifecycle``; its methods
    are called with the lifecycle's lock held, and the turns take it as they log."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        log: SessionLog,
        subagents: Subagents,
        outcomes: Outcomes,
        files: Files,
    ) -> None:
        self._lifecycle = lifecycle
        self._condition = lifecycle.condition
        self._log = log
        self._subagents = subagents
        self._outcomes = outcomes
        self._files = files

    def give_input(self, session: _Session, given: _Input) -> None:
        """Play the session's next turn for ``given``, or queue it while a turn plays."""
        if session.busy:
            session.queued_inputs.append(given)
        else:
            turn = self._begin_turn(session, given)
            self._lifecycle.start_thread("turn", self._run_turns, session, turn, given.texts)

    def _begin_turn(self, session: _Session, given: _Input) -> Turn:
        session.busy = True
        session.interrupted = False
        self._log.set_status(session, "running")
        for echo in given.echoes:  # queued user events are processed as their turn begins
            echo["processed_at"] = utc_timestamp()
        self._log.append(session, {"type": "session.status_running"})
        for thread, event in given.opening:
            self._log.append(session, event, thread=thread)
        if given.outcome is not None:
            session.outcome = given.outcome
            given.outcome.record["result"] = "running"
        return self._scripted_turn(session)

    def _scripted_turn(self, session: _Session) -> Turn:
        played = session.turns_played
        session.turns_played += 1
        turn = session.script[played] if played < len(session.script) else _SCRIPT_FINISHED
        session.turn_name = turn.thread
        return turn

    def _run_turns(self, session: _Session, turn: Turn, inputs: list[str]) -> None:
        """The session's worker: play turns until no input is queued."""
        upcoming: tuple[Turn, list[str]] | None = (turn, inputs)
        while upcoming is not None:
            upcoming = self._play(session, *upcoming)

    def _next_turn(
        self, session: _Session, revision: list[str] | None = None
    ) -> tuple[Turn, list[str]] | None:
        """Called in the lock hold that logs a turn's last event, so no input can slip by. A
        ``revision`` (an outcome's grader asked for one) plays first, without a new
        ``session.status_running``: the session never stopped running."""
        if self._lifecycle.stopping or session.status == "terminated":
            session.busy = False
            return None
        if revision is not None:
            return self._scripted_turn(session), revision
        if not session.queued_inputs:
            session.busy = False
            return None
        given = session.queued_inputs.popleft()
        return self._begin_turn(session, given), given.texts

    def _turn_cut(self, session: _Session) -> bool:
        return (
            self._lifecycle.stopping
            or session.interrupted
            or session.gave_up
            or session.status == "terminated"
        )

    def _play(
        self, session: _Session, turn: Turn, inputs: list[str]
    ) -> tuple[Turn, list[str]] | None:
        """Play one turn; return the next one if input is already queued for it."""
        with self._condition:
            self._condition.wait_for(lambda: self._turn_cut(session), timeout=turn.delay)
            if self._turn_cut(session):
                self._cut_turn(session)
                return self._next_turn(session)
        text, failure = scripted_text(turn.text, inputs)  # user code: run without the lock
        with self._condition:
            revision = None
            if self._turn_cut(session):
                self._cut_turn(session)
            elif failure:
                self._log.fail(session, failure)
            else:
                revision = self._emit_turn(session, turn, text, inputs)
            return self._next_turn(session, revision)

    def _cut_turn(self, session: _Session) -> None:
        """End a turn early: an interrupt ends it (and the outcome it works toward) as
        end_turn; close or terminate end it bare, and so does fail_turn, which already
        logged the turn's end."""
        stopping = self._lifecycle.stopping
        if session.gave_up:
            session.gave_up = False
        elif session.interrupted and not stopping and session.status != "terminated":
            self._outcomes.interrupt(session)
            self._subagents.idle(session, {"type": "end_turn"})
            session.turn_thread = None
            self._log.finish_turn(session, {"type": "end_turn"})

    def _emit_turn(
        self, session: _Session, turn: Turn, text: str, inputs: list[str]
    ) -> list[str] | None:
        """Log a played turn and how it ends; return the input of the revision it calls for."""
        thread = None
        if turn.thread is not None:
            thread = self._subagents.enter(session, turn.thread, inputs)
        else:
            session.turn_thread = None
        start = self._log.append(session, {"type": "span.model_request_start"}, thread=thread)
        if turn.thinking:
            self._log.append(session, {"type": "agent.thinking"}, thread=thread)
        if text:
            message = {"type": "agent.message", "content": [{"type": "text", "text": text}]}
            self._log.append(session, message, thread=thread)
        if turn.events:
            self._log_scripted(session, turn, thread)
        awaiting: dict[str, _Awaited] = {}
        for server_call in turn.server_tool_calls:
            waits_result = (
                session.self_hosted
                and server_call.permission == "allow"
                and is_sandbox_call(server_call)
            )
            use = _tool_use(server_call)
            waits = server_call.permission == "ask" or waits_result
            if thread is not None and waits:
                use["session_thread_id"] = thread.id
            use_id = self._log.append(session, use, thread=thread, cross_post=waits)["id"]
            if server_call.elicitation_url is not None and server_call.permission == "allow":
                asking = _elicitation(server_call, use_id)
                asked = self._log.append(session, asking, thread=thread, cross_post=True)
                awaiting[asked["id"]] = _Awaited("elicit", server_call, thread, use_id=use_id)
            elif server_call.permission == "ask":
                awaiting[use_id] = _Awaited("confirm", server_call, thread)
            elif waits_result:
                awaiting[use_id] = _Awaited("result", server_call, thread)
            elif server_call.permission == "deny":
                self._log.append(session, _denial(server_call, use_id), thread=thread)
            else:
                result = _tool_result(server_call, use_id, server_call.result, is_error=False)
                self._log.append(session, result, thread=thread)
        input_tokens, output_tokens = turn.usage
        end = {
            "type": "span.model_request_end",
            "model_request_start_id": start["id"],
            "is_error": False,
            "model_usage": _span_usage(input_tokens, output_tokens),
        }
        self._log.append(session, end, thread=thread)
        session.add_usage(input_tokens, output_tokens, thread)
        for custom_call in turn.tool_calls:
            use = {"type": "agent.custom_tool_use", "name": custom_call.name}
            use["input"] = dict(custom_call.input)
            if thread is not None:
                use["session_thread_id"] = thread.id
            use_id = self._log.append(session, use, thread=thread, cross_post=True)["id"]
            awaiting[use_id] = _Awaited("custom", thread=thread)
        session.awaiting = awaiting
        for name, data in turn.outputs.items():
            self._files.write_output(session, name, data)
        if turn.end == "terminated":
            self._log.append_usage(session)
            self._log.terminate(session)
        elif turn.end == "error":
            self._log.append_usage(session)
            self._log.fail(session, "scripted error")
        elif awaiting:
            stop_reason = {"type": "requires_action", "event_ids": list(awaiting)}
            self._subagents.idle(session, stop_reason)
            self._log.finish_turn(session, stop_reason)
        else:
            self._subagents.report_back(session, text)
            if session.outcome is not None and not session.outcome.final:
                revision = self._outcomes.evaluate(session, session.outcome, turn)
                if revision is not None:
                    return revision
            else:
                session.outcome = None  # a final turn after max_iterations_reached, if any
            self._log.finish_turn(session, {"type": "end_turn"})
        return None

    def _log_scripted(self, session: _Session, turn: Turn, thread: _Thread | None) -> None:
        """Log the events the turn scripts, on its thread."""
        scripted = ScriptedEvents(session, thread)
        for given in turn.events:
            event = scripted.event(given)
            cross_post = thread is not None and scripted.cross_posted(event)
            scripted.logged(self._log.append(session, event, thread=thread, cross_post=cross_post))


def _elicitation(call: ToolCall, use_id: str) -> dict[str, Any]:
    """The ``agent.mcp_elicitation`` an MCP call's server asks a person to act on."""
    return {
        "type": "agent.mcp_elicitation",
        "mcp_server_name": call.mcp_server,
        "mcp_tool_use_id": use_id,
        "request": {
            "type": "url",
            "url": call.elicitation_url,
            "message": f"Sign in to {call.mcp_server} to let the agent use {call.name}.",
        },
    }
