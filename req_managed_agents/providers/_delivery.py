"""Posting a session's inputs so that each lands once, whatever the network does.

A post that fails without proving it did not land (a reset connection, a 5xx, a rate limit
the HTTP layer gave up on) is neither simply retried nor simply given up on. What happens
next depends on what the runtime offers, and is the one thing a runtime tells
:class:`Delivery` (its :class:`Wire`):

* a runtime that takes an ``Idempotency-Key`` (OpenAI) takes a repeat of a key as the same
  request: the input is sent again under its key;
* one that does not (Claude) keeps a history that says whether the events arrived: it is
  looked at - once first, later, so a slow server is not sent the same prompt twice - and
  only what is missing from it is sent again.

Either way every send of one input - the HTTP client's retries included - spends one
:class:`~req_managed_agents.transport._backoff.SendBudget` of :data:`INPUT_SENDS`, with a
growing pause (:data:`RESEND`) that honours ``retry-after``. A result posted before the
service registered its call is refused with a 400 that says so; that error, and no other, is
posted again after a short pause (:data:`UNREGISTERED_CALL`).

Stopping is ordered after the inputs in flight: an interrupt (a cancel) asked for while an
input is on its way is sent as soon as it lands, so it never overtakes the turn it means.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    APIError,
    BadRequestError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers._base import Aborted
from req_managed_agents.transport._backoff import RetryPolicy, SendBudget

__all__ = ["INPUT_SENDS", "RESEND", "UNREGISTERED_CALL", "Delivery", "Landed", "Wire"]

_log = get_logger(__name__)

# An input whose post failed is re-sent (or re-checked against the history) three times,
# 1 s doubling with jitter (the server's retry-after when it gives one; given up on when it
# asks for more than 60 s).
RESEND = RetryPolicy(max_retries=3, base=1.0, cap=8.0, max_retry_after=60.0)
# A result posted before the service registered its call: posted again four times, 0.1 s
# doubling to 1 s.
UNREGISTERED_CALL = RetryPolicy(max_retries=4, base=0.1, cap=1.0)
# One input goes out at most this many times in all: the HTTP client's retries, the resends
# above and the re-posts of a result that overtook its call all spend the same budget.
INPUT_SENDS = 5

Event = Mapping[str, Any]
Landed = Callable[[Sequence[Event]], dict[int, str]]
"""``landed(history)``: the position of each posted event found among the events the session
recorded, mapped to the id the session gave it."""
_AMBIGUOUS = (TransportError, ServerError, RateLimitError)


class Wire(Protocol):
    """What one runtime tells :class:`Delivery`: how to send, how to stop, and how to tell
    whether a failed post landed."""

    def send(self, events: Sequence[Event], key: str | None, budget: SendBudget) -> set[str]:
        """One post; the ids the session gave the events (empty where it names none)."""
        ...

    def stop_events(self) -> list[dict[str, Any]]:
        """The input that stops the running turn (an interrupt, a cancel)."""
        ...

    def unregistered(self, error: BadRequestError) -> bool:
        """Whether a 400 says the answered call is not (yet) known to the service."""
        ...

    def mark(self) -> str | None:
        """Where the session's history stands before a post (its newest event's id)."""
        ...

    def history_after(self, mark: str | None) -> list[dict[str, Any]]:
        """What the session recorded after ``mark``."""
        ...


class Delivery:
    """Posts one session's inputs. ``keyed``: the runtime takes idempotency keys, so a post
    is sent again under its key; otherwise its history is looked at first. ``stopped(s)``
    waits up to ``s`` seconds and says whether the conversation stopped meanwhile (a pause
    then ends at once)."""

    def __init__(
        self, wire: Wire, *, keyed: bool, stopped: Callable[[float], bool], session_id: str
    ) -> None:
        self._wire = wire
        self._keyed = keyed
        self._stopped = stopped
        self.session_id = session_id
        self._lock = threading.Lock()
        self._in_flight = 0
        self._interrupted = False
        self._interrupt_sent = False

    def post(
        self, events: Sequence[Event], landed: Landed | None = None, key: str | None = None
    ) -> set[str]:
        """Post ``events`` so that each lands once; the ids the session gave them. ``landed``
        finds them in the history (a runtime without keys); ``key`` is their idempotency key
        (a runtime with them). An input that lands after the session was interrupted is
        interrupted again, so the stop reaches the turn it starts."""
        if self._keyed and key is None:
            key = f"rma-{uuid.uuid4().hex}"  # one key for every send of this input
        with self._lock:
            self._in_flight += 1
        try:
            return self._post(events, landed, key)
        finally:  # landed or not (a failed post may have landed too)
            with self._lock:
                self._in_flight -= 1
                interrupted = self._interrupted
            if interrupted:
                self._send_stop(again=True)

    def interrupt(self) -> None:
        """Stop the session's turn, after the inputs in flight: with none, at once; with
        one on its way, as soon as it lands (its post sends the stop then), so the caller
        never waits for a slow post and the stop never overtakes it."""
        with self._lock:
            self._interrupted = True
            in_flight = self._in_flight
        if not in_flight:
            self._send_stop(again=False)

    def _send_stop(self, *, again: bool) -> None:
        with self._lock:
            if self._keyed and self._interrupt_sent and not again:
                return  # a second cancel would meet no open turn
            self._interrupt_sent = True
        key = f"rma-{uuid.uuid4().hex}" if self._keyed else None
        try:
            self._wire.send(self._wire.stop_events(), key, SendBudget(INPUT_SENDS))
        except ManagedAgentsError as exc:
            _log.warning("could not stop the turn of session %s: %s", self.session_id, exc)

    def _post(self, events: Sequence[Event], landed: Landed | None, key: str | None) -> set[str]:
        """Post once; after a failure that proves nothing, send again under the key, or -
        without one - look in the history and send only what is missing: first only look
        (the request may still be on its way), then send what a later look still misses.
        A refusal (a rate limit, an overload with ``retry-after``) proves nothing arrived,
        so what is missing goes at once after the wait."""
        budget = SendBudget(INPUT_SENDS)
        mark = None if self._keyed else self._wire.mark()
        try:
            return self._send(events, key, budget)
        except BadRequestError as refused:
            # Another worker resuming the session may have answered these calls first (with
            # the result it recorded in the shared ledger): then they are in the history -
            # perhaps before the mark, the stream reading ahead of the driving thread.
            if landed is not None:
                found = landed(self._wire.history_after(None))
                if len(found) == len(events):
                    _log.info("%s were answered already: %s", _kinds(events), refused)
                    return set(found.values())
            raise
        except _AMBIGUOUS as exc:
            failure: ManagedAgentsError = exc
        for attempt in range(RESEND.max_retries + 1):
            retry_after = failure.retry_after if isinstance(failure, APIError) else None
            if isinstance(failure, APIError) and (
                not RESEND.honours(retry_after)
                or failure.error_type in RESEND.never_retry_error_types
            ):
                raise failure
            if self._keyed and (attempt >= RESEND.max_retries or not budget.left):
                raise failure
            delay = RESEND.delay(attempt, retry_after)
            _log.info("posting %s again in %.2f s after: %s", _kinds(events), delay, failure)
            if self._stopped(delay):
                raise Aborted
            try:
                if self._keyed or landed is None:
                    return self._send(events, key, budget)
                found = landed(self._wire.history_after(mark))
                missing = [event for i, event in enumerate(events) if i not in found]
                echoes = set(found.values())
                if not missing:
                    return echoes
                # Without a send left, it is only looked for again (it may yet land).
                if (_refused(failure) or attempt > 0) and budget.left:
                    return echoes | self._send(missing, key, budget)
            except _AMBIGUOUS as exc:
                failure = exc
        raise failure

    def _send(self, events: Sequence[Event], key: str | None, budget: SendBudget) -> set[str]:
        """One post; a result the service refuses because it has not registered the call
        yet (it arrived before the call's own event was recorded) is sent again after a
        short pause - that error and no other."""
        attempt = 0
        while True:
            try:
                return self._wire.send(events, key, budget)
            except BadRequestError as exc:
                unregistered = self._wire.unregistered(exc)
                if attempt >= UNREGISTERED_CALL.max_retries or not unregistered or not budget.left:
                    raise
                _log.info("the service has not registered the call yet; posting again: %s", exc)
                if self._stopped(UNREGISTERED_CALL.delay(attempt)):
                    raise Aborted from exc
                attempt += 1


def _refused(failure: ManagedAgentsError) -> bool:
    """Whether a failed post provably did nothing: the service turned it away up front."""
    if isinstance(failure, RateLimitError):
        return True
    return (
        isinstance(failure, APIError)
        and failure.status_code in RESEND.refused_statuses
        and failure.retry_after is not None
    )


def _kinds(events: Sequence[Event]) -> list[str]:
    return sorted({str(event.get("type")) for event in events})
