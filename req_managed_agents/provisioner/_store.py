"""Where provisioning remembers what it created: the ``Store`` protocol and two stores.

Keys are namespaced strings (``provision:<hash>``, ``digest:<base>:<digest8>``,
``tag:<base>:<tag>``, ``tags:<base>``); values are JSON values. A store may also offer
``lock()``, a context manager that makes a read-check-create-write sequence atomic; both
stores here do (:class:`FileStore` across processes), so two provisioners sharing a store
cannot both create the same resource.

:class:`FileStore` keeps one JSON object in one file. Every change is written to a temporary
file beside it, flushed and fsynced, then moved over the original with ``os.replace`` (atomic
within a filesystem) and the folder fsynced, so a crash leaves either the old or the new file,
never half of one. The file is created with mode 0600. A file that does not parse is an error
naming the path - it is never silently reset, because that would forget live resources.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from req_managed_agents.errors import ProvisioningError

__all__ = ["LOCK_TIMEOUT", "FileStore", "MemoryStore", "Store", "store_lock"]

# How long to wait for another process to release the store: provisioning holds it across
# the provider calls (a harness may take minutes to become ready), so be patient.
LOCK_TIMEOUT = 600.0


@runtime_checkable
class Store(Protocol):
    """A key-value store for provisioning records (JSON values)."""

    def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        ...

    def put(self, key: str, value: Any) -> None: ...

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        ...

    def delete_value(self, value: Any) -> None:
        """Remove every key whose value equals ``value``."""
        ...


@contextlib.contextmanager
def store_lock(store: Store) -> Iterator[None]:
    """The store's own lock when it has one; otherwise a no-op."""
    lock = getattr(store, "lock", None)
    if lock is None:
        yield
        return
    with lock():
        yield


class MemoryStore:
    """A thread-safe in-process store (forgotten when the process ends)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._data)} keys)"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        with self._lock:
            yield

    def get(self, key: str) -> Any:
        with self._lock:
            return _copy(self._data.get(key))

    def put(self, key: str, value: Any) -> None:
        with self._lock:
            self._data[key] = _copy(value)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def delete_value(self, value: Any) -> None:
        normalised = _copy(value)
        with self._lock:
            for key in [k for k, v in self._data.items() if v == normalised]:
                del self._data[key]


def _copy(value: Any) -> Any:
    """A JSON round trip: what comes out is what a FileStore would give back."""
    return None if value is None else json.loads(json.dumps(value, allow_nan=False))


class FileStore:
    """A JSON file shared safely by threads and processes on one machine."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
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
                self.path.parent.mkdir(parents=True, exist_ok=True)
                handle = open(self._lock_path, "a+b")  # noqa: SIM115 - held across the block
                try:
                    _lock_file(handle, self.lock_timeout)
                except BaseException:
                    handle.close()
                    raise
                self._lock_file = handle
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    _unlock_file(self._lock_file)
                    self._lock_file.close()
                    self._lock_file = None

    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ProvisioningError(f"cannot read the store {self.path}: {exc}") from exc
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            raise ProvisioningError(
                f"the store {self.path} is corrupt ({exc}); fix or move it - it may list live "
                "resources, so it is never reset automatically"
            ) from exc
        if not isinstance(data, dict):
            raise ProvisioningError(f"the store {self.path} does not hold a JSON object")
        return data

    def _write(self, data: dict[str, Any]) -> None:
        encoded = json.dumps(
            data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        try:
            with os.fdopen(descriptor, "wb") as temp:
                os.chmod(temp_name, 0o600)
                temp.write(encoded)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
        _fsync_directory(self.path.parent)

    def get(self, key: str) -> Any:
        # No lock: writes replace the file atomically, so a read sees one whole version.
        return self._read().get(key)

    def put(self, key: str, value: Any) -> None:
        with self.lock():
            data = self._read()
            data[key] = _copy(value)
            self._write(data)

    def delete(self, key: str) -> None:
        with self.lock():
            data = self._read()
            if key in data:
                del data[key]
                self._write(data)

    def delete_value(self, value: Any) -> None:
        normalised = _copy(value)
        with self.lock():
            data = self._read()
            kept = {k: v for k, v in data.items() if v != normalised}
            if len(kept) != len(data):
                self._write(kept)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (a no-op where folders cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


_LOCK_POLL = 0.02

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock_file(handle: Any, timeout: float) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)  # retries for 10 s, then raises

    def _unlock_file(handle: Any) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_file(handle: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ProvisioningError(
                        f"the store lock {handle.name} is held by another process "
                        f"for more than {timeout:g} s"
                    ) from None
                time.sleep(_LOCK_POLL)

    def _unlock_file(handle: Any) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
