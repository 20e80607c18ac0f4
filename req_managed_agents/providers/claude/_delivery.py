"""Posting a session's inputs so that each lands once, whatever the network does.

A post that fails without proving it did not land (a reset connection, a 5xx, a rate limit
the HTTP layer gave up on) is not simply retried and not simply given up on: the session's
history says whether the events arrived, so :class:`Delivery` looks there and re-sends only
what is missing, a few times, with a growing pause that honours ``retry-after`` - every send
of one input, the HTTP layer's retries included, at most :data:`INPUT_SENDS` times (one
:class:`SendBudget` per input).
"""

from __future__ import annotations

import threading
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
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._events import (
    CUSTOM_TOOL_RESULT,
    ELICITATION_RESPONSE,
    interrupt,
)
from req_managed_agents.providers.claude._feed import EventFeed
from req_managed_agents.transport._backoff import RetryPolicy, SendBudget
from req_managed_agents.transport._redact import get_logger

__all__ = [
    "INPUT_SENDS",
    "RESEND",
    "UNREGISTERED_CALL",
    "Delivery",
    "Landed",
    "answered_id",
    "answers_landed",
]

_log = get_logger(__name__)

# Events whose POST failed are re-checked against the history and the missing ones re-sent,
# three times, 1 s doubling with jitter (the server's retry-after when it gives one; given up
# on when it asks for more than 60 s).
RESEND = RetryPolicy(max_retries=3, base=1.0, cap=8.0, max_retry_after=60.0)
# A result posted before the service registered its call is refused with a 400; it is posted
# again four times, 0.1 s doubling to 1 s.
UNREGISTERED_CALL = RetryPolicy(max_retries=4, base=0.1, cap=1.0)
# One input goes out at most this many times in all: the HTTP client's retries, the resends
# above and the re-posts of a result that overtook its call all spend the same budget.
INPUT_SENDS = 5
_UNREGISTERED = "does not match any agent.tool_use event"

Event = Mapping[str, Any]
Landed = Callable[[Sequence[Event]], dict[int, str]]
"""``landed(history)``: the position of each posted event found among the events the session
recorded since the post began, mapped to the id the session gave it."""


