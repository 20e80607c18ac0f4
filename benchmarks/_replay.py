"""Replay servers: stand-ins for a service that send pre-encoded event streams (benchmarks only).

The emulators in ``req_managed_agents.testing`` build, record and check every event as they
go, which makes them the slowest party when a client's throughput is measured. A replay
server does no work per event: a session's stream is made of byte *segments* encoded in
advance, each pushed onto the open stream whole, as one HTTP chunk, when the request that
releases it arrives. What a client then measures is its own cost of reading, decoding and
handling.

:class:`LoopbackReplay` is the HTTP/1.1 server and the streaming; a subclass answers its
service's routes. :class:`ReplayServer` is the Claude Managed Agents one: it answers just
the calls a run makes - create a session, open its stream, read one page of history (empty),
post events (echoed with the ids the segments expect) - and 404s the rest.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Sequence
from itertools import count
from typing import Any

from typing_extensions import Self

SEGMENT_ECHO_ID = "sevt_echo_{}"
"""The id the ``n``-th posted event gets; segment ``n`` opens with its echo."""

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)
_REASONS = {200: "OK", 202: "Accepted", 404: "Not Found"}


def sse(event: dict[str, Any]) -> bytes:
    """One event as the service frames it."""
    return f"event: {event['type']}\nid: {event['id']}\ndata: {json.dumps(event)}\n\n".encode()


def echo(n: int, kind: str = "user.message", **fields: Any) -> bytes:
    """The echo of the ``n``-th posted event, which opens segment ``n``."""
    return sse({"type": kind, "id": SEGMENT_ECHO_ID.format(n), **fields, "processed_at": _AT})


def idle(stop_reason: dict[str, Any], n: int) -> bytes:
    return sse(
        {
            "type": "session.status_idle",
            "id": f"sevt_idle_{n}",
            "stop_reason": stop_reason,
            "processed_at": _AT,
        }
    )


_AT = "2026-12-03T12:00:00.000Z"


class Segments:
    """What one session's stream sends: ``total`` segments, pushed as they are released."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.pushed: list[bytes] = []
        self.changed = threading.Condition()

    def push(self, *segments: bytes) -> None:
        with self.changed:
            self.pushed.extend(segments)
            self.changed.notify_all()


class LoopbackReplay:
    """An HTTP/1.1 server on ``127.0.0.1``, a thread per connection; subclasses answer
    requests in :meth:`_respond` and register each session's :class:`Segments`."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._closed = False
        self._connections: list[socket.socket] = []
        self._streams: list[Segments] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            connections, self._connections = self._connections, []
            streams = list(self._streams)
        for segments in streams:
            with segments.changed:
                segments.changed.notify_all()
        for connection in connections:
            connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _segments(self, total: int) -> Segments:
        segments = Segments(total)
        with self._lock:
            self._streams.append(segments)
        return segments

    def _respond(self, connection: socket.socket, method: str, path: str, body: bytes) -> bool:
        """Answer one request; False when the connection is done (a stream was served)."""
        raise NotImplementedError

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        buffered = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffered:
                    data = connection.recv(65536)
                    if not data:
                        return
                    buffered += data
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, target, _ = request_line.split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in header_lines)
                }
                length = int(headers.get("content-length", "0"))
                while len(buffered) < length:
                    data = connection.recv(65536)
                    if not data:
                        return
                    buffered += data
                body, buffered = buffered[:length], buffered[length:]
                if not self._respond(connection, method, target.partition("?")[0], body):
                    return
        except OSError:
            return
        finally:
            connection.close()

    def _stream(self, connection: socket.socket, segments: Segments) -> None:
        """Send the segments as they are pushed, each as one chunk, until all were sent."""
        connection.sendall(SSE_HEAD)
        sent = 0
        while sent < segments.total and not self._closed:
            with segments.changed:
                while len(segments.pushed) <= sent and not self._closed:
                    segments.changed.wait(1)
                ready = segments.pushed[sent:]
            for segment in ready:
                connection.sendall(b"%x\r\n%b\r\n" % (len(segment), segment))
            sent += len(ready)
        # Stay open like the service does; the client closes when its turn is over.
        while not self._closed and connection.recv(4096):
            pass


def send_json(connection: socket.socket, payload: object, status: int = 200) -> bool:
    return send_body(connection, json.dumps(payload).encode(), status)


def send_body(
    connection: socket.socket,
    body: bytes,
    status: int = 200,
    content_type: str = "application/json",
) -> bool:
    """Answer with ``body`` (encoded in advance); True: the connection serves on."""
    head = f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
    if body:
        head += f"content-type: {content_type}\r\n"
    head += f"content-length: {len(body)}\r\nrequest-id: req_replay\r\n\r\n"
    connection.sendall(head.encode() + body)
    return True


class _ClaudeSession:
    """Segment ``n`` is released by the ``n``-th posted event."""

    def __init__(self, segments: Sequence[bytes], stream: Segments) -> None:
        self.segments = list(segments)
        self.stream = stream
        self.released = 0

    def release(self) -> int:
        released = self.released
        self.released += 1
        if released < len(self.segments):
            self.stream.push(self.segments[released])
        return released


_NOT_FOUND = {"type": "error", "error": {"type": "not_found_error"}}


class ReplayServer(LoopbackReplay):
    """Claude Managed Agents; :meth:`add_session` prepares a session's segments."""

    def __init__(self) -> None:
        super().__init__()
        self._sessions: dict[str, _ClaudeSession] = {}
        self._prepared: list[str] = []
        self._ids = count()

    def add_session(self, segments: Sequence[bytes], *, created_by_client: bool = True) -> str:
        """Prepare a session and return its id. When ``created_by_client``, a later
        ``POST /v1/sessions`` hands it out (in the order they were added)."""
        session_id = f"sesn_replay_{next(self._ids)}"
        session = _ClaudeSession(segments, self._segments(len(segments)))
        with self._lock:
            self._sessions[session_id] = session
            if created_by_client:
                self._prepared.append(session_id)
        return session_id

    def _respond(self, connection: socket.socket, method: str, path: str, body: bytes) -> bool:
        parts = path.strip("/").split("/")
        if method == "POST" and parts == ["v1", "sessions"]:
            with self._lock:
                session_id = self._prepared.pop(0)
            return send_json(connection, {"id": session_id, "type": "session", "status": "idle"})
        session = self._sessions.get(parts[2]) if len(parts) >= 3 else None
        if session is None or parts[:2] != ["v1", "sessions"]:
            return send_json(connection, _NOT_FOUND, 404)
        if method == "GET" and parts[3:] == ["events", "stream"]:
            self._stream(connection, session.stream)
            return False
        if method == "GET" and parts[3:] == ["events"]:
            return send_json(connection, {"data": [], "next_page": None})
        if method == "POST" and parts[3:] == ["events"]:
            posted = json.loads(body)["events"]
            with self._lock:
                echoes = [
                    {**event, "id": SEGMENT_ECHO_ID.format(session.release())} for event in posted
                ]
            return send_json(connection, {"data": echoes})
        return send_json(connection, _NOT_FOUND, 404)
