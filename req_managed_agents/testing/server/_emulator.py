"""What both emulators offer a test alike, whatever API they serve.

Every request recorded; waiting for a condition; the streaming responses, open or over; the
request faults (an HTTP error, a reset connection, a hook called first) and how many of
their shots are left; closing, which is idempotent, ends open streams and joins every thread
the emulator started.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from req_managed_agents.testing.server._faults import Replacement, RequestFault, RequestRule

if TYPE_CHECKING:
    from typing import Callable

    from req_managed_agents.testing.server._faults import _RequestFilter
    from req_managed_agents.testing.server._records import RecordedRequest, StreamConnection
    from req_managed_agents.testing.server._server import LoopbackServer

_Emulator = TypeVar("_Emulator", bound="LoopbackEmulator")


class LoopbackEmulator:
    """Base of the emulators: the test-facing side of the :class:`LoopbackServer` that
    serves the emulator's API, whose ``base_url`` it shows."""

    def __init__(self, server: LoopbackServer) -> None:
        self._server = server
        self.base_url = server.base_url

    def __repr__(self) -> str:
        state = " closed" if self._server.lifecycle.stopping else ""
        return f"<{type(self).__name__} {self.base_url}{state}>"

    def __enter__(self: _Emulator) -> _Emulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- observation ---------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a snapshot)."""
        return self._server.requests

    def wait_until(self, predicate: Callable[[], object], timeout: float = 5.0) -> bool:
        """Wait until ``predicate()`` is true; False if ``timeout`` seconds pass first.

        Rechecked on every change inside the emulator and at least every 50 ms. The predicate
        runs without the emulator's lock held, so it may call any method of the emulator.
        """
        return self._server.lifecycle.wait_until(predicate, timeout)

    def stream_connections(self, scope: str | None = None) -> list[StreamConnection]:
        """Snapshots of the streaming responses of one scope (a session id), or of all."""
        return self._server.streams.connections(scope)

    def open_stream_count(self, scope: str | None = None) -> int:
        """How many streaming responses of that scope (or of all) are still open."""
        return sum(c.closed_at is None for c in self._server.streams.connections(scope))

    # --- faults --------------------------------------------------------------------------

    def fail_requests(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        times: int = 1,
        retry_after: float | str | None = None,
        error_type: str | None = None,
        where: _RequestFilter | None = None,
        message: str = "injected failure",
        code: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with an HTTP error instead.

        ``method`` is an HTTP method or ``"*"``; ``path_regex`` must match the whole path
        (query excluded). ``where(request)``, when given, must be true as well: it tells
        apart requests to one path by their :class:`RecordedRequest` body, say; it runs with
        the emulator's lock held, so it must neither block nor call the emulator.
        ``retry_after`` adds a ``retry-after`` header; ``error_type`` overrides the error
        type the status implies; ``message`` is the error's message. ``code`` names the
        cause as the API does (Claude: ``error.details.error_code``, any code the
        ``anthropic`` SDK types, with the status it pairs it with; OpenAI: ``error.code``);
        a code the API does not know is a ``ValueError``. Rules apply in the order added.
        """
        if isinstance(retry_after, (int, float)):
            retry_after = f"{retry_after:g}"
        fault = RequestFault(status, error_type, retry_after, message, code)
        self._server.check_fault(fault)
        self._server.faults.add_failure(RequestRule(method, path_regex, where, times, fault))

    def reset_requests(
        self,
        method: str,
        path_regex: str,
        *,
        after_acting: bool,
        times: int = 1,
        where: _RequestFilter | None = None,
    ) -> None:
        """Reset the connections of the next ``times`` matching requests (see
        :meth:`fail_requests` for the matching): the client sees the connection close
        without a single byte of response.

        ``after_acting=False``: before the request is handled, so the server did nothing
        (it is still recorded in ``requests``). ``after_acting=True``: the request is handled
        in full first (state changes, logged events, assigned ids, other faults and hooks),
        then its answer is swallowed, so the client cannot tell whether it landed. A
        streaming response is attached but reset before its head goes out: its stream
        counts as opened and ends ``"reset"``, and nothing is produced for it.
        """
        rule = RequestRule(method, path_regex, where, times, after_acting)
        self._server.faults.add_reset(rule)

    def answer_requests(
        self,
        method: str,
        path_regex: str,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str | None = "application/json",
        after_acting: bool = True,
        times: int = 1,
        where: _RequestFilter | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with ``body`` instead of the API's
        answer (see :meth:`fail_requests` for the matching): a service, or a proxy, that
        answers what no client can use - an empty body, text that is not JSON, JSON of the
        wrong shape, an id megabytes long.

        ``body`` goes out as it is (a str in UTF-8), with ``status`` and ``content_type``
        (None: no content type). ``after_acting=True``: the request is handled in full first
        (state changes, logged events, assigned ids; a streaming answer is attached and
        ends ``"replaced"`` before a byte of it goes out), then ``body`` goes out in place of
        its answer. ``after_acting=False``: the server does nothing but answer ``body``. An
        injected error (:meth:`fail_requests`) meeting the same request comes first.
        """
        if not 100 <= status <= 599:
            raise ValueError(f"status must be an HTTP status from 100 to 599, got {status}")
        if isinstance(body, str):
            body = body.encode("utf-8")
        if not isinstance(body, bytes):
            raise TypeError(f"body must be bytes or a str, got {type(body).__name__}")
        replacement = Replacement(status, body, content_type or "", after_acting)
        rule = RequestRule(method, path_regex, where, times, replacement)
        self._server.faults.add_replacement(rule)

    def before_requests(
        self,
        method: str,
        path_regex: str,
        hook: Callable[[], object],
        *,
        times: int = 1,
        where: _RequestFilter | None = None,
    ) -> None:
        """Call ``hook()`` just before handling the next ``times`` matching requests (see
        :meth:`fail_requests` for the matching).

        For races that are hard to time from outside: another client creating the same
        resource between our client's lookup and its create, say. The hook runs without the
        emulator's lock held, so it may inject faults.
        """
        self._server.faults.add_hook(RequestRule(method, path_regex, where, times, hook))

    def pending_faults(self) -> int:
        """How many shots of the injected faults have not fired yet (hooks excluded), so a
        test can check that the fault it set up was met."""
        return self._server.faults.pending()

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop serving, cut every open connection and join the threads (bounded wait).

        Safe to call more than once and from any thread.
        """
        self._server.close()
