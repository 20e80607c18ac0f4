"""The thread that holds a session's event stream open, for the providers that have one.

A provider's feed subclasses :class:`StreamFeed` with how to open the stream, read it and
catch up what it missed (:meth:`StreamFeed._connect_and_read`); this class owns what every
such feed shares: the thread, the queue the driving thread reads, the reconnect loop and
when to give up.

A dropped connection, a server that ends the stream, or silence longer than the idle
timeout all lead to a reconnect after an escalating, jittered backoff, never shorter than
the server's ``retry-after``. The reconnect budget counts consecutive connections that made
no progress: a connection made progress when it delivered a session event not seen before,
or stayed up for :data:`HEALTHY_CONNECTION_SECONDS` (heartbeats alone do not count, so a
server that pings and then drops is backed off and finally given up on, with
:class:`StreamReconnectError`). A long, healthy stream that a proxy recycles is never given
up on. Errors that reconnecting cannot fix (authentication, a deleted session) end the feed
and reach the driver.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

import requests

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    APIError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    SessionError,
    StreamError,
    StreamReconnectError,
    TransportError,
)
from req_managed_agents.model._vocabulary import SessionInfo
from req_managed_agents.providers._base import Aborted, Origin
from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._http import read_chunks, shutdown_response

__all__ = [
    "CONNECT_POLL",
    "HEALTHY_CONNECTION_SECONDS",
    "FeedClosed",
    "History",
    "SessionEnded",
    "StreamFeed",
    "Unparseable",
]

_log = get_logger(__name__)

# A connection that stayed up this long was healthy, even if it carried only heartbeats.
HEALTHY_CONNECTION_SECONDS = 30.0
# How often opening a session looks whether its stream has connected (or failed).
CONNECT_POLL = RetryPolicy.poll(0.05)

Event = dict[str, Any]


class FeedClosed(Exception):
    """The feed was stopped while someone waited on it (internal signal)."""


class Unparseable(Exception):
    """A stream frame that should carry a session event but does not parse (internal)."""


class SessionEnded(Exception):
    """The session was deleted or terminated: no stream will carry anything again
    (internal signal, raised by a subclass while reading)."""


@dataclass(frozen=True)
class History:
    """The session's history, delivered once, on the first connect of a resumed session."""

    events: list[Event]


@dataclass(frozen=True)
class _Fatal:
    """Why the feed ended; re-queued on every read so nobody waits on a dead feed."""

    error: ManagedAgentsError


# The stream thread queues the events of one read as a list: a handoff between threads per
# event would cost more than everything else done with it.
_Item = Union[list[Event], History, _Fatal, None]


