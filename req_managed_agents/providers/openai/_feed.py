"""A live, gap-free, duplicate-free feed of one OpenAI Agents session's events.

A background thread (:class:`~req_managed_agents.providers._feed.StreamFeed`) holds the SSE
stream open. Whenever it (re)connects it follows the order that loses nothing: attach the
stream first, then catch up - rebuild from the session's turns, items and status what
happened while no one listened (:mod:`._catch_up`) - then read the stream. Duplicates are
dropped twice over: by ``event_id`` (a replayed frame) and by the fact an event reports (a
turn that ended, an item that finished, reported live and by a catch-up around a
reconnect).

A session created with its input streams its events from its creation on (the create's
own answer, :func:`opening`): that first connection needs no catch-up. The first connect of
a session we did not just create delivers its whole past as one
:class:`~req_managed_agents.providers._feed.History`. A frame that does not parse is not
dropped silently: a catch-up follows at once, so the fact it carried is not lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import StreamError
from req_managed_agents.model._recent import RecentSet
from req_managed_agents.providers._feed import FeedClosed, History, StreamFeed, Unparseable
from req_managed_agents.providers.openai._catch_up import Tracker, catch_up
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._http import read_chunks
from req_managed_agents.transport._json import check_fields, checked_id, loads

__all__ = ["RECONNECT", "FeedClosed", "History", "OpenAIFeed", "Opened", "opening"]

_log = get_logger(__name__)

# Reconnects: 0.5 s doubling to 10 s, with jitter; give up after this many failed
# connections in a row without the session making progress, or when the server asks to wait
# longer than 300 s before reconnecting (taken at its word).
RECONNECT = RetryPolicy(max_retries=8, base=0.5, cap=10.0, max_retry_after=300.0)
# How many recent event ids are kept to drop replayed frames: memory stays flat.
SEEN_IDS_KEPT = 10_000
_HEARTBEAT_TYPES = frozenset({"ping", "heartbeat", "keepalive"})

Event = dict[str, Any]


@dataclass
class Opened:
    """A stream already open (a streaming create's answer), read up to ``pending``."""

    response: requests.Response
    decoder: SSEDecoder
    pending: list[Event] = field(default_factory=list)


def opening(response: requests.Response, idle_timeout: float) -> tuple[str, Opened]:
    """Read a streaming create's answer up to its first event, ``agent.session.created``:
    the new session's id, and the stream to go on reading. The response is closed when it
    breaks or carries no session first."""
    decoder = SSEDecoder()
    try:
        for chunk in read_chunks(response, idle_timeout):
            try:
                events = [e for e in map(_parse, decoder.feed(chunk)) if e is not None]
            except Unparseable as bad:
                raise StreamError(
                    f"the session stream opened with an unreadable frame: {bad}"
                ) from None
            if not events:
                continue
            session = events[0].get("session")
            try:
                session_id = checked_id(
                    session.get("id") if isinstance(session, Mapping) else None, "session.id"
                )
            except ValueError as exc:
                raise StreamError(
                    f"a session's stream opened with {events[0].get('type')!r} ({exc})"
                ) from None
            return session_id, Opened(response, decoder, events)
        raise StreamError("the session's stream ended before it named the session")
    except BaseException:
        response.close()
        raise


class OpenAIFeed(StreamFeed):
    """Owns the stream thread for one session. ``get()`` yields events, a
    :class:`History` (a reattached session, first item) or raises what ended the feed.

    ``idle`` says the session was created idle (no input yet): its first catch-up then
    announces nothing, where a session created with its input is caught up from its start.
    ``opened`` is the stream its creation answered with, read first.
    """

    def __init__(
        self,
        client: OpenAIClient,
        session_id: str,
        *,
        idle_timeout: float,
        deliver_history: bool,
        idle: bool,
        telemetry_metadata: Mapping[str, Any],
        max_reconnect_attempts: int | None = None,
        opened: Opened | None = None,
    ) -> None:
        super().__init__(
            session_id,
            policy=RECONNECT,
            telemetry_metadata=telemetry_metadata,
            max_reconnect_attempts=max_reconnect_attempts,
        )
        self._client = client
        self._idle_timeout = idle_timeout
        self._deliver_history = deliver_history
        self._seen = RecentSet(SEEN_IDS_KEPT)
        self._tracker = Tracker(last_status="idle" if idle else None)
        self._opened = opened

    def _connect_and_read(self) -> None:
        """One connection's life; returns when the server ends it, raises what broke it."""
        opened, self._opened = self._opened, None
        response = opened.response if opened is not None else self._open_stream()
        with self._holding(response) as first:
            if self._stopped.is_set():
                return
            if opened is not None:
                self._catch_up(opened.pending)  # the stream began with the session
            else:
                missed = catch_up(
                    self._client, self._session_id, self._tracker, self._metadata, self._stopped
                )
                if first and self._deliver_history:
                    self._queue_history([event for event in missed if self._remember(event)])
                else:
                    self._catch_up(missed)
            self.connected.set()
            decoder = opened.decoder if opened is not None else SSEDecoder()
            self._read(response, decoder, self._idle_timeout)

    def _recover(self) -> None:
        self._catch_up(
            catch_up(self._client, self._session_id, self._tracker, self._metadata, self._stopped)
        )

    def _parse(self, sse: ServerSentEvent) -> Event | None:
        return _parse(sse)

    def _open_stream(self) -> requests.Response:
        return self._client.open_event_stream(
            self._session_id,
            idle_timeout=self._idle_timeout,
            cancelled=self._stopped,
            telemetry_metadata=self._metadata,
        )

    def _catch_up(self, missed: list[Event]) -> None:
        for event in missed:
            self._deliver(event)
        self._flush()

    def _deliver(self, event: Event) -> None:
        """Add ``event`` to the next batch unless it, or the fact it reports, was
        delivered already."""
        if not self._remember(event):
            return
        if telemetry.enabled():  # the metadata is built for a subscriber only
            telemetry.emit(
                "stream.event",
                {},
                {**self._metadata, "type": event.get("type"), "id": event.get("event_id")},
            )
        self._add(event)

    def _remember(self, event: Event) -> bool:
        """Note a delivered event; ``False`` if it (or its fact) was delivered already."""
        event_id = event.get("event_id")
        if isinstance(event_id, str) and event_id and event_id in self._seen:
            return False
        if not self._tracker.note(event):
            return False
        if isinstance(event_id, str) and event_id:
            self._seen.add(event_id)
        return True


def _parse(sse: ServerSentEvent) -> Event | None:
    """The session event carried by one SSE frame, or None for heartbeats and noise.

    Raises :class:`Unparseable` when the frame's data is not a JSON object whose fields can
    be used (a ``type`` that is not a string, an id 60 MB long): an event was meant and is
    missing. A ``type: "error"`` event is the session's news, not the stream's failure: it
    is delivered like any other.
    """
    stripped = sse.data.strip()
    if sse.event in _HEARTBEAT_TYPES or not stripped or stripped == "[DONE]":
        return None
    try:
        data = check_fields(loads(sse.data, cut_deep=True), "the event")
    except ValueError as exc:
        raise Unparseable(str(exc)) from None
    if data.get("type") in _HEARTBEAT_TYPES:
        return None
    if "type" not in data and sse.event not in (None, "", "message"):
        data["type"] = sse.event
    return data
