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

A dropped connection, a server that ends the stream, or silence longer than ``idle_timeout``
(heartbeats count as traffic) all lead to a reconnect after an escalating, jittered backoff,
never shorter than the server's ``retry-after``. The reconnect budget counts consecutive
connections that made no progress: a connection made progress when it delivered a session
event not seen before, or stayed up for :data:`HEALTHY_CONNECTION_SECONDS` (heartbeats alone
do not count, so a server that pings and then drops is backed off and finally given up on,
with :class:`StreamReconnectError`). A long, healthy stream that a proxy recycles is never
given up on. Errors that reconnecting cannot fix (authentication, a deleted session) end the
feed and reach the driver.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

import requests

from req_managed_agents import telemetry
from req_managed_agents.errors import (
    APIError,
    BadRequestError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    SessionError,
    StreamError,
    StreamReconnectError,
    TransportError,
)
from req_managed_agents.model._recent import RecentSet
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._http import read_chunks, shutdown_response
from req_managed_agents.transport._json import loads
from req_managed_agents.transport._redact import get_logger

__all__ = ["EventFeed", "FeedClosed", "History"]

_log = get_logger(__name__)

# Reconnects: 0.5 s doubling to 10 s, with jitter; give up after this many failed
# connections in a row without the session making progress, or when the server asks to wait
# longer than 300 s before reconnecting (taken at its word).
RECONNECT = RetryPolicy(max_retries=8, base=0.5, cap=10.0, max_retry_after=300.0)
# A connection that stayed up this long was healthy, even if it carried only heartbeats.
HEALTHY_CONNECTION_SECONDS = 30.0
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


class FeedClosed(Exception):
    """The feed was stopped while someone waited on it (internal signal)."""


@dataclass(frozen=True)
class History:
    """The session's full history, delivered once, on the first connect of a resumed session."""

    events: list[Event]


@dataclass(frozen=True)
class _Fatal:
    """Why the feed ended; re-queued on every read so nobody waits on a dead feed."""

    error: ManagedAgentsError


# The stream thread queues the events of one read as a list: a handoff between threads per
# event would cost more than everything else done with it.
_Item = Union[list[Event], History, _Fatal, None]


