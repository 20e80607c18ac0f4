"""A Claude Managed Agents stand-in that replays pre-encoded event streams (benchmarks only).

The emulator in ``req_managed_agents.testing`` builds, records and checks every event as it
goes, which makes it the slowest party when a client's throughput is measured. This server
does no work per event: a session's stream is a list of byte *segments* encoded in advance,
and each ``POST .../events`` releases the next one onto the open stream, sent whole as one
HTTP chunk. What a client then measures is its own cost of reading, decoding and handling.

It answers just the calls a run makes - create a session, open its stream, read one page of
history (empty), post events (echoed with the ids the segments expect) - and 404s the rest.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Sequence
from itertools import count
from typing import Any

SEGMENT_ECHO_ID = "sevt_echo_{}"
"""The id the ``n``-th posted event gets; segment ``n`` opens with its echo."""


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


class _Replay:
    def __init__(self, segments: Sequence[bytes]) -> None:
        self.segments = list(segments)
        self.released = 0
        self.changed = threading.Condition()

    def release(self) -> int:
        with self.changed:
            self.released += 1
            self.changed.notify_all()
            return self.released - 1


class ReplayServer:
    """Serve on ``127.0.0.1``; :meth:`add_session` prepares a session's segments."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._sessions: dict[str, _Replay] = {}
        self._prepared: list[str] = []
        self._ids = count()
        self._lock = threading.Lock()
        self._closed = False
        self._connections: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def add_session(self, segments: Sequence[bytes], *, created_by_client: bool = True) -> str:
        """Prepare a session and return its id. When ``created_by_client``, a later
        ``POST /v1/sessions`` hands it out (in the order they were added)."""
        session_id = f"sesn_replay_{next(self._ids)}"
        with self._lock:
            self._sessions[session_id] = _Replay(segments)
            if created_by_client:
                self._prepared.append(session_id)
        return session_id

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            connections, self._connections = self._connections, []
            replays = list(self._sessions.values())
        for replay in replays:
            with replay.changed:
                replay.changed.notify_all()
        for connection in connections:
            connection.close()

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

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

    def _respond(self, connection: socket.socket, method: str, path: str, body: bytes) -> bool:
        """Answer one request; False when the connection is done (a stream was served)."""
        parts = path.strip("/").split("/")
        if method == "POST" and parts == ["v1", "sessions"]:
            with self._lock:
                session_id = self._prepared.pop(0)
            return _json(connection, {"id": session_id, "type": "session", "status": "idle"})
        replay = self._sessions.get(parts[2]) if len(parts) >= 3 else None
        if replay is None or parts[:2] != ["v1", "sessions"]:
            return _json(connection, {"type": "error", "error": {"type": "not_found_error"}}, 404)
        if method == "GET" and parts[3:] == ["events", "stream"]:
            self._stream(connection, replay)
            return False
        if method == "GET" and parts[3:] == ["events"]:
            return _json(connection, {"data": [], "next_page": None})
        if method == "POST" and parts[3:] == ["events"]:
            posted = json.loads(body)["events"]
            echoes = []
            for event in posted:
                echoes.append({**event, "id": SEGMENT_ECHO_ID.format(replay.release())})
            return _json(connection, {"data": echoes})
        return _json(connection, {"type": "error", "error": {"type": "not_found_error"}}, 404)

    def _stream(self, connection: socket.socket, replay: _Replay) -> None:
        connection.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
        )
        sent = 0
        while sent < len(replay.segments) and not self._closed:
            with replay.changed:
                while replay.released <= sent and not self._closed:
                    replay.changed.wait(1)
            while sent < min(replay.released, len(replay.segments)):
                segment = replay.segments[sent]
                connection.sendall(b"%x\r\n%b\r\n" % (len(segment), segment))
                sent += 1
        # Stay open like the service does; the client closes when its turn is over.
        while not self._closed and connection.recv(4096):
            pass


def _json(connection: socket.socket, payload: dict[str, Any], status: int = 200) -> bool:
    body = json.dumps(payload).encode()
    reason = "OK" if status == 200 else "Not Found"
    connection.sendall(
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nrequest-id: req_replay\r\n\r\n".encode()
        + body
    )
    return True
