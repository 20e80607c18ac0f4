"""The scripted-turn player of the Claude emulator: a session's inputs in, turns, events out.

An input plays the session's next :class:`Turn` on a background thread (queued while a turn
plays): a ``user.message``, a ``user.define_outcome``, or the last of the answers a paused
turn waits for (``_claude_events`` takes them in). A turn logs its events in the order the
service does and ends idle (``end_turn``, or ``requires_action`` naming what it waits for),
terminated or in error. While an outcome is worked toward, a grader evaluates each turn
that would end ``end_turn``; a ``needs_revision`` verdict plays the next turn at once.
Interrupts, ``fail_turn``, termination and closing the emulator cut a turn short.

A turn with a ``thread`` is played by a subagent on a session thread of that name: the
coordinator delegates the turn's input to it (``session.thread_created`` the first time,
``agent.thread_message_sent``), the thread logs its own events, its tool uses that need the
client are cross-posted to the primary log with ``session_thread_id``, and when it ends its
turn it reports back (``agent.thread_message_received`` on the primary thread).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_base import _Awaited, _Input, _Outcome
from req_managed_agents.testing._claude_files import _FilesAPI
from req_managed_agents.testing._script import scripted_text
from req_managed_agents.testing._server import utc_timestamp
from req_managed_agents.testing.claude._inputs import DEFAULT_ITERATIONS
from req_managed_agents.testing.claude._wire import _new_id

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

    from req_managed_agents.testing._claude_base import _Session, _Thread
    from req_managed_agents.testing._script import ToolCall

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


@dataclass(frozen=True)
class Turn:
    """One scripted agent turn, played when the session gets its next input.

    ``text`` may be a function of the texts that triggered the turn: the user message (or the
    outcome's description); the custom tool results (and self-hosted tool results) in call
    order followed by ``"allowed"`` or ``"denied"`` / ``"denied: <deny_message>"`` per
    confirmed server tool call in call order; or, in an outcome's revision, the grader's
    explanation. ``usage`` is ``(input_tokens, output_tokens)``. ``delay`` is how long the
    turn "thinks" after it starts; ``thinking`` logs an ``agent.thinking`` before the
    message. ``server_tool_calls`` run on the service (see :class:`ToolCall` for their
    permissions; in a self-hosted environment an allowed built-in tool call waits for the
    client's ``user.tool_result`` instead); ``tool_calls`` are custom tools the client runs.
    ``end`` picks the ending: ``"end_turn"`` (idle; ``requires_action`` when calls wait on
    the client), ``"terminated"`` or ``"error"`` (a terminal ``session.error``, then
    terminated). ``outputs`` maps file names to the bytes the agent writes under
    ``/mnt/session/outputs/``; each becomes a downloadable file scoped to the session before
    the turn's final status event. ``evaluation`` and ``explanation`` are the grader's
    verdict on the turn when it ends an outcome's iteration. ``thread`` names the subagent
    that plays the turn on a session thread of its own (None: the coordinator, on the
    primary thread); consecutive turns of one name continue the same thread.
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
    thread: str | None = None

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
        if self.evaluation not in _VERDICTS:
            raise ValueError(f"evaluation must be one of {_VERDICTS}, not {self.evaluation!r}")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        if self.thread is not None and (not isinstance(self.thread, str) or not self.thread):
            raise ValueError("thread must name a subagent (or be None)")
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


def _texts(texts: Sequence[str]) -> list[dict[str, str]]:
    return [{"type": "text", "text": "\n".join(texts)}]


class _SessionPlayer(_FilesAPI):
    """The logging of session events and the playing of scripted turns."""

    # --- logging --------------------------------------------------------------------------

    def _append(
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
            "id": _new_id("sevt"),
            **fields,
            "processed_at": utc_timestamp() if processed else None,
        }
        if thread is None or thread.primary:
            session.log.append(logged)
        else:
            thread.log.append(logged)
            if cross_post:
                session.log.append(logged)
        self._condition.notify_all()
        return logged

    def _set_status(self, session: _Session, status: str) -> None:
        now = utc_timestamp()
        session.clock.set_running(status == "running")
        if status == "terminated":
            session.clock.frozen = session.clock.stats()["duration_seconds"]
        stats = session.clock.stats()
        session.record.update(status=status, updated_at=now, stats=stats)
        session.primary.record.update(status=status, updated_at=now, stats=dict(stats))

    def _set_thread_status(self, thread: _Thread, status: str) -> None:
        thread.clock.set_running(status == "running")
        stats = {**thread.clock.stats(), "startup_seconds": 0.0}
        thread.record.update(status=status, updated_at=utc_timestamp(), stats=stats)

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
        for echo in given.echoes:  # queued user events are processed as their turn begins
            echo["processed_at"] = utc_timestamp()
        self._append(session, {"type": "session.status_running"})
        for thread, event in given.opening:
            self._append(session, event, thread=thread)
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
                revision = self._emit_turn(session, turn, text, inputs)
            return self._next_turn(session, revision)

    def _cut_turn(self, session: _Session) -> None:
        """End a turn early: an interrupt ends it (and the outcome it works toward) as
        end_turn; close or terminate end it bare, and so does fail_turn, which already
        logged the turn's end."""
        if session.gave_up:
            session.gave_up = False
        elif session.interrupted and not self._stopping and session.status != "terminated":
            self._interrupt_outcome(session)
            self._idle_thread(session, {"type": "end_turn"})
            session.turn_thread = None
            self._finish_turn(session, {"type": "end_turn"})

    # --- threads --------------------------------------------------------------------------

    def _thread_agent(self, session: _Session, name: str) -> dict[str, Any]:
        """The agent a subagent thread of this name runs: the roster agent of that name in
        the coordinator's multiagent configuration, else an inline copy of the coordinator."""
        agent = session.record["agent"]
        multiagent = agent.get("multiagent") or {}
        roster = list(multiagent.get("agents", []))
        for key in ("subagents", "workflows"):
            roster += multiagent.get(key, {}).get("predefined_agents", [])
        for member in roster:
            if member.get("type") == "agent" and member.get("name") == name:
                return copy.deepcopy(dict(member))
        keys = ("description", "system", "model", "tools", "mcp_servers", "skills")
        inline = {key: copy.deepcopy(agent[key]) for key in keys}
        inline["execution_identity"] = copy.deepcopy(agent["execution_identity"])
        return {"type": "inline", "name": name, **inline}

    def _enter_thread(self, session: _Session, name: str, inputs: list[str]) -> _Thread:
        """Start the thread's turn: the coordinator delegates the input to it (creating the
        thread the first time), unless it resumes the thread that paused the last turn."""
        thread = session.turn_thread
        if thread is None or thread.name != name or thread.record["archived_at"]:
            thread = next(
                (
                    t
                    for t in session.threads.values()
                    if not t.primary and t.name == name and not t.record["archived_at"]
                ),
                None,
            )
            if thread is None:
                thread = session.new_thread(self._thread_agent(session, name))
                self._append(
                    session,
                    {
                        "type": "session.thread_created",
                        "session_thread_id": thread.id,
                        "agent_name": name,
                    },
                )
            content = _texts(inputs)
            self._append(
                session,
                {
                    "type": "agent.thread_message_sent",
                    "content": content,
                    "to_session_thread_id": thread.id,
                    "to_agent_name": name,
                },
            )
            delegated = True
        else:
            delegated = False
        self._set_thread_status(thread, "running")
        self._append_thread_status(session, thread, "session.thread_status_running")
        if delegated:
            self._append(
                session,
                {
                    "type": "agent.thread_message_received",
                    "content": _texts(inputs),
                    "from_session_thread_id": session.primary.id,
                    "from_agent_name": session.record["agent"]["name"],
                },
                thread=thread,
            )
        session.turn_thread = thread
        return thread

    def _append_thread_status(
        self, session: _Session, thread: _Thread, kind: str, **fields: Any
    ) -> None:
        event = {"type": kind, "session_thread_id": thread.id, "agent_name": thread.name}
        self._append(session, {**event, **fields}, thread=thread, cross_post=True)

    def _idle_thread(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        """The running subagent thread, if any, goes idle (the session follows)."""
        thread = session.turn_thread
        if thread is not None and thread.record["status"] == "running":
            self._set_thread_status(thread, "idle")
            self._append_thread_status(
                session, thread, "session.thread_status_idle", stop_reason=stop_reason
            )

    # --- a played turn --------------------------------------------------------------------

    def _emit_turn(
        self, session: _Session, turn: Turn, text: str, inputs: list[str]
    ) -> list[str] | None:
        """Log a played turn and how it ends; return the input of the revision it calls for."""
        thread = None
        if turn.thread is not None:
            thread = self._enter_thread(session, turn.thread, inputs)
        else:
            session.turn_thread = None
        start = self._append(session, {"type": "span.model_request_start"}, thread=thread)
        if turn.thinking:
            self._append(session, {"type": "agent.thinking"}, thread=thread)
        if text:
            message = {"type": "agent.message", "content": [{"type": "text", "text": text}]}
            self._append(session, message, thread=thread)
        awaiting: dict[str, _Awaited] = {}
        for server_call in turn.server_tool_calls:
            waits_result = (
                session.self_hosted
                and server_call.permission == "allow"
                and server_call.mcp_server is None
            )
            use = _tool_use(server_call)
            waits = server_call.permission == "ask" or waits_result
            if thread is not None and waits:
                use["session_thread_id"] = thread.id
            use_id = self._append(session, use, thread=thread, cross_post=waits)["id"]
            if server_call.permission == "ask":
                awaiting[use_id] = _Awaited("confirm", server_call, thread)
            elif waits_result:
                awaiting[use_id] = _Awaited("result", server_call, thread)
            elif server_call.permission == "deny":
                self._append(session, _denial(server_call, use_id), thread=thread)
            else:
                result = _tool_result(server_call, use_id, server_call.result, is_error=False)
                self._append(session, result, thread=thread)
        input_tokens, output_tokens = turn.usage
        end = {
            "type": "span.model_request_end",
            "model_request_start_id": start["id"],
            "is_error": False,
            "model_usage": _span_usage(input_tokens, output_tokens),
        }
        self._append(session, end, thread=thread)
        self._add_usage(session, input_tokens, output_tokens, thread)
        for custom_call in turn.tool_calls:
            use = {"type": "agent.custom_tool_use", "name": custom_call.name}
            use["input"] = dict(custom_call.input)
            if thread is not None:
                use["session_thread_id"] = thread.id
            use_id = self._append(session, use, thread=thread, cross_post=True)["id"]
            awaiting[use_id] = _Awaited("custom", thread=thread)
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
            stop_reason = {"type": "requires_action", "event_ids": list(awaiting)}
            self._idle_thread(session, stop_reason)
            self._finish_turn(session, stop_reason)
        else:
            self._report_back(session, text)
            if session.outcome is not None and not session.outcome.final:
                revision = self._evaluate(session, session.outcome, turn)
                if revision is not None:
                    return revision
            else:
                session.outcome = None  # a final turn after max_iterations_reached, if any
            self._finish_turn(session, {"type": "end_turn"})
        return None

    def _report_back(self, session: _Session, text: str) -> None:
        """A subagent thread that ends its turn idles and reports its text to the primary."""
        thread = session.turn_thread
        if thread is None:
            return
        self._idle_thread(session, {"type": "end_turn"})
        report = {
            "type": "agent.thread_message_received",
            "content": _texts([text]),
            "from_session_thread_id": thread.id,
            "from_agent_name": thread.name,
        }
        self._append(session, report)
        session.turn_thread = None

    def _add_usage(
        self,
        session: _Session,
        input_tokens: int,
        output_tokens: int,
        thread: _Thread | None = None,
    ) -> None:
        for usage in (session.record["usage"], thread.record["usage"] if thread else None):
            if usage is not None:
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
        budget = copy.deepcopy(session.record["budget"])
        self._append(session, {"type": "session.usage", "usage": usage, "budget": budget})

    def _finish_turn(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        self._append_usage(session)  # the API always reports usage right before an idle
        self._set_status(session, "idle")
        self._append(session, {"type": "session.status_idle", "stop_reason": stop_reason})

    def _fail(self, session: _Session, message: str) -> None:
        error = {"type": "unknown_error", "message": message, "retry_status": {"type": "terminal"}}
        self._append(session, {"type": "session.error", "error": error})
        self._terminate(session)

    def _terminate(self, session: _Session) -> None:
        for thread in session.threads.values():
            if not thread.primary and thread.record["status"] != "terminated":
                self._set_thread_status(thread, "terminated")
                self._append_thread_status(session, thread, "session.thread_status_terminated")
        self._set_status(session, "terminated")
        session.queued_inputs.clear()
        session.awaiting = {}
        session.outcome = None
        session.turn_thread = None
        self._append(session, {"type": "session.status_terminated"})
