"""Provider-neutral loopback HTTP server that the emulators in this package are built on.

The emulators serve real HTTP on ``127.0.0.1`` (the OS picks the port) so that clients are
tested over true sockets: keep-alive, chunked bodies, a connection that ends mid-body or goes
silent all behave as they do on the network, which no mock of ``requests`` can reproduce.

This module owns everything that is not about one provider's API:

* :class:`LoopbackEmulator` — starts serving on construction; records every request; injects
  faults; waits for conditions; :meth:`~LoopbackEmulator.close` is idempotent, ends open
  streams and joins every thread it started (with a bound, so a wedged thread cannot hang a
  test run);
* :class:`Exchange` — one request and the two ways to answer it: a sized JSON body on a
  keep-alive connection, or a :class:`ChunkedStream` whose chunks are written by hand so that
  faults can cut it anywhere;
* the fault registries: failing requests with an HTTP error, resetting their connections
  (before or after acting on them), and dropping, stalling, corrupting or duplicating the
  events of a stream (an event may be previewed by frames that go out ahead of it, and a
  drop may cut the connection in the middle of them);
* :func:`parse_form_data` — ``multipart/form-data`` bodies (file uploads), split exactly,
  binary parts included;
* what every API's routes need alike: a :class:`Router` (method and path pattern to route),
  :func:`query_value` and :func:`utc_timestamp` (the ISO 8601 times the APIs write).

A subclass provides its API in :meth:`~LoopbackEmulator._handle` and its error format in
:meth:`~LoopbackEmulator._answer_fault`. Streams belong to a *scope* (for example a session
id) so that stream faults and observations can target one of several concurrent streams.
A service split across hosts (AWS serves a data and a control plane) listens on more than
one port; every request records the *listener* it arrived on.
"""

from __future__ import annotations

import contextlib
import email.message
import email.parser
import email.utils
import json
import logging
import re
import select
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    # Whether a request is one a rule is meant for (see ``fail_requests(where=...)``).
    _RequestFilter = Callable[["RecordedRequest"], object]

__all__ = [
    "ChunkedStream",
    "Exchange",
    "FormPart",
    "LoopbackEmulator",
    "RecordedRequest",
    "RequestFault",
    "Router",
    "StreamConnection",
    "parse_form_data",
    "query_value",
    "utc_timestamp",
]

logger = logging.getLogger(__name__)

