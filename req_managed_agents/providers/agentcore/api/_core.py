"""What both AgentCore planes share: SigV4-signed pooled HTTP clients, AWS error parsing and
the JSON helpers.

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
from urllib.parse import quote

import requests

from req_managed_agents.errors import APIError, RateLimitError
from req_managed_agents.transport._aws import AwsSigner
from req_managed_agents.transport._backoff import RetryPolicy, parse_retry_after
from req_managed_agents.transport._http import HttpClient, api_error
from req_managed_agents.transport._json import check_fields, dumps_utf8, excerpt, loads, malformed
from req_managed_agents.transport._json import json_object as checked_json

__all__ = [
    "REQUESTS",
    "REQUEST_ID_HEADER",
    "ClientCore",
    "client_token",
    "json_bytes",
    "json_object",
    "segment",
]

# Items asked for per page of a control-plane list (the most the API allows).
LIST_PAGE_SIZE = 100
# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000
# Every request: 0.5 s doubling to 8 s with jitter, the server's retry-after up to 60 s;
# how many times is the provider's ``max_retries`` (none for the invocation stream, which
# the conversation retries itself).
REQUESTS = RetryPolicy()
_THROTTLING = frozenset({"ThrottlingException", "TooManyRequestsException"})
# The header AWS names a request in.
REQUEST_ID_HEADER = "x-amzn-RequestId"


def _parse_aws_error(response: requests.Response) -> APIError:
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = excerpt(response.content, _ERROR_BODY_EXCERPT)
    raw_type = response.headers.get("x-amzn-ErrorType") or (
        body.get("__type") if isinstance(body, dict) else None
    )
    error_type = None
    if isinstance(raw_type, str) and raw_type:
        error_type = raw_type.split(":", 1)[0].rsplit("#", 1)[-1]
    message = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("Message")
    if not isinstance(message, str) or not message:
        text = body.strip() if isinstance(body, str) else ""
        message = text or response.reason or f"HTTP {response.status_code}"
    retry_after = parse_retry_after(response.headers)
    request_id = response.headers.get(REQUEST_ID_HEADER) or response.headers.get("x-amz-request-id")
    if error_type in _THROTTLING:
        # AWS may throttle with a 400; it is still a rate limit to the caller.
        return RateLimitError(
            response.status_code,
            error_type,
            message,
            request_id,
            body=body,
            retry_after=retry_after,
        )
    return api_error(
        response.status_code, error_type, message, request_id, body=body, retry_after=retry_after
    )


def segment(value: str) -> str:
    if not value or value in (".", ".."):
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


class ClientCore:
    """The signed, pooled HTTP clients of both planes."""

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
        policy = REQUESTS.but(max_retries=max_retries)
        self._data = HttpClient(
            data_url,
            timeout=timeout,
            retry=policy,
            parse_error=_parse_aws_error,
            authenticate=signer,
            session=http,
            request_id_header=REQUEST_ID_HEADER,
        )
        # GetHarness answers by harness ARN: read once, dropped when this client changes it.
        self._harness_cache: dict[str, dict[str, Any]] = {}
        self._control = HttpClient(
            control_url,
            timeout=timeout,
            retry=policy,
            parse_error=_parse_aws_error,
            authenticate=signer,
            session=self._data.session,
            request_id_header=REQUEST_ID_HEADER,
        )

    @property
    def region(self) -> str:
        return self._signer.region

    @property
    def data_url(self) -> str:
        return self._data.base_url

    @property
    def control_url(self) -> str:
        return self._control.base_url

    def __repr__(self) -> str:
        return (
            f"AgentCoreClient(region={self.region!r}, data_url={self.data_url!r}, "
            f"control_url={self.control_url!r}, credentials=***)"
        )

    def close(self) -> None:
        """Release pooled connections."""
        self._data.close()

    # -- control plane --------------------------------------------------------------------

    def _control_json(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool = True,
        deadline: float | None = None,
        listing: str | None = None,
        wrapped: str | None = None,
        required: tuple[str, ...] = (),
        item_required: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """The JSON object a control-plane request answers, checked (see
        :func:`json_object`): ``listing`` names the member a page lists its items in (each
        with the ``item_required`` fields), ``wrapped`` the one an answer wraps its
        resource in."""
        response = self._control.request(
            method,
            path,
            idempotent=idempotent,
            data=json_bytes(body) if body is not None else None,
            params=params,
            headers={"content-type": "application/json"},
            deadline=deadline,
        )
        return json_object(
            response,
            method,
            path,
            listing=listing,
            wrapped=wrapped,
            required=required,
            item_required=item_required,
        )

    def _paged(self, path: str, member: str, *required: str) -> list[dict[str, Any]]:
        """Every item of a control-plane list, following ``nextToken`` to the last page;
        each must carry the ``required`` fields."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"maxResults": LIST_PAGE_SIZE}
        seen_tokens: set[str] = set()
        while True:
            page = self._control_json(
                "GET", path, params=params, listing=member, item_required=required
            )
            # The service leaves the member out of an empty list (ListHarnesses does).
            items.extend(page.get(member) or ())  # objects, each checked
            token = page.get("nextToken")
            if not isinstance(token, str) or not token or token in seen_tokens:
                return items
            seen_tokens.add(token)
            params = {**params, "nextToken": token}


def json_bytes(body: Mapping[str, Any]) -> bytes:
    """Serialise once: SigV4 signs exactly these bytes."""
    return dumps_utf8(body)


def json_object(
    response: requests.Response,
    method: str,
    path: str,
    *,
    listing: str | None = None,
    wrapped: str | None = None,
    required: tuple[str, ...] = (),
    item_required: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A successful answer's JSON object, checked (``transport._json.json_object``); with
    ``wrapped``, the object it wraps under that name (``{"harness": {...}}``), whose fields
    are checked and whose ``required`` ones must be there and not empty."""
    what = f"{method} {path}"
    body = checked_json(
        response,
        what,
        request_id_header=REQUEST_ID_HEADER,
        listing=listing,
        item_required=item_required,
    )
    if wrapped is None:
        return body
    try:
        inner = check_fields(body.get(wrapped), wrapped, required=required)
        empty = [field for field in required if not inner[field]]
        if empty:
            raise ValueError(f"{wrapped}.{empty[0]} is empty")
    except ValueError as exc:
        request_id = response.headers.get(REQUEST_ID_HEADER)
        raise malformed(response.status_code, what, str(exc), request_id) from None
    return inner


def client_token() -> str:
    """An idempotency token in the API's format (33+ alphanumerics and dashes)."""
    return f"rma-{uuid.uuid4().hex}"
