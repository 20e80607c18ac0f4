"""A live, gap-free, duplicate-free feed of one Gemini conversation's interactions.

A conversation is a chain of interactions, each made by a streamed create whose first event
(``interaction.created``) names it; the driving thread reads that far (:func:`opening`) and
hands the open stream to this feed's thread (:meth:`GeminiFeed.follow`), which reads the
interaction to its ``interaction.completed`` and then waits for the next.

A dropped stream is resumed with ``GET .../interactions/{id}?stream=true&last_event_id=``
(the last event delivered), after the shared backoff
(:class:`~req_managed_agents.providers._feed.StreamFeed`, :data:`RECONNECT`); replayed
events are dropped by ``event_id``. An interaction that reads 404 right after its create
named it is not yet readable: it is waited on like a drop, within the same budget. A stream
that cannot resume (the service refuses the ``last_event_id``) is caught up from what the
interaction recorded (``GET``): ended, that is its end (:data:`RECORDED`); still running,
its whole stream is read again, deduplicated. After a frame that does not parse, or an
``error`` event, the interaction's steps are read back from the service when it ends, so
nothing the lost frame carried is missing from the turn.
"""

from __future__ import annotations

import queue
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import requests

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import APIError, NotFoundError, StreamError
from req_managed_agents.model._recent import RecentSet
from req_managed_agents.providers._feed import FeedClosed, History, StreamFeed, Unparseable
from req_managed_agents.providers.gemini._client import GeminiClient
from req_managed_agents.providers.gemini._events import (
    COMPLETED,
    CONTINUES,
    CREATED,
    ENDED,
    RECORDED,
    STEP_START,
)
from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._http import read_chunks
from req_managed_agents.transport._json import check_fields, checked_id, loads

__all__ = ["RECONNECT", "FeedClosed", "GeminiFeed", "History", "Opened", "opening"]

_log = get_logger(__name__)

# Reconnects (and waits on an interaction not yet readable): 0.5 s doubling to 10 s, with
# jitter; give up after this many failed connections in a row without progress, or when the
# server asks to wait longer than 300 s (taken at its word).
RECONNECT = RetryPolicy(max_retries=8, base=0.5, cap=10.0, max_retry_after=300.0)
# How many recent event ids are kept to drop replayed frames: memory stays flat.
SEEN_IDS_KEPT = 10_000
_HEARTBEAT_TYPES = frozenset({"ping", "heartbeat", "keepalive"})
# What a resume the service cannot serve (events it no longer keeps) is answered with.
_CANNOT_RESUME = frozenset({400, 404, 410})

Event = dict[str, Any]


@dataclass
class Opened:
    """A create's stream, read up to the event naming ``interaction_id`` (``pending``)."""

    interaction_id: str
    response: requests.Response
    decoder: SSEDecoder
    pending: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class _Attach:
    """Follow an interaction made elsewhere (a reattached one), from its first event."""

    interaction_id: str


_Work = Union[Opened, _Attach, None]


class _HopEnded(Exception):
    """The followed interaction delivered its end (internal)."""


def opening(response: requests.Response, idle_timeout: float) -> Opened:
    """Read a streamed create up to its first event, ``interaction.created``: the new
    interaction, and its stream to go on reading. Closes the response when it breaks or
    names no interaction first."""
    decoder = SSEDecoder()
    try:
        for chunk in read_chunks(response, idle_timeout):
            try:
                events = [e for e in map(_parse, decoder.feed(chunk)) if e is not None]
            except Unparseable as bad:
                raise StreamError(f"the interaction's stream opened unreadably: {bad}") from None
            if not events:
                continue
            first = events[0]
            interaction = first.get("interaction")
            try:
                if first.get("event_type") != CREATED or not isinstance(interaction, Mapping):
                    raise ValueError("no interaction.created")
                interaction_id = checked_id(interaction.get("id"), "interaction.id")
            except ValueError as exc:
                raise StreamError(
                    f"an interaction's stream opened with {first.get('event_type')!r} ({exc})"
                ) from None
            return Opened(interaction_id, response, decoder, events)
        raise StreamError("the interaction's stream ended before it named the interaction")
    except BaseException:
        response.close()
        raise


