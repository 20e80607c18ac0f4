"""What ``verbose=True`` shows while a run goes on: its text, and one line of progress.

The agent's text is written as it arrives, a blank line between two messages. The progress
line - which turn, how many tools are running, the time since the run began, how the run
ended - is one line updated in place (as the run's events come), and it never overwrites
text:

* on a terminal, it lives on stderr's last line, drawn only where a line starts: text that
  comes next first erases it (``\\r\\033[K``) and is written from that column; while a line of
  text is half written the progress line waits, and it is drawn again once the line ends or
  the message does. It is not drawn at all when stderr is not a terminal (logs stay clean);
* in a Jupyter notebook, text and progress are one display updated in place, the progress
  line under the text (IPython is only used when it is already imported, so a script never
  pays for it).

Importing this module plugs :class:`VerboseDisplay` into the vocabulary's hook for verbose runs.

Turns are counted as a person reads them: the tools a turn asked for run under that turn's
number, and the next number shows once they have all finished.
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any, TextIO

from req_managed_agents.model._progress import format_elapsed
from req_managed_agents.model._stream import (
    MessageDone,
    StreamItem,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    register_run_view,
)
from req_managed_agents.model._vocabulary import SessionResult

__all__ = ["VerboseDisplay"]

# A notebook display is redrawn at most this often while text streams (each redraw sends
# the whole text to the browser), and never more often than to spend a tenth of the time
# redrawing: as the text grows, so does the wait between two redraws.
NOTEBOOK_REDRAW_SECONDS = 0.1
NOTEBOOK_REDRAW_SHARE = 0.1


class VerboseDisplay:
    """Shows one run (used from the session's worker thread only). ``out`` and ``err`` are
    where text and the progress line go (stdout and stderr by default)."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self._started = time.monotonic()
        self._turn = 1
        self._running = 0
        self._tools_of: int | None = None  # the turn whose tools are running
        self._message: str | None = None
        notebook = _notebook_display() if out is None and err is None else None
        self._view: _View = notebook or _TerminalView(out or sys.stdout, err or sys.stderr)

    def __call__(self, item: StreamItem) -> None:
        if isinstance(item, SessionResult):  # the last word of the line: how the run ended
            self._view.close(
                f"{item.terminal} after {item.turns} turn(s), "
                f"{len(item.tool_uses)} tool call(s), {item.usage.total_tokens} tokens, "
                f"{format_elapsed(time.monotonic() - self._started)}"
            )
            return
        if isinstance(item, TextDelta):
            if self._message is not None and item.message != self._message:
                self._view.text_break()
            self._message = item.message
            if self._tools_of is not None and not self._running:
                self._next_turn()
            self._view.text(item.text)
            return
        if isinstance(item, MessageDone):
            self._view.line_end()
        elif isinstance(item, ToolCallStarted):
            self._running += 1
        elif isinstance(item, ToolCallFinished):
            self._running = max(0, self._running - 1)
            if not self._running:
                self._next_turn()
        elif isinstance(item, TurnEnded):
            self._turn = item.number
            self._tools_of = item.number if item.turn.terminal == "requires_action" else None
        self._view.status(self._line())

    def _next_turn(self) -> None:
        if self._tools_of is not None:
            self._turn = self._tools_of + 1
            self._tools_of = None

    def _line(self) -> str:
        tools = f", {self._running} tool(s) running" if self._running else ""
        return f"turn {self._turn}{tools}, {format_elapsed(time.monotonic() - self._started)}"


class _View:
    """Where a run is shown."""

    def text(self, text: str) -> None:
        raise NotImplementedError

    def text_break(self) -> None:
        """A new message starts: a blank line after the last one."""
        raise NotImplementedError

    def line_end(self) -> None:
        """A message ended: the progress line may be drawn again."""

    def status(self, line: str) -> None:
        raise NotImplementedError

    def close(self, line: str) -> None:
        raise NotImplementedError


class _TerminalView(_View):
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out = out
        self._err = err if _isatty(err) else None
        # Text and status share one screen only when both go to the terminal.
        self._shared = self._err is not None and _isatty(out)
        self._column = 0  # characters written since the last newline
        self._shown: str | None = None  # the progress line on the screen now
        self._wanted: str | None = None

    def text(self, text: str) -> None:
        if not text:
            return
        self._erase()
        self._out.write(text)
        self._out.flush()
        last = text.rfind("\n")
        self._column = len(text) - last - 1 if last >= 0 else self._column + len(text)
        self._draw()

    def text_break(self) -> None:
        self.text("\n\n" if self._column else "\n")

    def line_end(self) -> None:
        if self._column:
            self.text("\n")  # the message ends its line: the progress line goes under it

    def status(self, line: str) -> None:
        self._wanted = line
        self._draw()

    def close(self, line: str) -> None:
        if self._column:
            self.text("\n")
        self._wanted = line
        self._draw()
        if self._shown is not None and self._err is not None:
            self._err.write("\n")
            self._err.flush()
            self._shown = None

    def _erase(self) -> None:
        if self._shown is not None and self._err is not None and self._shared:
            self._err.write("\r\033[K")
            self._err.flush()
            self._shown = None

    def _draw(self) -> None:
        err, wanted = self._err, self._wanted
        if err is None or wanted is None or (self._shared and self._column):
            return  # no terminal, nothing to say, or a line of text is half written
        if wanted != self._shown:
            err.write(f"\r\033[K[{wanted}]")
            err.flush()
            self._shown = wanted


class _NotebookView(_View):
    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._text: list[str] = []
        self._line = "starting"
        self._next = 0.0  # when text may be redrawn next

    def text(self, text: str) -> None:
        self._text.append(text)
        self._redraw(force=False)

    def text_break(self) -> None:
        self._text.append("\n\n")

    def status(self, line: str) -> None:
        self._line = line
        self._redraw(force=True)

    def close(self, line: str) -> None:
        self._line = line
        self._redraw(force=True)

    def _redraw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now < self._next:
            return
        self._text = ["".join(self._text)]  # the next redraw joins only what came since
        shown = self._text[0].rstrip("\n")
        body = f"{shown}\n\n[{self._line}]" if shown else f"[{self._line}]"
        self._handle.update({"text/plain": body}, raw=True)
        took = time.monotonic() - now
        self._next = now + max(NOTEBOOK_REDRAW_SECONDS, took / NOTEBOOK_REDRAW_SHARE)


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def _notebook_display() -> _NotebookView | None:
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell: Any = get_ipython() if callable(get_ipython) else None
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return None
    display: Any = importlib.import_module("IPython.display").display
    return _NotebookView(display({"text/plain": "[starting]"}, raw=True, display_id=True))


register_run_view(VerboseDisplay)
