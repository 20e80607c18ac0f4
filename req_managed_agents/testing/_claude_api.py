"""The Claude Managed Agents API's wire vocabulary, shared by every part of the Claude emulator.

The beta header, the error object (and the error type each status implies), the checks that
request bodies and query strings go through, object ids and the page-size limits.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._server import query_value

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing._server import RecordedRequest

BETA = "managed-agents-2026-04-01"

# The error type each status implies when the emulator (or a fault) does not name one.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_MAX_EVENTS_PAGE = 1000
_MAX_RESOURCE_PAGE = 100
_MAX_FILES_PAGE = 1000
_DEFAULT_PAGE = 20
_MAX_SESSION_FILES = 500


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


class _APIError(Exception):
    """Raised by a route to answer with the API's error object."""

    def __init__(self, status: int, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or _ERROR_TYPES.get(status, "api_error")


def _invalid(message: str) -> _APIError:
    return _APIError(400, message)


def _not_found(kind: str, object_id: str) -> _APIError:
    return _APIError(404, f"{kind} {object_id!r} was not found")


def _json_object(request: RecordedRequest, *, optional: bool = False) -> dict[str, Any]:
    if optional and request.body is None:
        return {}
    if not isinstance(request.body, dict):
        raise _invalid("the request body must be a JSON object")
    return request.body


def _reject_unknown(body: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in body:
        if key not in allowed:
            raise _invalid(f"{key}: Extra inputs are not permitted")


def _required_name(body: Mapping[str, Any]) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("name: Field required (a non-empty string)")
    return name


def _flag(request: RecordedRequest, name: str) -> bool:
    return (query_value(request, name) or "").lower() in ("true", "1")


def _betas(request: RecordedRequest) -> set[str]:
    return {b.strip() for b in request.headers.get("anthropic-beta", "").split(",")}


def _is_files_path(path: str) -> bool:
    """The Files API is generally available: its paths need no beta header."""
    return path == "/v1/files" or path.startswith("/v1/files/")
