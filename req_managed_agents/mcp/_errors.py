"""The two errors a caller of an MCP server tells apart (under the one root in ``errors``).

They live beside the client because ``errors`` is at its size limit; the package exports
them, and the root's error tree names them."""

from __future__ import annotations

from req_managed_agents._redact import redact
from req_managed_agents.errors import ManagedAgentsError

__all__ = ["McpConnectionLost", "McpServerError"]


class McpServerError(ManagedAgentsError):
    """An MCP server (``server`` names it) refused a request - ``code`` and
    ``error_message`` are its JSON-RPC error, ``data`` the error's ``data`` as sent - or
    could not be started, reached or waited for (then ``code`` is ``None``, or ``-32001``
    for a request that timed out)."""

    def __init__(
        self, message: str, *, server: str, code: int | None = None, data: object = None
    ) -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        self.code = code
        self.error_message = redact(message)
        self.data = data


class McpConnectionLost(McpServerError):
    """The server's process exited, or its connection broke, while a request was in
    flight: whether a tool call acted is unknown, so the caller's ``on_unfinished`` policy
    decides. The next request starts the server again."""
