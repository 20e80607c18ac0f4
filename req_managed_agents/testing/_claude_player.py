"""The scripted-turn player of the Claude emulator: a session's events in, turns, events out.

Events sent to a session (``POST /v1/sessions/{id}/events``) are checked, echoed into its
log and acted on: each ``user.message``, or each complete set of results for the previous
turn's custom tool calls, is an input that plays the session's next :class:`Turn` on a
background thread (queued while a turn plays). A turn logs its events in the order the
service does and ends idle, ``requires_action``, terminated or in error; interrupts,
``fail_turn``, termination and closing the emulator cut a turn short. The log is served as
history pages and as a long-lived SSE stream with heartbeats and no replay.
"""

from __future__ import annotations

import copy
import functools
import json
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import _MAX_EVENTS_PAGE, _invalid, _json_object, _new_id
from req_managed_agents.testing._claude_files import _FilesAPI
from req_managed_agents.testing._script import ToolCall, scripted_text
from req_managed_agents.testing._server import utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

    from req_managed_agents.testing._claude_base import _Session
    from req_managed_agents.testing._server import ChunkedStream, Exchange

_HEARTBEATS = {
    "comment": b": ping\n\n",
    "event": b'event: ping\ndata: {"type":"ping"}\n\n',
}

# A stream re-checks for a vanished client at least this often (seconds).
_DISCONNECT_POLL = 0.1

_ENDS = ("end_turn", "terminated", "error")


