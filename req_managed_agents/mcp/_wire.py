"""MCP's wire facts in one place: the protocol revisions, the ``_meta`` keys of the
stateless era, the JSON-RPC error codes, and the messages a client builds.

Checked against the ``mcp`` / ``mcp-types`` packages 2.3.0 (``mcp_types/version.py``,
``mcp_types/_types.py``, ``mcp_types/jsonrpc.py``, ``mcp/shared/inbound.py``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "HANDSHAKE_VERSIONS",
    "INVALID_PARAMS",
    "LATEST_HANDSHAKE_VERSION",
    "METHOD_NOT_FOUND",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "REQUEST_TIMEOUT",
    "SERVER_INFO_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "encode_line",
    "error_answer",
    "notification",
    "request",
    "result_answer",
]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions reached through ``initialize``, oldest first."""
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]
MODERN_VERSIONS = ("2026-07-28",)
"""The stateless revisions: no handshake, the version and capabilities in every request."""

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

REQUEST_TIMEOUT = -32001
UNSUPPORTED_PROTOCOL_VERSION = -32022
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
URL_ELICITATION_REQUIRED = -32042
"""A 2025-11-25 refusal: the person must first open the links in ``data.elicitations``."""


def request(request_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}


def notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification (no id: nothing answers it)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def result_answer(request_id: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to a server's request."""
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def error_answer(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """The error answer to a server's request."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def encode_line(message: Mapping[str, Any]) -> bytes:
    """One stdio frame: compact JSON (which escapes every newline inside strings) and a
    newline."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
