"""An emulator's one lock, whether it is closing, and the threads it started.

One lock guards all of an emulator's state, the server's and its API's alike, and every
change notifies it, so waiting on it wakes on every change (see :meth:`Lifecycle.wait_until`).
What waits for one scope's news only (a session's event stream) waits on that scope's
*bell*, a condition on the same lock that only its scope's changes ring: a thousand open
streams would otherwise all wake for every event of every session.
Each thread the emulator starts is tracked with the connection it serves, if any, so that
closing can cut the connection and join the thread, with a bound, so that a wedged thread
cannot hang a test run.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

# How long closing waits, in total, for the threads the emulator started to finish.
_JOIN_TIMEOUT = 5.0


class _Ending(Protocol):
    """What a sleep may end early for: a stream that is over, whoever ended it."""

    @property
    def ended(self) -> bool: ...


class Lifecycle:
    """The lock (``condition``), the ``stopping`` flag and the threads of one emulator.

    ``name`` (the emulator's class name) prefixes the names of the threads it starts.
    """

    def __init__(self, name: str) -> None:
        self._lock = threading.RLock()
        self.condition = threading.Condition(self._lock)
        self.stopping = False
        self.name = name
        self._threads: dict[threading.Thread, socket.socket | None] = {}
        self._bells: dict[str, threading.Condition] = {}

    def bell(self, scope: str) -> threading.Condition:
        """The condition to wait on for ``scope``'s news: it shares the emulator's lock,
        and wakes on :meth:`ring` for that scope and on closing. Call with the lock held."""
        bell = self._bells.get(scope)
        if bell is None:
            bell = self._bells[scope] = threading.Condition(self._lock)
        return bell

    def ring(self, scope: str) -> None:
        """Wake what waits for ``scope``'s news; called with the lock held."""
        bell = self._bells.get(scope)
        if bell is not None:
            bell.notify_all()

    def announce(self, scope: str) -> None:
        """Wake what waits for any change and what waits for ``scope``'s news (its streams);
        called with the lock held."""
        self.condition.notify_all()
        self.ring(scope)

    def start_thread(
        self,
        role: str,
        target: Callable[..., None],
        *args: Any,
        connection: socket.socket | None = None,
    ) -> None:
        """Run ``target`` on a daemon thread that closing ends (by cutting ``connection``)."""
        thread = threading.Thread(
            target=self._run_tracked,
            args=(target, args),
            name=f"{self.name}-{role}",
            daemon=True,
        )
        with self.condition:
            if self.stopping:
                if connection is not None:
                    connection.close()
                return
            self._threads[thread] = connection
        thread.start()

    def _run_tracked(self, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            target(*args)
        finally:
            with self.condition:
                self._threads.pop(threading.current_thread(), None)
                self.condition.notify_all()

    def sleep(self, seconds: float, stream: _Ending | None = None) -> None:
        """Sleep, but wake as soon as the emulator closes (or ``stream`` ends)."""
        with self.condition:
            self.condition.wait_for(
                lambda: self.stopping or (stream is not None and stream.ended),
                timeout=seconds,
            )

    def wait_until(self, predicate: Callable[[], object], timeout: float) -> bool:
        """Wait until ``predicate()`` is true, rechecking on every change and at least every
        50 ms, without the lock held; False if ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self.condition:
                self.condition.wait(min(remaining, 0.05))
        return True

    def stop(self) -> bool:
        """Mark the emulator closing, waking every waiter; False if it already was."""
        with self.condition:
            if self.stopping:
                return False
            self.stopping = True
            self.condition.notify_all()
            for bell in self._bells.values():
                bell.notify_all()
        return True

    def end_threads(self, first: Sequence[threading.Thread]) -> None:
        """Cut the connections of the tracked threads, then join ``first`` and them, within
        one bound; the calling thread never waits for itself."""
        with self.condition:
            threads = dict(self._threads)
        for connection in threads.values():
            if connection is not None:
                with contextlib.suppress(OSError):  # the client closed it already
                    connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in [*first, *threads]:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
