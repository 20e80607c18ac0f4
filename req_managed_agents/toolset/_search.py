"""The ``glob`` and ``grep`` tools: finding files and lines inside the working directory.

Both start from a directory reached by the confined walk of :mod:`._paths` and go down
with :mod:`._walk`, which never follows a link; ``glob`` lists a link only when it leads
somewhere inside. ``glob`` matches in this process (its matcher is linear); ``grep``
matches in a child it can kill (see :mod:`._grep`). Paths are answered absolute, as the
reference toolset does - the shell sees the working directory at the same path.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from req_managed_agents.model._vocabulary import ToolResult
from req_managed_agents.tools._handler import ToolContext
from req_managed_agents.toolset import _process
from req_managed_agents.toolset._failure import ToolFailure
from req_managed_agents.toolset._glob import compile_glob
from req_managed_agents.toolset._inputs import optional_text, required_text
from req_managed_agents.toolset._paths import (
    OPEN_DIRECTORY,
    OPEN_FILE,
    PATH_MAX,
    Workdir,
    open_directory,
)
from req_managed_agents.toolset._walk import Walk

__all__ = ["SearchTools"]

GLOB_MAX_RESULTS = 200
"""Paths ``glob`` answers, newest first."""
GREP_TIMEOUT = 60.0
"""How long one ``grep`` may search (less when the toolset's ``bash_timeout`` is less)."""
MAX_PATTERN = 10_000
"""The longest regular expression ``grep`` takes, in characters."""

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from req_managed_agents.toolset._grep import main; sys.exit(main(sys.argv[2:]))"
)


@dataclass(frozen=True)
class SearchTools:
    """``glob`` and ``grep`` over one working directory."""

    workdir: Workdir
    max_output: int
    timeout: float

    def glob(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer a ``glob`` call: matching paths, newest first."""
        pattern = required_text(input, "pattern")
        if not pattern or "\x00" in pattern or len(pattern) >= PATH_MAX:
            raise ToolFailure(f"pattern must be 1 to {PATH_MAX - 1} characters, without NUL")
        compiled = compile_glob(pattern)
        base = self._directory(optional_text(input, "path"))
        try:
            with self.workdir.locate([*base, *compiled.start]) as location:
                start_fd = open_directory(location)
                start = location.inner
        except (FileNotFoundError, NotADirectoryError):
            return ToolResult(context.tool_use_id, "no matches")
        walk = Walk(stop=context.cancelled.is_set, max_depth=compiled.depth)
        hits: list[tuple[float, str]] = []
        try:
            for found in walk.under(start_fd):
                inner = [*start, *found.names]
                if compiled.matches(found.names) and (
                    not found.is_link or self.workdir.contains(inner)
                ):
                    hits.append((found.info.st_mtime, self.workdir.shown(inner)))
        finally:
            os.close(start_fd)
        if context.cancelled.is_set():
            raise ToolFailure("cancelled")
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        return ToolResult(context.tool_use_id, self._listing([path for _, path in hits], walk))

    def grep(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer a ``grep`` call: ``path:line:text`` for every matching line."""
        pattern = required_text(input, "pattern")
        if len(pattern) > MAX_PATTERN:
            raise ToolFailure(f"pattern is longer than {MAX_PATTERN} characters")
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            raise ToolFailure(f"invalid regular expression: {exc}") from None
        path = optional_text(input, "path")
        parts = self.workdir.parts(path, "path") if path is not None else []
        with self.workdir.locate(parts) as location:
            fd, is_file = _open_searchable(location.dir_fd, location.name)
            shown = self.workdir.shown(location.inner)
        spec = {
            "pattern": pattern,
            "fd": fd,
            "shown": shown,
            "is_file": is_file,
            "max_output": self.max_output,
        }
        try:
            done = _process.run(
                [sys.executable, "-I", "-c", _CHILD, _PACKAGE_ROOT, json.dumps(spec)],
                cwd="/",
                env=os.environ,
                timeout=self.timeout,
                cancelled=context.cancelled,
                max_output=self.max_output,
                pass_fds=(fd,),
            )
        finally:
            os.close(fd)
        text = done.stdout.rstrip("\n")[: self.max_output]
        if done.cancelled:
            raise ToolFailure("cancelled")
        if done.timed_out:
            found = f"; what it found before:\n{text}" if text else ""
            raise ToolFailure(
                f"the search ran out of time after {self.timeout:g}s (a "
                f"pattern that backtracks heavily, or a huge tree?){found}"
            )
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()
            raise ToolFailure(f"the search failed: {said[-1][:200] if said else 'no reason'}")
        return ToolResult(context.tool_use_id, text or "no matches")

    def _directory(self, path: str | None) -> list[str]:
        """The names of the directory a search starts from, checked to be one."""
        if path is None:
            return []
        parts = self.workdir.parts(path, "path")
        with self.workdir.locate(parts) as location:
            os.close(open_directory(location))
            return list(location.inner)

    def _listing(self, paths: list[str], walk: Walk) -> str:
        if not paths:
            text = "no matches"
        else:
            text = "\n".join(paths[:GLOB_MAX_RESULTS])
            if len(paths) > GLOB_MAX_RESULTS:
                text += (
                    f"\n[{len(paths) - GLOB_MAX_RESULTS} more matches not shown; "
                    "narrow the pattern or the path]"
                )
        if walk.stopped_early:
            text += "\n[the search stopped early: the tree is too large or too deep]"
        if len(text) > self.max_output:
            cut = text[: self.max_output].rpartition("\n")[0]
            text = cut + "\n[output truncated; narrow the pattern or the path]"
        return text


def _open_searchable(dir_fd: int, name: str) -> tuple[int, bool]:
    """Open the directory or regular file ``name`` for the search: (fd, is it a file)."""
    if name != ".":
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            fd = os.open(name, OPEN_FILE, dir_fd=dir_fd)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise ToolFailure("path is neither a directory nor a regular file")
            return fd, True
    directory = os.open(name, OPEN_DIRECTORY, dir_fd=dir_fd)
    return directory, False
