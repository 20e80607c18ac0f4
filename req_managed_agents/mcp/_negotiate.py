"""Which protocol era a server speaks, decided on the first request of a connection.

As the official client's "auto" mode does (``mcp/client/_probe.py``): probe
``server/discover`` at the newest stateless revision; a server that answers with a
revision we share is stateless, and every later request carries the version and our
capabilities in its ``_meta``. Anything else - ``-32601``, another error, a timeout, an
answer naming only handshake revisions - falls back to ``initialize`` at the newest
handshake revision, accepting the server's counter-offer down to ``2024-11-05``. Only a
``-32022`` whose supported list shares nothing with either era is an incompatibility.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents.mcp import _wire as wire
from req_managed_agents.mcp._connection import Connection
from req_managed_agents.mcp._errors import McpConnectionLost, McpServerError

__all__ = ["DISCOVER_TIMEOUT", "Negotiated", "negotiate"]

DISCOVER_TIMEOUT = 10.0
"""The longest a ``server/discover`` probe is waited for before falling back (as the
official client waits)."""


@dataclass(frozen=True)
class Negotiated:
    """What a connection agreed: the revision, whether it is the stateless era, and what
    the server said of itself."""

    version: str
    stateless: bool
    server_info: Mapping[str, Any] = field(default_factory=dict)
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    instructions: str | None = None


def negotiate(
    connection: Connection,
    *,
    client_info: Mapping[str, Any],
    capabilities: Mapping[str, Any],
    timeout: float,
) -> Negotiated:
    """Agree on a revision over a fresh ``connection`` (see the module docs)."""

    def envelope(version: str) -> dict[str, Any]:
        return {
            wire.PROTOCOL_VERSION_KEY: version,
            wire.CLIENT_CAPABILITIES_KEY: dict(capabilities),
            wire.CLIENT_INFO_KEY: dict(client_info),
        }

    version = wire.MODERN_VERSIONS[-1]
    for attempt in range(2):
        try:
            answer = connection.exchange(
                "server/discover",
                {"_meta": envelope(version)},
                timeout=min(timeout, DISCOVER_TIMEOUT),
                cancellable=False,
            )
        except McpConnectionLost:
            raise
        except McpServerError:  # no answer in time: not evidence of the stateless era
            break
        error, result = answer.get("error"), answer.get("result")
        if isinstance(error, dict):
            supported = _supported(error)
            if error.get("code") != wire.UNSUPPORTED_PROTOCOL_VERSION or supported is None:
                break
            mutual = [v for v in wire.MODERN_VERSIONS if v in supported]
            if mutual and attempt == 0:
                version = mutual[-1]
                continue
            if not any(v in wire.HANDSHAKE_VERSIONS for v in supported):
                raise McpServerError(
                    f"speaks only protocol versions {supported}, none of which this client does",
                    server=connection.server,
                    code=wire.UNSUPPORTED_PROTOCOL_VERSION,
                )
            break
        if not isinstance(result, dict):
            break
        offered = result.get("supportedVersions")
        mutual = [v for v in wire.MODERN_VERSIONS if isinstance(offered, list) and v in offered]
        if not mutual:
            break
        connection.meta = envelope(mutual[-1])
        meta = result.get("_meta")
        info = meta.get(wire.SERVER_INFO_KEY) if isinstance(meta, dict) else None
        return _agreed(mutual[-1], True, info, result)
    return _handshake(connection, client_info, capabilities, timeout)


def _handshake(
    connection: Connection,
    client_info: Mapping[str, Any],
    capabilities: Mapping[str, Any],
    timeout: float,
) -> Negotiated:
    result = connection.request(
        "initialize",
        {
            "protocolVersion": wire.LATEST_HANDSHAKE_VERSION,
            "capabilities": dict(capabilities),
            "clientInfo": dict(client_info),
        },
        timeout=timeout,
        cancellable=False,
    )
    version = result.get("protocolVersion")
    if version not in wire.HANDSHAKE_VERSIONS:
        raise McpServerError(
            f"offered protocol version {version!r}, which this client does not speak",
            server=connection.server,
        )
    connection.notify("notifications/initialized")
    return _agreed(str(version), False, result.get("serverInfo"), result)


def _agreed(version: str, stateless: bool, info: Any, result: Mapping[str, Any]) -> Negotiated:
    capabilities = result.get("capabilities")
    instructions = result.get("instructions")
    return Negotiated(
        version,
        stateless,
        info if isinstance(info, dict) else {},
        capabilities if isinstance(capabilities, dict) else {},
        instructions if isinstance(instructions, str) else None,
    )


def _supported(error: Mapping[str, Any]) -> list[str] | None:
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return None
