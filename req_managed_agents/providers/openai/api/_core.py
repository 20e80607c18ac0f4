"""What every OpenAI Agents API noun shares: the client core of
:mod:`~req_managed_agents.providers._api` with the Agents API's errors, ``after`` cursors and
bearer key, and the checks of list parameters.

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

from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents._redact import Secret
from req_managed_agents.providers._api import (
    MAX_METADATA_PAIRS,
    ApiCore,
    ApiDialect,
    Json,
    checked_metadata,
    id_value,
    segment,
)
from req_managed_agents.transport._backoff import RetryPolicy

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


def _error_facts(body: Json, headers: Mapping[str, str]) -> tuple[object, object, object]:
    """``{"error": {"message", "type", "param", "code"}}``; the ``code`` names the error
    more precisely than the ``type`` where both are given."""
    error = body["error"] if isinstance(body.get("error"), dict) else {}
    return error.get("code") or error.get("type"), error.get("message"), headers.get("x-request-id")


def _next_page(page: Json, items: list[Json]) -> dict[str, Any] | None:
    """The ``after`` cursor (a page's ``last_id``, else its last item's id) while
    ``has_more`` says there is more."""
    cursor = page.get("last_id") or (items[-1]["id"] if items else None)
    return {"after": cursor} if page.get("has_more") and isinstance(cursor, str) else None


class ClientCore(ApiCore):
    """The authenticated, pooled HTTP client under every noun of the Agents API."""

    # Answers carry tool arguments and schemas, which may nest absurdly deep.
    _dialect = ApiDialect(_error_facts, _next_page, "x-request-id", cut_deep=True)

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
        super().__init__(
            base_url, timeout=timeout, retry=REQUESTS.but(max_retries=max_retries), http=http
        )

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["authorization"] = f"Bearer {self._api_key.reveal()}"
        request.headers["openai-beta"] = AGENTS_BETA
        if self.organization:
            request.headers["openai-organization"] = self.organization
        if self.project:
            request.headers["openai-project"] = self.project


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