class Delivery:
    """Posts one session's events; a re-check waits on the session's feed, so stopping the
    feed (a cancel, a close) ends it at once."""

    def __init__(
        self,
        client: ClaudeClient,
        session_id: str,
        feed: EventFeed,
        telemetry_metadata: Mapping[str, Any],
        aborted: Callable[[], bool],
    ) -> None:
        self._client = client
        self.session_id = session_id
        self._feed = feed
        self._telemetry = telemetry_metadata
        self._aborted = aborted
        self._lock = threading.Lock()
        self._in_flight = 0
        self._interrupted = False

    def post(self, events: Sequence[Event], landed: Landed) -> set[str]:
        """Post ``events`` so that each lands once (see :meth:`_post`); an input that lands
        after the session was interrupted is interrupted again, so the stop reaches the turn
        it starts."""
        with self._lock:
            self._in_flight += 1
        try:
            return self._post(events, landed)
        finally:  # landed or not (a failed post may have landed too)
            with self._lock:
                self._in_flight -= 1
                interrupted = self._interrupted
            if interrupted:
                self._send_interrupt()

    def interrupt(self) -> None:
        """Stop the session's turn, after the inputs in flight: with none, at once; with
        one on its way, as soon as it lands (its post sends the interrupt then), so the
        caller never waits for a slow post and the interrupt never overtakes it."""
        with self._lock:
            self._interrupted = True
            in_flight = self._in_flight
        if not in_flight:
            self._send_interrupt()

    def _send_interrupt(self) -> None:
        try:
            self._client.send_events(
                self.session_id, [interrupt()], telemetry_metadata=self._telemetry
            )
        except ManagedAgentsError as exc:
            _log.warning("could not interrupt session %s: %s", self.session_id, exc)

    def _post(self, events: Sequence[Event], landed: Landed) -> set[str]:
        """Post ``events`` once; after a failure, re-send only those the history does not
        show (``landed`` maps the position of each event found there to the id the session
        gave it). Returns the ids of the events as the session recorded them.

        A refusal (a rate limit, an overload with ``retry-after``) proves nothing arrived, so
        what is missing goes again after the wait. Any other failure may mean the request is
        still on its way (a read timeout, a proxy's 5xx): the history is looked at once more,
        later, before anything missing from it is sent again, so a slow server is not sent the
        same prompt twice.
        """
        kinds = {str(event["type"]) for event in events}
        mark = self._feed.newest_id()  # what the session held before this post
        budget = SendBudget(INPUT_SENDS)
        try:
            return _echo_ids(self.send(events, budget), kinds)
        except BadRequestError as refused:
            # Another worker resuming the session may have answered these calls first (with
            # the result it recorded in the shared ledger): then they are in the history -
            # perhaps before the mark, the stream reading ahead of the driving thread.
            found = landed(self._feed.history_after(None))
            if len(found) == len(events):
                _log.info("%s were answered already: %s", sorted(kinds), refused)
                return set(found.values())
            raise
        except (TransportError, ServerError, RateLimitError) as exc:
            failure: ManagedAgentsError = exc
        # One more look than re-sends: an ambiguous failure is first only looked up.
        for attempt in range(RESEND.max_retries + 1):
            retry_after = failure.retry_after if isinstance(failure, APIError) else None
            if isinstance(failure, APIError) and (
                not RESEND.honours(retry_after)
                or failure.error_type in RESEND.never_retry_error_types
            ):
                raise failure
            delay = RESEND.delay(attempt, retry_after)
            _log.info("re-checking %s in %.2f s after: %s", sorted(kinds), delay, failure)
            if self._feed.wait_stopped(delay) or self._aborted():
                raise Aborted
            try:
                found = landed(self._feed.history_after(mark))
                missing = [event for i, event in enumerate(events) if i not in found]
                echoes = set(found.values())
                if not missing:
                    return echoes
                # Without a send left, it is only looked for again (it may yet land).
                if (_refused(failure) or attempt > 0) and budget.left:
                    return echoes | _echo_ids(self.send(missing, budget), kinds)
            except (TransportError, ServerError, RateLimitError) as exc:
                failure = exc
        raise failure

    def send(self, events: Sequence[Event], budget: SendBudget) -> Mapping[str, Any]:
        """One post; a result the service refuses because it has not registered the call
        yet (it arrived before the call's own event was recorded, as on subagent threads) is
        sent again after a short pause - that error and no other. Every send spends one of
        ``budget``'s."""
        attempt = 0
        while True:
            try:
                return self._client.send_events(
                    self.session_id,
                    list(events),
                    telemetry_metadata=self._telemetry,
                    budget=budget,
                )
            except BadRequestError as exc:
                if (
                    attempt >= UNREGISTERED_CALL.max_retries
                    or not _unregistered_call(exc)
                    or not budget.left
                ):
                    raise
                _log.info("the service has not registered the call yet; posting again: %s", exc)
                if self._feed.wait_stopped(UNREGISTERED_CALL.delay(attempt)) or self._aborted():
                    raise Aborted from exc
                attempt += 1


def answered_id(event: Event) -> str:
    """The tool use a result or a confirmation answers (the elicitation, for an answer to
    one)."""
    kind = event.get("type")
    if kind == CUSTOM_TOOL_RESULT:
        return str(event.get("custom_tool_use_id"))
    if kind == ELICITATION_RESPONSE:
        return str(event.get("mcp_elicitation_id"))
    return str(event.get("tool_use_id"))


def answers_landed(events: Sequence[Event]) -> Landed:
    """Which of the posted results and confirmations the history shows (by the tool use
    each answers), for :meth:`Delivery.post`."""
    positions = {(str(e["type"]), answered_id(e)): i for i, e in enumerate(events)}

    def landed(history: Sequence[Event]) -> dict[int, str]:
        found = {}
        for event in history:
            position = positions.get((str(event.get("type")), answered_id(event)))
            if position is not None:
                found[position] = str(event.get("id"))
        return found

    return landed


def _refused(failure: ManagedAgentsError) -> bool:
    """Whether a failed post provably did nothing: the service turned it away up front."""
    if isinstance(failure, RateLimitError):
        return True
    return (
        isinstance(failure, APIError)
        and failure.status_code in RESEND.refused_statuses
        and failure.retry_after is not None
    )


def _echo_ids(posted: Mapping[str, Any], kinds: set[str]) -> set[str]:
    """The ids the session gave the events we posted (empty if it named none, and then
    nothing waits for them)."""
    data = posted.get("data")
    if not isinstance(data, list):
        return set()
    return {
        str(event["id"])
        for event in data
        if isinstance(event, Mapping)
        and event.get("id")
        and event.get("type", next(iter(kinds))) in kinds
    }


def _unregistered_call(error: BadRequestError) -> bool:
    """Whether a 400 says the answered call is not (yet) known to the service."""
    return _UNREGISTERED in (error.message or "").lower()
