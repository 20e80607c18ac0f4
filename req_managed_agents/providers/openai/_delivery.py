"""Posting a session's inputs so that each lands once, whatever the network does.

Every post carries an ``Idempotency-Key``, and the service takes a repeat of a key it has
seen as the same request: so a post whose answer was lost (a reset, a timeout, a 5xx) is
simply sent again with its key, by the HTTP layer's retries and then a few more times here,
with a growing pause that honours ``retry-after`` - all of them together at most
:data:`INPUT_SENDS` times (one :class:`SendBudget` per input). Tool results carry keys derived from
what they answer, so even another process answering the same calls with the same results
sends the same key.

A result posted before the service registered its call is refused with a 400 ``Unknown
pending tool call``; that error, and no other, is posted again after a short pause.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from req_managed_agents.errors import (
    APIError,
    BadRequestError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers._base import Aborted
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.providers.openai._events import cancel
from req_managed_agents.transport._backoff import RetryPolicy, SendBudget
from req_managed_agents.transport._redact import get_logger

__all__ = ["INPUT_SENDS", "RESEND", "UNREGISTERED_CALL", "Delivery", "stable_key"]

_log = get_logger(__name__)

# After the HTTP layer's own retries, a post is sent again (same key) three more times,
# 1 s doubling with jitter (the server's retry-after when it gives one, up to 60 s).
RESEND = RetryPolicy(max_retries=3, base=1.0, cap=8.0, max_retry_after=60.0)
# A result posted before the service registered its call: posted again four times, 0.1 s
# doubling to 1 s.
UNREGISTERED_CALL = RetryPolicy(max_retries=4, base=0.1, cap=1.0)
# One input goes out at most this many times in all: the HTTP client's retries, the resends
# above and the re-posts of a result that overtook its call all spend the same budget.
INPUT_SENDS = 5
_UNREGISTERED = "unknown pending tool call"

Event = Mapping[str, Any]


def stable_key(session_id: str, events: Sequence[Event]) -> str:
    """The same key for the same inputs to the same session, in any process."""
    body = json.dumps([session_id, list(events)], sort_keys=True, separators=(",", ":"))
    return "rma-" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:48]


class Delivery:
    """Posts one session's inputs; a pause ends at once when the conversation stops
    (``stopped`` waits up to the given seconds and says whether it did)."""

    def __init__(
        self,
        client: OpenAIClient,
        session_id: str,
        telemetry_metadata: Mapping[str, Any],
        stopped: Callable[[float], bool],
    ) -> None:
        self._client = client
        self.session_id = session_id
        self._telemetry = telemetry_metadata
        self._stopped = stopped
        self._lock = threading.Lock()
        self._in_flight = 0
        self._interrupted = False

    def post(self, events: Sequence[Event], key: str | None = None) -> None:
        """Post ``events`` under ``key`` (a fresh one when None) until they land; an input
        that lands after the session was interrupted is cancelled again, so the stop reaches
        the turn it starts."""
        with self._lock:
            self._in_flight += 1
        try:
            self._post(events, key or f"rma-{uuid.uuid4().hex}")
        finally:  # landed or not (a failed post may have landed too)
            with self._lock:
                self._in_flight -= 1
                interrupted = self._interrupted
            if interrupted:
                self._send_cancel()

    def interrupt(self) -> None:
        """Cancel the running turn, after the inputs in flight: with none, at once; with one
        on its way, as soon as it lands, so the cancel never overtakes the input it means."""
        with self._lock:
            if self._interrupted:
                return  # once: a second cancel would meet no open turn
            self._interrupted = True
            in_flight = self._in_flight
        if not in_flight:
            self._send_cancel()

    def _send_cancel(self) -> None:
        try:
            self._client.send_events(
                self.session_id,
                [cancel()],
                idempotency_key=f"rma-{uuid.uuid4().hex}",
                telemetry_metadata=self._telemetry,
            )
        except ManagedAgentsError as exc:
            _log.warning("could not cancel the turn of session %s: %s", self.session_id, exc)

    def _post(self, events: Sequence[Event], key: str) -> None:
        budget = SendBudget(INPUT_SENDS)
        failures = 0
        unregistered = 0
        while True:
            try:
                self._client.send_events(
                    self.session_id,
                    events,
                    idempotency_key=key,
                    telemetry_metadata=self._telemetry,
                    budget=budget,
                )
                return
            except BadRequestError as exc:
                if (
                    unregistered >= UNREGISTERED_CALL.max_retries
                    or not _unregistered(exc)
                    or not budget.left
                ):
                    raise
                _log.info("the service has not registered the call yet; posting again: %s", exc)
                delay = UNREGISTERED_CALL.delay(unregistered)
                unregistered += 1
            except (TransportError, ServerError, RateLimitError) as exc:
                retry_after = exc.retry_after if isinstance(exc, APIError) else None
                spent = not budget.left
                if failures >= RESEND.max_retries or not RESEND.honours(retry_after) or spent:
                    raise
                delay = RESEND.delay(failures, retry_after)
                _log.info("posting %s again in %.2f s after: %s", _kinds(events), delay, exc)
                failures += 1
            if self._stopped(delay):
                raise Aborted


def _kinds(events: Sequence[Event]) -> list[str]:
    return sorted({str(event.get("type")) for event in events})


def _unregistered(error: BadRequestError) -> bool:
    """Whether a 400 says the answered call is not (yet) known to the service."""
    return (error.message or "").lower().startswith(_UNREGISTERED)
