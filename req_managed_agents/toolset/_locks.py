"""One lock per file being changed, shared by every toolset and thread of this process.

``edit`` reads a file, changes the text and renames a new file over it; ``write`` renames
a new file over it. The calls of one turn run at once, so two edits of one file would
each read the same text and the second rename would drop the first change - while both
report success. Each change therefore holds the lock of the file it changes, from its
read to its rename.

A file is named by its directory's identity (device and inode, read from the descriptor
the confined walk ended on) and its name there, after every link on the way was
followed: so two toolsets, two spellings of one workdir, a link to the file and a
directory renamed meanwhile all reach the same lock. The directory stays open while the
lock is held, so its inode cannot be reused for another. A lock lives only while a call
holds or waits for it: a worker running for weeks keeps no entry per file it ever
touched. Other processes - another worker, the agent's own ``bash`` - are not
serialized by it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from req_managed_agents.toolset._failure import ToolFailure
from req_managed_agents.toolset._paths import Location

__all__ = ["LOCK_WAIT", "held_paths", "holding"]

LOCK_WAIT = 60.0
"""How long a change waits for another change of the same file to finish."""

_Key = tuple[int, int, str]


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0  # calls holding or waiting for ``lock``


_guard = threading.Lock()
_entries: dict[_Key, _Entry] = {}


@contextmanager
def holding(location: Location) -> Iterator[None]:
    """Hold the lock of the file ``location`` names, waiting up to :data:`LOCK_WAIT`."""
    info = os.fstat(location.dir_fd)
    key = (info.st_dev, info.st_ino, location.name)
    with _guard:
        entry = _entries.setdefault(key, _Entry())
        entry.users += 1
    try:
        if not entry.lock.acquire(timeout=LOCK_WAIT):
            raise ToolFailure(
                f"another change of this file has not finished after {LOCK_WAIT:g}s; try again"
            )
        try:
            yield
        finally:
            entry.lock.release()
    finally:
        with _guard:
            entry.users -= 1
            if entry.users == 0:
                del _entries[key]


def held_paths() -> int:
    """How many files have a lock now (held or waited for)."""
    with _guard:
        return len(_entries)