@dataclass(frozen=True)
class Turn:
    """One scripted agent turn, played when the session gets its next input.

    ``text`` may be a function of the texts that triggered the turn: the user message, or
    each custom tool result in call order. ``usage`` is ``(input_tokens, output_tokens)``.
    ``delay`` is how long the turn "thinks" after ``session.status_running``. ``end`` picks
    the ending: ``"end_turn"`` (idle; ``requires_action`` when there are ``tool_calls``),
    ``"terminated"`` or ``"error"`` (a terminal ``session.error``, then terminated).
    ``outputs`` maps file names to the bytes the agent writes under
    ``/mnt/session/outputs/``; each becomes a downloadable file scoped to the session
    before the turn's final status event.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    server_tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal["end_turn", "terminated", "error"] = "end_turn"
    outputs: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
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


class _SessionPlayer(_FilesAPI):
    """Session events (sent, logged, streamed) and the playing of scripted turns."""

    _ping_interval: float
    _heartbeat: bytes
    _sse_ids: bool

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
            answering: set[str] = set()
            for index, event in enumerate(events):
                self._check_event(session, index, event, answering)
            echoes = [self._accept(session, event) for event in events]
            if answering and not session.busy and session.pending:
                # Some of the requested results are still missing: idle again, naming them.
                missing = [use_id for use_id, text in session.pending.items() if text is None]
                self._finish_turn(session, {"type": "requires_action", "event_ids": missing})
            return {"data": copy.deepcopy(echoes)}

    def _check_event(self, session: _Session, index: int, event: Any, answering: set[str]) -> None:
        where = f"events[{index}]"
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise _invalid(f"{where}: must be an object with a type")
        kind = event["type"]
        if kind == "user.message":
            content = event.get("content")
            if not isinstance(content, list) or not content:
                raise _invalid(f"{where}.content: must be a non-empty list of content blocks")
            for block in content:
                if not isinstance(block, dict) or block.get("type") == "redacted":
                    raise _invalid(f"{where}.content: invalid or redacted content block")
        elif kind == "user.custom_tool_result":
            use_id = event.get("custom_tool_use_id")
            if not isinstance(use_id, str):
                raise _invalid(f"{where}.custom_tool_use_id: Field required")
            if use_id in session.answered or use_id in answering:
                raise _invalid(f"{where}.custom_tool_use_id: {use_id!r} was already answered")
            if use_id not in session.pending:
                raise _invalid(
                    f"{where}.custom_tool_use_id: no pending agent.custom_tool_use {use_id!r}"
                )
            if not isinstance(event.get("content", []), list):
                raise _invalid(f"{where}.content: must be a list of content blocks")
            answering.add(use_id)
        elif kind == "user.tool_confirmation":
            if not isinstance(event.get("tool_use_id"), str) or event.get("result") not in (
                "allow",
                "deny",
            ):
                raise _invalid(f"{where}: needs tool_use_id and result 'allow' or 'deny'")
        elif kind != "user.interrupt":
            raise _invalid(f"{where}.type: {kind!r} is not supported by the emulator")

    def _accept(self, session: _Session, event: dict[str, Any]) -> dict[str, Any]:
        """Log a checked user event and act on it; return its echo."""
        echo = self._append(session, event)
        kind = event["type"]
        if kind == "user.message":
            self._give_input(session, [_text_of(event["content"])])
        elif kind == "user.custom_tool_result":
            use_id = event["custom_tool_use_id"]
            session.pending[use_id] = _text_of(event.get("content"))
            session.answered.add(use_id)
            results = [text for text in session.pending.values() if text is not None]
            if len(results) == len(session.pending):
                session.pending = {}
                self._give_input(session, results)
        elif kind == "user.interrupt" and session.busy:
            session.interrupted = True
        return echo

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

    def _give_input(self, session: _Session, inputs: list[str]) -> None:
        if session.busy:
            session.queued_inputs.append(inputs)
        else:
            turn = self._begin_turn(session)
            self._start_thread("turn", self._run_turns, session, turn, inputs)

    def _begin_turn(self, session: _Session) -> Turn:
        session.busy = True
        session.interrupted = False
        self._set_status(session, "running")
        self._append(session, {"type": "session.status_running"})
        played = session.turns_played
        session.turns_played += 1
        return session.script[played] if played < len(session.script) else _SCRIPT_FINISHED

    def _run_turns(self, session: _Session, turn: Turn, inputs: list[str]) -> None:
        """The session's worker: play turns until no input is queued."""
        upcoming: tuple[Turn, list[str]] | None = (turn, inputs)
        while upcoming is not None:
            upcoming = self._play(session, *upcoming)

    def _next_turn(self, session: _Session) -> tuple[Turn, list[str]] | None:
        """Called in the lock hold that logs a turn's last event, so no input can slip by."""
        if self._stopping or session.status == "terminated" or not session.queued_inputs:
            session.busy = False
            return None
        inputs = session.queued_inputs.popleft()
        return self._begin_turn(session), inputs

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
            if self._turn_cut(session):
                self._cut_turn(session)
            elif failure:
                self._fail(session, failure)
            else:
                self._emit_turn(session, turn, text)
            return self._next_turn(session)

    def _cut_turn(self, session: _Session) -> None:
        """End a turn early: an interrupt ends it as end_turn; close or terminate end it bare,
        and so does fail_turn, which already logged the turn's end."""
        if session.gave_up:
            session.gave_up = False
        elif session.interrupted and not self._stopping and session.status != "terminated":
            self._finish_turn(session, {"type": "end_turn"})

    def _emit_turn(self, session: _Session, turn: Turn, text: str) -> None:
        start = self._append(session, {"type": "span.model_request_start"})
        if text:
            self._append(
                session, {"type": "agent.message", "content": [{"type": "text", "text": text}]}
            )
        for server_call in turn.server_tool_calls:
            use = self._append(
                session,
                {
                    "type": "agent.tool_use",
                    "name": server_call.name,
                    "input": dict(server_call.input),
                    "evaluated_permission": "allow",
                },
            )
            self._append(
                session,
                {
                    "type": "agent.tool_result",
                    "tool_use_id": use["id"],
                    "content": [{"type": "text", "text": server_call.result}],
                    "is_error": False,
                },
            )
        input_tokens, output_tokens = turn.usage
        self._append(
            session,
            {
                "type": "span.model_request_end",
                "model_request_start_id": start["id"],
                "is_error": False,
                "model_usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            },
        )
        usage = session.record["usage"]
        usage["input_tokens"] += input_tokens
        usage["output_tokens"] += output_tokens
        tool_use_ids = [
            self._append(
                session,
                {"type": "agent.custom_tool_use", "name": c.name, "input": dict(c.input)},
            )["id"]
            for c in turn.tool_calls
        ]
        session.pending = dict.fromkeys(tool_use_ids)
        for name, data in turn.outputs.items():
            self._write_output(session, name, data)
        if turn.end == "terminated":
            self._append_usage(session)
            self._terminate(session)
        elif turn.end == "error":
            self._append_usage(session)
            self._fail(session, "scripted error")
        elif tool_use_ids:
            self._finish_turn(session, {"type": "requires_action", "event_ids": tool_use_ids})
        else:
            self._finish_turn(session, {"type": "end_turn"})

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
        session.pending = {}
        self._append(session, {"type": "session.status_terminated"})

    # --- the event stream -----------------------------------------------------------------

    def _stream_events(self, exchange: Exchange, session_id: str) -> None:
        with self._condition:
            session = self._live_session(session_id)
            # No replay: only events logged from now on. Taken before the response head is
            # sent, so nothing logged after the client sees the stream open can be missed.
            cursor = len(session.log)
        stream = exchange.open_stream(
            session_id,
            "text/event-stream",
            {"request-id": _new_id("req"), "Cache-Control": "no-cache"},
        )
        self._pump(session, stream, cursor)

    def _pump(self, session: _Session, stream: ChunkedStream, cursor: int) -> None:
        """Forward new log events to one stream until it ends; ping when it is quiet."""
        quiet_since = time.monotonic()
        poll = min(self._ping_interval, _DISCONNECT_POLL)
        while True:
            with self._condition:
                if len(session.log) <= cursor and not self._stopping:
                    self._condition.wait(poll)
                if self._stopping:
                    stream.abort("emulator_closed")
                    return
                fresh = session.log[cursor:]
            for position, event in enumerate(fresh, start=cursor):
                corrupted = functools.partial(self._frame, event, cut=True)
                if not stream.send_event(self._frame(event), position, corrupted):
                    return
                if event["type"] == "session.deleted":  # nothing follows it
                    stream.finish("session_deleted")
                    return
            cursor += len(fresh)
            now = time.monotonic()
            if fresh:
                quiet_since = now
            elif now - quiet_since >= self._ping_interval:
                if not stream.write(self._heartbeat):
                    return
                quiet_since = now
            if stream.client_gone():
                stream.abort("client_closed")
                return

    def _frame(self, event: Mapping[str, Any], *, cut: bool = False) -> bytes:
        """An event's SSE frame; ``cut`` (``corrupt_stream``) keeps only the first half of its
        JSON, which never parses: the closing brace is gone."""
        lines = [f"event: {event['type']}"]
        if self._sse_ids:
            lines.append(f"id: {event['id']}")
        data = json.dumps(event, separators=(",", ":"))
        lines.append("data: " + (data[: len(data) // 2] if cut else data))
        return ("\n".join(lines) + "\n\n").encode()
