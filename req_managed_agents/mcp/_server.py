"""``McpServer``: one MCP server's tools, callable from any thread, synchronously.

The server is started on first use and started again on the first use after it died,
paced by :data:`RESTART` while it keeps dying. A request in flight when it died raises
:class:`~req_managed_agents.mcp.McpConnectionLost`: whether a tool call acted is then
unknown, and the caller's ``on_unfinished`` policy decides - the client never sends a call
twice. ``close()`` (or leaving a ``with`` block) stops it; so does this process ending,
however it ends (see ``_stdio``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from req_managed_agents import __version__
from req_managed_agents.mcp import _wire as wire
from req_managed_agents.mcp._connection import Connection, ElicitationCallback, Transport
from req_managed_agents.mcp._errors import McpConnectionLost, McpServerError
from req_managed_agents.mcp._http import HttpTransport
from req_managed_agents.mcp._negotiate import Negotiated, negotiate
from req_managed_agents.mcp._stdio import StdioTransport
from req_managed_agents.mcp._values import McpProgress, McpTool, McpToolResult
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["INHERITED_ENV", "RESTART", "McpServer"]

RESTART = RetryPolicy(max_retries=2, base=0.25, cap=8.0)
"""How a server that died is started again: the next request starts it after a pause that
grows from ``base`` to ``cap`` while it keeps dying (reset by a request that succeeds); a
start that fails before the server answers is tried ``max_retries`` more times."""
INPUT_ROUNDS = 10
"""How many times one stateless-era call may come back asking for input (elicitation)."""
MAX_PAGES = 1000
"""The most ``tools/list`` pages read (a server whose cursor never ends is refused)."""
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
"""The variables a stdio server inherits from this process (as the official client does):
API keys and cloud credentials in the environment are not handed to a third-party
program unless ``env`` names them."""

LOG = logging.getLogger("req_managed_agents.mcp")

_TransportFactory = Callable[[Connection], Transport]


class McpServer:
    """An MCP server run as a child process over stdio (``McpServer("npx", ["-y", "pkg"])``)
    or reached over streamable HTTP (:meth:`http`). Thread-safe; every request waits at
    most ``timeout`` seconds unless it says otherwise. ``on_elicitation`` answers a
    server's question to a person (its params in - a form's ``requestedSchema``, or
    ``mode: "url"`` and a ``url`` - and ``{"action": ...}`` out) unless the call it belongs
    to has its own (:meth:`call_tool`); without either the client does not offer
    elicitation (see :meth:`offer_elicitation`), and declines one it is sent anyway."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        timeout: float = 30.0,
        on_elicitation: ElicitationCallback | None = None,
        restart: RetryPolicy = RESTART,
    ) -> None:
        argv = [command, *args]
        environment = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        environment.update(env or {})
        folder = os.fspath(cwd) if cwd is not None else None

        def stdio(connection: Connection) -> Transport:
            return StdioTransport(argv, env=environment, cwd=folder, connection=connection, log=LOG)

        self._setup(name or os.path.basename(command), timeout, on_elicitation, restart, stdio)

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        timeout: float = 30.0,
        on_elicitation: ElicitationCallback | None = None,
        restart: RetryPolicy = RESTART,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url`` (``headers`` go with every
        request, an ``Authorization`` for one)."""

        def over_http(connection: Connection) -> Transport:
            return HttpTransport(url, headers or {}, connection=connection, log=LOG)

        server = cls.__new__(cls)
        server._setup(name or url, timeout, on_elicitation, restart, over_http)
        return server

    def _setup(
        self,
        name: str,
        timeout: float,
        on_elicitation: ElicitationCallback | None,
        restart: RetryPolicy,
        factory: _TransportFactory,
    ) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.name = name
        self.timeout = timeout
        self._on_elicitation = on_elicitation
        self._offers_elicitation = on_elicitation is not None
        self._restart = restart
        self._factory = factory
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._connection: Connection | None = None
        self._transport: Transport | None = None
        self._negotiated: Negotiated | None = None
        self._deaths = 0
        self._changes = 0
        self._changes_seen = 0

    def __repr__(self) -> str:
        return f"McpServer({self.name!r})"

    def __enter__(self) -> McpServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def protocol_version(self) -> str | None:
        """The revision agreed with the running server (``None`` before it started)."""
        return self._negotiated.version if self._negotiated else None

    @property
    def server_info(self) -> Mapping[str, Any]:
        """What the server said of itself (``name``, ``version``, ...)."""
        return self._negotiated.server_info if self._negotiated else {}

    @property
    def tools_changed(self) -> int:
        """How many ``notifications/tools/list_changed`` the server has sent."""
        return self._changes

    @property
    def tools_stale(self) -> bool:
        """Whether the tool list changed since :meth:`list_tools` last began."""
        return self._changes != self._changes_seen

    def offer_elicitation(self) -> None:
        """Tell the server, when it starts, that this client answers questions for a person
        (form and URL elicitation) even without ``on_elicitation``: the questions then go to
        the ``on_elicitation`` of the call they belong to. ``Tools.include`` does this, so
        that a run's ``handle_elicitation`` answers them. A server already running hears of
        it only when it next starts."""
        self._offers_elicitation = True

    def start(self) -> None:
        """Start the server now rather than on first use."""
        self._connected(time.monotonic() + self.timeout)

    def list_tools(self, *, timeout: float | None = None) -> list[McpTool]:
        """Every tool the server offers, all pages read."""
        deadline = time.monotonic() + (timeout or self.timeout)
        connection = self._connected(deadline)
        seen = self._changes
        tools: list[McpTool] = []
        params: dict[str, Any] = {}
        for _ in range(MAX_PAGES):
            result = connection.request("tools/list", params, timeout=_left(deadline))
            listed = result.get("tools")
            for entry in listed if isinstance(listed, list) else ():
                if isinstance(entry, dict):
                    tools.append(McpTool.from_wire(entry))
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
            params = {"cursor": cursor}
        else:
            raise McpServerError(f"tools/list kept paging past {MAX_PAGES} pages", server=self.name)
        self._changes_seen = seen
        self._deaths = 0
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        cancelled: threading.Event | None = None,
        on_progress: Callable[[McpProgress], None] | None = None,
        on_elicitation: ElicitationCallback | None = None,
    ) -> McpToolResult:
        """Call tool ``name``. A tool's own failure is a result with ``is_error``; a refused
        call raises :class:`McpServerError` (its JSON-RPC code), a server that died
        mid-call :class:`McpConnectionLost`. Setting ``cancelled`` abandons the call: the
        server is told and :class:`McpServerError` is raised. ``on_progress`` gets the
        server's progress reports (on the transport's thread: keep it quick).
        ``on_elicitation`` answers the questions the server asks during this call, in place
        of the server's own; over stdio a question is known to be this call's only while no
        other call that has one is in flight (else the server's answers it). A call refused
        until the person opens links (``-32042``) asks about each and, all accepted, is
        made again."""
        deadline = time.monotonic() + (timeout or self.timeout)
        connection = self._connected(deadline)
        call: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        params = call
        for _ in range(INPUT_ROUNDS):
            try:
                result = connection.request(
                    "tools/call",
                    params,
                    timeout=_left(deadline),
                    cancelled=cancelled,
                    on_progress=on_progress,
                    on_elicitation=on_elicitation,
                )
            except McpServerError as refused:
                # Refused until the person opened links (2025-11-25): ask, then call again.
                if refused.code != wire.URL_ELICITATION_REQUIRED or not _links_opened(
                    connection, refused.data, on_elicitation
                ):
                    raise
                continue
            if result.get("resultType") != "input_required":
                self._deaths = 0
                return McpToolResult.from_wire(result)
            answers = self._answers(connection, result, on_elicitation)
            params = {**call, "inputResponses": answers}
            if isinstance(result.get("requestState"), str):
                params["requestState"] = result["requestState"]
        raise McpServerError(
            f"tools/call {name} asked for input more than {INPUT_ROUNDS} times", server=self.name
        )

    def close(self) -> None:
        """Stop the server (bounded); a later request raises."""
        self._closed.set()
        with self._lock:
            transport, connection = self._transport, self._connection
            self._transport = self._connection = None
        if connection is not None:
            connection.fail("the server was closed")
        if transport is not None:
            transport.close()

    def _answers(
        self,
        connection: Connection,
        result: Mapping[str, Any],
        on_elicitation: ElicitationCallback | None,
    ) -> dict[str, Any]:
        """The stateless era's answers to a result asking for input."""
        asked = result.get("inputRequests")
        answers: dict[str, Any] = {}
        for key, request in (asked if isinstance(asked, dict) else {}).items():
            method = request.get("method") if isinstance(request, dict) else None
            if method != "elicitation/create":
                raise McpServerError(
                    f"asks for {method!r}, which this client does not offer", server=self.name
                )
            params = request.get("params")
            asked_params = params if isinstance(params, dict) else {}
            answers[key] = connection.elicit(asked_params, on_elicitation)
        return answers

    def _connected(self, deadline: float) -> Connection:
        if not self._lock.acquire(timeout=_left(deadline)):
            raise McpServerError(
                "another thread's start of the server took too long", server=self.name
            )
        try:
            connection = self._connection
            if connection is not None and connection.lost is None:
                return connection
            if connection is not None:  # it died: count it, then start again
                self._deaths += 1
                LOG.warning("MCP server %r is restarting (%s)", self.name, connection.lost)
            for attempt in range(self._restart.max_retries + 1):
                if self._closed.is_set():
                    raise McpServerError("the server was closed", server=self.name)
                if self._deaths and not self._restart.wait(
                    self._deaths - 1, stop=self._closed, limit=_left(deadline)
                ):
                    raise McpServerError("the server was closed", server=self.name)
                try:
                    return self._start(deadline)
                except McpConnectionLost:
                    self._deaths += 1
                    if attempt == self._restart.max_retries:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._lock.release()

    def _start(self, deadline: float) -> Connection:
        self._drop()
        connection = Connection(
            self.name,
            on_elicitation=self._on_elicitation,
            on_tools_changed=self._tools_did_change,
            log=LOG,
        )
        transport = self._factory(connection)
        connection.transport = transport
        self._connection, self._transport = connection, transport
        capabilities: dict[str, Any] = (
            {"elicitation": {"form": {}, "url": {}}} if self._offers_elicitation else {}
        )
        try:
            if isinstance(transport, StdioTransport):
                transport.open(_left(deadline))
            self._negotiated = negotiate(
                connection,
                client_info={"name": "req_managed_agents", "version": __version__},
                capabilities=capabilities,
                timeout=_left(deadline),
            )
        except BaseException:
            self._drop()
            raise
        if isinstance(transport, HttpTransport) and not self._negotiated.stateless:
            transport.protocol_version = self._negotiated.version
        LOG.info("MCP server %r started (protocol %s)", self.name, self._negotiated.version)
        return connection

    def _drop(self) -> None:
        transport, connection = self._transport, self._connection
        self._transport = self._connection = None
        self._negotiated = None
        if connection is not None:
            connection.fail("the server was stopped")
        if transport is not None:
            transport.close()

    def _tools_did_change(self) -> None:
        self._changes += 1


def _links_opened(
    connection: Connection, data: object, on_elicitation: ElicitationCallback | None
) -> bool:
    """Whether the person accepted every link a ``-32042`` refusal lists (asked in order,
    up to the first that is not accepted)."""
    asked = data.get("elicitations") if isinstance(data, dict) else None
    if not isinstance(asked, list) or not asked:
        return False
    return all(
        isinstance(params, dict)
        and connection.elicit(params, on_elicitation).get("action") == "accept"
        for params in asked
    )


def _left(deadline: float) -> float:
    """Seconds until ``deadline`` (at least a sliver, so a wait fails rather than hangs)."""
    return max(deadline - time.monotonic(), 0.001)
