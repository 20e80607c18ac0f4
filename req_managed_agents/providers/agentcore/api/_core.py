"""What both AgentCore planes share: the client core of
:mod:`~req_managed_agents.providers._api` with AWS's errors (a throttle is a rate limit,
whatever its status) and ``nextToken`` pages, over one pool for both planes, and the JSON
bodies SigV4 signs.

Both planes are signed with SigV4 under the signing name ``bedrock-agentcore``. Retries: GET
and DELETE as usual; ``CreateHarness`` and ``StopRuntimeSession`` carry a client token, which
makes a repeat harmless, so they are retried like idempotent calls; the invoke and command
calls are not retried here at all (a command may have side effects, and an invocation's retry
policy lives with the conversation that knows whether the turn completed).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents.providers._api import ApiCore, ApiDialect, Json, segment
from req_managed_agents.transport._aws import AwsSigner
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._json import dumps_utf8

__all__ = [
    "REQUESTS",
    "REQUEST_ID_HEADER",
    "ClientCore",
    "client_token",
    "json_bytes",
    "segment",
]

# Items asked for per page of a control-plane list (the most the API allows).
LIST_PAGE_SIZE = 100
# Every request: 0.5 s doubling to 8 s with jitter, the server's retry-after up to 60 s;
# how many times is the provider's ``max_retries`` (none for the invocation stream, which
# the conversation retries itself).
REQUESTS = RetryPolicy()
# The header AWS names a request in.
REQUEST_ID_HEADER = "x-amzn-RequestId"


def _error_facts(body: Json, headers: Mapping[str, str]) -> tuple[object, object, object]:
    """The type in ``x-amzn-ErrorType`` or ``__type`` (``aws.protocols#ValidationException:
    more`` names ``ValidationException``), the message in ``message`` or ``Message``."""
    raw = headers.get("x-amzn-ErrorType") or body.get("__type")
    error_type = raw.split(":", 1)[0].rsplit("#", 1)[-1] if isinstance(raw, str) and raw else None
    request_id = headers.get(REQUEST_ID_HEADER) or headers.get("x-amz-request-id")
    return error_type, body.get("message") or body.get("Message"), request_id


def _next_page(page: Json, items: list[Json]) -> dict[str, Any] | None:
    """``nextToken`` to the last page."""
    token = page.get("nextToken")
    return {"nextToken": token} if isinstance(token, str) and token else None


class ClientCore(ApiCore):
    """The signed, pooled HTTP clients of both planes (``_http`` the control plane's)."""

    # A list's member names its items; the service leaves it out of an empty list.
    _dialect = ApiDialect(
        _error_facts,
        _next_page,
        REQUEST_ID_HEADER,
        page_size=("maxResults", LIST_PAGE_SIZE),
        throttling=frozenset({"ThrottlingException", "TooManyRequestsException"}),
        omits_empty_lists=True,
    )

    def __init__(
        self,
        signer: AwsSigner,
        *,
        data_url: str,
        control_url: str,
        timeout: float,
        idle_timeout: float,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self._signer = signer
        super().__init__(
            control_url, timeout=timeout, retry=REQUESTS.but(max_retries=max_retries), http=http
        )
        self._data = self._plane(data_url, timeout, self._http.retry, self._http.session)
        # GetHarness answers by harness ARN: read once, dropped when this client changes it.
        self._harness_cache: dict[str, dict[str, Any]] = {}

    @property
    def region(self) -> str:
        return self._signer.region

    @property
    def data_url(self) -> str:
        return self._data.base_url

    @property
    def control_url(self) -> str:
        return self._http.base_url

    def __repr__(self) -> str:
        return (
            f"AgentCoreClient(region={self.region!r}, data_url={self.data_url!r}, "
            f"control_url={self.control_url!r}, credentials=***)"
        )

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        """Every call sends JSON (:func:`json_bytes`); SigV4 signs it with its type."""
        request.headers["content-type"] = "application/json"
        self._signer(request)


def json_bytes(body: Mapping[str, Any]) -> bytes:
    """Serialise once: SigV4 signs exactly these bytes."""
    return dumps_utf8(body)


def client_token() -> str:
    """An idempotency token in the API's format (33+ alphanumerics and dashes)."""
    return f"rma-{uuid.uuid4().hex}"
