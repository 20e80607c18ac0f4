"""The scripted-turn player of the Claude emulator: a session's events in, turns, events out.

Events sent to a session (``POST /v1/sessions/{id}/events``) are checked
(``_claude_inputs``), echoed into its log and acted on. An input plays the session's next
:class:`Turn` on a background thread (queued while a turn plays): a ``user.message``, a
``user.define_outcome``, or the last of the answers a paused turn waits for (a result per
custom tool use, a ``user.tool_confirmation`` per server tool use whose permission is
``ask``). A turn logs its events in the order the service does and ends idle (``end_turn``,
or ``requires_action`` naming what it waits for), terminated or in error. While an outcome
is worked toward, a grader evaluates each turn that would end ``end_turn``; a
``needs_revision`` verdict plays the next turn at once. Interrupts, ``fail_turn``,
termination and closing the emulator cut a turn short.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import _MAX_EVENTS_PAGE, _invalid, _json_object, _new_id
from req_managed_agents.testing._claude_base import _Awaited, _Input, _Outcome
from req_managed_agents.testing._claude_files import _FilesAPI
from req_managed_agents.testing._claude_inputs import DEFAULT_ITERATIONS, check_event
from req_managed_agents.testing._script import scripted_text
from req_managed_agents.testing._server import utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

    from req_managed_agents.testing._claude_base import _Session
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing._server import Exchange

_ENDS = ("end_turn", "terminated", "error")
_VERDICTS = ("satisfied", "needs_revision", "failed")
# What the grader says when the script gives no explanation.
_EXPLANATIONS = {
    "satisfied": "The work meets the rubric.",
    "needs_revision": "The work does not meet the rubric yet.",
    "failed": "The rubric does not apply to the work.",
}
_INTERRUPTED = "The user interrupted the work."
# The tokens one evaluation's grader requests use: (input, output).
_GRADER_USAGE = (20, 4)
# The ``evaluation`` of a server tool use, by its evaluated permission.
_EVALUATIONS: dict[str, dict[str, Any]] = {
    "allow": {"type": "always_allow"},
    "ask": {"type": "always_ask"},
    "deny": {"type": "auto", "evaluated_permission": {"type": "deny", "reason_code": "high_risk"}},
}
_ANSWERS = ("user.custom_tool_result", "user.tool_confirmation")


@dataclass(frozen=True)
class Turn:
    """One scripted agent turn, played when the session gets its next input.

    ``text`` may be a function of the texts that triggered the turn: the user message (or the
    outcome's description); the custom tool results in call order followed by
    ``"allowed"`` or ``"denied"`` / ``"denied: <deny_message>"`` per confirmed server tool
    call in call order; or, in an outcome's revision, the grader's explanation.
    ``usage`` is ``(input_tokens, output_tokens)``. ``delay`` is how long the turn "thinks"
    after it starts; ``thinking`` logs an ``agent.thinking`` before the message.
    ``server_tool_calls`` run on the service (see :class:`ToolCall` for their permissions);
    ``tool_calls`` are custom tools the client runs. ``end`` picks the ending:
    ``"end_turn"`` (idle; ``requires_action`` when there are custom tool calls or server
    calls that ask for permission), ``"terminated"`` or ``"error"`` (a terminal
    ``session.error``, then terminated). ``outputs`` maps file names to the bytes the agent
    writes under ``/mnt/session/outputs/``; each becomes a downloadable file scoped to the
    session before the turn's final status event. ``evaluation`` and ``explanation`` are the
    grader's verdict on the turn when it ends an outcome's iteration.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    server_tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal["end_turn", "terminated", "error"] = "end_turn"
    outputs: Mapping[str, bytes] = field(default_factory=dict)
    thinking: bool = False
    evaluation: Literal["satisfied", "needs_revision", "failed"] = "satisfied"
    explanation: str = ""

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
        if self.evaluation not in _VERDICTS:
            raise ValueError(f"evaluation must be one of {_VERDICTS}, not {self.evaluation!r}")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        # Tuples, so a script cannot change under a running session.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "server_tool_calls", tuple(self.server_tool_calls))
        outputs = {name: _output_bytes(name, data) for name, data in self.outputs.items()}
        object.__setattr__(self, "outputs", MappingProxyType(outputs))


_SCRIPT_FINISHED = Turn(text="(script finished)")


def _output_bytes(name: Any, data: Any) -> bytes:
    """Check an output the agent writes: a plain file name (no directories) and bytes."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
        raise ValueError(f"an output needs a plain file name, not {name!r}")
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"output {name!r} must be bytes, not {type(data).__name__}")
    return bytes(data)


def _text_of(content: Any) -> str:
    """The text blocks of a content list, joined; what a scripted turn receives as input."""
    if not isinstance(content, list):
        return ""
    blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(str(b.get("text", "")) for b in blocks)


def _tool_use(call: ToolCall) -> dict[str, Any]:
    """The event of a server tool call: an MCP tool's, or a built-in tool's."""
    fields = {
        "name": call.name,
        "input": dict(call.input),
        "evaluated_permission": call.permission,
        "evaluation": copy.deepcopy(_EVALUATIONS[call.permission]),
    }
    if call.mcp_server is not None:
        return {"type": "agent.mcp_tool_use", "mcp_server_name": call.mcp_server, **fields}
    return {"type": "agent.tool_use", **fields}


def _tool_result(call: ToolCall, use_id: str, text: str, *, is_error: bool) -> dict[str, Any]:
    fields = {"content": [{"type": "text", "text": text}], "is_error": is_error}
    if call.mcp_server is not None:
        return {"type": "agent.mcp_tool_result", "mcp_tool_use_id": use_id, **fields}
    return {"type": "agent.tool_result", "tool_use_id": use_id, **fields}


def _denial(call: ToolCall, use_id: str, message: str | None = None) -> dict[str, Any]:
    """The error result of a refused call, with the client's reason when it gave one."""
    text = f"Permission to use {call.name} has been denied."
    return _tool_result(call, use_id, f"{text} {message}" if message else text, is_error=True)


def _span_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


class _SessionPlayer(_FilesAPI):
    """Session events (sent and logged) and the playing of scripted turns."""

    # --- events ---------------------------------------------------------------------------

    def _post_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        if "events" not in body:
            raise _invalid("events: Field required (send {'events': [...]})")
        events = body["events"]
        if not isinstance(events, list):
            raise _invalid("events: Input should be a valid list")
        if not events:
            raise _invalid("events: value must contain at least 1 item")
        with self._condition:
            session = self._live_session(session_id)
            if session.record["archived_at"]:
                raise _invalid("the session is archived")
            if session.status == "terminated":
                raise _invalid("the session is terminated")
            for index, event in enumerate(events):
                check_event(session, index, event, events[:index], self._files.__contains__)
            echoes = [self._accept(session, event) for event in events]
            answering = any(event["type"] in _ANSWERS for event in events)
            if answering and not session.busy and session.awaiting:
                # Some of the awaited answers are still missing: idle again, naming them.
                missing = [use_id for use_id, a in session.awaiting.items() if a.answer is None]
                self._finish_turn(session, {"type": "requires_action", "event_ids": missing})
            return {"data": copy.deepcopy(echoes)}

    def _accept(self, session: _Session, event: dict[str, Any]) -> dict[str, Any]:
        """Log a checked user event and act on it; return its echo."""
        kind = event["type"]
        if kind == "user.define_outcome":
            event = {**event, "outcome_id": _new_id("outc")}
        echo = self._append(session, event)
        if kind == "user.message":
            self._give_input(session, _Input([_text_of(event["content"])]))
        elif kind == "user.define_outcome":
            self._define_outcome(session, echo)
        elif kind == "user.custom_tool_result":
            use_id = event["custom_tool_use_id"]
            session.answered.add(use_id)
            awaited = session.awaiting.get(use_id)
            if awaited is not None:  # an interrupt earlier in the request may have ended it
                awaited.answer = _text_of(event.get("content"))
                self._resume_if_answered(session)
        elif kind == "user.tool_confirmation":
            self._confirm(session, event)
        elif kind == "user.interrupt":
            self._interrupt(session)
        return echo

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

    def _resume_if_answered(self, session: _Session) -> None:
        """Once every awaited answer is in, play the next turn: it opens with the results of
        the confirmed calls and receives the custom results, then the confirmations."""
        awaited = list(session.awaiting.values())
        answers = [a.answer for a in awaited if a.answer is not None]
        if len(answers) < len(awaited):
            return
        session.awaiting = {}
        customs = [a.answer for a in awaited if a.call is None and a.answer is not None]
        confirmed = [a for a in awaited if a.call is not None]
        texts = customs + [a.answer for a in confirmed if a.answer is not None]
        opening = tuple(a.result for a in confirmed if a.result is not None)
        self._give_input(session, _Input(texts, opening))

    def _interrupt(self, session: _Session) -> None:
        """Stop the running turn, or end the wait of a paused one; an idle session that waits
        for nothing ignores it."""
        if session.busy:
            session.interrupted = True
        elif session.awaiting:
            session.awaiting = {}
            self._interrupt_outcome(session)
            self._finish_turn(session, {"type": "end_turn"})

    def _list_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            session = self._live_session(session_id)
            return self._page(
                exchange.request,
                session.log,
                scope=f"events:{session_id}",
                max_limit=_MAX_EVENTS_PAGE,
            )

    def _append(self, session: _Session, event: Mapping[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in event.items() if k not in ("type", "id", "processed_at")}
        logged = {
            "type": event["type"],
            "id": _new_id("sevt"),
            **fields,
            "processed_at": utc_timestamp(),
        }
        session.log.append(logged)
        self._condition.notify_all()
        return logged

    def _set_status(self, session: _Session, status: str) -> None:
        session.record["status"] = status
        session.record["updated_at"] = utc_timestamp()

    # --- playing the script ---------------------------------------------------------------

    def _give_input(self, session: _Session, given: _Input) -> None:
        if session.busy:
            session.queued_inputs.append(given)
        else:
            turn = self._begin_turn(session, given)
            self._start_thread("turn", self._run_turns, session, turn, given.texts)

    def _begin_turn(self, session: _Session, given: _Input) -> Turn:
        session.busy = True
        session.interrupted = False
        self._set_status(session, "running")
        self._append(session, {"type": "session.status_running"})
        for event in given.opening:
            self._append(session, event)
        if given.outcome is not None:
            session.outcome = given.outcome
            given.outcome.record["result"] = "running"
        return self._scripted_turn(session)

    def _scripted_turn(self, session: _Session) -> Turn:
        played = session.turns_played
        session.turns_played += 1
        return session.script[played] if played < len(session.script) else _SCRIPT_FINISHED

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
        if self._stopping or session.status == "terminated":
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
            self._stopping
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
                self._fail(session, failure)
            else:
                revision = self._emit_turn(session, turn, text)
            return self._next_turn(session, revision)

    def _cut_turn(self, session: _Session) -> None:
        """End a turn early: an interrupt ends it (and the outcome it works toward) as
        end_turn; close or terminate end it bare, and so does fail_turn, which already
        logged the turn's end."""
        if session.gave_up:
            session.gave_up = False
        elif session.interrupted and not self._stopping and session.status != "terminated":
            self._interrupt_outcome(session)
            self._finish_turn(session, {"type": "end_turn"})

    def _emit_turn(self, session: _Session, turn: Turn, text: str) -> list[str] | None:
        """Log a played turn and how it ends; return the input of the revision it calls for."""
        start = self._append(session, {"type": "span.model_request_start"})
        if turn.thinking:
            self._append(session, {"type": "agent.thinking"})
        if text:
            self._append(
                session, {"type": "agent.message", "content": [{"type": "text", "text": text}]}
            )
        awaiting: dict[str, _Awaited] = {}
        for server_call in turn.server_tool_calls:
            use_id = self._append(session, _tool_use(server_call))["id"]
            if server_call.permission == "ask":
                awaiting[use_id] = _Awaited(server_call)
            elif server_call.permission == "deny":
                self._append(session, _denial(server_call, use_id))
            else:
                result = _tool_result(server_call, use_id, server_call.result, is_error=False)
                self._append(session, result)
        input_tokens, output_tokens = turn.usage
        self._append(
            session,
            {
                "type": "span.model_request_end",
                "model_request_start_id": start["id"],
                "is_error": False,
                "model_usage": _span_usage(input_tokens, output_tokens),
            },
        )
        self._add_usage(session, input_tokens, output_tokens)
        for custom_call in turn.tool_calls:
            use: dict[str, Any] = {"type": "agent.custom_tool_use", "name": custom_call.name}
            use["input"] = dict(custom_call.input)
            awaiting[self._append(session, use)["id"]] = _Awaited()
        session.awaiting = awaiting
        for name, data in turn.outputs.items():
            self._write_output(session, name, data)
        if turn.end == "terminated":
            self._append_usage(session)
            self._terminate(session)
        elif turn.end == "error":
            self._append_usage(session)
            self._fail(session, "scripted error")
        elif awaiting:
            self._finish_turn(session, {"type": "requires_action", "event_ids": list(awaiting)})
        elif session.outcome is not None and not session.outcome.final:
            revision = self._evaluate(session, session.outcome, turn)
            if revision is not None:
                return revision
            self._finish_turn(session, {"type": "end_turn"})
        else:
            session.outcome = None  # a final turn after max_iterations_reached, if any
            self._finish_turn(session, {"type": "end_turn"})
        return None

    def _add_usage(self, session: _Session, input_tokens: int, output_tokens: int) -> None:
        usage = session.record["usage"]
        usage["input_tokens"] += input_tokens
        usage["output_tokens"] += output_tokens

    # --- outcomes -------------------------------------------------------------------------

    def _define_outcome(self, session: _Session, echo: Mapping[str, Any]) -> None:
        record: dict[str, Any] = {
            "type": "outcome_evaluation",
            "outcome_id": echo["outcome_id"],
            "description": echo["description"],
            "iteration": 0,
            "result": "pending",
            "explanation": None,
            "completed_at": None,
        }
        session.record["outcome_evaluations"].append(record)
        iterations = echo.get("max_iterations")
        outcome = _Outcome(record, DEFAULT_ITERATIONS if iterations is None else iterations)
        self._give_input(session, _Input([str(echo["description"])], outcome=outcome))

    def _evaluate(self, session: _Session, outcome: _Outcome, turn: Turn) -> list[str] | None:
        """Grade the turn that ended an iteration, with its scripted verdict; return the
        input of the turn that plays next without user input (a revision, or the final
        turn once the iterations are used up), None when the outcome is settled."""
        record = outcome.record
        iteration = record["iteration"]
        record["result"] = "evaluating"
        start = self._append_evaluation_start(session, record)
        verdict: str = turn.evaluation
        if verdict == "needs_revision" and iteration + 1 >= outcome.max_iterations:
            verdict = "max_iterations_reached"
        explanation = turn.explanation or _EXPLANATIONS[turn.evaluation]
        self._append(
            session,
            {
                "type": "span.outcome_evaluation_end",
                "outcome_id": record["outcome_id"],
                "iteration": iteration,
                "outcome_evaluation_start_id": start["id"],
                "result": verdict,
                "explanation": explanation,
                "usage": _span_usage(*_GRADER_USAGE),
            },
        )
        self._add_usage(session, *_GRADER_USAGE)
        record["explanation"] = explanation
        if verdict == "needs_revision":
            record.update(iteration=iteration + 1, result="running")
            return [explanation]
        record.update(result=verdict, completed_at=utc_timestamp())
        if verdict == "max_iterations_reached":
            outcome.final = True  # settled, but its final turn plays before the idle
            return [explanation]
        session.outcome = None
        return None

    def _append_evaluation_start(
        self, session: _Session, record: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._append(
            session,
            {
                "type": "span.outcome_evaluation_start",
                "outcome_id": record["outcome_id"],
                "iteration": record["iteration"],
            },
        )

    def _interrupt_outcome(self, session: _Session) -> None:
        """An interrupt ends the outcome being worked toward: its current iteration is
        graded ``interrupted`` at once (a start and an end span) and it is settled."""
        outcome = session.outcome
        if outcome is None or outcome.final:  # none, or settled already
            session.outcome = None
            return
        start = self._append_evaluation_start(session, outcome.record)
        self._append(
            session,
            {
                "type": "span.outcome_evaluation_end",
                "outcome_id": outcome.record["outcome_id"],
                "iteration": outcome.record["iteration"],
                "outcome_evaluation_start_id": start["id"],
                "result": "interrupted",
                "explanation": _INTERRUPTED,
                "usage": _span_usage(0, 0),
            },
        )
        self._settle_outcome(session, "interrupted", _INTERRUPTED)

    def _settle_outcome(self, session: _Session, result: str, explanation: str) -> None:
        """Give the outcome being worked toward its final result."""
        if session.outcome is not None:
            record = session.outcome.record
            record.update(result=result, explanation=explanation, completed_at=utc_timestamp())
        session.outcome = None

    # --- endings --------------------------------------------------------------------------

    def _append_usage(self, session: _Session) -> None:
        usage = copy.deepcopy(session.record["usage"])
        self._append(session, {"type": "session.usage", "usage": usage, "budget": None})

    def _finish_turn(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        self._append_usage(session)  # the API always reports usage right before an idle
        self._set_status(session, "idle")
        self._append(session, {"type": "session.status_idle", "stop_reason": stop_reason})

    def _fail(self, session: _Session, message: str) -> None:
        error = {"type": "unknown_error", "message": message, "retry_status": {"type": "terminal"}}
        self._append(session, {"type": "session.error", "error": error})
        self._terminate(session)

    def _terminate(self, session: _Session) -> None:
        self._set_status(session, "terminated")
        session.queued_inputs.clear()
        session.awaiting = {}
        session.outcome = None
        self._append(session, {"type": "session.status_terminated"})
