"""The streamable HTTP transport, on ``requests``: every message is a POST to the server's
one URL; a request's answer comes back as a JSON body or as a ``text/event-stream`` that
may carry the server's notifications and requests before it.

Each request in flight is read on a thread of its own (``rma-mcp-http-<name>``), so calls
overlap as they do over stdio. The handshake era's session id (``Mcp-Session-Id``) and
protocol version go in every request's headers; a session the server forgot (404) ends the
connection, and the next request negotiates a new one. The stateless era names the method
and tool in headers too (``Mcp-Method``, ``Mcp-Name``) and has no client notifications:
abandoning a request closes its stream. Not implemented: resuming a broken stream
(``Last-Event-ID``), the handshake era's standing GET stream (so a ``list_changed`` sent
outside any request is not seen), and ``Mcp-Param-*`` headers from ``x-mcp-header``.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

import requests

from req_managed_agents.mcp import _wire as wire
from req_managed_agents.mcp._connection import Connection
from req_managed_agents.mcp._errors import McpConnectionLost
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.transport._json import MAX_BODY_BYTES, dumps_utf8, loads

__all__ = ["HttpTransport"]

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0
"""The longest a request's answer may stay silent (no byte, not even an SSE comment)."""
SEND_TIMEOUT = 30.0
"""The bound on a notification's or an answer's POST, and on the closing DELETE."""

_HEADER_SAFE = re.compile(r"^[\x20-\x7E]*$")


def header_value(value: str) -> str:
    """A value as the ``Mcp-Name`` header carries it (base64-wrapped when not plain ASCII)."""
    if _HEADER_SAFE.fullmatch(value) and value == value.strip() and not value.startswith("=?"):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode('ascii')}?="


