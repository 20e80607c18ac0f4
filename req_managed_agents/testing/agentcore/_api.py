"""How the AgentCore emulator answers a request: SigV4 first, then the route of the listener
(data or control plane) it arrived on, and AWS's rest-json errors (for the route's errors and
injected ones alike).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from req_managed_agents.testing.agentcore._wire import _ERROR_NAMES, _AwsError
from req_managed_agents.testing.server import Router

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    from req_managed_agents.testing.agentcore._sigv4 import _SigV4Verifier
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route


class AgentCoreAPI:
    """The :class:`~req_managed_agents.testing.server.Service` of the AgentCore emulator: the
    ``routes`` of each listener, behind the signature check of ``sigv4``; a request rejected
    for its signature is recorded in the state."""

    def __init__(
        self,
        state: AgentCoreState,
        sigv4: _SigV4Verifier,
        routes: Mapping[str, Sequence[Route]],
    ) -> None:
        self._state = state
        self._sigv4 = sigv4
        self._routers = {listener: Router(table) for listener, table in routes.items()}

    def handle(self, exchange: Exchange) -> None:
        """Answer a signed request with its route's JSON, or with an AWS error."""
        request = exchange.request
        try:
            self._check_signature(request)
            route, args = self._route(request)
            answer = route(exchange, *args)
        except _AwsError as error:
            self._respond_error(exchange, error)
            return
        if answer is not None:
            status, payload = answer
            exchange.respond_json(status, payload, {"x-amzn-RequestId": str(uuid.uuid4())})

    def answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        """Answer an injected error as AWS does, with the name its status implies."""
        status = fault.status
        name = (
            fault.error_type
            or _ERROR_NAMES.get(status)
            or ("InternalServerException" if status >= 500 else "ValidationException")
        )
        headers = {} if fault.retry_after is None else {"Retry-After": fault.retry_after}
        self._respond_error(exchange, _AwsError(status, name, fault.message), headers)

    def check_fault(self, fault: RequestFault) -> None:
        """AWS names an error by its exception alone: give ``error_type``, not ``code``."""
        if fault.code is not None:
            raise ValueError("AgentCore errors have no code; name the exception (error_type)")

    def _respond_error(
        self, exchange: Exchange, error: _AwsError, headers: Mapping[str, str] | None = None
    ) -> None:
        aws_headers = {"x-amzn-RequestId": str(uuid.uuid4()), "x-amzn-ErrorType": error.name}
        exchange.respond_json(error.status, error.body(), {**(headers or {}), **aws_headers})

    def _route(self, request: RecordedRequest) -> tuple[Callable[..., Any], tuple[str, ...]]:
        found = self._routers[request.listener].match(request.method, request.path)
        if found is None:
            raise _AwsError(
                404,
                "UnknownOperationException",
                f"No operation for {request.method} {request.path}",
            )
        route, groups = found
        return route, tuple(unquote(group) for group in groups)

    def _check_signature(self, request: RecordedRequest) -> None:
        """Verify a request's signature; a rejected one is recorded in signature_failures."""
        try:
            self._sigv4.verify(request)
        except _AwsError as error:
            with self._state.condition:
                self._state.signature_failures.append((request.method, request.path, error.message))
            raise