# How long close() waits, in total, for the threads it started to finish.
_JOIN_TIMEOUT = 5.0
# How often serve_forever checks for shutdown; close() waits up to this long for it.
_ACCEPT_POLL_INTERVAL = 0.05


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the emulator received it, kept for assertions.

    ``headers`` has lower-case names (repeated headers joined with commas); ``body`` is the
    decoded JSON when the body parses as JSON, the raw bytes otherwise (always for
    ``multipart/*`` bodies), and None when empty.
    ``received_at`` is the :func:`time.monotonic` time its head arrived (to measure backoff).
    ``raw_query`` and ``raw_body`` are exactly as received, for checks such as request
    signatures that must see the bytes; ``listener`` names the port it arrived on.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    received_at: float
    raw_query: str = ""
    raw_body: bytes = field(default=b"", repr=False)
    listener: str = ""


@dataclass(frozen=True)
class StreamConnection:
    """A snapshot of one streaming response.

    Times are :func:`time.monotonic` seconds. ``events_sent`` counts event frames written,
    duplicates and corrupted frames included, heartbeats and previews excluded. ``end`` says
    why the connection closed: ``"finished"``, ``"client_closed"``, ``"dropped"``, ``"stalled"``,
    ``"reset"`` (``reset_requests``), ``"emulator_closed"`` or a reason the emulator chose
    (None while open).
    """

    scope: str
    opened_at: float
    closed_at: float | None
    events_sent: int
    end: str | None


@dataclass(frozen=True)
class RequestFault:
    """An HTTP error to answer instead of the normal response (see ``fail_requests``)."""

    status: int
    error_type: str | None = None
    retry_after: str | None = None
    message: str = "injected failure"


_Action = TypeVar("_Action")


class _RequestRule(Generic[_Action]):
    """What to do to the next ``times`` requests that match: an error, a hook or a reset."""

    def __init__(
        self,
        method: str,
        path_regex: str,
        where: _RequestFilter | None,
        times: int,
        action: _Action,
    ) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        self.method = method.upper()
        self.path = re.compile(path_regex)
        self.where = where
        self.remaining = times
        self.action = action

    def matches(self, request: RecordedRequest) -> bool:
        return (
            self.method in ("*", request.method)
            and self.path.fullmatch(request.path) is not None
            and (self.where is None or bool(self.where(request)))
        )


class _StreamFaultRule:
    def __init__(
        self, scope: str | None, position: int, times: int, seconds: float, previews: int
    ) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        if previews < 0:
            raise ValueError("the number of preview frames must not be negative")
        self.scope = scope
        self.position = position
        self.remaining = times
        self.seconds = seconds
        self.previews = previews

    def matches(self, scope: str, position: int) -> bool:
        return self.position == position and self.scope in (None, scope)


# Stream fault kinds, in the order they are looked up: an event meets one fault at most.
_STREAM_FAULT_KINDS = ("stall", "drop", "corrupt", "duplicate")

_Rule = TypeVar("_Rule", "_RequestRule[Any]", _StreamFaultRule)
_Emulator = TypeVar("_Emulator", bound="LoopbackEmulator")


def _take(rules: list[_Rule], *key: Any) -> _Rule | None:
    """Use up one shot of the first rule matching ``key``; return it, or None."""
    for rule in rules:
        if rule.matches(*key):
            rule.remaining -= 1
            if rule.remaining <= 0:
                rules.remove(rule)
            return rule
    return None


class _StreamRecord:
    """Mutable state behind a :class:`StreamConnection`; changed under the emulator's lock."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.opened_at = time.monotonic()
        self.closed_at: float | None = None
        self.events_sent = 0
        self.end: str | None = None

    def snapshot(self) -> StreamConnection:
        return StreamConnection(
            self.scope, self.opened_at, self.closed_at, self.events_sent, self.end
        )


class _RequestHandler(BaseHTTPRequestHandler):
    """Parses HTTP/1.1 (keep-alive by default) and hands every request to the emulator."""

    protocol_version = "HTTP/1.1"
    # Head and body go out in separate writes; with Nagle on, the body waits for the
    # client's delayed ACK (~40 ms per response on keep-alive connections).
    disable_nagle_algorithm = True
    server: _Server

    def _dispatch(self) -> None:
        self.server.emulator._serve(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)


class _Server(HTTPServer):
    """An HTTP server whose connection threads the emulator tracks, so close() can end them.

    Its listen backlog is large enough for many clients connecting at once: with the
    default of 5, a burst of connections overflows it and the kernel drops SYNs, which a
    client sees as a one-second stall (the first retransmission).
    """

    request_queue_size = 128

    def __init__(self, emulator: LoopbackEmulator, listener: str) -> None:
        self.emulator = emulator
        self.listener = listener
        super().__init__(("127.0.0.1", 0), _RequestHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall on a slow resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.socket.getsockname()[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        self.emulator._start_thread(
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


def _reset(handler: BaseHTTPRequestHandler) -> None:
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


@dataclass(frozen=True)
class FormPart:
    """One field of a ``multipart/form-data`` body; ``filename`` and ``content_type`` are
    None when the part does not carry them (APIs differ in what they require)."""

    name: str
    filename: str | None
    content_type: str | None
    data: bytes = field(repr=False)


def parse_form_data(body: bytes, content_type: str) -> list[FormPart]:
    """The parts of a ``multipart/form-data`` body (RFC 7578), in order.

    ``content_type`` is the request's header, which names the boundary. Raises ValueError
    when the body is not well-formed form data. Parts are cut at the delimiters by hand so
    that binary data (NUL bytes, line breaks of any kind) comes back byte for byte; only the
    small part headers go through :mod:`email`, for its parameter quoting rules.
    """
    head = email.message.Message()
    head["content-type"] = content_type
    if head.get_content_type() != "multipart/form-data":
        raise ValueError(f"the content type is {content_type!r}, not multipart/form-data")
    boundary = head.get_boundary()
    if not boundary:
        raise ValueError("the content type names no boundary")
    # Every delimiter follows a line break; one is added so the first needs no special case.
    sections = (b"\r\n" + body).split(b"\r\n--" + boundary.encode("latin-1"))
    parts: list[FormPart] = []
    for section in sections[1:]:  # sections[0] is the preamble
        if section.startswith(b"--"):
            return parts  # the closing delimiter; what follows is the epilogue
        padding, line_end, content = section.partition(b"\r\n")
        if not line_end or padding.strip(b" \t"):
            raise ValueError("a delimiter line is malformed, or the body is cut short")
        if content.startswith(b"\r\n"):  # a part without headers
            header_block, data = b"", content[2:]
        else:
            header_block, blank_line, data = content.partition(b"\r\n\r\n")
            if not blank_line:
                raise ValueError("a part's headers do not end with a blank line")
        parts.append(_form_part(header_block, data))
    raise ValueError("the body has no closing delimiter" if parts else "the body has no parts")


def _form_part(header_block: bytes, data: bytes) -> FormPart:
    headers = email.parser.HeaderParser().parsestr(header_block.decode("utf-8", "replace"))
    if headers.get_content_disposition() != "form-data":
        raise ValueError("a part has no 'content-disposition: form-data' header")
    name = headers.get_param("name", header="content-disposition")
    if not name:
        raise ValueError("a part has no name")
    filename = headers.get_param("filename", header="content-disposition")
    return FormPart(
        name=email.utils.collapse_rfc2231_value(name),
        filename=None if filename is None else email.utils.collapse_rfc2231_value(filename),
        content_type=headers.get("content-type"),
        data=data,
    )


def query_value(request: RecordedRequest, name: str) -> str | None:
    """The first value of the query parameter ``name``; None when the query lacks it."""
    values = request.query.get(name)
    return values[0] if values else None


def utc_timestamp(moment: datetime | None = None, timespec: str = "milliseconds") -> str:
    """``moment`` (default: now) as an ISO 8601 UTC time ending in ``Z``."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


class Router:
    """A route table: ``(method, path pattern, route)`` rows, first match wins.

    A pattern must match the whole path; its groups (the ids in the path) are the route's
    arguments after the exchange.
    """

    def __init__(self, routes: Sequence[tuple[str, str, Callable[..., Any]]]) -> None:
        self._routes = [(method, re.compile(path), route) for method, path, route in routes]

    def match(self, method: str, path: str) -> tuple[Callable[..., Any], tuple[str, ...]] | None:
        """The route for a request and the groups of its path; None when no row matches."""
        for route_method, pattern, route in self._routes:
            found = pattern.fullmatch(path)
            if found and route_method == method:
                return route, found.groups()
        return None


class Exchange:
    """One request being served, and the means to answer it exactly once.

    A ``swallowed`` exchange (``reset_requests(after_acting=True)``) is served as usual, but
    nothing it answers reaches the client: a response is dropped, a stream is reset before
    its head goes out, and the connection is reset afterwards.
    """

    def __init__(
        self,
        emulator: LoopbackEmulator,
        handler: BaseHTTPRequestHandler,
        request: RecordedRequest,
        *,
        swallowed: bool = False,
    ) -> None:
        self._emulator = emulator
        self._handler = handler
        self.request = request
        self.swallowed = swallowed
        self.responded = False
        self.stream: ChunkedStream | None = None

    def respond(self, status: int, body: bytes, headers: Mapping[str, str]) -> None:
        """Send a complete response with a content-length, leaving the connection reusable."""
        self.responded = True
        if self.swallowed:
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
        # Registered first, so the stream counts as open once the client sees the head.
        self.stream = ChunkedStream(self._emulator, handler.connection, scope)
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


class ChunkedStream:
    """The body of a streaming response, written one chunk at a time.

    Every method that writes returns False once the connection is over, whoever ended it;
    the caller then simply stops. The reason is recorded for :class:`StreamConnection`.
    """

    def __init__(self, emulator: LoopbackEmulator, connection: socket.socket, scope: str) -> None:
        self._emulator = emulator
        self._socket = connection
        self._record = emulator._register_stream(scope)

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
        format that a client cannot decode. ``previews`` go out just before the event's frame
        (live previews of it), once the event has met its fault: a stall or a plain drop
        comes before them, a drop with preview frames after that many of them, and a
        corrupted or duplicated event is previewed once.
        """
        fault = self._emulator._take_stream_fault(self.scope, position)
        if fault.kind == "stall":
            self._emulator._sleep(fault.seconds)
            self._ended("stalled", abrupt=True)
            return False
        if fault.kind == "drop":
            for data in previews[: fault.previews]:
                if not self.write(data):
                    return False
            self._ended("dropped", abrupt=True)
            return False
        if fault.kind == "corrupt":
            frames = [corrupted()]
        else:
            frames = [frame] * (2 if fault.kind == "duplicate" or fault.duplicate_all else 1)
        for data in previews:
            if not self.write(data):
                return False
        for data in frames:
            # Counted before the write, so a client that has read the frame sees it counted.
            self._emulator._count_event(self._record, 1)
            if not self.write(data):
                self._emulator._count_event(self._record, -1)
                return False
        return True

    @property
    def ended(self) -> bool:
        """Whether the connection is over, whoever ended it."""
        return self._record.end is not None

    def client_gone(self) -> bool:
        """Whether the client has closed its end (checked without consuming anything)."""
        try:
            readable, _, _ = select.select([self._socket], [], [], 0)
            return bool(readable) and self._socket.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

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
        self._emulator._close_stream(self._record, end)
        if abrupt:
            with contextlib.suppress(OSError):  # already gone
                self._socket.shutdown(socket.SHUT_RDWR)


@dataclass(frozen=True)
class _StreamFault:
    """What happens to one event on one connection; ``kind`` None: it goes out as it is."""

    kind: str | None
    seconds: float
    duplicate_all: bool
    previews: int = 0  # the preview frames a drop lets out first


class LoopbackEmulator:
    """Base of the emulators: a threaded HTTP server on 127.0.0.1 plus its observability.

    Subclasses set up their state, call ``super().__init__()``, add any further listeners
    with :meth:`_add_listener`, then :meth:`_start`. ``listener`` names the first one, whose
    URL is ``base_url``.
    """

    def __init__(self, *, listener: str = "") -> None:
        # One lock guards all state; waiting on it wakes on every change (see wait_until).
        self._condition = threading.Condition()
        self._stopping = False
        self._requests: list[RecordedRequest] = []
        self._request_faults: list[_RequestRule[RequestFault]] = []
        self._request_hooks: list[_RequestRule[Callable[[], object]]] = []
        self._resets: list[_RequestRule[bool]] = []  # the action: whether it acts first
        self._stream_faults: dict[str, list[_StreamFaultRule]] = {
            kind: [] for kind in _STREAM_FAULT_KINDS
        }
        self._duplicate_events = False
        self._streams: list[_StreamRecord] = []
        self._threads: dict[threading.Thread, socket.socket | None] = {}
        self._servers: list[_Server] = []
        self._serve_threads: list[threading.Thread] = []
        self.base_url = self._add_listener(listener)

    def _add_listener(self, listener: str) -> str:
        """Listen on one more free port (before :meth:`_start`); return its base URL."""
        server = _Server(self, listener)
        self._servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    def _start(self) -> None:
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": _ACCEPT_POLL_INTERVAL},
                name=f"{type(self).__name__}-accept {server.listener}".rstrip(),
                daemon=True,
            )
            self._serve_threads.append(thread)
            thread.start()

    def __repr__(self) -> str:
        state = " closed" if self._stopping else ""
        return f"<{type(self).__name__} {self.base_url}{state}>"

    def __enter__(self: _Emulator) -> _Emulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- subclass hooks ------------------------------------------------------------------

    def _handle(self, exchange: Exchange) -> None:
        raise NotImplementedError

    def _answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        raise NotImplementedError

    # --- observation ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a snapshot)."""
        with self._condition:
            return list(self._requests)

    def wait_until(self, predicate: Callable[[], object], timeout: float = 5.0) -> bool:
        """Wait until ``predicate()`` is true; False if ``timeout`` seconds pass first.

        Rechecked on every change inside the emulator and at least every 50 ms. The predicate
        runs without the emulator's lock held, so it may call any method of the emulator.
        """
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._condition:
                self._condition.wait(min(remaining, 0.05))
        return True

    def stream_connections(self, scope: str | None = None) -> list[StreamConnection]:
        """Snapshots of the streaming responses of one scope (a session id), or of all."""
        return self._stream_connections(scope)

    def open_stream_count(self, scope: str | None = None) -> int:
        """How many streaming responses of that scope (or of all) are still open."""
        return sum(c.closed_at is None for c in self._stream_connections(scope))

    def _stream_connections(self, scope: str | None) -> list[StreamConnection]:
        with self._condition:
            return [r.snapshot() for r in self._streams if scope in (None, r.scope)]

    # --- faults --------------------------------------------------------------------------

    def fail_requests(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        retry_after: float | str | None = None,
        error_type: str | None = None,
        where: _RequestFilter | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with an HTTP error instead.

        ``method`` is an HTTP method or ``"*"``; ``path_regex`` must match the whole path
        (query excluded). ``where(request)``, when given, must be true as well: it tells
        apart requests to one path by their :class:`RecordedRequest` body, say; it runs with
        the emulator's lock held, so it must neither block nor call the emulator.
        ``retry_after`` adds a ``retry-after`` header; ``error_type`` overrides the error
        type the status implies. Rules apply in the order added.
        """
        if isinstance(retry_after, (int, float)):
            retry_after = f"{retry_after:g}"
        rule = _RequestRule(
            method, path_regex, where, times, RequestFault(status, error_type, retry_after)
        )
        with self._condition:
            self._request_faults.append(rule)

    def reset_requests(
        self,
        method: str,
        path_regex: str,
        *,
        after_acting: bool,
        times: int = 1,
        where: _RequestFilter | None = None,
    ) -> None:
        """Reset the connections of the next ``times`` matching requests (see
        :meth:`fail_requests` for the matching): the client sees the connection close
        without a single byte of response.

        ``after_acting=False``: before the request is handled, so the server did nothing
        (it is still recorded in ``requests``). ``after_acting=True``: the request is handled
        in full first (state changes, logged events, assigned ids, other faults and hooks),
        then its answer is swallowed, so the client cannot tell whether it landed. A
        streaming response is attached but reset before its head goes out: its stream
        counts as opened and ends ``"reset"``, and nothing is produced for it.
        """
        rule = _RequestRule(method, path_regex, where, times, after_acting)
        with self._condition:
            self._resets.append(rule)

    def before_requests(
        self,
        method: str,
        path_regex: str,
        hook: Callable[[], object],
        *,
        times: int = 1,
        where: _RequestFilter | None = None,
    ) -> None:
        """Call ``hook()`` just before handling the next ``times`` matching requests (see
        :meth:`fail_requests` for the matching).

        For races that are hard to time from outside: another client creating the same
        resource between our client's lookup and its create, say. The hook runs without the
        emulator's lock held, so it may inject faults.
        """
        rule = _RequestRule(method, path_regex, where, times, hook)
        with self._condition:
            self._request_hooks.append(rule)

    def pending_faults(self) -> int:
        """How many shots of the injected faults have not fired yet (hooks excluded), so a
        test can check that the fault it set up was met."""
        with self._condition:
            return self._pending_faults()

    def _pending_faults(self) -> int:
        """Called under the lock; emulators with faults of their own add them."""
        rules: list[_RequestRule[Any] | _StreamFaultRule] = [*self._request_faults, *self._resets]
        for kind_rules in self._stream_faults.values():
            rules.extend(kind_rules)
        return sum(rule.remaining for rule in rules)

    def _add_stream_fault(
        self,
        kind: str,
        scope: str | None,
        position: int,
        times: int,
        seconds: float = 0.0,
        previews: int = 0,
    ) -> None:
        rule = _StreamFaultRule(scope, position, times, seconds, previews)
        with self._condition:
            self._stream_faults[kind].append(rule)

    def _set_duplicate_events(self, enabled: bool) -> None:
        with self._condition:
            self._duplicate_events = enabled

    def _take_stream_fault(self, scope: str, position: int) -> _StreamFault:
        with self._condition:
            for kind in _STREAM_FAULT_KINDS:
                rule = _take(self._stream_faults[kind], scope, position)
                if rule is not None:
                    return _StreamFault(kind, rule.seconds, self._duplicate_events, rule.previews)
            return _StreamFault(None, 0.0, self._duplicate_events)

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving, cut every open connection and join the threads (bounded wait).

        Safe to call more than once and from any thread.
        """
        with self._condition:
            if self._stopping:
                return
            self._stopping = True
            self._condition.notify_all()
        for server in self._servers:
            if self._serve_threads:
                server.shutdown()
            server.server_close()
        with self._condition:
            threads = dict(self._threads)
        for connection in threads.values():
            if connection is not None:
                with contextlib.suppress(OSError):  # the client closed it already
                    connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in [*self._serve_threads, *threads]:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def _start_thread(
        self,
        role: str,
        target: Callable[..., None],
        *args: Any,
        connection: socket.socket | None = None,
    ) -> None:
        """Run ``target`` on a daemon thread that close() ends (by cutting ``connection``)."""
        thread = threading.Thread(
            target=self._run_tracked,
            args=(target, args),
            name=f"{type(self).__name__}-{role}",
            daemon=True,
        )
        with self._condition:
            if self._stopping:
                if connection is not None:
                    connection.close()
                return
            self._threads[thread] = connection
        thread.start()

    def _run_tracked(self, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            target(*args)
        finally:
            with self._condition:
                self._threads.pop(threading.current_thread(), None)
                self._condition.notify_all()

    def _sleep(self, seconds: float, stream: ChunkedStream | None = None) -> None:
        """Sleep, but wake as soon as the emulator closes (or ``stream`` ends)."""
        with self._condition:
            self._condition.wait_for(
                lambda: self._stopping or (stream is not None and stream.ended),
                timeout=seconds,
            )

    # --- serving -------------------------------------------------------------------------

    def _serve(self, handler: _RequestHandler) -> None:
        received_at = time.monotonic()
        url = urlsplit(handler.path)
        headers: dict[str, str] = {}
        for name, value in handler.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
        raw_body = _read_body(handler)
        request = RecordedRequest(
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
        with self._condition:
            self._requests.append(request)
            self._condition.notify_all()
            reset = _take(self._resets, request)
            acting = reset is None or reset.action
            rule = _take(self._request_faults, request) if acting else None
            hook = _take(self._request_hooks, request) if acting else None
        if not acting:
            _reset(handler)
            return
        if hook is not None:
            hook.action()
        exchange = Exchange(self, handler, request, swallowed=reset is not None)
        try:
            if rule is not None:
                self._answer_fault(exchange, rule.action)
            else:
                self._handle(exchange)
        except OSError:
            raise  # the connection failed; the server logs and closes it
        except Exception as error:
            logger.exception("emulator failed on %s %s", request.method, request.path)
            if exchange.stream is not None:
                exchange.stream.abort("emulator_error")
            elif not exchange.responded:
                self._answer_fault(exchange, RequestFault(500, message=f"emulator bug: {error!r}"))
        if exchange.swallowed:
            _reset(handler)

    def _register_stream(self, scope: str) -> _StreamRecord:
        record = _StreamRecord(scope)
        with self._condition:
            self._streams.append(record)
            self._condition.notify_all()
        return record

    def _count_event(self, record: _StreamRecord, change: int) -> None:
        with self._condition:
            record.events_sent += change
            self._condition.notify_all()

    def _close_stream(self, record: _StreamRecord, end: str) -> None:
        with self._condition:
            if record.end is None:
                record.end = "emulator_closed" if self._stopping else end
                record.closed_at = time.monotonic()
                self._condition.notify_all()
