"""How the Claude emulator answers a request: authentication, the beta headers, routing and
the API's error object (for the route's errors and injected ones alike).

Clients must send what the real API requires: ``x-api-key: <key>`` (or ``authorization:
Bearer <key>``; on the Bedrock flavor a SigV4 signature for ``bedrock`` or the key as a
Bedrock API key bearer), an ``anthropic-version`` header and ``anthropic-beta:
managed-agents-2026-04-01``, except on the Files API, which is generally available, and on
memory stores, which take their own beta ``agent-memory-2026-07-22`` too. A route returns the
JSON it answers with (200), or answers the exchange itself (downloads, streams). The
credentials of self-hosted environments (their keys, their work items' sessions tokens) are
checked by the ``credentials`` given (``_work_auth``), which decide for every request then.
A ``Content-Type`` naming a charset other than UTF-8, ISO-8859-1 or US-ASCII is a 400
``unsupported_charset``, as the SDK's typed error for it describes.
"""

from __future__ import annotations

import hmac
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._wire import _AwsError
from req_managed_agents.testing.claude._errors import check_code, error_details
from req_managed_agents.testing.claude._wire import (
    BETA,
    MEMORY_BETA,
    _APIError,
    _betas,
    _coded,
    _invalid,
    _is_files_path,
    _is_memory_path,
)
from req_managed_agents.testing.server import RoutedService, new_id

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.testing.agentcore._sigv4 import _SigV4Verifier
    from req_managed_agents.testing.claude._work_auth import WorkCredentials
    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route

# The charsets the API reads a body in; a Content-Type naming another is refused.
_CHARSETS = frozenset({"utf-8", "iso-8859-1", "us-ascii"})
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)


class ClaudeAPI(RoutedService[_APIError]):
    """The :class:`~req_managed_agents.testing.server.Service` of the Claude emulator: the
    ``routes`` of its resources, behind the ``api_key``."""

    def __init__(
        self,
        api_key: str,
        routes: Sequence[Route],
        *,
        sigv4: _SigV4Verifier | None = None,
        credentials: WorkCredentials | None = None,
    ) -> None:
        super().__init__(_APIError, routes)
        self._api_key = api_key
        self._sigv4 = sigv4  # Claude on Bedrock: SigV4 for "bedrock", or the key as a bearer
        self._credentials = credentials

    def check_fault(self, fault: RequestFault) -> None:
        """Refuse a code the ``anthropic`` SDK does not type, or with another status."""
        if fault.code is not None:
            check_code(fault.code, fault.status)

    def unknown_route(self, request: RecordedRequest) -> _APIError:
        return _APIError(404, f"no route for {request.method} {request.path}")

    def answer_headers(self) -> dict[str, str]:
        return {"request-id": new_id("req")}

    def answer_error(
        self, exchange: Exchange, error: _APIError, headers: Mapping[str, str]
    ) -> None:
        """The error object (``type``, ``message``, ``details`` when it names a cause) in
        ``{"type": "error", "error": ..., "request_id": ...}``, the id in ``request-id`` too."""
        error_object: dict[str, Any] = {"type": error.error_type, "message": error.message}
        if error.details is not None:
            error_object["details"] = error.details
        request_id = new_id("req")
        body = {"type": "error", "error": error_object, "request_id": request_id}
        exchange.respond_json(error.status, body, {**headers, "request-id": request_id})

    def fault_error(self, fault: RequestFault) -> _APIError:
        """The fault's status and type (or the type its status implies), and its code's
        ``details``."""
        details = None if fault.code is None else error_details(fault.code)
        return _APIError(fault.status, fault.message, fault.error_type, details=details)

    def check(self, request: RecordedRequest) -> None:
        """The credentials, ``anthropic-version``, the charset and the beta a path needs."""
        key = request.headers.get("x-api-key")
        authorization = request.headers.get("authorization", "")
        if self._sigv4 is not None:
            if authorization.startswith("Bearer "):
                if not hmac.compare_digest(authorization[7:].encode(), self._api_key.encode()):
                    raise _APIError(401, "invalid Bedrock API key")
            else:
                try:
                    self._sigv4.verify(request)
                except _AwsError as error:
                    raise _APIError(403, f"{error.name}: {error.message}") from None
        else:
            if key is None and authorization.startswith("Bearer "):
                key = authorization[len("Bearer ") :]
            if self._credentials is not None:
                self._credentials.authorize(request, key, is_api_key=key == self._api_key)
            elif key != self._api_key:
                raise _APIError(401, "invalid x-api-key")
        if "anthropic-version" not in request.headers:
            raise _invalid("anthropic-version: header is required")
        charset = _CHARSET.search(request.headers.get("content-type", ""))
        if charset is not None and charset.group(1).lower() not in _CHARSETS:
            message = f"the charset {charset.group(1)!r} is not supported; send UTF-8"
            raise _coded("unsupported_charset", message)
        betas = _betas(request)
        if _is_memory_path(request.path):
            if not betas & {BETA, MEMORY_BETA}:
                raise _APIError(404, f"Not found (memory stores need the beta {MEMORY_BETA})")
        elif BETA not in betas and not _is_files_path(request.path):
            raise _APIError(404, f"Not found (this API needs the anthropic-beta header {BETA})")
