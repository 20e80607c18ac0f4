"""What every Claude control-plane noun shares: the client core of
:mod:`~req_managed_agents.providers._api` with the Anthropic API's errors, cursors and
authentication (an API key, a bearer token or a request signer), and the checks of queries,
versions and lists.

Retries follow the :mod:`~req_managed_agents.transport._backoff` policy:

* GET and DELETE, the ``archive`` POSTs (archiving twice leaves the same state), redacting
  a memory version (likewise), validating an MCP OAuth credential (a probe: a repeat probes
  again and creates nothing) and the updates of sessions, environments, memory stores,
  memories, vaults and credentials (an update sets the fields it names, so a repeat leaves
  the same state) are retried on connection errors, timeouts, 408/429/5xx/529;
* creating a session is retried the same way: a repeat can at worst leave an empty idle
  session behind (with its resources mounted), which does no work;
* creates (agents, environments, memory stores, memories, vaults, credentials, session
  resources, file uploads), agent updates, memory updates with a ``precondition`` and
  ``send_events`` are retried only when the server provably did not act (no connection, or
  a 429/503/529 refusal with ``retry-after``): a repeated create would leave a duplicate
  behind, a repeated conditional update would fail the ``version`` or content hash its own
  first attempt moved on, and a repeated ``user.message`` would prompt the agent twice. The
  session driver recovers ``send_events`` itself: whether an event landed can be read back
  from the session's history, so it checks before re-sending.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, BinaryIO, Literal, Union

import requests

from req_managed_agents._redact import Secret
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers._api import (
    MAX_METADATA_PAIRS,
    ApiCore,
    ApiDialect,
    Json,
    body_of,
    checked_metadata,
    id_value,
    segment,
)
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = [
    "ANTHROPIC_VERSION",
    "FILES_BETA",
    "MANAGED_AGENTS_BETA",
    "MAX_METADATA_PAIRS",
    "MEMORY_BETA",
    "REQUESTS",
    "AuthScheme",
    "ClientCore",
    "FileContent",
    "Json",
    "Signer",
    "body_of",
    "checked_metadata",
    "id_value",
    "segment",
]

# Every request: 0.5 s doubling to 8 s with jitter, the server's retry-after up to 60 s;
# how many times is the provider's ``max_retries``.
REQUESTS = RetryPolicy()

MANAGED_AGENTS_BETA = "managed-agents-2026-04-01"
FILES_BETA = "files-api-2025-04-14"
# Memory store endpoints take this beta or the managed-agents one; we send both.
MEMORY_BETA = "agent-memory-2026-07-22"
ANTHROPIC_VERSION = "2023-06-01"

# ``x-api-key: <key>`` (the documented default) or ``Authorization: Bearer <key>`` (what the
# official SDK 2.x sends, with ``anthropic-version: 2026-10-21``).
AuthScheme = Literal["x-api-key", "bearer"]
_AUTH_SCHEMES = ("x-api-key", "bearer")

# History pages hold up to 1000 events, the API's cap (as the official session runner asks).
EVENTS_PAGE_SIZE = 1000
# Lists whose items carry their content (``view="full"``) take pages of at most 20.
FULL_VIEW_PAGE_SIZE = 20
# ``created_at_gte=`` (the SDK's keyword) is sent as ``created_at[gte]=``.
_DATE_FILTER = re.compile(r"(created_at)_(gt|gte|lt|lte)")

# Authenticates a prepared request in place (SigV4 for Claude on Bedrock).
Signer = Callable[[requests.PreparedRequest], None]
FileContent = Union[bytes, BinaryIO, str, "os.PathLike[str]"]


def _error_facts(body: Json, headers: Mapping[str, str]) -> tuple[object, object, object]:
    """``{"error": {"type", "message", "details": {"error_code"}}}`` (the ``error_code``
    names the error more precisely); the request id in a header, or in the body."""
    error = body["error"] if isinstance(body.get("error"), dict) else {}
    details = error["details"] if isinstance(error.get("details"), dict) else {}
    code = details.get("error_code")
    error_type = code if isinstance(code, str) else error.get("type")
    return error_type, error.get("message"), headers.get("request-id") or body.get("request_id")


def _next_page(page: Json, items: list[Json]) -> dict[str, Any] | None:
    """The ``next_page`` cursor, or the older ``has_more`` and ``last_id``."""
    cursor = page.get("next_page")
    if isinstance(cursor, str) and cursor:
        return {"page": cursor, "after_id": None}
    last_id = page.get("last_id")
    return {"after_id": last_id} if page.get("has_more") and isinstance(last_id, str) else None


class ClientCore(ApiCore):
    """The authenticated, pooled HTTP client under every noun of the control plane."""

    _dialect = ApiDialect(_error_facts, _next_page)

    def __init__(
        self,
        api_key: Secret | None,
        *,
        base_url: str,
        timeout: float,
        max_retries: int,
        http: requests.Session | None = None,
        anthropic_version: str = ANTHROPIC_VERSION,
        beta: str = MANAGED_AGENTS_BETA,
        files_beta: str = FILES_BETA,
        memory_beta: str = MEMORY_BETA,
        auth_scheme: AuthScheme = "x-api-key",
        signer: Signer | None = None,
    ) -> None:
        """``signer`` authenticates each request in place of the key (Claude on Bedrock
        signs with SigV4); then ``api_key`` may be None."""
        if api_key is None and signer is None:
            raise ConfigurationError("a Claude client needs an API key or a request signer")
        if auth_scheme not in _AUTH_SCHEMES:
            raise ConfigurationError(
                f"auth_scheme must be 'x-api-key' or 'bearer', got {auth_scheme!r}"
            )
        self._api_key = api_key
        self._signer = signer
        self.auth_scheme: AuthScheme = auth_scheme
        self.anthropic_version = anthropic_version
        self.beta = beta
        self.files_beta = files_beta
        self.memory_beta = memory_beta
        super().__init__(
            base_url, timeout=timeout, retry=REQUESTS.but(max_retries=max_retries), http=http
        )

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["anthropic-version"] = self.anthropic_version
        request.headers.setdefault("anthropic-beta", self.beta)
        if self._signer is not None:
            self._signer(request)
        elif self._api_key is not None and self.auth_scheme == "bearer":
            request.headers["authorization"] = f"Bearer {self._api_key.reveal()}"
        elif self._api_key is not None:
            request.headers["x-api-key"] = self._api_key.reveal()

    def _create(self, path: str, body: Json, needs: str, what: str, **options: Any) -> Json:
        """``POST`` a new resource, which needs a ``needs`` field; not retried once it may
        have landed (a repeat would leave a second one)."""
        if not body.get(needs):
            raise ValueError(f"{what} needs a {needs}")
        return self._json("POST", path, idempotent=False, body=body, **options)

    def _update(self, path: str, body: Json, **options: Any) -> Json:
        """``POST`` the fields to change (a repeat leaves the same state: retried)."""
        return self._json("POST", path, idempotent=True, body=body, **options)

    def _archive(self, path: str, **options: Any) -> Json:
        """``POST {path}/archive`` (archiving twice leaves the same state: retried)."""
        return self._json("POST", f"{path}/archive", idempotent=True, body={}, **options)

    def _files_headers(self) -> dict[str, str]:
        return {"anthropic-beta": f"{self.files_beta},{self.beta}"}

    def _memory_headers(self) -> dict[str, str]:
        """Memory store endpoints accept either beta; sending both satisfies any gateway."""
        return {"anthropic-beta": f"{self.memory_beta},{self.beta}"}


def query_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters spelled as the API expects: booleans as ``true``/``false``, lists in
    bracket form (``types[]=a&types[]=b``), ``created_at_gte`` as ``created_at[gte]`` and
    datetimes in ISO 8601; ``None`` values are left out."""
    query: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        date_filter = _DATE_FILTER.fullmatch(key)
        name = f"{date_filter[1]}[{date_filter[2]}]" if date_filter else key
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, (list, tuple)):
            value = list(value)
            if not name.endswith("[]"):
                name += "[]"
        query[name] = value
    return query


def positive_version(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field} must be an integer of at least 1, got {value!r}")
    return value


def as_list(field: str, value: object) -> list[Any]:
    """A list or tuple as a list; a lone string would otherwise pass as a list of letters."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list, got {type(value).__name__}")
    return list(value)
