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
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._wire import BETA, BETA_HEADER, APIError, new_id
from req_managed_agents.testing.server import Router

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route


class OpenAIAPI:
    """The :class:`~req_managed_agents.testing.server.Service` of the OpenAI emulator: the
    ``routes`` of its resources, behind the ``api_key``."""

    def __init__(self, api_key: str, routes: Sequence[Route]) -> None:
        self._api_key = api_key
        self._router = Router(routes)

    def handle(self, exchange: Exchange) -> None:
        """Answer a request with its route's JSON, or with the API's error."""
        request = exchange.request
        try:
            self._check_headers(request)
            route, ids = self._route(request)
            payload = route(exchange, *ids)
        except APIError as error:
            self._respond_error(exchange, error)
            return
        if payload is not None:
            exchange.respond_json(200, payload, {"x-request-id": new_id("req")})

    def answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        """Answer an injected error with the API's error object."""
        error = APIError(fault.status, fault.message, error_type=fault.error_type, code=fault.code)
        headers = {} if fault.retry_after is None else {"retry-after": fault.retry_after}
        self._respond_error(exchange, error, headers)

    def check_fault(self, fault: RequestFault) -> None:
        """Any code goes: the API's codes are open strings (``error.code``)."""
        if fault.code == "":
            raise ValueError("an error code must not be empty")

    @staticmethod
    def _respond_error(
        exchange: Exchange, error: APIError, headers: Mapping[str, str] | None = None
    ) -> None:
        headers = {**(headers or {}), "x-request-id": new_id("req")}
        exchange.respond_json(error.status, error.body(), headers)

    def _check_headers(self, request: RecordedRequest) -> None:
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

    def _route(self, request: RecordedRequest) -> tuple[Callable[..., Any], tuple[str, ...]]:
        found = self._router.match(request.method, request.path)
        if found is None:
            raise APIError(404, f"Invalid URL ({request.method} {request.path})")
        return found
