"""What every Gemini API noun shares: the client core of :mod:`~req_managed_agents.providers._api`
with the Gemini API's errors, ``page_token`` cursors, ``x-goog-api-key`` and its version.

Paths are ``/{api_version}/...`` under the base URL. The version defaults to ``v1``: it is
what ``google-genai`` 3.x sends (``GOOGLE_AI_API_DEFAULT_VERSION``) and what its own tests
expect; the REST docs' samples show ``v1beta``, which ``api_version="v1beta"`` selects. The
``Api-Revision`` header pins the schema revision, as the REST docs send it (the SDK sends it
only on its Live WebSocket); ``api_revision=None`` leaves it out.

Errors are ``{"error": {"code": "<string>", "message"}}`` (the SDK's model types ``code`` as a
string); a google.rpc answer (``{"code": 404, "status": "NOT_FOUND"}``) names its ``status``.
The request id is ``x-request-id``, the only one the SDK reads.

Retries follow the :mod:`~req_managed_agents.transport._backoff` policy: reads and deletes
on connection errors, timeouts, 408/429/5xx; creates (interactions, agents, environments)
only when the server provably did not act (no connection, or a 429/503 refusal with
``retry-after``) - the API takes no idempotency key and lists no interactions, so a repeat
could make a second one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents._redact import Secret
from req_managed_agents.providers._api import ApiCore, ApiDialect, Json, id_value, segment
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = [
    "API_REVISION",
    "API_VERSION",
    "REQUESTS",
    "ClientCore",
    "Json",
    "id_value",
    "segment",
]

# Every request: 0.5 s doubling to 8 s with jitter, the server's retry-after up to 60 s;
# how many times is the provider's ``max_retries``.
REQUESTS = RetryPolicy()

# The version google-genai 3.x sends (see the module docs), and the schema revision it pins.
API_VERSION = "v1"
API_REVISION = "2026-05-20"
_PAGE_SIZE = 100


def _error_facts(body: Json, headers: Mapping[str, str]) -> tuple[object, object, object]:
    """``{"error": {"code", "message"}}``: a string ``code`` names the error; a google.rpc
    integer code does not, its ``status`` does."""
    error = body["error"] if isinstance(body.get("error"), dict) else {}
    code = error.get("code")
    kind = code if isinstance(code, str) else error.get("status")
    return kind, error.get("message"), headers.get("x-request-id")


def _next_page(page: Json, items: list[Json]) -> dict[str, Any] | None:
    token = page.get("next_page_token")
    return {"page_token": token} if isinstance(token, str) and token else None


class ClientCore(ApiCore):
    """The authenticated, pooled HTTP client under every noun of the Gemini API."""

    # Answers carry tool arguments and schemas, which may nest absurdly deep; a list leaves
    # out its empty member (proto3 JSON).
    _dialect = ApiDialect(
        _error_facts,
        _next_page,
        "x-request-id",
        page_size=("page_size", _PAGE_SIZE),
        cut_deep=True,
        omits_empty_lists=True,
    )

    def __init__(
        self,
        api_key: Secret,
        *,
        base_url: str,
        api_version: str = API_VERSION,
        api_revision: str | None = API_REVISION,
        timeout: float,
        max_retries: int,
        http: requests.Session | None = None,
    ) -> None:
        self._api_key = api_key
        self.api_version = id_value("api_version", api_version)
        self.api_revision = api_revision
        root = base_url.rstrip("/") + "/" + segment(api_version)
        super().__init__(
            root, timeout=timeout, retry=REQUESTS.but(max_retries=max_retries), http=http
        )

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["x-goog-api-key"] = self._api_key.reveal()
        if self.api_revision:
            request.headers["api-revision"] = self.api_revision
