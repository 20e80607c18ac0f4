"""A store in one JSON file, shared safely by threads and processes on one machine.

:class:`FileStore` keeps one JSON object in one file. Every change is written to a temporary
file beside it, flushed and fsynced, then moved over the original with ``os.replace`` (atomic
within a filesystem) and the folder fsynced, so a crash leaves either the old or the new file,
never half of one. The file is created with mode 0600. A file that does not parse is an error
naming the path - it is never silently reset, because that would forget live resources. Nor is
one that Python's parser would take but JSON does not allow (``NaN``, ``Infinity``, a number
too large for a float) or one nesting too deeply to parse. Every failure of the file system
(an unwritable folder, a full disk, a parent that is a file) is a :class:`ProvisioningError`
naming the store and the operating system's reason.

Its records (:class:`~req_managed_agents.stores.RecordStore`) are not in the file: each is a
file of its own in the folder ``<path>.records/``, claimed without the store's lock (see
``stores/_file_records.py``), so a tool-ledger claim costs the same however many there are.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores._base import LOCK_TIMEOUT, json_copy, strict_json
from req_managed_agents.stores._file_records import FileRecords
from req_managed_agents.stores._fs import (
    discard,
    fsync_directory,
    lock_file,
    os_reason,
    unlock_file,
)
from req_managed_agents.stores._records import DelegatedRecords

__all__ = ["FileStore"]


class FileStore(DelegatedRecords):
    """A JSON file shared safely by threads and processes on one machine; its records live
    beside it, one file each, in ``<path>.records/``."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self._records = FileRecords(
            self.path.with_name(self.path.name + ".records"), lock_timeout=lock_timeout
        )
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._lock_file: Any = None

    def __repr__(self) -> str:
        return f"FileStore({str(self.path)!r})"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store exclusively (re-entrant in this thread, exclusive across processes)."""
        with self._thread_lock:
            if self._depth == 0:
                self._lock_file = self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    unlock_file(self._lock_file)
                    self._lock_file.close()
                    self._lock_file = None

    def _acquire(self) -> Any:
        """The open lock file, locked; a ProvisioningError when either cannot be had."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ProvisioningError(
                f"cannot create the store {self.path}: {self.path.parent} is not a folder"
            ) from None
        except OSError as exc:
            raise ProvisioningError(
                f"cannot create the folder of the store {self.path}: {os_reason(exc)}"
            ) from exc
        try:
            handle = open(self._lock_path, "a+b")  # noqa: SIM115 - held across the block
        except OSError as exc:
            raise ProvisioningError(
                f"cannot open the lock file {self._lock_path} of the store {self.path}: "
                f"{os_reason(exc)}"
            ) from exc
        try:
            lock_file(handle, self.lock_timeout)
        except OSError as exc:
            handle.close()
            raise ProvisioningError(
                f"cannot lock the store {self.path} ({self._lock_path}): {os_reason(exc)}"
            ) from exc
        except BaseException:
            handle.close()
            raise
        return handle

    def _corrupt(self, reason: str) -> ProvisioningError:
        return ProvisioningError(
            f"the store {self.path} is corrupt ({reason}); fix or move it - it may list live "
            "resources, so it is never reset automatically"
        )

    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ProvisioningError(f"cannot read the store {self.path}: {os_reason(exc)}") from exc
        try:
            data = strict_json(raw.decode("utf-8"))
        except RecursionError:
            raise self._corrupt("it nests too deeply to parse") from None
        except ValueError as exc:  # UnicodeDecodeError included
            raise self._corrupt(str(exc)) from exc
        if not isinstance(data, dict):
            raise ProvisioningError(f"the store {self.path} does not hold a JSON object")
        return data

    def _encode(self, data: dict[str, Any]) -> bytes:
        """The file's bytes: readable UTF-8, with ``\\u`` escapes only when text holds a lone
        surrogate (which UTF-8 cannot carry, and which JSON escapes round-trip)."""
        try:
            text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)
            try:
                return text.encode("utf-8")
            except UnicodeEncodeError:
                return json.dumps(data, indent=1, sort_keys=True, allow_nan=False).encode("ascii")
        except RecursionError:
            raise ProvisioningError(
                f"cannot write the store {self.path}: its data nests too deeply for JSON"
            ) from None

    def _write(self, data: dict[str, Any]) -> None:
        encoded = self._encode(data)
        try:
            descriptor, temp_name = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
            )
        except OSError as exc:
            raise ProvisioningError(
                f"cannot write the store {self.path}: {os_reason(exc)}"
            ) from exc
        try:
            with os.fdopen(descriptor, "wb") as temp:
                os.chmod(temp_name, 0o600)
                temp.write(encoded)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, self.path)
        except OSError as exc:
            discard(temp_name)
            raise ProvisioningError(
                f"cannot write the store {self.path}: {os_reason(exc)}"
            ) from exc
        except BaseException:
            discard(temp_name)
            raise
        fsync_directory(self.path.parent)

    def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        # No lock: writes replace the file atomically, so a read sees one whole version.
        return self._read().get(key)

    def items(self) -> dict[str, Any]:
        """Every key and its value (records aside) as one read of the file sees them."""
        return self._read()

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key``."""
        copied = json_copy(value)  # a value JSON cannot hold fails before the file is touched
        with self.lock():
            data = self._read()
            data[key] = copied
            self._write(data)

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        with self.lock():
            data = self._read()
            if key in data:
                del data[key]
                self._write(data)

    def delete_value(self, value: Any) -> None:
        """Remove every key whose value equals ``value``."""
        normalised = json_copy(value)
        with self.lock():
            data = self._read()
            kept = {k: v for k, v in data.items() if v != normalised}
            if len(kept) != len(data):
                self._write(kept)