class EventFeed:
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
        self._client = client
        self._deltas = _PREVIEWED if event_deltas else ()
        self._session_id = session_id
        self._idle_timeout = idle_timeout
        self._deliver_history = deliver_history
        self._max_attempts = (
            RECONNECT.max_retries if max_reconnect_attempts is None else max_reconnect_attempts
        )
        self._metadata = {**telemetry_metadata, "session_id": session_id}
        self._queue: queue.Queue[_Item] = queue.Queue()
        # Events taken off the queue and not handed out yet (the reader's side), and events
        # not queued yet (the stream thread's side).
        self._ready: deque[Event] = deque()
        self._batch: list[Event] = []
        # The ids of the events delivered most recently, oldest first (duplicates arrive
        # close to their first copy), and the newest of them: catch-up reads back to it.
        self._seen = RecentSet(SEEN_IDS_KEPT)
        self._newest: str | None = None
        self._stopped = threading.Event()
        self._fatal: ManagedAgentsError | None = None
        # Whether the current connection delivered a session event not seen before.
        self._progressed = False
        self.connected = threading.Event()
        self._lock = threading.Lock()
        self._response: requests.Response | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"rma-feed-{session_id}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, join_timeout: float = 2.0) -> None:
        """Stop the thread and close the stream; safe from any thread, idempotent."""
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            shutdown_response(response)
        self._queue.put(None)
        if threading.current_thread() is not self._thread and self._thread.is_alive():
            self._thread.join(join_timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wait_stopped(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True as soon as the feed is stopped."""
        return self._stopped.wait(seconds)

    def newest_id(self) -> str | None:
        """The id of the newest event delivered so far (safe from any thread)."""
        with self._lock:
            return self._newest

    def history_after(self, mark: str | None) -> list[Event]:
        """The session's events newer than event ``mark`` (all of them for ``None``),
        oldest first: read back from the newest, a page at a time, until ``mark``."""
        if mark is None:
            return self._client.list_events(self._session_id, telemetry_metadata=self._metadata)
        newer: list[Event] = []
        for event in self._client.iter_events(
            self._session_id, order="desc", telemetry_metadata=self._metadata
        ):
            if event.get("id") == mark:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def check(self) -> None:
        """Raise why the feed ended, if it has: a new input would never see its turn."""
        if self._stopped.is_set():
            raise FeedClosed
        if self._fatal is not None:
            raise self._fatal
        if not self._thread.is_alive():
            raise SessionError(f"the event stream of session {self._session_id} has stopped")

    def get(self, timeout: float | None = None) -> Event | History:
        """The next item; raises the feed's fatal error (every time, once it happened),
        :class:`FeedClosed` once stopped, or :class:`queue.Empty` after ``timeout``."""
        if self._stopped.is_set():
            raise FeedClosed
        if self._ready:
            return self._ready.popleft()
        item = self._queue.get(timeout=timeout)
        if item is None:
            raise FeedClosed
        if isinstance(item, _Fatal):
            self._queue.put(item)  # sticky: every later get() learns it too
            raise item.error
        if isinstance(item, list):
            self._ready.extend(item)
            return self._ready.popleft()
        return item

    # -- the stream thread ----------------------------------------------------------------

    def _fail(self, error: ManagedAgentsError) -> None:
        self._flush()
        self._fatal = error
        self._queue.put(_Fatal(error))

    def _run(self) -> None:
        try:
            self._reconnect_forever()
        except BaseException as exc:  # the thread must never die without saying why
            if not self._stopped.is_set():
                _log.exception("the event stream of %s failed", self._session_id)
                self._fail(StreamError(f"the event stream failed: {exc!r}"))

    def _reconnect_forever(self) -> None:
        failures = 0
        while not self._stopped.is_set():
            opened = time.monotonic()
            retry_after: float | None = None
            try:
                self._connect_and_read()
                if self._stopped.is_set():
                    return
                reason: ManagedAgentsError = StreamError("the server ended the event stream")
            except ManagedAgentsError as exc:
                if self._stopped.is_set():
                    return
                telemetry.emit("stream.error", {}, {**self._metadata, "reason": str(exc)})
                if not _reconnectable(exc):
                    self._fail(exc)
                    return
                reason = exc
                if isinstance(exc, APIError):
                    retry_after = exc.retry_after
            except _SessionEnded:
                telemetry.emit("stream.done", {}, self._metadata)
                self._fail(
                    SessionError(f"session {self._session_id} has ended (terminated or deleted)")
                )
                return
            healthy = self._progressed or time.monotonic() - opened >= HEALTHY_CONNECTION_SECONDS
            failures = 1 if healthy else failures + 1
            if failures > self._max_attempts:
                self._fail(
                    StreamReconnectError(
                        f"the event stream of session {self._session_id} failed "
                        f"{failures} times in a row without progress; last: {reason}",
                        attempts=failures,
                        cause=reason,
                    )
                )
                return
            if not RECONNECT.honours(retry_after):
                self._fail(reason)
                return
            delay = RECONNECT.delay(failures - 1, retry_after)
            _log.info(
                "event stream for %s lost (%s); reconnecting in %.2f s",
                self._session_id,
                reason,
                delay,
            )
            if self._stopped.wait(delay):
                return

    def _connect_and_read(self) -> None:
        """One connection's life; returns when the server ends it, raises what broke it."""
        self._progressed = False
        response = self._open_stream()
        try:
            with self._lock:
                self._response = response
            if self._stopped.is_set():
                return
            first = not self.connected.is_set()
            telemetry.emit("stream.connected", {}, {**self._metadata, "reconnect": not first})
            _log.debug("event stream of %s attached (reconnect: %s)", self._session_id, not first)
            history = self.history_after(self.newest_id())
            if first and self._deliver_history:
                for old in history:
                    self._remember(old.get("id"))
                self._queue.put(History(history))
            else:
                for missed in history:
                    self._deliver(missed)
                self._flush()
            self.connected.set()
            decoder = SSEDecoder()
            for chunk in read_chunks(response, self._idle_timeout):
                for sse in decoder.feed(chunk):
                    try:
                        event = _parse(sse)
                    except _Unparseable as bad:
                        # The history has the event this frame carried: fetch it now, or a
                        # turn could wait forever for its end or miss a tool call.
                        # The message, not the exception: a log handler that keeps records
                        # would keep its traceback, and the stream's connection with it.
                        _log.warning(
                            "catching up after an unreadable %r frame: %s", sse.event, str(bad)
                        )
                        self._flush()
                        for missed in self.history_after(self.newest_id()):
                            self._deliver(missed)
                        continue
                    if event is not None:
                        self._deliver(event)
                self._flush()
            if not self._stopped.is_set():
                telemetry.emit("stream.done", {}, self._metadata)
        finally:
            self._flush()
            with self._lock:
                self._response = None
            response.close()

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

    def _flush(self) -> None:
        """Queue the events delivered since the last flush."""
        if self._batch:
            self._queue.put(self._batch)
            self._batch = []

    def _deliver(self, event: Event) -> None:
        """Add ``event`` to the next batch unless already delivered."""
        if event.get("type") in _PREVIEW_TYPES:
            self._batch.append(event)  # live only, without an id: nothing to dedupe or report
            return
        event_id = event.get("id")
        if not self._remember(event_id):
            return
        self._progressed = True
        telemetry.emit(
            "stream.event", {}, {**self._metadata, "type": event.get("type"), "id": event_id}
        )
        self._batch.append(event)
        if event.get("type") in _ENDING_TYPES:
            self._flush()
            raise _SessionEnded

    def _remember(self, event_id: object) -> bool:
        """Note a delivered event's id; ``False`` if it was delivered already."""
        if not isinstance(event_id, str) or not event_id:
            return True
        with self._lock:
            if not self._seen.add(event_id):
                return False
            self._newest = event_id
        return True


class _SessionEnded(Exception):
    """The session was deleted or terminated (internal signal)."""


class _Unparseable(Exception):
    """A stream frame that should carry a session event but does not parse (internal)."""


def _parse(sse: ServerSentEvent) -> Event | None:
    """The session event carried by one SSE frame, or None for heartbeats and noise.

    Raises :class:`_Unparseable` when the frame's data is not a JSON object: a session event
    was meant and is missing.
    """
    if sse.event in _HEARTBEAT_TYPES or not sse.data.strip():
        return None
    try:
        data = loads(sse.data, cut_deep=True)
    except ValueError as exc:
        raise _Unparseable(str(exc)) from None
    if not isinstance(data, dict):
        raise _Unparseable(f"the data is a JSON {type(data).__name__}, not an object")
    if sse.event == "error" or data.get("type") == "error":
        error = data.get("error")
        detail = error.get("message", error) if isinstance(error, dict) else data
        raise StreamError(f"the event stream reported an error: {detail}")
    if data.get("type") in _HEARTBEAT_TYPES:
        return None
    if "type" not in data and sse.event != "message":
        data["type"] = sse.event
    return data


def _reconnectable(error: ManagedAgentsError) -> bool:
    if isinstance(error, (StreamError, TransportError, RateLimitError, ServerError)):
        return True
    return isinstance(error, APIError) and error.status_code == 408