class HttpTransport:
    """One MCP endpoint (and, in the handshake era, one session on it)."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        connection: Connection,
        log: logging.Logger,
    ) -> None:
        self._url = url
        self._headers = dict(headers)
        self._connection = connection
        self._log = log
        self._http = requests.Session()
        self._lock = threading.Lock()
        self._streams: dict[int, requests.Response] = {}
        self._abandoned: set[int] = set()
        self._closed = False
        self.session_id: str | None = None
        #: The handshake era's negotiated version, sent as ``MCP-Protocol-Version``.
        self.protocol_version: str | None = None

    def send(self, message: dict[str, Any]) -> None:
        """POST one message; a request is answered on a thread of its own."""
        if self._closed:
            raise McpConnectionLost("the connection was closed", server=self._connection.server)
        headers = self._headers_for(message)
        if "method" in message and "id" in message:
            threading.Thread(
                target=self._exchange,
                args=(message["id"], message, headers),
                name=f"rma-mcp-http-{self._connection.server}",
                daemon=True,
            ).start()
            return
        try:
            answer = self._http.post(
                self._url, data=dumps_utf8(message), headers=headers, timeout=SEND_TIMEOUT
            )
            answer.close()
        except requests.RequestException as error:
            raise McpConnectionLost(
                f"POST failed: {error}", server=self._connection.server
            ) from error
        if answer.status_code >= 400:
            self._log.warning(
                "MCP server %r refused a %s with HTTP %s",
                self._connection.server,
                message.get("method", "answer"),
                answer.status_code,
            )

    def abandon(self, request_id: int, notice: dict[str, Any]) -> None:
        """Close the request's stream; in the handshake era, POST the cancellation first."""
        if self.protocol_version is not None:
            with suppress(McpConnectionLost):
                self.send(notice)
        with self._lock:
            stream = self._streams.pop(request_id, None)
            if stream is None:  # its answer has not begun: closed as soon as it does
                self._abandoned.add(request_id)
        if stream is not None:
            _shut(stream)

    def close(self) -> None:
        """End the session (DELETE, bounded) and every stream still open."""
        self._closed = True
        with self._lock:
            streams = list(self._streams.values())
            self._streams.clear()
        for stream in streams:
            _shut(stream)
        if self.session_id is not None:
            with suppress(requests.RequestException):
                self._http.delete(
                    self._url, headers=self._headers_for({}), timeout=SEND_TIMEOUT
                ).close()
        self._http.close()

    def _headers_for(self, message: Mapping[str, Any]) -> dict[str, str]:
        headers = {
            **self._headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = meta.get(wire.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        if isinstance(modern, str):
            headers["MCP-Protocol-Version"] = modern
            headers["Mcp-Method"] = str(message.get("method"))
            name = params.get("name") if isinstance(params, dict) else None
            if message.get("method") == "tools/call" and isinstance(name, str):
                headers["Mcp-Name"] = header_value(name)
        elif self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _exchange(self, request_id: int, message: dict[str, Any], headers: dict[str, str]) -> None:
        server = self._connection.server
        try:
            response = self._http.post(
                self._url,
                data=dumps_utf8(message),
                headers=headers,
                stream=True,
                timeout=(CONNECT_TIMEOUT, READ_TIMEOUT),
            )
        except requests.RequestException as error:
            self._connection.fail_one(request_id, f"POST failed: {error}")
            return
        with self._lock:
            abandoned = request_id in self._abandoned
            self._abandoned.discard(request_id)
            if not abandoned:
                self._streams[request_id] = response
        if abandoned:
            response.close()
            return
        try:
            self._read_answer(request_id, response, opens=message.get("method") == "initialize")
        except (requests.RequestException, OSError, ValueError) as error:
            self._connection.fail_one(request_id, f"the answer broke off: {error}")
        finally:
            with self._lock:
                self._streams.pop(request_id, None)
            response.close()
        self._connection.fail_one(request_id, f"{server!r} ended the answer without one")

    def _read_answer(self, request_id: int, response: requests.Response, *, opens: bool) -> None:
        status = response.status_code
        session_id = response.headers.get("Mcp-Session-Id")
        if opens and status < 400 and session_id and len(session_id) <= 1024:
            self.session_id = session_id
        if (
            status == 404
            and self.session_id is not None
            and "Mcp-Session-Id" not in response.headers
        ):
            self._connection.fail(f"the server forgot session {self.session_id} (HTTP 404)")
            return
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind == "text/event-stream" and status < 400:
            decoder = SSEDecoder(max_event_size=MAX_BODY_BYTES)
            for chunk in response.iter_content(chunk_size=None):
                for event in decoder.feed(chunk):
                    if event.data and self._deliver(loads(event.data), request_id):
                        return
            return
        body = response.raw.read(MAX_BODY_BYTES + 1, decode_content=True)
        if len(body) > MAX_BODY_BYTES:
            raise ValueError(f"an answer over {MAX_BODY_BYTES} bytes")
        try:
            answer = loads(body) if body else None
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict) and status >= 400:
            # a refusal at the HTTP layer may carry no id (or a placeholder): it is ours
            self._deliver({**answer, "id": request_id}, request_id)
        elif isinstance(answer, dict) and ("result" in answer or "error" in answer):
            self._deliver(answer, request_id)
        elif status >= 400:
            text = body[:200].decode("utf-8", "replace").strip()
            self._deliver(
                wire.error_answer(request_id, -32600, f"HTTP {status}: {text}"), request_id
            )

    def _deliver(self, message: Any, request_id: int) -> bool:
        """Hand ``message`` over; whether it was the answer this stream waits for."""
        self._connection.receive(message, related=request_id)
        return (
            isinstance(message, dict)
            and message.get("id") == request_id
            and "method" not in message
        )


def _shut(response: requests.Response) -> None:
    """Close a response another thread may be reading. Closing alone does not wake a thread
    blocked in a read: urllib3 (2.3 and later) shuts the socket down first, the reader
    wakes, and its own close then ends the connection - which the server sees."""
    shutdown = getattr(response.raw, "shutdown", None)
    if callable(shutdown):
        with suppress(Exception):
            shutdown()
            return
    with suppress(Exception):
        response.close()
