"""The loopback server: an API served on 127.0.0.1, every request recorded, faults applied.

It listens on a free port per *listener* (a service split across hosts, as AWS serves a data
and a control plane, listens on more than one; every request records the listener it
arrived on) and serves each connection on a thread of the emulator's
:class:`~req_managed_agents.testing.server.Lifecycle`. A request is recorded, meets the fault
rules that match it (a reset before or after acting, an injected error, a hook) and is
otherwise handed to the :class:`Service`, the provider's API.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Protocol

from req_managed_agents.testing.server._exchange import Exchange
from req_managed_agents.testing.server._faults import FaultRules, Replacement, RequestFault
from req_managed_agents.testing.server._http import Listener, read_request, reset
from req_managed_agents.testing.server._streams import Streams

if TYPE_CHECKING:
    from collections.abc import Sequence

    from req_managed_agents.testing.server._http import RequestHandler
    from req_managed_agents.testing.server._lifecycle import Lifecycle
    from req_managed_agents.testing.server._records import RecordedRequest

logger = logging.getLogger(__name__)

# How often serve_forever checks for shutdown; closing waits up to this long for it.
_ACCEPT_POLL_INTERVAL = 0.05


class Service(Protocol):
    """A provider's API as the server calls it: its answers, and its error format for the
    injected errors."""

    def handle(self, exchange: Exchange) -> None:
        """Answer a request."""

    def answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        """Answer a request with an injected HTTP error, in the API's error format."""

    def check_fault(self, fault: RequestFault) -> None:
        """Refuse (``ValueError``) an error the API could not answer with, as it is
        injected: a ``code`` it does not know, or with a status it never gives it."""


def _answer(exchange: Exchange, replacement: Replacement) -> None:
    """Send the test's body in place of the API's answer."""
    headers = {"Content-Type": replacement.content_type} if replacement.content_type else {}
    exchange.respond(replacement.status, replacement.body, headers)


class LoopbackServer:
    """Serves ``service`` over real HTTP on 127.0.0.1 from construction on.

    ``listeners`` name the ports to listen on (``urls`` has the base URL of each;
    ``base_url`` is the first one's). ``faults`` are the rules requests and streams meet,
    ``streams`` the record of every streaming response.
    """

    def __init__(
        self, lifecycle: Lifecycle, service: Service, listeners: Sequence[str] = ("",)
    ) -> None:
        self.lifecycle = lifecycle
        self.faults = FaultRules(lifecycle.condition)
        self.streams = Streams(lifecycle, self.faults)
        self._service = service
        self._requests: list[RecordedRequest] = []
        self._listeners = [Listener(name, self._serve, lifecycle) for name in listeners]
        self.urls = {
            listener.listener: f"http://127.0.0.1:{listener.server_port}"
            for listener in self._listeners
        }
        self.base_url = self.urls[listeners[0]]
        self._accept_threads: list[threading.Thread] = []
        for listener in self._listeners:
            thread = threading.Thread(
                target=listener.serve_forever,
                kwargs={"poll_interval": _ACCEPT_POLL_INTERVAL},
                name=f"{lifecycle.name}-accept {listener.listener}".rstrip(),
                daemon=True,
            )
            self._accept_threads.append(thread)
            thread.start()

    def check_fault(self, fault: RequestFault) -> None:
        """Refuse (``ValueError``) a fault the service could not answer with."""
        self._service.check_fault(fault)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a snapshot)."""
        with self.lifecycle.condition:
            return list(self._requests)

    def close(self) -> None:
        """Stop serving, cut every open connection and join the threads (bounded wait).

        Safe to call more than once and from any thread.
        """
        if not self.lifecycle.stop():
            return
        for listener in self._listeners:
            listener.shutdown()
            listener.server_close()
        self.lifecycle.end_threads(first=self._accept_threads)

    def _serve(self, handler: RequestHandler) -> None:
        request = read_request(handler)
        condition = self.lifecycle.condition
        with condition:
            self._requests.append(request)
            condition.notify_all()
            actions = self.faults.take_request_actions(request)
        if not actions.acting:
            reset(handler)
            return
        if actions.hook is not None:
            actions.hook()
        replacement = actions.replacement
        exchange = Exchange(
            self.streams,
            handler,
            request,
            swallowed=actions.swallowed,
            replaced=replacement is not None,
        )
        try:
            if actions.fault is not None:
                self._service.answer_fault(exchange, actions.fault)
            elif replacement is None or replacement.after_acting:
                self._service.handle(exchange)
        except OSError:
            if exchange.stream is not None:  # over before its socket closes
                exchange.stream.abort("client_closed")
            raise  # the connection failed; the server logs and closes it
        except Exception as error:
            logger.exception("emulator failed on %s %s", request.method, request.path)
            if exchange.stream is not None:
                exchange.stream.abort("emulator_error")
            elif not exchange.responded and replacement is None:
                fault = RequestFault(500, message=f"emulator bug: {error!r}")
                self._service.answer_fault(exchange, fault)
        finally:
            exchange.release()
        if replacement is not None and not exchange.swallowed:
            _answer(Exchange(self.streams, handler, request), replacement)
        if exchange.swallowed:
            reset(handler)
