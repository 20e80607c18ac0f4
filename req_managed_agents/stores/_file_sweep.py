"""Sweeping a FileStore's records folder: the files of expired records, and the group folders
they leave empty, removed a few at a time by whichever process adds records.

Each ``add_record`` takes one step: it looks at up to :data:`SWEEP_STEP` entries of a walk over
every group folder, a walk that goes on where the last step stopped (``os.scandir`` read as it
goes, so a step costs the same however many records there are) and starts over once it has
seen every folder. No thread of its own, and no waiting: a step takes each lock it needs with
one try, and a group whose lock is held is passed over until the next walk.

It removes only what it proved dead under the group's lock, the same lock every change to an
existing record file takes:

* a record file whose first bytes say it expired is read again, whole, under the lock, and
  unlinked only if it is still there and still expired - a record written again meanwhile
  (which replaces the file under that lock) is live and stays;
* a group folder with no record file left is emptied and removed under its lock as
  ``delete_records`` does: an add racing with it either links its record before (the folder
  is then not empty, and stays) or finds the folder gone and makes it again;
* a temporary file older than :data:`STALE_TEMP` (a crashed writer's) is removed; a fresher one
  is an add under way, which keeps its folder.

A walk's failures (a folder removed under it, a file it may not read) end that walk quietly:
sweeping never fails the add that pays for it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ProvisioningError

__all__ = ["STALE_TEMP", "SWEEP_STEP", "FolderSweep"]

SWEEP_STEP = 8
"""Entries (group folders and the files in them) one add looks at."""
STALE_TEMP = 3600.0
"""How old (seconds) a temporary file is before it is taken for a crashed writer's."""

# A record file begins with its expiry (see ``_file_records._body``).
_EXPIRY = re.compile(rb'\{"expires_at":(null|-?[0-9][0-9.eE+-]*),')
_GROUP_NAME = re.compile(r"[0-9a-f]{32}")
_log = get_logger(__name__)

GroupLock = Callable[[Path], AbstractContextManager[bool]]
"""Take a group folder's lock with one try: yields whether the folder is still current, raises
:class:`ProvisioningError` when another holds the lock."""
Expired = Callable[[Path], bool]
"""Whether the record file at a path is gone or expired, read whole (raises
:class:`ProvisioningError` when it does not parse)."""


class FolderSweep:
    """The walk over ``records_folder`` (see the module); :meth:`step` from any thread."""

    def __init__(self, records_folder: Path, *, group_lock: GroupLock, expired: Expired) -> None:
        self._root = records_folder
        self._group_lock = group_lock
        self._expired = expired
        self._lock = threading.Lock()
        self._walk: Generator[None, None, None] | None = None

    def step(self) -> None:
        """Look at up to :data:`SWEEP_STEP` more entries of the walk; never raises."""
        if not self._lock.acquire(blocking=False):
            return  # another thread of this process is sweeping
        try:
            for _ in range(SWEEP_STEP):
                if self._walk is None:
                    self._walk = self._pass()
                if next(self._walk, _DONE) is _DONE:
                    self._walk = None
                    return
        except (OSError, ProvisioningError) as exc:
            _log.debug("sweeping %s stopped: %s", self._root, exc)
            self._end_walk()
        finally:
            self._lock.release()

    def _end_walk(self) -> None:
        if self._walk is not None:
            with contextlib.suppress(OSError, ProvisioningError):
                self._walk.close()
        self._walk = None

    def _pass(self) -> Generator[None, None, None]:
        try:
            groups = os.scandir(self._root)
        except FileNotFoundError:
            return
        with groups:
            for entry in groups:
                yield
                if _GROUP_NAME.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                    yield from self._sweep_group(Path(entry.path))

    def _sweep_group(self, folder: Path) -> Iterator[None]:
        kept = False
        try:
            files = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            return
        with files:
            for entry in files:
                yield
                path = Path(entry.path)
                if entry.name.endswith(".json"):
                    kept = not self._drop_if_expired(folder, path) or kept
                elif entry.name.startswith(".tmp-"):
                    kept = not _drop_if_stale(path) or kept
        if not kept:
            self._drop_if_empty(folder)

    def _drop_if_expired(self, folder: Path, path: Path) -> bool:
        """Unlink the record file if it expired; whether it is gone."""
        if not _expired_by_its_header(path):
            return False
        try:
            with self._group_lock(folder) as current:
                if not current:
                    return True  # the group was deleted
                if not self._expired(path):
                    return False
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)  # no fsync: one that comes back after a crash is expired
                return True
        except ProvisioningError:
            return False  # its lock is held, or it does not parse: keep it

    def _drop_if_empty(self, folder: Path) -> None:
        """Remove a group folder holding no record and no add under way."""
        try:
            with self._group_lock(folder) as current:
                if not current:
                    return
                names = os.listdir(folder)
                if any(name.endswith(".json") or _fresh_temp(folder / name) for name in names):
                    return
                for name in names:
                    if name != ".lock":
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(folder / name)
                os.unlink(folder / ".lock")
                try:
                    os.rmdir(folder)
                except OSError as exc:  # an add linked or began meanwhile: the folder stays
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        raise
        except ProvisioningError:
            return


_DONE = object()


def _expired_by_its_header(path: Path) -> bool:
    """Whether the first bytes of a record file say it expired (cheap: no JSON parsing)."""
    try:
        with open(path, "rb") as record:
            head = record.read(64)
    except FileNotFoundError:
        return False
    found = _EXPIRY.match(head)
    if found is None or found.group(1) == b"null":
        return False
    try:
        return float(found.group(1)) <= time.time()
    except ValueError:
        return False


def _fresh_temp(path: Path) -> bool:
    if not path.name.startswith(".tmp-"):
        return False
    try:
        return time.time() - path.stat().st_mtime < STALE_TEMP
    except FileNotFoundError:
        return False


def _drop_if_stale(path: Path) -> bool:
    """Remove a crashed writer's temporary file; whether it is gone."""
    if _fresh_temp(path):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return True
