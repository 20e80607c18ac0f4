"""A live, gap-free, duplicate-free feed of one session's events.

A background thread holds the SSE stream open. Whenever it (re)connects it follows the order
that loses nothing: attach the stream first, then page the whole event history, then read the
stream - skipping every event id already delivered. The stream never replays what happened
while no one listened, so the history fills the gap; the dedupe absorbs the overlap.

The first connect pages the history too, so every event the session logged is delivered
once and the dedupe set knows them all: an old event can never come back as new after a
later reconnect. A frame that does not parse is not dropped: the history has the event it
carried, so the feed catches up from it at once.

With ``event_deltas`` the stream also carries previews of the agent's messages as they are
written (``event_start``/``event_delta``, live only, never in the history); a server that
refuses the request for them (400) gets a stream without.

Silence longer than ``idle_timeout`` (heartbeats count as traffic) is a lost connection
too; how the feed reconnects, and when it gives up, is the shared
:class:`~req_managed_agents.providers._feed.StreamFeed`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import BadRequestError, StreamError
from req_managed_agents.model._recent import RecentSet
from req_managed_agents.providers._feed import (
    FeedClosed,
    History,
    SessionEnded,
    StreamFeed,
    Unparseable,
)
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._json import check_fields, excerpt, loads

__all__ = ["EventFeed", "FeedClosed", "History"]

_log = get_logger(__name__)

# Reconnects: 0.5 s doubling to 10 s, with jitter; give up after this many failed
# connections in a row without the session making progress, or when the server asks to wait
# longer than 300 s before reconnecting (taken at its word).
RECONNECT = RetryPolicy(max_retries=8, base=0.5, cap=10.0, max_retry_after=300.0)
# How many recent event ids are kept to drop duplicates (a replayed frame, the overlap of a
# catch-up with the stream): memory stays flat over a long session.
SEEN_IDS_KEPT = 10_000
_HEARTBEAT_TYPES = frozenset({"ping", "heartbeat"})
# Previews asked for with event_deltas, and the frame types they arrive as.
_PREVIEWED = ("agent.message",)
_PREVIEW_TYPES = frozenset({"event_start", "event_delta"})
# After these no stream will ever carry anything again: stop instead of reconnecting.
_ENDING_TYPES = frozenset({"session.deleted", "session.status_terminated"})

Event = dict[str, Any]


class EventFeed(StreamFeed):
    """Owns the stream thread for one session. ``get()`` yields events, a :class:`History`
    (resumed sessions, first item) or raises the error that ended the feed."""

    def __init__(
        self,
        client: ClaudeClient,
        session_id: str,
        *,
        idle_timeout: float,
        deliver_history: bool,
        telemetry_metadata: Mapping[str, Any],
        max_reconnect_attempts: int | None = None,
        event_deltas: bool = False,
    ) -> None:
        super().__init__(
            session_id,
            policy=RECONNECT,
            telemetry_metadata=telemetry_metadata,
            max_reconnect_attempts=max_reconnect_attempts,
        )
        self._client = client
        self._deltas = _PREVIEWED if event_deltas else ()
        self._idle_timeout = idle_timeout
        self._deliver_history = deliver_history
        # The ids of the events delivered most recently, oldest first (duplicates arrive
        # close to their first copy), and the newest of them: catch-up reads back to it.
        self._seen = RecentSet(SEEN_IDS_KEPT)
        self._newest: str | None = None

    def newest_id(self) -> str | None:
        """The id of the newest event delivered so far (safe from any thread)."""
        with self._lock:
            return self._newest

    def history_after(self, mark: str | None) -> list[Event]:
        """The session's events newer than event ``mark`` (all of them for ``None``),
        oldest first: read back from the newest, a page at a time, until ``mark``. A stop
        ends a retry's wait and the pages still to read (:class:`TransportError`)."""
        if mark is None:
            return self._client.list_events(
                self._session_id, telemetry_metadata=self._metadata, cancelled=self._stopped
            )
        newer: list[Event] = []
        for event in self._client.iter_events(
            self._session_id,
            order="desc",
            telemetry_metadata=self._metadata,
            cancelled=self._stopped,
        ):
            if event.get("id") == mark:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def _connect_and_read(self) -> None:
        """One connection's life; returns when the server ends it, raises what broke it."""
        response = self._open_stream()
        with self._holding(response) as first:
            if self._stopped.is_set():
                return
            history = self.history_after(self.newest_id())
            if first and self._deliver_history:
                for old in history:
                    self._remember(old.get("id"))
                self._queue_history(history)
            else:
                for missed in history:
                    self._deliver(missed)
                self._flush()
            self.connected.set()
            self._read(response, SSEDecoder(), self._idle_timeout)

    def _recover(self) -> None:
        for missed in self.history_after(self.newest_id()):
            self._deliver(missed)

    def _parse(self, sse: ServerSentEvent) -> Event | None:
        return _parse(sse)

    def _open_stream(self) -> requests.Response:
        try:
            return self._client.open_event_stream(
                self._session_id,
                idle_timeout=self._idle_timeout,
                cancelled=self._stopped,
                telemetry_metadata=self._metadata,
                event_deltas=self._deltas,
            )
        except BadRequestError:
            if not self._deltas:
                raise
            _log.info("the event stream refused event_deltas; reading whole messages only")
            self._deltas = ()
            return self._open_stream()

    def _deliver(self, event: Event) -> None:
        """Add ``event`` to the next batch unless already delivered."""
        kind = event.get("type")
        if kind in _PREVIEW_TYPES:
            self._batch.append(event)  # live only, without an id: nothing to dedupe or report
            return
        event_id = event.get("id")
        if not self._remember(event_id):
            return
        if telemetry.enabled():  # the metadata is built for a subscriber only
            telemetry.emit("stream.event", {}, {**self._metadata, "type": kind, "id": event_id})
        self._add(event)
        if kind in _ENDING_TYPES:
            self._flush()
            raise SessionEnded

    def _remember(self, event_id: object) -> bool:
        """Note a delivered event's id; ``False`` if it was delivered already."""
        if not isinstance(event_id, str) or not event_id:
            return True
        with self._lock:
            if not self._seen.add(event_id):
                return False
            self._newest = event_id
        return True


def _parse(sse: ServerSentEvent) -> Event | None:
    """The session event carried by one SSE frame, or None for heartbeats and noise.

    Raises :class:`Unparseable` when the frame's data is not a JSON object whose fields can
    be used (a ``type`` that is not a string, an id 60 MB long): a session event was meant
    and is missing.
    """
    if sse.event in _HEARTBEAT_TYPES or not sse.data.strip():
        return None
    try:
        data = check_fields(loads(sse.data, cut_deep=True), "the event")
    except ValueError as exc:
        raise Unparseable(str(exc)) from None
    if sse.event == "error" or data.get("type") == "error":
        error = data.get("error")
        detail = error.get("message", error) if isinstance(error, dict) else data
        raise StreamError(f"the event stream reported an error: {excerpt(str(detail))}")
    if data.get("type") in _HEARTBEAT_TYPES:
        return None
    if "type" not in data and sse.event != "message":
        data["type"] = sse.event
    return data
