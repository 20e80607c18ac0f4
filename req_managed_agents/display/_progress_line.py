"""Progress reports shown to a person: one live line on a terminal, plain lines elsewhere.

On a terminal, :class:`ProgressLine` keeps the latest report on the stream's last line,
redrawn in place (``\\r`` and erase-to-end) whenever its text changes, cut to the terminal's
width so it never wraps; other output goes above it (:meth:`ProgressLine.write_line`, and
the library's log records while :meth:`ProgressLine.showing_logs` is on). Anywhere else -
a pipe, a file, a log collector - it writes plain lines, no control character in them: one
when there is news (the words of what is waited for changed: a harness's status, the
endpoint's turn, a worker's slots all busy), while only numbers move again after 10 s,
20 s, 40 s ... and then every 5 minutes (:data:`QUIET_REPEATS`), and the last report when
it is closed, so a log shows the wait is alive, and how it ended, without filling up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from req_managed_agents.model._progress import Progress
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["QUIET_REPEATS", "ProgressLine"]

QUIET_REPEATS = RetryPolicy.poll(300.0, first=10.0)
"""How long plain output waits before saying an unchanged wait again: 10 s, doubling to 5 min."""
ERASE = "\r\033[K"
DEFAULT_COLUMNS = 80
_NUMBERS = re.compile(r"\d+")


class ProgressLine:
    """Shows each :class:`~req_managed_agents.model.Progress` it is called with on ``stream``
    (default: standard error): live on a terminal, as plain lines elsewhere (see the module).
    Thread-safe; :meth:`close` (or leaving a ``with`` block) takes the live line away."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        isatty = getattr(self._stream, "isatty", None)
        self.live: bool = bool(isatty()) if callable(isatty) else False
        self._lock = threading.Lock()
        self._shown = ""  # the live line on the screen now
        self._words: str | None = None  # what the last plain line said, numbers aside
        self._said_at = 0.0
        self._repeats = 0
        self._latest: Progress | None = None  # the last report, and whether it was said
        self._said: Progress | None = None

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            if self.live:
                self._draw(str(progress))
            else:
                self._log(progress)

    def write_line(self, text: str, out: TextIO | None = None) -> None:
        """Write a line of other output to ``out`` (default: the line's stream), the live
        line moved out of its way and drawn again under it."""
        target = out if out is not None else self._stream
        with self._lock:
            shown = self._shown
            self._draw("")
            target.write(text if text.endswith("\n") else text + "\n")
            target.flush()
            self._draw(shown)

    @contextlib.contextmanager
    def showing_logs(self) -> Iterator[ProgressLine]:
        """While on, the package's log records of WARNING and above go above the live line
        (as Python would print them with no logging configured), when nothing else was set
        up to show them; a configured logging is left alone."""
        package = logging.getLogger("req_managed_agents")
        configured = logging.getLogger().handlers or package.handlers
        handler = None if configured or not self.live else _Above(self)
        if handler is not None:
            package.addHandler(handler)
        try:
            yield self
        finally:
            if handler is not None:
                package.removeHandler(handler)

    def close(self) -> None:
        """Take the live line away; plain output ends with the last report, if it was not
        said yet."""
        with self._lock:
            self._draw("")
            if not self.live and self._latest is not self._said and self._latest is not None:
                self._say(self._latest)

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _draw(self, text: str) -> None:
        if not self.live:
            return
        text = text[: self._columns() - 1]
        if text == self._shown:
            return
        self._stream.write(ERASE + text)
        self._stream.flush()
        self._shown = text

    def _columns(self) -> int:
        try:
            columns = os.get_terminal_size(self._stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            return DEFAULT_COLUMNS
        return columns if columns > 1 else DEFAULT_COLUMNS

    def _log(self, progress: Progress) -> None:
        self._latest = progress
        words = _NUMBERS.sub("#", progress.what)  # numbers moving is progress, not news
        if words == self._words:
            if time.monotonic() - self._said_at < QUIET_REPEATS.delay(self._repeats):
                return
            self._repeats += 1
        else:
            self._words, self._repeats = words, 0
        self._say(progress)

    def _say(self, progress: Progress) -> None:
        self._said, self._said_at = progress, time.monotonic()
        self._stream.write(f"{progress}\n")
        self._stream.flush()


class _Above(logging.Handler):
    """Log records written above the live line, as Python's last-resort handler would."""

    def __init__(self, line: ProgressLine) -> None:
        super().__init__(logging.WARNING)
        self._line = line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._line.write_line(self.format(record))
        except Exception:
            self.handleError(record)
