"""One conversation with an MCP server over a transport: requests matched to their answers
by id, the server's notifications and requests routed, every wait bounded.

Any number of threads may have requests in flight at once. The transport delivers every
message the server sends to :meth:`Connection.receive` from its own thread (the stdio
reader, or the thread of one HTTP request); progress callbacks and the tools-changed count
run there, so they must be quick. A request the caller stops waiting for - it timed out,
its ``cancelled`` event was set, or Ctrl-C landed in its thread - is abandoned: the server
is told (``notifications/cancelled``, or a closed stream over HTTP) and a late answer is
dropped.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, Protocol

from req_managed_agents.mcp import _wire as wire
from req_managed_agents.mcp._errors import McpConnectionLost, McpServerError
from req_managed_agents.mcp._values import McpProgress
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["CANCEL_WATCH", "Connection", "ElicitationCallback", "Transport"]

CANCEL_WATCH = RetryPolicy.poll(0.05, first=0.002)
"""How often a waiting request looks at its caller's ``cancelled`` event."""

ElicitationCallback = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Answers an ``elicitation/create``'s params with ``{"action": "accept", "content": {...}}``,
``{"action": "decline"}`` or ``{"action": "cancel"}``."""

_LOG_LEVELS = {"debug": 10, "info": 20, "notice": 20, "warning": 30, "error": 40}


class Transport(Protocol):
    """How messages reach one server; it hands what the server sends to ``receive``."""

    def send(self, message: dict[str, Any]) -> None:
        """Send one message; raise :class:`McpConnectionLost` when the server is gone."""
        ...

    def abandon(self, request_id: int, notice: dict[str, Any]) -> None:
        """Tell the server its request ``request_id`` is abandoned (``notice`` is the
        ``notifications/cancelled`` to send where the transport sends one)."""
        ...

    def close(self) -> None:
        """Stop talking to the server, bounded."""
        ...


class _Call:
    __slots__ = ("answer", "done", "failure", "on_elicitation", "on_progress")

    def __init__(
        self,
        on_progress: Callable[[McpProgress], None] | None,
        on_elicitation: ElicitationCallback | None,
    ) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None
        self.failure: McpServerError | None = None
        self.on_progress = on_progress
        self.on_elicitation = on_elicitation


class Connection:
    """The JSON-RPC side of one connection (one server process, or one HTTP session)."""

    def __init__(
        self,
        server: str,
        *,
        on_elicitation: ElicitationCallback | None,
        on_tools_changed: Callable[[], None],
        log: logging.Logger,
    ) -> None:
        self.server = server
        self.transport: Transport | None = None
        #: The stateless era's envelope, merged into every request's ``params._meta``.
        self.meta: dict[str, Any] | None = None
        self._on_elicitation = on_elicitation
        self._on_tools_changed = on_tools_changed
        self._log = log
        self._lock = threading.Lock()
        self._calls: dict[int, _Call] = {}
        self._by_token: dict[str, _Call] = {}
        self._ids = itertools.count(1)
        self._lost: str | None = None

    @property
    def lost(self) -> str | None:
        """Why the connection ended, or ``None`` while it is usable."""
        return self._lost

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float,
        cancelled: threading.Event | None = None,
        on_progress: Callable[[McpProgress], None] | None = None,
        on_elicitation: ElicitationCallback | None = None,
        cancellable: bool = True,
    ) -> dict[str, Any]:
        """Send ``method`` and return its ``result``; a JSON-RPC error raises
        :class:`McpServerError` with its code. ``cancellable=False`` (the spec's rule
        for ``initialize`` and ``server/discover``) sends no cancellation on giving up.
        ``on_elicitation`` answers the questions the server asks while it handles this
        request (see :meth:`receive`)."""
        answer = self.exchange(
            method,
            params,
            timeout=timeout,
            cancelled=cancelled,
            on_progress=on_progress,
            on_elicitation=on_elicitation,
            cancellable=cancellable,
        )
        error = answer.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            raise McpServerError(
                f"{method} refused: {text or error}",
                server=self.server,
                code=code if isinstance(code, int) else None,
                data=error.get("data") if isinstance(error, dict) else None,
            )
        result = answer.get("result")
        if not isinstance(result, dict):
            raise McpServerError(f"{method} answered a non-object result", server=self.server)
        return result

    def exchange(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        timeout: float,
        cancelled: threading.Event | None = None,
        on_progress: Callable[[McpProgress], None] | None = None,
        on_elicitation: ElicitationCallback | None = None,
        cancellable: bool = True,
    ) -> dict[str, Any]:
        """Send ``method`` and return the server's whole answer (``result`` or ``error``)."""
        transport = self._attached()
        request_id = next(self._ids)
        params = dict(params or {})
        meta = dict(params.get("_meta") or {})
        for key, value in (self.meta or {}).items():
            meta.setdefault(key, value)
        call = _Call(on_progress, on_elicitation)
        token = f"rma-{request_id}" if on_progress is not None else None
        if token is not None:
            meta["progressToken"] = token
        if meta:
            params["_meta"] = meta
        with self._lock:
            if self._lost is not None:
                raise McpConnectionLost(self._lost, server=self.server)
            self._calls[request_id] = call
            if token is not None:
                self._by_token[token] = call
        try:
            transport.send(wire.request(request_id, method, params))
            self._wait(method, call, timeout, cancelled)
        except BaseException as stopped:  # timeout, cancel, Ctrl-C: tell the server
            if cancellable and not call.done.is_set():
                reason = str(stopped) or type(stopped).__name__
                notice = wire.notification(
                    "notifications/cancelled", {"requestId": request_id, "reason": reason}
                )
                with suppress(McpServerError):  # the server is gone: nothing left to cancel
                    transport.abandon(request_id, notice)
            raise
        finally:
            with self._lock:
                self._calls.pop(request_id, None)
                if token is not None:
                    self._by_token.pop(token, None)
        if call.failure is not None:
            raise call.failure
        assert call.answer is not None
        return call.answer

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        self._attached().send(wire.notification(method, params))

    def _attached(self) -> Transport:
        if self.transport is None:
            raise McpConnectionLost("not connected", server=self.server)
        return self.transport

    def _wait(
        self, method: str, call: _Call, timeout: float, cancelled: threading.Event | None
    ) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0
        while not call.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                raise McpServerError(
                    f"{method} got no answer within {timeout:g} s",
                    server=self.server,
                    code=wire.REQUEST_TIMEOUT,
                )
            if cancelled is None:
                call.done.wait(left)
                continue
            if cancelled.is_set():
                raise McpServerError(
                    f"{method} cancelled by the caller (the server was told)", server=self.server
                )
            call.done.wait(min(CANCEL_WATCH.delay(quiet), left))
            quiet += 1

    def receive(self, message: Any, related: int | None = None) -> None:
        """Route one message from the server (called on the transport's thread).

        ``related`` is the request whose answer stream carried it (streamable HTTP). A
        question for a person (``elicitation/create``) goes to that request's
        ``on_elicitation``; without one (stdio) to the only request in flight that has one;
        failing both - two could be asking - to the server's own ``on_elicitation``, else
        it is declined."""
        if not isinstance(message, dict):
            self._log.warning("MCP server %r sent a non-object message; ignored", self.server)
            return
        method = message.get("method")
        if isinstance(method, str):
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            if "id" in message:
                self._serve(message["id"], method, params, related)
            else:
                self._notified(method, params)
            return
        with self._lock:
            call = self._calls.get(message.get("id"))  # type: ignore[arg-type]
        if call is None or not ("result" in message or "error" in message):
            self._log.debug("MCP server %r: an answer nobody waits for; dropped", self.server)
            return
        call.answer = message
        call.done.set()

    def fail(self, reason: str) -> None:
        """The connection ended: every request in flight raises :class:`McpConnectionLost`."""
        with self._lock:
            if self._lost is None:
                self._lost = reason
            calls = list(self._calls.values())
        for call in calls:
            call.failure = McpConnectionLost(reason, server=self.server)
            call.done.set()

    def fail_one(self, request_id: int, reason: str) -> None:
        """One request's own exchange broke (an HTTP request): only it fails."""
        with self._lock:
            call = self._calls.get(request_id)
        if call is not None and not call.done.is_set():
            call.failure = McpConnectionLost(reason, server=self.server)
            call.done.set()

    def elicit(
        self, params: Mapping[str, Any], answerer: ElicitationCallback | None = None
    ) -> dict[str, Any]:
        """The answer to an elicitation: ``answerer`` (a request's own), else the server's
        ``on_elicitation``, else a decline. A callback that raises or answers something
        unusable cancels."""
        answerer = answerer or self._on_elicitation
        if answerer is None:
            return {"action": "decline"}
        try:
            answer = dict(answerer(params))
        except Exception:
            self._log.exception("on_elicitation failed for MCP server %r", self.server)
            return {"action": "cancel"}
        if answer.get("action") not in ("accept", "decline", "cancel"):
            self._log.warning("on_elicitation answered %r; cancelled instead", answer)
            return {"action": "cancel"}
        return answer

    def _serve(
        self, request_id: Any, method: str, params: dict[str, Any], related: int | None
    ) -> None:
        if method == "ping":
            self._answer(wire.result_answer(request_id, {}))
        elif method == "elicitation/create":
            answerer = self._answerer(related)
            # A person may take minutes: never on the reader thread.
            threading.Thread(
                target=lambda: self._answer(
                    wire.result_answer(request_id, self.elicit(params, answerer))
                ),
                name=f"rma-mcp-elicit-{self.server}",
                daemon=True,
            ).start()
        else:
            self._answer(wire.error_answer(request_id, wire.METHOD_NOT_FOUND, method))

    def _answerer(self, related: int | None) -> ElicitationCallback | None:
        """Which request's ``on_elicitation`` a question belongs to (see :meth:`receive`)."""
        with self._lock:
            call = self._calls.get(related) if related is not None else None
            if call is not None:
                return call.on_elicitation
            asking = [c.on_elicitation for c in self._calls.values() if c.on_elicitation]
        if len(asking) > 1:
            self._log.warning(
                "MCP server %r asks a person while %d of its calls could be asking; "
                "not routed to any of them",
                self.server,
                len(asking),
            )
        return asking[0] if len(asking) == 1 else None

    def _answer(self, message: dict[str, Any]) -> None:
        try:
            self._attached().send(message)
        except McpServerError:
            self._log.debug("MCP server %r left before its request was answered", self.server)

    def _notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress":
            with self._lock:
                call = self._by_token.get(params.get("progressToken"))  # type: ignore[arg-type]
            progress, total = params.get("progress"), params.get("total")
            if call is None or call.on_progress is None or not isinstance(progress, (int, float)):
                return
            message = params.get("message")
            try:
                call.on_progress(
                    McpProgress(
                        float(progress),
                        float(total) if isinstance(total, (int, float)) else None,
                        message if isinstance(message, str) else None,
                    )
                )
            except Exception:
                self._log.exception("on_progress failed for MCP server %r", self.server)
        elif method == "notifications/tools/list_changed":
            self._on_tools_changed()
        elif method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), 40)
            self._log.log(level, "MCP server %r: %s", self.server, params.get("data"))
