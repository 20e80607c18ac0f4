"""An API served from route tables: its checks, its routes and its error shape, nothing else.

Every emulator answers a request the same way: check what the API demands of every request
(a key, a signature, a header), find the route of its listener (method and path), let the
route answer, and answer whatever error the checks or the route raise in the API's own shape;
an injected error (``fail_requests``) goes out in that shape too. :class:`RoutedService` does
this once; an API gives only what is its own: its checks, its success headers, and its
error shape (for its own errors, an unknown route and an injected fault).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from req_managed_agents.testing.server._routes import Router

if TYPE_CHECKING:
    from collections.abc import Sequence

    from req_managed_agents.testing.server._exchange import Exchange
    from req_managed_agents.testing.server._faults import RequestFault
    from req_managed_agents.testing.server._records import RecordedRequest
    from req_managed_agents.testing.server._routes import Route

_Error = TypeVar("_Error", bound=Exception)


class RoutedService(ABC, Generic[_Error]):
    """A :class:`~req_managed_agents.testing.server.Service` made of route tables.

    ``routes`` is one table, or a table per listener (by name). A route takes the exchange
    and the ids in its path, and returns the JSON it answers with (status 200), a
    ``(status, JSON)`` pair, or None when it answered the exchange itself (a stream, a
    download). ``error`` is the class of the API's errors, which the checks and the routes
    raise and :meth:`answer_error` writes; ``retry_after_header`` names the header an
    injected error's ``retry_after`` goes in.
    """

    retry_after_header = "retry-after"

    def __init__(
        self, error: type[_Error], routes: Sequence[Route] | Mapping[str, Sequence[Route]]
    ) -> None:
        self._error = error
        tables = routes if isinstance(routes, Mapping) else {"": routes}
        self._routers = {listener: Router(table) for listener, table in tables.items()}

    def handle(self, exchange: Exchange) -> None:
        """Answer a request with its route's JSON, or with the API's error."""
        request = exchange.request
        try:
            self.check(request)
            found = self._routers[request.listener].match(request.method, request.path)
            if found is None:
                raise self.unknown_route(request)
            route, ids = found
            answer = route(exchange, *ids)
        except self._error as error:
            self.answer_error(exchange, error, {})
            return
        if answer is not None:
            status, payload = answer if isinstance(answer, tuple) else (200, answer)
            exchange.respond_json(status, payload, self.answer_headers())

    def answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        """Answer an injected error with the API's error."""
        retry = {} if fault.retry_after is None else {self.retry_after_header: fault.retry_after}
        self.answer_error(exchange, self.fault_error(fault), retry)

    def check_fault(self, fault: RequestFault) -> None:
        """Refuse (``ValueError``) an error the API could not answer with; any goes here."""

    # --- what an API gives ------------------------------------------------------------------

    def check(self, request: RecordedRequest) -> None:
        """Raise the API's error for a request it refuses before routing (its credentials,
        its required headers); nothing is checked here."""

    @abstractmethod
    def unknown_route(self, request: RecordedRequest) -> _Error:
        """The API's error for a method and path it does not serve."""

    @abstractmethod
    def answer_headers(self) -> dict[str, str]:
        """The headers of a successful JSON answer (its request id, say)."""

    @abstractmethod
    def answer_error(self, exchange: Exchange, error: _Error, headers: Mapping[str, str]) -> None:
        """Write ``error`` in the API's shape, with ``headers`` besides its own."""

    @abstractmethod
    def fault_error(self, fault: RequestFault) -> _Error:
        """The API's error for an injected fault."""
