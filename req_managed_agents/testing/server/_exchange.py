"""One request being served, and the two ways to answer it.

A sized JSON (or binary) body on a keep-alive connection, or a
:class:`~req_managed_agents.testing.server.ChunkedStream` whose chunks are written by hand so
that faults can cut it anywhere.
"""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping
    from http.server import BaseHTTPRequestHandler

    from req_managed_agents.testing.server._records import RecordedRequest
    from req_managed_agents.testing.server._streams import ChunkedStream, Streams


class Exchange:
    """One request being served, and the means to answer it exactly once.

    A ``swallowed`` exchange (``reset_requests(after_acting=True)``) is served as usual, but
    nothing it answers reaches the client: a response is dropped, a stream is reset before
    its head goes out, and the connection is reset afterwards. A ``replaced`` one
    (``answer_requests(after_acting=True)``) is served as usual too, its answer dropped (a
    stream ends ``"replaced"`` at once, never written to the client), so that another can
    be sent on the connection instead.
    """

    def __init__(
        self,
        streams: Streams,
        handler: BaseHTTPRequestHandler,
        request: RecordedRequest,
        *,
        swallowed: bool = False,
        replaced: bool = False,
    ) -> None:
        self._streams = streams
        self._handler = handler
        self.request = request
        self.swallowed = swallowed
        self.replaced = replaced
        self.responded = False
        self.stream: ChunkedStream | None = None
        self._sink: socket.socket | None = None

    def respond(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        """Send a complete response with a content-length, leaving the connection reusable."""
        self.responded = True
        if self.swallowed or self.replaced:
            return
        handler = self._handler
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def respond_json(self, status: int, payload: Any, headers: Mapping[str, str]) -> None:
        body = json.dumps(payload).encode()
        self.respond(status, body, {**headers, "Content-Type": "application/json"})

    def open_stream(
        self, scope: str, content_type: str, headers: Mapping[str, str]
    ) -> ChunkedStream:
        """Send the head of a chunked 200 response; the body is written through the stream."""
        self.responded = True
        handler = self._handler
        handler.close_connection = True  # a stream never hands its connection back
        if self.replaced:  # ended at once, on a socket of its own: the client never sees it
            self._sink, peer = socket.socketpair()
            peer.close()
            self.stream = self._streams.open(self._sink, scope)
            self.stream.abort("replaced")
            return self.stream
        # Registered first, so the stream counts as open once the client sees the head.
        self.stream = self._streams.open(handler.connection, scope)
        if self.swallowed:  # attached as far as the server knows; every write now fails
            self.stream.abort("reset")
            return self.stream
        try:
            handler.send_response(200)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Transfer-Encoding", "chunked")
            # Said out loud, so the client does not pool a connection the server will close.
            handler.send_header("Connection", "close")
            handler.end_headers()
        except OSError:
            self.stream.abort("client_closed")
            raise
        return self.stream

    def release(self) -> None:
        """Close what a replaced stream was written to (nothing else is held)."""
        if self._sink is not None:
            self._sink.close()
