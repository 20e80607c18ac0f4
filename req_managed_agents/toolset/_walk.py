"""The walk under a directory that ``glob`` and ``grep`` share: confined and bounded.

It lists each directory through a descriptor and opens the next one by name with
``O_NOFOLLOW``, so it never descends through a symbolic link, wherever the link points;
links are reported as links, and each tool decides what to do with them. It stops after
``max_entries`` names, below ``max_depth`` levels, or when ``stop`` says so, and says
that it stopped early, so a huge tree costs a bounded amount of work.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from req_managed_agents.toolset._paths import OPEN_DIRECTORY

__all__ = ["Found", "Walk"]

MAX_ENTRIES = 50_000
"""Names one walk looks at before it stops."""
MAX_DEPTH = 64
"""Directory levels one walk goes down."""


@dataclass(frozen=True)
class Found:
    """One name met on the walk: ``names`` from the walk's start down to it, its
    ``lstat`` (a link's own), and ``dir_fd``, its directory, open until the walk goes on."""

    names: tuple[str, ...]
    info: os.stat_result
    dir_fd: int

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.info.st_mode)

    @property
    def is_link(self) -> bool:
        return stat.S_ISLNK(self.info.st_mode)


@dataclass
class Walk:
    """One bounded walk; ``stopped_early`` tells, afterwards, whether it missed anything.

    ``max_depth`` is how deep the caller looks (a pattern's depth, say: going no deeper
    misses nothing); ``None`` means every level down to :data:`MAX_DEPTH`."""

    stop: Callable[[], bool]
    max_depth: int | None = None
    max_entries: int = MAX_ENTRIES
    skip_dirs: frozenset[str] = frozenset()
    stopped_early: bool = field(default=False, init=False)
    _seen: int = field(default=0, init=False)

    def under(self, dir_fd: int) -> Iterator[Found]:
        """Every name below the directory ``dir_fd``, depth first, in name order."""
        yield from self._directory(dir_fd, (), 1)

    def _directory(self, dir_fd: int, names: tuple[str, ...], depth: int) -> Iterator[Found]:
        try:
            with os.scandir(dir_fd) as listing:
                entries = sorted(
                    (entry.name for _, entry in zip(range(self._left() + 1), listing)),
                )
        except OSError:
            return
        for name in entries:
            if self._seen >= self.max_entries or self.stop():
                self.stopped_early = True
                return
            self._seen += 1
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            found = Found((*names, name), info, dir_fd)
            yield found
            if not found.is_dir or name in self.skip_dirs:
                continue
            if self.max_depth is not None and depth >= self.max_depth:
                continue
            if depth >= MAX_DEPTH:
                self.stopped_early = True
                continue
            try:
                child = os.open(name, OPEN_DIRECTORY, dir_fd=dir_fd)
            except OSError:
                continue  # replaced by a link or gone since the stat: not followed
            try:
                yield from self._directory(child, found.names, depth + 1)
            finally:
                os.close(child)

    def _left(self) -> int:
        return max(0, self.max_entries - self._seen)
