"""How the Gemini emulator answers a request: the API key, the revision pin, routing and
the API's error object (for the routes' errors and injected ones alike).

Every request must carry ``x-goog-api-key: <key>`` (a 401 ``authentication`` otherwise;
the key is never echoed). ``Api-Revision`` may be absent (the SDK's REST calls send none)
or ``2026-05-20``; any other value is a 400 ``invalid_request``. An unknown path or method
is a 404 ``not_found``. Every answer, errors and streams included, has an ``x-request-id``.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from req_managed_agents.testing.gemini._wire import API_REVISION, REVISION_HEADER, APIError
from req_managed_agents.testing.server import RoutedService, new_id

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route


class GeminiAPI(RoutedService[APIError]):
    """The :class:`~req_managed_agents.testing.server.Service` of the Gemini emulator: the
    ``routes`` of its resources, behind the ``api_key``."""

    def __init__(self, api_key: str, routes: Sequence[Route]) -> None:
        super().__init__(APIError, routes)
        self._api_key = api_key

    def check_fault(self, fault: RequestFault) -> None:
        """Any code goes (``error.code`` is an open string), but not an empty one."""
        if fault.code == "":
            raise ValueError("an error code must not be empty")

    def unknown_route(self, request: RecordedRequest) -> APIError:
        return APIError(404, f"No route for {request.method} {request.path}.")

    def answer_headers(self) -> dict[str, str]:
        return {"x-request-id": new_id("req")}

    def answer_error(self, exchange: Exchange, error: APIError, headers: Mapping[str, str]) -> None:
        """``{"error": {"code", "message"}}``, with an ``x-request-id``."""
        exchange.respond_json(error.status, error.body(), {**headers, **self.answer_headers()})

    def fault_error(self, fault: RequestFault) -> APIError:
        """The fault's status and code (the error type standing in for a code), or the code
        its status implies."""
        return APIError(fault.status, fault.message, fault.code or fault.error_type)

    def check(self, request: RecordedRequest) -> None:
        """The API key, then the revision pin."""
        given = request.headers.get("x-goog-api-key", "").strip()
        if not given:
            raise APIError(401, "The request is missing an API key (x-goog-api-key).")
        if not hmac.compare_digest(given.encode(), self._api_key.encode()):
            raise APIError(401, "API key not valid. Please pass a valid API key.")
        revision = request.headers.get(REVISION_HEADER)
        if revision is not None and revision != API_REVISION:
            raise APIError(
                400, f"Api-Revision {revision!r} is not supported; use '{API_REVISION}'."
            )
