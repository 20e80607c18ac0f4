"""What ``verbose=True`` shows while a run goes on: its text, and one line of progress.

The agent's text is written to stdout as it arrives. The progress line - which turn, how
many tools are running, how the run ended - is kept to one line that updates in place: in
a Jupyter notebook as a display that is updated (IPython is only used when it is already
imported, so a script never pays for it), on a terminal as a line on stderr rewritten with
``\\r``, and not at all when stderr is a file or a pipe (logs stay clean).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, TextIO

from req_managed_agents.model._stream import (
    StreamItem,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents.model._vocabulary import SessionResult

__all__ = ["Progress"]

StatusWriter = Callable[[str], None]


class Progress:
    """Shows one run (used from the session's worker thread only)."""

    def __init__(self, out: TextIO | None = None, status: StatusWriter | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._status = status if status is not None else _status_writer()
        self._turn = 1
        self._running = 0

    def __call__(self, item: StreamItem) -> None:
        if isinstance(item, TextDelta):
            self._out.write(item.text)
            self._out.flush()
            return
        if isinstance(item, ToolCallStarted):
            self._running += 1
        elif isinstance(item, ToolCallFinished):
            self._running = max(0, self._running - 1)
        elif isinstance(item, TurnEnded):
            self._turn = item.number + 1
            self._running = 0
        else:
            return
        self._show()

    def finish(self, result: SessionResult) -> None:
        """The last word of the line: how the run ended."""
        if self._status is not None:
            self._status(
                f"{result.terminal} after {result.turns} turn(s), "
                f"{len(result.tool_uses)} tool call(s), {result.usage.total_tokens} tokens"
            )

    def _show(self) -> None:
        if self._status is None:
            return
        tools = f", {self._running} tool(s) running" if self._running else ""
        self._status(f"turn {self._turn}{tools}")


def _status_writer() -> StatusWriter | None:
    """Where the progress line goes here: a notebook display, a terminal line, or nowhere."""
    notebook = _notebook_display()
    if notebook is not None:
        return notebook
    stream = sys.stderr
    if not stream.isatty():
        return None

    def terminal(text: str) -> None:
        stream.write(f"\r\033[K[{text}]")
        stream.flush()

    return terminal


def _notebook_display() -> StatusWriter | None:
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell: Any = get_ipython() if callable(get_ipython) else None
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return None
    display: Any = importlib.import_module("IPython.display").display
    handle = display({"text/plain": "starting"}, raw=True, display_id=True)

    def update(text: str) -> None:
        handle.update({"text/plain": text}, raw=True)

    return update
