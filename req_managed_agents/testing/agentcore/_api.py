"""How the AgentCore emulator answers a request: SigV4 first, then the route of the listener
(data or control plane) it arrived on, and AWS's rest-json errors (for the route's errors and
injected ones alike).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from req_managed_agents.testing.agentcore._wire import _ERROR_NAMES, _AwsError
from req_managed_agents.testing.server import RoutedService

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.testing.agentcore._sigv4 import _SigV4Verifier
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import Exchange, RecordedRequest, RequestFault, Route


class AgentCoreAPI(RoutedService[_AwsError]):
    """The :class:`~req_managed_agents.testing.server.Service` of the AgentCore emulator: the
    ``routes`` of each listener, behind the signature check of ``sigv4``; a request rejected
    for its signature is recorded in the state."""

    retry_after_header = "Retry-After"

    def __init__(
        self,
        state: AgentCoreState,
        sigv4: _SigV4Verifier,
        routes: Mapping[str, Sequence[Route]],
    ) -> None:
        super().__init__(_AwsError, routes)
        self._state = state
        self._sigv4 = sigv4

    def check_fault(self, fault: RequestFault) -> None:
        """AWS names an error by its exception alone: give ``error_type``, not ``code``."""
        if fault.code is not None:
            raise ValueError("AgentCore errors have no code; name the exception (error_type)")

    def unknown_route(self, request: RecordedRequest) -> _AwsError:
        message = f"No operation for {request.method} {request.path}"
        return _AwsError(404, "UnknownOperationException", message)

    def answer_headers(self) -> dict[str, str]:
        return {"x-amzn-RequestId": str(uuid.uuid4())}

    def answer_error(
        self, exchange: Exchange, error: _AwsError, headers: Mapping[str, str]
    ) -> None:
        """AWS's rest-json error: its name in ``x-amzn-ErrorType``, its body."""
        aws_headers = {**self.answer_headers(), "x-amzn-ErrorType": error.name}
        exchange.respond_json(error.status, error.body(), {**headers, **aws_headers})

    def fault_error(self, fault: RequestFault) -> _AwsError:
        """The fault's exception name, or the one its status implies."""
        status = fault.status
        name = (
            fault.error_type
            or _ERROR_NAMES.get(status)
            or ("InternalServerException" if status >= 500 else "ValidationException")
        )
        return _AwsError(status, name, fault.message)

    def check(self, request: RecordedRequest) -> None:
        """Verify a request's signature; a rejected one is recorded in signature_failures."""
        try:
            self._sigv4.verify(request)
        except _AwsError as error:
            with self._state.condition:
                self._state.signature_failures.append((request.method, request.path, error.message))
            raise
