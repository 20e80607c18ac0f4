"""File-system steps shared by :class:`FileStore` and its records: an exclusive lock on a
file with a timeout, a durable rename, the operating system's reason for a failure."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["LOCK_POLL", "discard", "fsync_directory", "lock_file", "os_reason", "unlock_file"]

# Another process holding the file lock is asked again every 20 ms.
LOCK_POLL = RetryPolicy.poll(0.02)


def os_reason(exc: OSError) -> str:
    """The operating system's words for a failure (``Permission denied``), else the error."""
    return exc.strerror or str(exc)


def discard(name: str | os.PathLike[str]) -> None:
    """Remove a temporary file, if it is still there."""
    with contextlib.suppress(OSError):
        os.unlink(name)


def fsync_directory(directory: Path) -> None:
    """Make a rename or link in ``directory`` durable (a no-op where folders cannot be
    opened)."""
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


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def lock_file(handle: Any, timeout: float, poll: RetryPolicy = LOCK_POLL) -> None:
        """Lock ``handle`` exclusively (Windows retries for 10 s, then raises)."""
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)

    def unlock_file(handle: Any) -> None:
        """Release the lock taken by :func:`lock_file`."""
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def lock_file(handle: Any, timeout: float, poll: RetryPolicy = LOCK_POLL) -> None:
        """Lock ``handle`` exclusively, asking again as ``poll`` paces it; a
        ProvisioningError naming the file after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ProvisioningError(
                        f"the lock {handle.name} is held by another process "
                        f"for more than {timeout:g} s"
                    ) from None
                time.sleep(poll.delay(attempt))
                attempt += 1

    def unlock_file(handle: Any) -> None:
        """Release the lock taken by :func:`lock_file`."""
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
