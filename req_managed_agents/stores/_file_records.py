"""A :class:`~req_managed_agents.stores.RecordStore` in a folder: one file per record, so that
claiming, reading or changing one record costs the same however many others there are.

Layout (beside a store file ``store.json``; folders 0700, files 0600)::

    store.json.records/
        <digest of the group>/       one folder per group
            .group                   the group's name as JSON text, for whoever looks
            .lock                    the group's own lock (flock)
            <digest of the key>.json {"expires_at": epoch seconds or null, "value": ...}

Creating a record writes a whole temporary file in its group folder, fsyncs it and hard-links
it to the record's name: a link fails when the name exists, so of any number of threads and
processes exactly one creates the record, without any lock, and a reader sees the whole file
or none. Everything that changes an existing record file - replacing an expired one,
``replace_record``, ``delete_record``, removing an expired one found by ``get_record`` - does
so under the group's lock: re-read, compare, then ``os.replace`` a whole temporary file, or
unlink. ``delete_records`` unlinks the group's files under its lock, then the lock file, and
removes the folder: a removed folder takes no new entry, so an add racing with it either
lands before (and is deleted and counted) or fails to link and starts over in a new folder -
the folder is never renamed, as an add may already be inside it. A lock file removed while
a caller waited for it (by a deletion, or a sweep) is not held: the caller opens the group's
lock again, or finds the group gone. Nothing here takes the store-wide lock, and a call lists
no folder (but a deleted group's) and opens no other group's files - except the few entries
each add looks at for the sweep (``stores/_file_sweep.py``), which removes expired record files
and emptied group folders from disk without anyone reading them again. The folder's file
system must support hard links. A crash can leave a temporary file in a group folder; the
sweep removes it once it is old, or it goes with its group.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores._base import (
    check_group,
    check_ttl,
    expected_text,
    record_group,
    record_text,
    strict_json,
)
from req_managed_agents.stores._file_sweep import FolderSweep
from req_managed_agents.stores._fs import (
    discard,
    fsync_directory,
    lock_file,
    os_reason,
    unlock_file,
)
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["RECORD_LOCK_POLL", "FileRecords"]

# A group lock is held for one re-read and one replace: ask again after 1 ms, doubling to 20 ms.
RECORD_LOCK_POLL = RetryPolicy.poll(0.02, first=0.001)
# How often one add starts over because its group was deleted meanwhile, before giving up.
_ADD_ATTEMPTS = 50


@dataclass(frozen=True)
class _Found:
    """A record file as read: the value, its canonical text, when it expires."""

    value: Any
    text: str
    expires_at: float | None

    @property
    def live(self) -> bool:
        return self.expires_at is None or time.time() < self.expires_at


class FileRecords:
    """Records in ``records_folder``, one file each (see the module docs); group locks wait
    at most ``lock_timeout`` seconds."""

    def __init__(self, records_folder: Path, *, lock_timeout: float) -> None:
        self.records_folder = records_folder
        self.lock_timeout = lock_timeout
        self._sweep = FolderSweep(
            records_folder,
            group_lock=lambda folder: self._group_lock(folder, wait=False),
            expired=self._gone_or_expired,
        )

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        group, body = record_group(key), _body(record_text(value), check_ttl(ttl))
        folder, path = self._paths(group, key)
        with self._failing("add", key, path):
            for _ in range(_ADD_ATTEMPTS):
                created = self._try_to_add(key, group, folder, path, body)
                if created is not None:
                    self._sweep.step()
                    return created
        raise ProvisioningError(
            f"cannot add the record {key!r} ({path}): its group folder was deleted "
            f"{_ADD_ATTEMPTS} times while adding it"
        )

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        folder, path = self._paths(record_group(key), key)
        with self._failing("read", key, path):
            found = self._read(key, path)
            if found is None:
                return None
            if found.live:
                return found.value
            with self._group_lock(folder) as current:  # sweep it, unless replaced meanwhile
                again = self._read(key, path) if current else None
                if again is not None and not again.live:
                    self._unlink(folder, path)
            return None

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        group, body = record_group(key), _body(record_text(value), check_ttl(ttl))
        old = expected_text(expected)
        folder, path = self._paths(group, key)
        with self._failing("replace", key, path), self._group_lock(folder) as current:
            if not current or not self._holds(key, folder, path, old):
                return False
            temp = self._write_temp(folder, body)  # under the lock: no deletion takes it
            try:
                os.replace(temp, path)
            except BaseException:
                discard(temp)
                raise
            fsync_directory(folder)
            return True

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        old = expected_text(expected)
        folder, path = self._paths(record_group(key), key)
        with self._failing("delete", key, path), self._group_lock(folder) as current:
            if not current or not self._holds(key, folder, path, old):
                return False
            self._unlink(folder, path)
            return True

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
        folder = self._folder(check_group(group))
        live = 0
        try:
            with self._group_lock(folder) as current:
                if not current:
                    return 0
                for name in os.listdir(folder):
                    if name.endswith(".json"):
                        live += self._counts(folder / name)
                    if name != ".lock":  # an add whose temp goes starts over: harmless
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(folder / name)
                os.unlink(folder / ".lock")
                try:
                    os.rmdir(folder)
                except OSError as exc:  # a record added meanwhile keeps the folder; or
                    # another caller, locking the lock file made after ours went, removed it
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                        raise
        except OSError as exc:
            raise ProvisioningError(
                f"cannot delete the records of the group {group!r} ({folder}): {os_reason(exc)}"
            ) from exc
        return live

    # -- steps ------------------------------------------------------------------------------

    def _try_to_add(
        self, key: str, group: str, folder: Path, path: Path, body: bytes
    ) -> bool | None:
        """True or False as ``add_record`` answers; None to start over (the group was deleted
        under this call)."""
        try:
            temp = self._write_temp(folder, body)
        except FileNotFoundError:
            self._make_group(folder, group)
            try:
                temp = self._write_temp(folder, body)
            except FileNotFoundError:
                return None  # deleted again at once
        try:
            if self._link(folder, temp, path):
                return True
            found = self._read(key, path)
            if found is not None and found.live:
                return False  # a live record is final: no lock needed to say so
            with self._group_lock(folder) as current:
                if not current:
                    return None
                found = self._read(key, path)
                if found is None:
                    return self._link(folder, temp, path)  # False: created meanwhile, live
                if found.live:
                    return False
                os.replace(temp, path)  # only lock holders change an existing record file
                fsync_directory(folder)
                return True
        except FileNotFoundError:
            return None  # delete_records removed the temp or the folder before the link
        finally:
            discard(temp)

    def _holds(self, key: str, folder: Path, path: Path, text: str | None) -> bool:
        """Whether the live record at ``path`` holds ``text``, sweeping it if expired (the
        caller holds the group lock)."""
        found = self._read(key, path)
        if found is None:
            return False
        if not found.live:
            self._unlink(folder, path)
            return False
        return found.text == text

    def _read(self, key: str, path: Path) -> _Found | None:
        """The record file, or None when there is none; a ProvisioningError naming it when it
        does not parse (never treated as absent: it may be a claim)."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            data = strict_json(raw.decode("utf-8"))
        except RecursionError:
            raise self._corrupt(key, path, "it nests too deeply to parse") from None
        except ValueError as exc:  # UnicodeDecodeError included
            raise self._corrupt(key, path, str(exc)) from exc
        if not isinstance(data, dict) or set(data) != {"value", "expires_at"}:
            raise self._corrupt(key, path, 'not an object of "value" and "expires_at"')
        expires_at, value = data["expires_at"], data["value"]
        if value is None:
            raise self._corrupt(key, path, "its value is null")
        if expires_at is not None and (
            isinstance(expires_at, bool) or not isinstance(expires_at, (int, float))
        ):
            raise self._corrupt(key, path, "its expires_at is neither a number nor null")
        return _Found(value, record_text(value), expires_at)

    def _counts(self, path: Path) -> bool:
        """Whether a file of a deleted group was a live record (one that does not parse was
        not known to have expired, so it counts)."""
        try:
            found = self._read(path.name, path)
        except ProvisioningError:
            return True
        return found is not None and found.live

    def _write_temp(self, folder: Path, body: bytes) -> str:
        """A whole, fsynced temporary file (mode 0600) in ``folder``; FileNotFoundError when
        the folder is missing."""
        descriptor, name = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(descriptor, "wb") as temp:
                temp.write(body)
                temp.flush()
                os.fsync(temp.fileno())
        except BaseException:
            discard(name)
            raise
        return name

    def _link(self, folder: Path, temp: str, path: Path) -> bool:
        """Give ``temp`` the record's name unless the name exists: True when it did."""
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        fsync_directory(folder)
        return True

    def _unlink(self, folder: Path, path: Path) -> None:
        os.unlink(path)
        fsync_directory(folder)

    def _make_group(self, folder: Path, group: str) -> None:
        """Create the group folder (and the records folder), naming the group inside. The
        name is only for people: lost to a deletion racing with this, nothing needs it."""
        self.records_folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            folder.mkdir(mode=0o700)
            name = os.open(folder / ".group", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except (FileExistsError, FileNotFoundError):
            return  # made by another caller, or deleted again at once
        with os.fdopen(name, "w", encoding="utf-8") as named:
            named.write(json.dumps(group))

    @contextlib.contextmanager
    def _group_lock(self, folder: Path, *, wait: bool = True) -> Iterator[bool]:
        """Hold the group's lock. Yields False, holding nothing that matters, when the group
        folder is missing or was removed before the lock was had. A lock file removed while
        we waited, its folder still there, is opened again (see the module). Without
        ``wait``, a lock held elsewhere is a ProvisioningError at once."""
        lock_path = folder / ".lock"
        for _ in range(_ADD_ATTEMPTS):
            try:
                handle = open(lock_path, "a+b", opener=_private)  # noqa: SIM115 - held below
            except FileNotFoundError:
                break
            with handle:
                lock_file(handle, self.lock_timeout if wait else 0.0, RECORD_LOCK_POLL)
                try:
                    if _same_file(handle.fileno(), lock_path):
                        yield True
                        return
                finally:
                    unlock_file(handle)
        yield False

    def _gone_or_expired(self, path: Path) -> bool:
        """Whether the record file at ``path`` is gone or expired (the sweep's re-read)."""
        found = self._read(path.name, path)
        return found is None or not found.live

    def _folder(self, group: str) -> Path:
        return self.records_folder / _digest(group)

    def _paths(self, group: str, key: str) -> tuple[Path, Path]:
        folder = self._folder(group)
        return folder, folder / f"{_digest(key)}.json"

    def _corrupt(self, key: str, path: Path, reason: str) -> ProvisioningError:
        return ProvisioningError(
            f"the record file {path} (of {key!r}) is corrupt ({reason}); fix or delete it - it "
            "may be a claim, so it is never reset automatically"
        )

    @contextlib.contextmanager
    def _failing(self, action: str, key: str, path: Path) -> Iterator[None]:
        """A file-system failure as a ProvisioningError naming the record file and the
        operating system's reason."""
        try:
            yield
        except OSError as exc:
            raise ProvisioningError(
                f"cannot {action} the record {key!r} ({path}): {os_reason(exc)}"
            ) from exc


def _body(text: str, ttl: float | None) -> bytes:
    """A record file's bytes: the value's canonical text and when it expires."""
    expires_at = None if ttl is None else time.time() + ttl
    return f'{{"expires_at":{json.dumps(expires_at)},"value":{text}}}'.encode()


def _digest(text: str) -> str:
    """A file name for a key or a group: fixed length, any text welcome."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _private(path: str, flags: int) -> int:
    """Open with mode 0600 when creating."""
    return os.open(path, flags, 0o600)


def _same_file(descriptor: int, path: Path) -> bool:
    """Whether ``path`` still names the open file."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)
