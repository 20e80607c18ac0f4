"""Streaming responses: bodies written one chunk at a time, and the record of each.

A :class:`ChunkedStream` writes its chunks by hand so that faults can cut it anywhere: the
stream fault rules meet its events as they go out. A stream whose thread waits for news
between writes has its client watched (``_watch``), so a client that leaves ends it at once.
:class:`Streams` keeps a record of every streaming response of an emulator, under the
emulator's lock, for the :class:`StreamConnection` snapshots tests look at. Streams belong to
a *scope* (for example a session id) so that stream faults and observations can target one
of several concurrent ones.
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import TYPE_CHECKING

from req_managed_agents.testing.server._records import StreamConnection
from req_managed_agents.testing.server._watch import DisconnectWatcher

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

    from req_managed_agents.testing.server._faults import FaultRules
    from req_managed_agents.testing.server._lifecycle import Lifecycle


def sse_data_frame(data: str) -> bytes:
    """A server-sent event with no name that carries ``data`` (each of its lines as one
    ``data:`` field): what a test writes instead of an event (``corrupt_stream(data=)``)."""
    return ("".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode("utf-8")


class _StreamRecord:
    """Mutable state behind a :class:`StreamConnection`; changed under the emulator's lock."""

    def __init__(self, scope: str, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle
        self.scope = scope
        self.opened_at = time.monotonic()
        self.closed_at: float | None = None
        self.events_sent = 0
        self.end: str | None = None

    def snapshot(self) -> StreamConnection:
        return StreamConnection(
            self.scope, self.opened_at, self.closed_at, self.events_sent, self.end
        )

    def count_event(self, change: int) -> None:
        with self._lifecycle.condition:
            self.events_sent += change
            self._lifecycle.condition.notify_all()

    def close(self, end: str) -> None:
        with self._lifecycle.condition:
            if self.end is None:
                self.end = "emulator_closed" if self._lifecycle.stopping else end
                self.closed_at = time.monotonic()
                self._lifecycle.condition.notify_all()


class Streams:
    """Every streaming response of one emulator, open or over."""

    def __init__(self, lifecycle: Lifecycle, faults: FaultRules) -> None:
        self._lifecycle = lifecycle
        self._faults = faults
        self._records: list[_StreamRecord] = []
        self._watcher = DisconnectWatcher(lifecycle)

    def open(self, connection: socket.socket, scope: str) -> ChunkedStream:
        """A stream on ``connection``, counted as open from now on."""
        record = _StreamRecord(scope, self._lifecycle)
        with self._lifecycle.condition:
            self._records.append(record)
            self._lifecycle.condition.notify_all()
        return ChunkedStream(connection, record, self._faults, self._lifecycle, self._watcher)

    def connections(self, scope: str | None) -> list[StreamConnection]:
        """Snapshots of the streams of one scope, or of all."""
        with self._lifecycle.condition:
            return [r.snapshot() for r in self._records if scope in (None, r.scope)]


class ChunkedStream:
    """The body of a streaming response, written one chunk at a time.

    Every method that writes returns False once the connection is over, whoever ended it;
    the caller then simply stops. The reason is recorded for :class:`StreamConnection`.
    """

    def __init__(
        self,
        connection: socket.socket,
        record: _StreamRecord,
        faults: FaultRules,
        lifecycle: Lifecycle,
        watcher: DisconnectWatcher,
    ) -> None:
        self._socket = connection
        self._record = record
        self._faults = faults
        self._lifecycle = lifecycle
        self._watcher = watcher

    @property
    def scope(self) -> str:
        return self._record.scope

    def write(self, data: bytes) -> bool:
        """Write ``data`` as one chunk; False when the connection is already over."""
        if self._record.end is not None:
            return False
        try:
            self._socket.sendall(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError:
            self._ended("client_closed", abrupt=True)
            return False
        return True

    def send_event(
        self,
        frame: bytes,
        position: int,
        corrupted: Callable[[], bytes],
        previews: Sequence[bytes] = (),
    ) -> bool:
        """Write the frame of the event at ``position`` in its scope, applying stream faults.

        ``corrupted()`` makes what a corrupt fault writes instead: a frame of the stream's
        format that a client cannot decode (unless the fault names the frame to write).
        ``previews`` go out just before the event's frame (live previews of it), once the
        event has met its fault: a stall or a plain drop
        comes before them, a drop with preview frames after that many of them, and a
        corrupted or duplicated event is previewed once.
        """
        fault = self._faults.take_stream_fault(self.scope, position)
        if fault.kind == "stall":
            self._lifecycle.sleep(fault.seconds)
            self._ended("stalled", abrupt=True)
            return False
        if fault.kind == "drop":
            for data in previews[: fault.previews]:
                if not self.write(data):
                    return False
            self._ended("dropped", abrupt=True)
            return False
        if fault.kind == "corrupt":
            frames = [corrupted() if fault.frame is None else fault.frame]
        else:
            frames = [frame] * (2 if fault.kind == "duplicate" or fault.duplicate_all else 1)
        for data in previews:
            if not self.write(data):
                return False
        for data in frames:
            # Counted before the write, so a client that has read the frame sees it counted.
            self._record.count_event(1)
            if not self.write(data):
                self._record.count_event(-1)
                return False
        return True

    @property
    def ended(self) -> bool:
        """Whether the connection is over, whoever ended it."""
        return self._record.end is not None

    def client_gone(self) -> bool:
        """Whether the client has closed its end (checked without consuming or waiting).

        A peek that does not wait, rather than ``select``: a load test's thousand streams
        hold descriptors past ``select``'s limit (1024), which it refuses.
        """
        try:
            return self._socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False  # nothing to read: the client is still there
        except OSError:
            return True

    def watch_client(self, wake: Callable[[], None]) -> None:
        """From now on, the client leaving ends the stream (``"client_closed"``) at once and
        calls ``wake()`` with the emulator's lock held: what the stream's thread waits on."""

        def gone() -> None:
            self._ended("client_closed", abrupt=True)
            wake()

        with self._lifecycle.condition:
            if self._record.end is None:
                self._watcher.watch(self._socket, gone)

    def finish(self, end: str = "finished") -> None:
        """End the body properly, with the terminating zero-length chunk."""
        if self._record.end is None:
            self._ended(end, abrupt=False)
            with contextlib.suppress(OSError):  # the client left first; it has ended anyway
                self._socket.sendall(b"0\r\n\r\n")

    def abort(self, end: str) -> None:
        """Cut the connection mid-body: the client sees the body end without its last chunk."""
        self._ended(end, abrupt=True)

    def _ended(self, end: str, *, abrupt: bool) -> None:
        # Recorded before the client can notice, so a test that saw the end also sees why.
        self._record.close(end)
        with self._lifecycle.condition:
            self._watcher.forget(self._socket)
        if abrupt:
            with contextlib.suppress(OSError):  # already gone
                self._socket.shutdown(socket.SHUT_RDWR)
