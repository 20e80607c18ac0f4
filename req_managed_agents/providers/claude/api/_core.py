"""What every Claude control-plane noun shares: the authenticated HTTP client, error
parsing, paging and the checks of ids, lists and metadata.

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
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any, BinaryIO, Literal, Union
from urllib.parse import quote

import requests

from req_managed_agents.errors import APIError, ConfigurationError
from req_managed_agents.transport._backoff import RetryPolicy, SendBudget, parse_retry_after
from req_managed_agents.transport._http import HttpClient, api_error
from req_managed_agents.transport._json import excerpt, json_object, loads
from req_managed_agents.transport._redact import Secret

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
LIST_PAGE_SIZE = 100
# Lists whose items carry their content (``view="full"``) take pages of at most 20.
FULL_VIEW_PAGE_SIZE = 20
# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000

# The API's metadata limits (sessions, vaults, credentials, memory stores).
MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512
# ``created_at_gte=`` (the SDK's keyword) is sent as ``created_at[gte]=``.
_DATE_FILTER = re.compile(r"(created_at)_(gt|gte|lt|lte)")

Json = dict[str, Any]
# Authenticates a prepared request in place (SigV4 for Claude on Bedrock).
Signer = Callable[[requests.PreparedRequest], None]
FileContent = Union[bytes, BinaryIO, str, "os.PathLike[str]"]


def segment(value: str) -> str:
    """One path segment; an id can never escape into another path."""
    if not value or value in (".", ".."):
        # requests collapses dot segments (even percent-encoded ones) into another path.
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


def _parse_anthropic_error(response: requests.Response) -> APIError:
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = excerpt(response.content, _ERROR_BODY_EXCERPT)
    error = body.get("error") if isinstance(body, dict) else None
    error_type = message = None
    if isinstance(error, dict):
        details = error.get("details")
        error_type = error.get("type")
        if isinstance(details, dict) and isinstance(details.get("error_code"), str):
            error_type = details["error_code"]
        message = error.get("message")
    if not isinstance(message, str) or not message:
        text = body.strip() if isinstance(body, str) else ""
        message = text or response.reason or f"HTTP {response.status_code}"
    request_id = response.headers.get("request-id") or (
        body.get("request_id") if isinstance(body, dict) else None
    )
    request_id = request_id if isinstance(request_id, str) else None
    return api_error(
        response.status_code,
        error_type if isinstance(error_type, str) else None,
        message,
        request_id,
        body=body,
        retry_after=parse_retry_after(response.headers),
    )


class ClientCore:
    """The authenticated, pooled HTTP client under every noun of the control plane."""

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
        self._http = HttpClient(
            base_url,
            timeout=timeout,
            retry=REQUESTS.but(max_retries=max_retries),
            parse_error=_parse_anthropic_error,
            authenticate=self._authenticate,
            session=http,
        )

    @property
    def base_url(self) -> str:
        """The API root every path is joined to."""
        return self._http.base_url

    @property
    def timeout(self) -> float:
        """Seconds a request may wait for each read."""
        return self._http.timeout

    def close(self) -> None:
        """Release pooled connections."""
        self._http.close()

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["anthropic-version"] = self.anthropic_version
        request.headers.setdefault("anthropic-beta", self.beta)
        if self._signer is not None:
            self._signer(request)
        elif self._api_key is not None and self.auth_scheme == "bearer":
            request.headers["authorization"] = f"Bearer {self._api_key.reveal()}"
        elif self._api_key is not None:
            request.headers["x-api-key"] = self._api_key.reveal()

    def _json(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        cut_deep: bool = False,
        budget: SendBudget | None = None,
        required: tuple[str, ...] = ("id",),
        listing: str | None = None,
        item_required: tuple[str, ...] = (),
    ) -> Json:
        """The JSON object a request answers, checked (``transport._json.json_object``):
        a resource's answer must carry its ``id`` (``required=()`` for the others); a
        ``listing`` member (``data``), when present, must be a list of objects, each with
        the ``item_required`` fields."""
        response = self._http.request(
            method,
            path,
            idempotent=idempotent,
            json=body,
            params=params,
            headers=headers,
            telemetry_metadata=telemetry_metadata,
            budget=budget,
        )
        return json_object(
            response,
            f"{method} {path}",
            cut_deep=cut_deep,
            required=required,
            listing=listing,
            item_required=item_required,
        )

    def _list_all(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        item_required: tuple[str, ...] = ("id",),
    ) -> list[Json]:
        return list(self._iter_pages(path, params, headers, telemetry_metadata, item_required))

    def _iter_pages(
        self,
        path: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        telemetry_metadata: Mapping[str, Any] | None,
        item_required: tuple[str, ...] = ("id",),
        cut_deep: bool = False,
    ) -> Iterator[Json]:
        """Follow ``next_page`` cursors (or the older ``has_more``/``last_id``) to the end;
        every item must carry the ``item_required`` fields (its ``id``, unless a list holds
        what has none); ``cut_deep`` for pages of events, whose tool inputs may nest
        absurdly deep."""
        query: dict[str, Any] = {"limit": LIST_PAGE_SIZE, **(params or {})}
        seen_cursors: set[str] = set()
        while True:
            page = self._json(
                "GET",
                path,
                idempotent=True,
                params=query,
                headers=headers,
                telemetry_metadata=telemetry_metadata,
                cut_deep=cut_deep,
                required=("data",),
                listing="data",
                item_required=item_required,
            )
            yield from page["data"]  # a list of objects, each checked
            cursor = page.get("next_page")
            if isinstance(cursor, str) and cursor:
                if cursor in seen_cursors:
                    return  # a server repeating a cursor would otherwise loop forever
                seen_cursors.add(cursor)
                query = {**query, "page": cursor}
                query.pop("after_id", None)
            elif page.get("has_more") and isinstance(page.get("last_id"), str):
                if page["last_id"] in seen_cursors:
                    return
                seen_cursors.add(page["last_id"])
                query = {**query, "after_id": page["last_id"]}
            else:
                return

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


def id_value(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    return value


def positive_version(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field} must be an integer of at least 1, got {value!r}")
    return value


def as_list(field: str, value: object) -> list[Any]:
    """A list or tuple as a list; a lone string would otherwise pass as a list of letters."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list, got {type(value).__name__}")
    return list(value)


