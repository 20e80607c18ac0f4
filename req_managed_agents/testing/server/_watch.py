"""Noticing clients that leave their streams, without polling them.

A stream's thread waits for its session's news (its bell) or its next heartbeat; it would
not see its client close the connection until it next wrote. One thread per emulator
watches every open stream's socket instead (``selectors``: no limit on descriptor numbers,
as ``select`` has) and, when a client hangs up, ends its stream and wakes its thread, so an
idle stream costs nothing between heartbeats, however many are open.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable

    from req_managed_agents.testing.server._lifecycle import Lifecycle


class DisconnectWatcher:
    """Watches the sockets of open streams for their clients leaving; its thread starts
    with the first stream watched and ends as the emulator closes."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle
        self._selector: selectors.BaseSelector | None = None
        # Written to wake the watcher for a new socket; closing cuts it, which wakes it too.
        self._wake_out: socket.socket | None = None

    def watch(self, connection: socket.socket, gone: Callable[[], None]) -> None:
        """Call ``gone()``, with the emulator's lock held, once ``connection``'s client has
        left it (closed, reset, or shut its writing side). Call with the lock held."""
        selector, wake_out = self._selector, self._wake_out
        if selector is None or wake_out is None:
            if self._lifecycle.stopping:  # closing: its streams end anyway
                return
            selector = self._selector = selectors.DefaultSelector()
            wake_in, wake_out = socket.socketpair()
            wake_out.setblocking(False)  # never wait on it with the lock held
            self._wake_out = wake_out
            selector.register(wake_in, selectors.EVENT_READ)
            self._lifecycle.start_thread(
                "disconnects", self._run, selector, wake_in, wake_out, connection=wake_in
            )
        with contextlib.suppress(KeyError):  # a stale entry: a closed socket of this number
            selector.unregister(connection)
        selector.register(connection, selectors.EVENT_READ, gone)
        with contextlib.suppress(OSError):  # full of wake-ups already
            wake_out.send(b"\0")

    def forget(self, connection: socket.socket) -> None:
        """Stop watching ``connection`` (its stream is over); call with the lock held."""
        if self._selector is not None:
            with contextlib.suppress(KeyError, ValueError):  # never watched, or closed
                self._selector.unregister(connection)

    def _run(
        self, selector: selectors.BaseSelector, wake_in: socket.socket, wake_out: socket.socket
    ) -> None:
        try:
            while not self._lifecycle.stopping:
                for key, _ in selector.select():
                    if key.fileobj is wake_in:
                        if not wake_in.recv(4096):  # cut: the emulator is closing
                            return
                        continue
                    with self._lifecycle.condition:
                        self._check(key)
        finally:
            with self._lifecycle.condition:
                selector.close()
                if self._selector is selector:  # a later watch() may have started anew
                    self._selector = self._wake_out = None
            wake_in.close()
            wake_out.close()

    def _check(self, key: selectors.SelectorKey) -> None:
        """A watched socket can be read: its client left (end of file, or an error), or it
        sent something, which a stream never reads (then it is no longer watched: the
        stream's next write tells)."""
        connection = key.fileobj
        assert isinstance(connection, socket.socket)
        try:
            if self._selector is None or self._selector.get_map().get(connection) is not key:
                return  # forgotten meanwhile
        except ValueError:  # closed meanwhile: its stream is over
            return
        try:
            left = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            left = True
        self.forget(connection)
        if left:
            key.data()
