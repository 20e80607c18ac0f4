"""How the OpenAI emulator answers a request: authentication, the beta header, routing and
the API's error object (for the routes' errors and injected ones alike).

Every request must carry ``Authorization: Bearer <key>`` (a 401 ``invalid_api_key``
otherwise; the key is never echoed) and ``OpenAI-Beta: agents=v1`` (one of its
comma-separated values; a 400 otherwise, as OpenAI answers a beta API called without its
header, so the SDK raises ``BadRequestError``). An unknown path or method is a 404
``Invalid URL (<METHOD> <path>)``. A route returns the JSON it answers with (200), or
answers the exchange itself (202s, streams).
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from req_managed_agents.testing.openai._wire import BETA, BETA_HEADER, APIError
from req_managed_agents.testing.server import RoutedService, new_id

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route


class OpenAIAPI(RoutedService[APIError]):
    """The :class:`~req_managed_agents.testing.server.Service` of the OpenAI emulator: the
    ``routes`` of its resources, behind the ``api_key``."""

    def __init__(self, api_key: str, routes: Sequence[Route]) -> None:
        super().__init__(APIError, routes)
        self._api_key = api_key

    def check_fault(self, fault: RequestFault) -> None:
        """Any code goes: the API's codes are open strings (``error.code``)."""
        if fault.code == "":
            raise ValueError("an error code must not be empty")

    def unknown_route(self, request: RecordedRequest) -> APIError:
        return APIError(404, f"Invalid URL ({request.method} {request.path})")

    def answer_headers(self) -> dict[str, str]:
        return {"x-request-id": new_id("req")}

    def answer_error(self, exchange: Exchange, error: APIError, headers: Mapping[str, str]) -> None:
        """``{"error": {"message", "type", "param", "code"}}``, with an ``x-request-id``."""
        exchange.respond_json(error.status, error.body(), {**headers, **self.answer_headers()})

    def fault_error(self, fault: RequestFault) -> APIError:
        """The fault's status, type and code (or those its status implies)."""
        return APIError(fault.status, fault.message, error_type=fault.error_type, code=fault.code)

    def check(self, request: RecordedRequest) -> None:
        """The bearer key, then the beta header."""
        authorization = request.headers.get("authorization", "")
        if not authorization.startswith("Bearer "):
            raise APIError(
                401,
                "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.",
                code="missing_api_key",
            )
        given = authorization[len("Bearer ") :].encode()
        if not hmac.compare_digest(given, self._api_key.encode()):
            raise APIError(401, "Incorrect API key provided.")
        betas = {value.strip() for value in request.headers.get(BETA_HEADER, "").split(",")}
        if BETA not in betas:
            raise APIError(
                400,
                f"You must provide the 'OpenAI-Beta: {BETA}' header to use the Agents API.",
                param=None,
            )