def checked_metadata(metadata: object) -> dict[str, str]:
    """String keys and values within the API's limits (16 pairs, 64- and 512-char caps)."""
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata must be a mapping, got {type(metadata).__name__}")
    if len(metadata) > MAX_METADATA_PAIRS:
        raise ValueError(f"metadata holds at most {MAX_METADATA_PAIRS} pairs, got {len(metadata)}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not 1 <= len(key) <= _MAX_METADATA_KEY:
            raise ValueError(
                f"metadata keys must be strings of 1 to {_MAX_METADATA_KEY} characters, got {key!r}"
            )
        if not isinstance(value, str):
            raise ValueError(f"metadata[{key!r}] must be a string, got {type(value).__name__}")
        if len(value) > _MAX_METADATA_VALUE:
            raise ValueError(
                f"metadata[{key!r}] is {len(value)} characters long; "
                f"the API allows at most {_MAX_METADATA_VALUE}"
            )
    return dict(metadata)


def body_of(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    """A request body given as a mapping, as keywords, or both (a keyword names a field the
    mapping does not: giving one twice is refused)."""
    if body is not None and not isinstance(body, Mapping):
        raise TypeError(f"the body must be a mapping, got {type(body).__name__}")
    merged = dict(body or {})
    twice = sorted(set(merged) & set(fields))
    if twice:
        raise ValueError(f"{', '.join(twice)} given both in the body and as keywords")
    merged.update(fields)
    return merged