class StreamFeed:
    """Owns the stream thread for one session. ``get()`` yields events, a :class:`History`
    (resumed sessions, first item) or raises the error that ended the feed."""

    def __init__(
        self,
        session_id: str,
        *,
        policy: RetryPolicy,
        telemetry_metadata: Mapping[str, Any],
        max_reconnect_attempts: int | None = None,
    ) -> None:
        self._session_id = session_id
        self._policy = policy
        self._max_attempts = (
            policy.max_retries if max_reconnect_attempts is None else max_reconnect_attempts
        )
        self._metadata = {**telemetry_metadata, "session_id": session_id}
        self._queue: queue.Queue[_Item] = queue.Queue()
        # Events taken off the queue and not handed out yet (the reader's side), and events
        # not queued yet (the stream thread's side).
        self._ready: deque[Event] = deque()
        self._batch: list[Event] = []
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

    def check(self) -> None:
        """Raise why the feed ended, if it has: a new input would never see its turn."""
        if self._stopped.is_set():
            raise FeedClosed
        if self._fatal is not None:
            raise self._fatal
        if not self._thread.is_alive():
            raise SessionError(f"the event stream of session {self._session_id} has stopped")

    def wait_connected(self, cancelled: threading.Event | None) -> None:
        """Block until the stream is attached and caught up: only then may the first input
        go out. A stop meanwhile (``cancelled``: the session closed while it was opening)
        stops the feed; raises :class:`FeedClosed` then, or the error that ended the feed.
        """
        while not self.connected.wait(CONNECT_POLL.delay(0)):
            if cancelled is not None and cancelled.is_set():
                self.stop(join_timeout=0.5)
            self.check()

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

    # -- for subclasses, on the stream thread ---------------------------------------------

    def _connect_and_read(self) -> None:
        """One connection's life: open the stream, catch up, read; return when the server
        ends it, raise what broke it (:class:`SessionEnded` when the session is gone)."""
        raise NotImplementedError

    def _parse(self, sse: ServerSentEvent) -> Event | None:
        """The session event one frame carries, None for heartbeats and noise; raises
        :class:`Unparseable` when an event was meant and does not parse."""
        raise NotImplementedError

    def _deliver(self, event: Event) -> None:
        """Add an event to the next batch unless it was delivered already."""
        raise NotImplementedError

    def _recover(self) -> None:
        """Deliver what the session recorded and the feed has not delivered (a catch-up)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _holding(self, response: requests.Response) -> Iterator[bool]:
        """Hold one connection: named for :meth:`stop`, reported attached, and flushed and
        closed however it ends. Yields whether it is the feed's first."""
        try:
            with self._lock:
                self._response = response
            first = not self.connected.is_set()
            if not self._stopped.is_set():
                telemetry.emit("stream.connected", {}, {**self._metadata, "reconnect": not first})
                _log.debug("event stream of %s attached (first: %s)", self._session_id, first)
            yield first
        finally:
            self._flush()
            with self._lock:
                self._response = None
            response.close()

    def _read(self, response: requests.Response, decoder: SSEDecoder, idle: float) -> None:
        """Deliver the stream's events until the server ends it. After a frame that does not
        parse, the feed catches up at once (:meth:`_recover`): what the frame carried is
        recorded somewhere, and a turn could otherwise wait for an end that already came."""
        parse, deliver = self._parse, self._deliver
        for chunk in read_chunks(response, idle):
            for sse in decoder.feed(chunk):
                try:
                    event = parse(sse)
                except Unparseable as bad:
                    # The message, not the exception: a log handler that keeps records would
                    # keep its traceback, and the stream's connection with it.
                    _log.warning("catching up after an unreadable %r frame: %s", sse.event, bad)
                    self._flush()
                    self._recover()
                    continue
                if event is not None:
                    deliver(event)
            self._flush()
        if not self._stopped.is_set():
            telemetry.emit("stream.done", {}, self._metadata)

    def _queue_history(self, events: list[Event]) -> None:
        self._queue.put(History(events))

    def _add(self, event: Event) -> None:
        """Add an event to the next batch (a session event not seen before: progress)."""
        self._progressed = True
        self._batch.append(event)

    def _flush(self) -> None:
        """Queue the events delivered since the last flush."""
        if self._batch:
            self._queue.put(self._batch)
            self._batch = []

    # -- the reconnect loop ---------------------------------------------------------------

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
            self._progressed = False
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
            except SessionEnded:
                telemetry.emit("stream.done", {}, self._metadata)
                self._fail(
                    SessionError(f"session {self._session_id} has ended (terminated or deleted)")
                )
                return
            finally:
                self._flush()
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
            if not self._policy.honours(retry_after):
                self._fail(reason)
                return
            delay = self._policy.delay(failures - 1, retry_after)
            _log.info(
                "event stream for %s lost (%s); reconnecting in %.2f s",
                self._session_id,
                reason,
                delay,
            )
            if self._stopped.wait(delay):
                return


def _reconnectable(error: ManagedAgentsError) -> bool:
    if isinstance(error, (StreamError, TransportError, RateLimitError, ServerError)):
        return True
    return isinstance(error, APIError) and error.status_code == 408


class FeedConversation:
    """What a conversation reading a :class:`StreamFeed` shares: reading it (a stopped
    feed is :class:`~req_managed_agents.providers.Aborted`), refusing an input it could not
    see the turn of, and letting go of the session."""

    info: SessionInfo
    origin: Origin
    keeps_history = True
    _feed: StreamFeed
    _aborted: bool

    @property
    def session_id(self) -> str:
        return self.info.session_id

    def abort(self) -> None:
        self._aborted = True
        self._feed.stop(join_timeout=0.5)

    def discard(self) -> None:
        """Let go of a session this conversation opened and never used: deleted only when
        this call created it - never a session someone else made or named."""
        self.abort()
        if self.origin != "created":
            return
        try:
            self._delete_session()
        except ManagedAgentsError as exc:
            _log.warning("could not delete the unused session %s: %s", self.session_id, exc)

    def _delete_session(self) -> None:
        raise NotImplementedError

    def _check_feed(self) -> None:
        """Refuse a new input when the feed is gone: its turn would never be seen."""
        try:
            self._feed.check()
        except FeedClosed:
            raise Aborted from None  # closed by cancel() or close(), racing this input

    def _next(self) -> Event | History:
        if self._aborted:
            raise Aborted
        try:
            return self._feed.get()
        except FeedClosed:
            raise Aborted from None

    def _history(self) -> list[Event]:
        """The first item of a reattached session's feed: its history, each event observed
        (without streaming old text again)."""
        item = self._next()
        history = item.events if isinstance(item, History) else [item]
        for event in history:
            self._observe(event, live=False)
        return history

    def _observe(self, event: Mapping[str, Any], *, live: bool = True) -> None:
        raise NotImplementedError
