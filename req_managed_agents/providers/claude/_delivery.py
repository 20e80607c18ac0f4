"""Posting a session's inputs so that each lands once, whatever the network does.

A post that fails without proving it did not land (a reset connection, a 5xx, a rate limit
the HTTP layer gave up on) is not simply retried and not simply given up on: the session's
history says whether the events arrived, so :class:`Delivery` looks there and re-sends only
what is missing, a few times, with a growing pause that honours ``retry-after``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from req_managed_agents.errors import (
    APIError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers._base import Aborted
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._events import CUSTOM_TOOL_RESULT
from req_managed_agents.providers.claude._feed import EventFeed
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._redact import get_logger

__all__ = ["RESEND", "Delivery", "Landed", "answered_id", "answers_landed"]

_log = get_logger(__name__)

# Events whose POST failed are re-checked against the history and the missing ones re-sent,
# three times, 1 s doubling with jitter (the server's retry-after when it gives one; given up
# on when it asks for more than 60 s).
RESEND = RetryPolicy(max_retries=3, base=1.0, cap=8.0, max_retry_after=60.0)

Event = Mapping[str, Any]
Landed = Callable[[Sequence[Event]], dict[int, str]]
"""``landed(history)``: the position of each posted event found in the history, mapped to
the id the session gave it."""


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

    def post(self, events: Sequence[Event], landed: Landed) -> set[str]:
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
        try:
            return _echo_ids(self.send(events), kinds)
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
                history = self._client.list_events(
                    self.session_id, telemetry_metadata=self._telemetry
                )
                found = landed(history)
                missing = [event for i, event in enumerate(events) if i not in found]
                echoes = set(found.values())
                if not missing:
                    return echoes
                if _refused(failure) or attempt > 0:
                    return echoes | _echo_ids(self.send(missing), kinds)
            except (TransportError, ServerError, RateLimitError) as exc:
                failure = exc
        raise failure

    def send(self, events: Sequence[Event]) -> Mapping[str, Any]:
        return self._client.send_events(
            self.session_id, list(events), telemetry_metadata=self._telemetry
        )


def answered_id(event: Event) -> str:
    """The tool use a result or a confirmation answers."""
    key = "custom_tool_use_id" if event.get("type") == CUSTOM_TOOL_RESULT else "tool_use_id"
    return str(event.get(key))


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
