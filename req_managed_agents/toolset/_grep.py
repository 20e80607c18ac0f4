"""The search ``grep`` runs, in a child process of its own.

The agent writes the regular expression, and Python's ``re`` can backtrack for longer
than any deadline (``(a+)+$`` on a line of ``a``), with no way to stop it from outside
in the same process. So the toolset opens the file or directory to search - confined by
:mod:`._paths` - and hands its descriptor to a child running :func:`main`, which walks
and matches, printing ``path:line:text`` lines; the toolset kills the child at its
deadline or on cancellation, like any command. Files that look binary (a NUL byte near
the start), files over :data:`MAX_FILE_BYTES` and directories named in :data:`SKIP_DIRS`
are skipped; a long line is matched and shown up to :data:`MAX_LINE` characters.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from typing import IO, Any

from req_managed_agents.toolset._paths import OPEN_FILE
from req_managed_agents.toolset._walk import Walk

__all__ = ["main"]

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Files larger than this are not searched."""
MAX_LINE = 2000
"""Characters of a line that are matched and shown."""
MAX_MATCHES = 1000
"""Matching lines shown before the search stops."""
NOTE_ROOM = 200
"""Characters of ``max_output`` kept for the note that ends a cut answer."""
SKIP_DIRS = frozenset({".git", "node_modules"})
"""Directories not searched: large, and rarely what the agent is after."""

_SNIFF = 8192


class _Output:
    """Matches written as they are found, up to ``max_output`` characters."""

    def __init__(self, sink: IO[bytes], max_output: int) -> None:
        self.sink, self.left, self.lines, self.full = sink, max_output, 0, False

    def add(self, line: str) -> None:
        if self.lines >= MAX_MATCHES or len(line) + 1 > self.left:
            self.full = True
            return
        self.sink.write(line.encode("utf-8", errors="replace") + b"\n")
        self.left -= len(line) + 1
        self.lines += 1


def main(argv: list[str]) -> int:
    """Search as ``argv[0]`` (JSON: pattern, fd, shown, is_file, max_output) says."""
    spec: dict[str, Any] = json.loads(argv[0])
    regex = re.compile(spec["pattern"])
    out = _Output(sys.stdout.buffer, int(spec["max_output"]) - NOTE_ROOM)
    fd, shown = int(spec["fd"]), str(spec["shown"])
    stopped_early = False
    if spec["is_file"]:
        _search(fd, shown, regex, out)
    else:
        walk = Walk(stop=lambda: out.full, skip_dirs=SKIP_DIRS)
        for found in walk.under(fd):
            if found.is_file and found.info.st_size <= MAX_FILE_BYTES:
                try:
                    file_fd = os.open(found.names[-1], OPEN_FILE, dir_fd=found.dir_fd)
                except OSError:
                    continue  # replaced by a link or gone since the walk saw it
                _search(file_fd, "/".join((shown, *found.names)), regex, out)
        stopped_early = walk.stopped_early and not out.full
    if out.full:
        note = (
            f"[output truncated: the first {out.lines} matching lines are shown; "
            "narrow the pattern or the path]"
        )
    elif stopped_early:
        note = "[the search stopped early: the tree is too large or too deep; give a path]"
    else:
        note = "" if out.lines else "no matches"
    out.sink.write(note.encode("utf-8") + b"\n" if note else b"")
    out.sink.flush()
    return 0


def _search(fd: int, shown: str, regex: re.Pattern[str], out: _Output) -> None:
    """Print the lines of the open file ``fd`` that ``regex`` matches (``fd`` is closed)."""
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return
        os.set_blocking(file.fileno(), True)
        if b"\x00" in file.read(_SNIFF):
            return
        file.seek(0)
        for number, raw in enumerate(file, 1):
            if out.full:
                return
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if len(line) > MAX_LINE:
                line = line[:MAX_LINE]
                if regex.search(line):
                    out.add(f"{shown}:{number}:{line} [line cut at {MAX_LINE} characters]")
            elif regex.search(line):
                out.add(f"{shown}:{number}:{line}")