class GeminiFeed(StreamFeed):
    """Owns the stream thread of one conversation; ``get()`` yields the events of the
    interactions it is told to follow, in order, or raises what ended the feed."""

    def __init__(
        self,
        client: GeminiClient,
        conversation_id: str,
        *,
        idle_timeout: float,
        telemetry_metadata: Mapping[str, Any],
        max_reconnect_attempts: int | None = None,
    ) -> None:
        super().__init__(
            conversation_id,
            policy=RECONNECT,
            telemetry_metadata=telemetry_metadata,
            max_reconnect_attempts=max_reconnect_attempts,
        )
        self._client = client
        self._idle_timeout = idle_timeout
        self._work: queue.Queue[_Work] = queue.Queue()
        self._seen = RecentSet(SEEN_IDS_KEPT)
        # The interaction followed, the last event of it delivered, and whether it ended.
        self._current: str | None = None
        self._last_event_id: str | None = None
        self._ended = True
        # Whether a frame was lost: its steps are read back from the service at its end.
        self._stale = False
        self.connected.set()  # nothing to attach before the first create

    def follow(self, opened: Opened) -> None:
        """Read the interaction a create just made, from the stream it answered with."""
        self._work.put(opened)

    def attach(self, interaction_id: str) -> None:
        """Read an interaction made earlier (a reattached one) from its first event."""
        self._work.put(_Attach(interaction_id))

    def stop(self, join_timeout: float = 2.0) -> None:
        self._work.put(None)
        super().stop(join_timeout)

    # -- on the stream thread -------------------------------------------------------------

    def _connect_and_read(self) -> None:
        """Follow interactions one after the other; raises what broke a stream."""
        while not self._stopped.is_set():
            opened: Opened | None = None
            if self._ended:
                work = self._work.get()
                if work is None or self._stopped.is_set():
                    return
                self._begin(work.interaction_id)
                opened = work if isinstance(work, Opened) else None
            response = opened.response if opened is not None else self._resume()
            if response is None:
                continue  # caught up to its end
            try:
                with self._holding(response):
                    if self._stopped.is_set():
                        return
                    for event in opened.pending if opened is not None else ():
                        self._deliver(event)
                    self._read(
                        response, opened.decoder if opened else SSEDecoder(), self._idle_timeout
                    )
            except _HopEnded:
                continue
            if not self._stopped.is_set():
                raise StreamError(f"the stream of {self._current} ended before its end")

    def _begin(self, interaction_id: str) -> None:
        self._current, self._last_event_id = interaction_id, None
        self._ended, self._stale = False, False

    def _resume(self) -> requests.Response | None:
        """The followed interaction's stream, from after the last event delivered; None when
        it cannot resume and its record shows it ended (delivered as its end)."""
        interaction_id = str(self._current)
        try:
            return self._open(interaction_id, self._last_event_id)
        except APIError as refused:
            if self._last_event_id is None or refused.status_code not in _CANNOT_RESUME:
                if isinstance(refused, NotFoundError):
                    raise _not_yet(interaction_id, refused) from None
                raise
            _log.info("interaction %s cannot resume (%s); catching up", interaction_id, refused)
        if self._record(interaction_id, end=True):
            return None
        self._stale = True
        return self._open(interaction_id, None)  # its whole stream again, deduplicated

    def _open(self, interaction_id: str, last_event_id: str | None) -> requests.Response:
        return self._client.open_interaction_stream(
            interaction_id,
            last_event_id=last_event_id,
            idle_timeout=self._idle_timeout,
            cancelled=self._stopped,
            telemetry_metadata=self._metadata,
        )

    def _record(self, interaction_id: str, *, end: bool) -> bool:
        """Deliver what the interaction recorded; with ``end``, and when it has ended (or
        waits), that is its end. Whether it was."""
        try:
            interaction = self._client.get_interaction(
                interaction_id, telemetry_metadata=self._metadata
            )
        except NotFoundError as exc:
            raise _not_yet(interaction_id, exc) from None
        status = interaction.get("status")
        over = status in ENDED or status == CONTINUES
        self._add({"event_type": RECORDED, "interaction": interaction})
        if end and over:
            self._ended = True
            self._add(_end_of(interaction))
            self._flush()
        return over

    def _recover(self) -> None:
        self._stale = True

    def _parse(self, sse: ServerSentEvent) -> Event | None:
        return _parse(sse)

    def _deliver(self, event: Event) -> None:
        """Add ``event`` to the next batch unless it was delivered already; at the
        interaction's end, what it recorded first when a frame of it was lost."""
        event_id = event.get("event_id")
        keyed = isinstance(event_id, str) and bool(event_id)
        if keyed and event_id in self._seen:
            return
        if telemetry.enabled():
            meta = {**self._metadata, "type": event.get("event_type"), "id": event_id}
            telemetry.emit("stream.event", {}, meta)
        kind = event.get("event_type")
        if kind == "error":
            self._stale = True
        if kind == COMPLETED and self._stale:
            self._record(str(self._current), end=False)
        self._add(event)
        if keyed:
            self._seen.add(event_id)
            self._last_event_id = str(event_id)
        if kind == COMPLETED:
            self._ended = True
            self._flush()
            raise _HopEnded


def _not_yet(interaction_id: str, exc: APIError) -> StreamError:
    """A just-created interaction that reads 404 is not readable yet: waited on like a drop
    (within the reconnect budget: one deleted for good is given up on there)."""
    return StreamError(f"interaction {interaction_id} is not readable yet ({exc})")


def _end_of(interaction: Mapping[str, Any]) -> Event:
    """The end of an interaction that ended while no stream was attached, rebuilt."""
    shown = {
        key: interaction[key]
        for key in ("id", "status", "usage", "continuation_token")
        if interaction.get(key) is not None
    }
    return {"event_type": COMPLETED, "interaction": shown}


def _parse(sse: ServerSentEvent) -> Event | None:
    """The event one SSE frame carries, or None for heartbeats, noise and ``[DONE]``.

    Raises :class:`Unparseable` when the frame's data is not a JSON object whose fields can
    be used: an event was meant and is missing. The payload's ``event_type`` names it (the
    ``event:`` line only where it does not)."""
    stripped = sse.data.strip()
    if sse.event in _HEARTBEAT_TYPES or not stripped or stripped == "[DONE]":
        return None
    try:
        data = check_fields(loads(sse.data, cut_deep=True), "the event")
    except ValueError as exc:
        raise Unparseable(str(exc)) from None
    kind = data.get("event_type")
    if kind is None and sse.event not in (None, "", "message"):
        data["event_type"] = kind = sse.event
    if not isinstance(kind, str):
        raise Unparseable("the event names no event_type")
    step = data.get("step")
    if kind == STEP_START and not (isinstance(step, Mapping) and isinstance(step.get("type"), str)):
        # The step is lost as surely as in a frame that does not parse: made good likewise.
        raise Unparseable("the step.start carries no step with a type")
    return None if kind in _HEARTBEAT_TYPES else data
