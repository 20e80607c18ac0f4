"""HTTP/1.1 on a loopback port: the listening server, its request handler and the parsing
of a request into a :class:`~req_managed_agents.testing.server.RecordedRequest`."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from req_managed_agents.testing.server._records import RecordedRequest

if TYPE_CHECKING:
    from typing import Callable

    from req_managed_agents.testing.server._lifecycle import Lifecycle

logger = logging.getLogger(__name__)


class RequestHandler(BaseHTTPRequestHandler):
    """Parses HTTP/1.1 (keep-alive by default) and hands every request to the server."""

    protocol_version = "HTTP/1.1"
    # Head and body go out in separate writes; with Nagle on, the body waits for the
    # client's delayed ACK (~40 ms per response on keep-alive connections).
    disable_nagle_algorithm = True
    server: Listener

    def _dispatch(self) -> None:
        self.server.serve(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)


class Listener(HTTPServer):
    """An HTTP server on a free port of 127.0.0.1 whose connection threads the emulator's
    lifecycle tracks, so closing can end them; ``serve`` answers each request.

    Its listen backlog holds a load test's burst: a thousand clients connecting at once
    while the accept thread is busy (starting threads, or starved of the GIL by the clients
    in the same process). A connection the queue has no room for has its SYN dropped, which
    a client sees as a one-second stall, then another, and at worst as a reset; the kernel
    caps the backlog at ``net.core.somaxconn`` (4096 on current Linux).
    """

    request_queue_size = 4096

    def __init__(
        self, listener: str, serve: Callable[[RequestHandler], None], lifecycle: Lifecycle
    ) -> None:
        self.listener = listener
        self.serve = serve
        self._lifecycle = lifecycle
        super().__init__(("127.0.0.1", 0), RequestHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall on a slow resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.socket.getsockname()[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        self._lifecycle.start_thread(
            "connection", self._serve_connection, request, client_address, connection=request
        )

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # the client went away, or close() cut the socket
            logger.debug("connection from %s ended: %r", client_address, error)
        else:
            logger.exception("emulator connection from %s failed", client_address)


def read_request(handler: RequestHandler) -> RecordedRequest:
    """Read a request's head and body off the connection."""
    received_at = time.monotonic()
    url = urlsplit(handler.path)
    headers: dict[str, str] = {}
    for name, value in handler.headers.items():
        key = name.lower()
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    raw_body = _read_body(handler)
    return RecordedRequest(
        method=handler.command,
        path=url.path,
        query=parse_qs(url.query, keep_blank_values=True),
        headers=headers,
        body=_decode_body(raw_body, headers.get("content-type", "")),
        received_at=received_at,
        raw_query=url.query,
        raw_body=raw_body,
        listener=handler.server.listener,
    )


def reset(handler: BaseHTTPRequestHandler) -> None:
    """End a connection without (the rest of) a response: the client sees it close."""
    handler.close_connection = True
    with contextlib.suppress(OSError):  # the client left already
        handler.connection.shutdown(socket.SHUT_RDWR)


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if "chunked" in handler.headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # skip trailers
                return b"".join(parts)
            parts.append(handler.rfile.read(size))
            handler.rfile.readline()
    length = int(handler.headers.get("content-length") or 0)
    return handler.rfile.read(length) if length else b""


def _decode_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if content_type.lower().startswith("multipart/"):
        return raw  # binary parts: never guess at JSON
    try:
        return json.loads(raw)
    except ValueError:
        return raw
