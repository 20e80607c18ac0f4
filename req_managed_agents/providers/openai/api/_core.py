"""What every OpenAI Agents API noun shares: the authenticated HTTP client, error parsing,
cursor paging and the checks of ids and metadata.

Retries follow the :mod:`~req_managed_agents.transport._backoff` policy:

* GET and DELETE, and the updates of agents and sessions (an update sets the fields it
  names, so a repeat leaves the same state), are retried on connection errors, timeouts,
  408/429/5xx;
* session inputs (``POST .../events``) are retried the same way, because each carries an
  ``Idempotency-Key``: the service takes a repeat of a key it has seen as the same request;
* creates (agents, sessions) are retried only when the server provably did not act (no
  connection, or a 429/503 refusal with ``retry-after``); a session create also carries a
  token in its metadata, so a create whose answer was lost is looked up before it is sent
  again (:meth:`~req_managed_agents.providers.openai.api.SessionsAPI.create_session`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import requests

from req_managed_agents.errors import APIError
from req_managed_agents.transport._backoff import RetryPolicy, parse_retry_after
from req_managed_agents.transport._http import HttpClient, api_error
from req_managed_agents.transport._json import excerpt, json_object, loads
from req_managed_agents.transport._redact import Secret

__all__ = [
    "AGENTS_BETA",
    "MAX_METADATA_PAIRS",
    "REQUESTS",
    "ClientCore",
    "Json",
    "checked_metadata",
    "id_value",
    "segment",
]

# Every request: 0.5 s doubling to 8 s with jitter, the server's retry-after up to 60 s;
# how many times is the provider's ``max_retries``.
REQUESTS = RetryPolicy()

# The beta header every Agents API request carries.
AGENTS_BETA = "agents=v1"
# Lists page at most 100 resources a request (the API's cap).
LIST_PAGE_SIZE = 100
_ERROR_BODY_EXCERPT = 2000

# The API's metadata limits (agents, sessions).
MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512

Json = dict[str, Any]


def segment(value: str) -> str:
    """One path segment; an id can never escape into another path."""
    if not isinstance(value, str) or not value or value in (".", ".."):
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


def id_value(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    return value


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
        if not isinstance(value, str) or len(value) > _MAX_METADATA_VALUE:
            raise ValueError(
                f"metadata[{key!r}] must be a string of at most {_MAX_METADATA_VALUE} characters"
            )
    return dict(metadata)


def _parse_openai_error(response: requests.Response) -> APIError:
    """``{"error": {"message", "type", "param", "code"}}``; the ``code`` names the error
    more precisely than the ``type`` where both are given."""
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = excerpt(response.content, _ERROR_BODY_EXCERPT)
    error = body.get("error") if isinstance(body, dict) else None
    error_type = message = None
    if isinstance(error, dict):
        error_type = error.get("code") or error.get("type")
        message = error.get("message")
    if not isinstance(message, str) or not message:
        text = body.strip() if isinstance(body, str) else ""
        message = text or response.reason or f"HTTP {response.status_code}"
    return api_error(
        response.status_code,
        error_type if isinstance(error_type, str) else None,
        message,
        response.headers.get("x-request-id"),
        body=body,
        retry_after=parse_retry_after(response.headers),
    )


class ClientCore:
    """The authenticated, pooled HTTP client under every noun of the Agents API."""

    def __init__(
        self,
        api_key: Secret,
        *,
        base_url: str,
        timeout: float,
        max_retries: int,
        organization: str | None = None,
        project: str | None = None,
        http: requests.Session | None = None,
    ) -> None:
        self._api_key = api_key
        self.organization = organization
        self.project = project
        self._http = HttpClient(
            base_url,
            timeout=timeout,
            retry=REQUESTS.but(max_retries=max_retries),
            parse_error=_parse_openai_error,
            authenticate=self._authenticate,
            session=http,
            request_id_header="x-request-id",
        )

    @property
    def base_url(self) -> str:
        """The API root every path is joined to (``.../v1``)."""
        return self._http.base_url

    @property
    def timeout(self) -> float:
        """Seconds a request may wait for each read."""
        return self._http.timeout

    def close(self) -> None:
        """Release pooled connections."""
        self._http.close()

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["authorization"] = f"Bearer {self._api_key.reveal()}"
        request.headers["openai-beta"] = AGENTS_BETA
        if self.organization:
            request.headers["openai-organization"] = self.organization
        if self.project:
            request.headers["openai-project"] = self.project

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
        )
        return json_object(
            response,
            f"{method} {path}",
            request_id_header="x-request-id",
            cut_deep=True,
            required=required,
            listing=listing,
            item_required=item_required,
        )

    def _iter_pages(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Iterator[Json]:
        """Follow the ``after`` cursor (a page's ``last_id``, else its last item's id) while
        ``has_more`` says there is more; stop iterating and no further page is asked for.
        Every item must carry its ``id``."""
        query: dict[str, Any] = {"limit": LIST_PAGE_SIZE, **(params or {})}
        seen: set[str] = set()
        while True:
            page = self._json(
                "GET",
                path,
                idempotent=True,
                params=query,
                telemetry_metadata=telemetry_metadata,
                required=("data",),
                listing="data",
                item_required=("id",),
            )
            items: list[Json] = page["data"]  # objects, each checked
            yield from items
            cursor = page.get("last_id") or (items[-1]["id"] if items else None)
            if not page.get("has_more") or not isinstance(cursor, str) or cursor in seen:
                return  # a server repeating a cursor would otherwise loop forever
            seen.add(cursor)
            query = {**query, "after": cursor}


def list_params(
    *, order: str | None = None, limit: int | None = None, after: str | None = None
) -> dict[str, Any]:
    """The cursor parameters every list takes, checked."""
    params: dict[str, Any] = {}
    if order is not None:
        if order not in ("asc", "desc"):
            raise ValueError(f"order must be 'asc' or 'desc', got {order!r}")
        params["order"] = order
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
            raise ValueError(f"limit must be an integer from 1 to 100, got {limit!r}")
        params["limit"] = limit
    if after is not None:
        params["after"] = id_value("after", after)
    return params
