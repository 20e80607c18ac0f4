"""What ``rma run`` shows: each stream item as a line, the live status line on a terminal,
and the summary (or the JSON object) at the end.

The agent's text is written as it comes; a tool call and its result get a line each; on a
terminal, a status line ("turn 2 · 1 tool running") is redrawn in place on standard error,
wiped before anything else is written and drawn again after it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO

from req_managed_agents.model._stream import (
    ConfirmationAnswered,
    MessageDone,
    StreamItem,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents.model._vocabulary import (
    Allow,
    HookEvent,
    SessionResult,
    ToolResult,
    ToolUse,
)

__all__ = ["Display", "run_json", "stop_reason_json", "summary", "write_json_line"]

_CLIP = 200  # characters of a tool's input or result shown on its line


def summary(result: SessionResult) -> str:
    """The one line that ends a run's output."""
    usage = result.usage
    reason = "" if result.terminal == "end_turn" else f" ({_reason(result.stop_reason)})"
    calls = len(result.tool_uses)
    return (
        f"{result.terminal}{reason} after {_count(result.turns, 'turn')}, "
        f"{usage.input_tokens} input + {usage.output_tokens} output tokens, "
        f"{_count(calls, 'tool call')}; session {result.session_id}"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _reason(stop_reason: Any) -> str:
    if isinstance(stop_reason, Mapping) and stop_reason.get("type"):
        return str(stop_reason["type"])
    return str(stop_reason) if stop_reason else "no stop reason"


def stop_reason_json(stop_reason: Any) -> dict[str, Any] | None:
    """One shape for every runtime: an object whose string ``type`` names the reason, with
    whatever else the runtime said (Claude's and OpenAI's are objects already; AgentCore's
    Converse ``stopReason`` is a bare string, here ``{"type": "max_tokens"}``), or None."""
    if stop_reason is None:
        return None
    if isinstance(stop_reason, Mapping):
        return {**stop_reason, "type": str(stop_reason.get("type") or "unknown")}
    return {"type": str(stop_reason)}


def run_json(
    status: int,
    result: SessionResult | None,
    session_id: str | None,
    tool_calls: Sequence[tuple[ToolUse, ToolResult]],
    resume: str | None,
    error: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What ``rma run --json`` prints, whatever the outcome: every key each time, None where
    the run did not get that far (``result`` is None when it did not end)."""
    usage = result.usage if result is not None else None
    return {
        "exit_status": status,
        "session_id": session_id,
        "terminal": result.terminal if result is not None else None,
        "stop_reason": stop_reason_json(result.stop_reason) if result is not None else None,
        "text": result.text if result is not None else None,
        "turns": result.turns if result is not None else None,
        "usage": None
        if usage is None
        else {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "total_tokens": usage.total_tokens,
        },
        "tool_calls": [
            {
                "id": use.id,
                "name": use.name,
                "input": dict(use.input),
                "result": outcome.content,
                "is_error": outcome.is_error,
            }
            for use, outcome in tool_calls
        ],
        "error": dict(error) if error is not None else None,
        "resume": resume,
    }


def write_json_line(out: TextIO, value: Mapping[str, Any]) -> None:
    """One object on one line (``rma run --json``'s)."""
    json.dump(value, out, default=str)
    out.write("\n")
    out.flush()


class Display:
    """Shows a run as it happens on ``out`` (None: nothing), and a status line redrawn in
    place on ``status`` (a terminal; None: none) while the agent works.

    The status line is drawn only at the start of an output line, and wiped before anything
    else is written, so it never mixes with the agent's text when both share a terminal.
    """

    _FRAMES = "|/-\\"
    _TICK = 0.1

    def __init__(self, out: TextIO | None, status: TextIO | None) -> None:
        self._out = out
        self._status = status
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._started = time.monotonic()
        self._turn = 1
        self._running = 0
        self._speaking = False
        self._drawn = 0  # width of the status line on screen
        self._frame = 0
        self._dot = _dot(status)

    def __enter__(self) -> Display:
        if self._status is not None:
            self._ticker = threading.Thread(target=self._tick, name="rma-status", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._wipe()
            if self._speaking and self._out is not None:
                self._write("\n")  # an interrupted message still ends its line
                self._speaking = False

    def show(self, item: StreamItem) -> None:
        """Print one stream item (the run's result is the caller's to report)."""
        with self._lock:
            if isinstance(item, TurnEnded):
                self._turn = item.number + 1
            elif isinstance(item, ToolCallStarted):
                self._running += 1
            elif isinstance(item, ToolCallFinished):
                self._running = max(0, self._running - 1)
            if self._out is None:
                return
            self._wipe()
            if isinstance(item, TextDelta):
                self._write(item.text if self._speaking else f"agent> {item.text}")
                self._speaking = True
            elif isinstance(item, (MessageDone, TextReset)):
                if self._speaking:
                    self._write("\n")
                    self._speaking = False
                if isinstance(item, TextReset):
                    self._write("  (the agent rewrote that message:)\n")
            else:
                self._line(item)

    def _line(self, item: StreamItem) -> None:
        text = None
        if isinstance(item, ToolCallStarted):
            text = f"  -> {item.tool_use.name} {_clip(json.dumps(dict(item.tool_use.input)))}"
        elif isinstance(item, ToolCallFinished):
            verdict = "failed" if item.result.is_error else "returned"
            text = f"  <- {item.tool_use.name} {verdict} {_clip(json.dumps(item.result.content))}"
        elif isinstance(item, ToolCallProgress):
            total = "" if item.total is None else f"/{item.total:g}"
            said = f" {_clip(item.message)}" if item.message else ""
            text = f"  .. {item.tool_use.name} {item.progress:g}{total}{said}"
        elif isinstance(item, ConfirmationAnswered):
            decision = item.decision
            answer = (
                "allowed"
                if isinstance(decision, Allow)
                else f"denied{f': {decision.message}' if decision.message else ''}"
            )
            text = f"  ?? {item.tool_use.name} {answer}"
        elif isinstance(item, HookEvent):
            verdict = f" {item.decision}" if item.decision else ""
            why = f": {item.reason}" if item.reason else ""
            text = f"  !! hook {item.name} ({item.type}){verdict}{why}"
        if text is None:
            return
        if self._speaking:
            self._write("\n")
            self._speaking = False
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        assert self._out is not None
        self._out.write(text)
        self._out.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self._TICK):
            with self._lock:
                if not self._speaking:
                    self._draw()

    def _draw(self) -> None:
        assert self._status is not None
        frame = self._FRAMES[self._frame % len(self._FRAMES)]
        self._frame += 1
        doing = f"{_count(self._running, 'tool')} running" if self._running else "agent working"
        seconds = int(time.monotonic() - self._started)
        line = f"{frame} turn {self._turn} {self._dot} {doing} {self._dot} {seconds}s"
        self._status.write("\r" + line.ljust(self._drawn))
        self._status.flush()
        self._drawn = len(line)

    def _wipe(self) -> None:
        if self._status is not None and self._drawn:
            self._status.write("\r" + " " * self._drawn + "\r")
            self._status.flush()
            self._drawn = 0


def _dot(stream: TextIO | None) -> str:
    """A middle dot where the terminal's encoding has one."""
    try:
        "\u00b7".encode(getattr(stream, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        return "-"
    return "\u00b7"


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."
