"""A work item's lease: claimed before serving, kept by heartbeats on a thread of its own,
and let go of.

**Claiming** is acknowledging the item (environment key: ``queued`` -> ``starting``), then
the first heartbeat (the item's sessions token, expecting ``NO_HEARTBEAT``: ``starting`` ->
``active``), both on the thread that will serve the item, so no item is acknowledged and then
left waiting for a hand-off. An acknowledgement that failed ambiguously (it may have landed)
is sent again, and a 409 then means the first one landed; one that kept failing ambiguously
is followed by the heartbeat anyway, whose answer tells (a queued item refuses it).

**Heartbeats** go every ``min(ttl / 2, 30 s)``. A transient failure is retried until the
lease would run out; then the lease is taken as lost. An answer with ``lease_extended``
false (the item is stopping or stopped) ends the lease as *shutdown*: the worker stops
serving and stops the item. A 412 means the ``last_heartbeat`` we expected is not the one
stored, and a 401 or 404 that our token or the item is gone: the lease is *lost* - another
worker may hold the item - and the item is left alone.

**A heartbeat whose answer was lost** leaves the server holding a ``last_heartbeat`` we
never saw, so the next one is refused with the same 412 another worker's takeover causes.
We tell them apart: after an ambiguous failure, a 412 whose current state is ``active`` with
a ``last_heartbeat`` newer than the one we expected, while our own lease has not run out,
is adopted (once) as ours. Another worker could only have heartbeated the item after it was
queued again, which happens only when a lease runs out - and ours had not; the service also
revokes the previous holder's token when it hands an item out again, which would have made
our call a 401, not a 412.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ManagedAgentsError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude.api._work import NO_HEARTBEAT, lease_state
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = [
    "ACK_RETRY",
    "HEARTBEAT_RETRY",
    "STOP_RETRY",
    "ClaimFailed",
    "Lease",
    "LeaseEnd",
    "stop_item",
    "transient",
]

CLAIM_TTL = 300.0
"""The lease an acknowledgement starts, as far as we know before the first heartbeat says
(the service's default)."""
MAX_HEARTBEAT_INTERVAL = 30.0
"""The longest gap between heartbeats, however long the lease."""
RELEASE_WAIT = 5.0
"""How long letting go of a lease waits for a heartbeat in flight."""
ACK_RETRY = RetryPolicy(max_retries=4, base=0.25, cap=2.0)
HEARTBEAT_RETRY = RetryPolicy(max_retries=0, base=0.25, cap=5.0)  # until the lease runs out
STOP_RETRY = RetryPolicy(max_retries=4, base=0.25, cap=2.0)

LeaseEnd = Literal["shutdown", "lost"]
"""Why a lease ended: the item is stopping (``shutdown``), or it may be another's (``lost``)."""

_log = get_logger(__name__)


class ClaimFailed(Exception):
    """The item could not be claimed; ``stop`` says whether it should be stopped (it may be
    ours, ``starting``) or left alone (it is queued, or another worker may hold it)."""

    def __init__(self, reason: str, *, stop: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stop = stop


def transient(error: BaseException) -> bool:
    """Whether trying again later may succeed: no answer, a 408, a 429 or a 5xx."""
    if isinstance(error, TransportError):
        return True
    return isinstance(error, (ServerError, RateLimitError)) or (
        isinstance(error, APIError) and error.status_code == 408
    )


def _ambiguous(error: BaseException) -> bool:
    """Whether a failed call may have been acted on (anything but a proven refusal)."""
    if isinstance(error, TransportError):
        return not error.not_sent
    return not isinstance(error, RateLimitError)


def _newer(stamp: object, than: str) -> bool:
    if not isinstance(stamp, str):
        return False
    if than == NO_HEARTBEAT:
        return True
    try:
        return _instant(stamp) > _instant(than)
    except ValueError:
        return False


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Lease:
    """One item's lease (see the module). ``queue`` acts with the environment key, ``item``
    with the item's sessions token; ``on_end(end, reason)`` hears, on the heartbeat thread,
    that a held lease ended."""

    def __init__(
        self,
        queue: ClaudeClient,
        item: ClaudeClient,
        environment_id: str,
        work_id: str,
        *,
        on_end: Callable[[LeaseEnd, str], None],
        tags: Mapping[str, Any],
    ) -> None:
        self._queue, self._item = queue, item
        self._environment_id, self._work_id = environment_id, work_id
        self._on_end = on_end
        self._tags = dict(tags)
        self.ttl = CLAIM_TTL
        self.end: LeaseEnd | None = None
        self.reason = ""
        self.heartbeats = 0
        self._last = NO_HEARTBEAT
        self._expires_at = self._due_at = 0.0
        self._released = threading.Event()
        self._thread: threading.Thread | None = None

    # -- claiming -------------------------------------------------------------------------

    def claim(self) -> None:
        """Acknowledge the item and send the first heartbeat, then keep the lease on a
        thread of its own; :class:`ClaimFailed` when the item is not ours to serve."""
        self._expires_at = time.monotonic() + CLAIM_TTL
        self._acknowledge()
        self._extend()
        if self.end is not None:
            raise ClaimFailed(self.reason, stop=self.end == "shutdown" or self._expired())
        self._thread = threading.Thread(
            target=self._keep, name=f"rma-lease-{self._work_id}", daemon=True
        )
        self._thread.start()

    def _acknowledge(self) -> None:
        ambiguous = False
        attempt = 0
        while True:
            try:
                self._queue.ack_work(
                    self._environment_id, self._work_id, telemetry_metadata=self._tags
                )
                return
            except ConflictError:
                if ambiguous:
                    _log.info("work item %s: our earlier acknowledgement landed", self._work_id)
                    return
                raise ClaimFailed("it was no longer queued", stop=False) from None
            except ManagedAgentsError as error:
                ambiguous = ambiguous or _ambiguous(error)
                if not transient(error) or attempt >= ACK_RETRY.max_retries:
                    if ambiguous:  # it may have landed: the heartbeat will tell
                        return
                    raise ClaimFailed(f"acknowledging it failed: {error}", stop=False) from None
                retry_after = error.retry_after if isinstance(error, APIError) else None
            ACK_RETRY.wait(attempt, retry_after)
            attempt += 1

    # -- keeping --------------------------------------------------------------------------

    def _keep(self) -> None:
        while not self._released.wait(max(0.0, self._due_at - time.monotonic())):
            self._extend()
            if self.end is not None:
                if not self._released.is_set():
                    self._on_end(self.end, self.reason)
                return

    def _extend(self) -> None:
        """One heartbeat, retried while the lease lasts; sets ``end`` when it ends."""
        ambiguous_since: float | None = None
        attempt = 0
        while True:
            sent_at = time.monotonic()
            try:
                answer = self._item.heartbeat_work(
                    self._environment_id,
                    self._work_id,
                    expected_last_heartbeat=self._last,
                    telemetry_metadata=self._tags,
                )
            except ManagedAgentsError as error:
                if isinstance(error, APIError) and error.status_code == 412:
                    current = lease_state(error) or {}
                    if ambiguous_since is not None and self._adoptable(current):
                        _log.info(
                            "work item %s: a heartbeat whose answer was lost had landed; "
                            "its lease is still ours",
                            self._work_id,
                        )
                        self._hold(current, ambiguous_since)
                    else:
                        self._finish("lost", "another worker holds its lease (412)")
                    return
                if isinstance(error, (AuthenticationError, NotFoundError)):
                    what = "token was refused" if error.status_code in (401, 403) else "is gone"
                    self._finish("lost", f"its {what} ({error.status_code})")
                    return
                if not transient(error):
                    self._finish("lost", f"a heartbeat failed: {error}")
                    return
                if _ambiguous(error) and ambiguous_since is None:
                    ambiguous_since = sent_at
                retry_after = error.retry_after if isinstance(error, APIError) else None
                delay = HEARTBEAT_RETRY.delay(attempt, retry_after)
                if time.monotonic() + delay >= self._expires_at:
                    self._finish("lost", f"no heartbeat got through in time ({error})")
                    return
                _log.info("work item %s: heartbeat failed (%s); retrying", self._work_id, error)
                if self._released.wait(delay):
                    return
                attempt += 1
                continue
            self._record(answer, sent_at)
            return

    def _adoptable(self, current: Mapping[str, Any]) -> bool:
        return (
            current.get("state") == "active"
            and _newer(current.get("last_heartbeat"), self._last)
            and not self._expired()
        )

    def _expired(self) -> bool:
        return time.monotonic() >= self._expires_at

    def secure(self) -> bool:
        """Whether the lease is ours with at least a quarter of its ttl to go, as far as we
        know: until then the item cannot be handed to another worker."""
        left = self._expires_at - time.monotonic()
        return self.end is None and not self._released.is_set() and left >= self.ttl / 4

    def _record(self, answer: Mapping[str, Any], sent_at: float) -> None:
        if not answer.get("lease_extended", True) or answer.get("state") in (
            "stopping",
            "stopped",
        ):
            self._finish("shutdown", f"the item is {answer.get('state', 'stopping')}")
            return
        self._hold(answer, sent_at)

    def _hold(self, lease: Mapping[str, Any], sent_at: float) -> None:
        """The lease as ``lease`` holds it (a heartbeat's answer, or a refusal's current
        state when adopted), from a heartbeat sent at ``sent_at`` or later."""
        ttl = lease.get("ttl_seconds")
        if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
            self.ttl = float(ttl)
        self._last = str(lease.get("last_heartbeat") or self._last)
        self._expires_at = sent_at + self.ttl
        self._due_at = sent_at + min(self.ttl / 2, MAX_HEARTBEAT_INTERVAL)
        self.heartbeats += 1

    def _finish(self, end: LeaseEnd, reason: str) -> None:
        self.end, self.reason = end, reason
        if end == "lost":
            _log.warning("work item %s: lease lost: %s", self._work_id, reason)
            telemetry.emit("worker.lease_lost", {}, {**self._tags, "reason": reason})

    # -- letting go -----------------------------------------------------------------------

    def release(self) -> None:
        """Stop heartbeating (waiting a moment for a heartbeat in flight)."""
        self._released.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(RELEASE_WAIT)


def stop_item(
    client: ClaudeClient, environment_id: str, work_id: str, tags: Mapping[str, Any]
) -> bool:
    """Force-stop an item with its sessions token; whether we know it is stopped now. A 409
    means it was already; a refused token or a missing item, that it is not ours to stop
    (or that our own attempt, whose answer was lost, stopped it and revoked the token)."""
    attempt = 0
    while True:
        try:
            client.stop_work(environment_id, work_id, force=True, telemetry_metadata=tags)
            return True
        except ConflictError:
            return True
        except ManagedAgentsError as error:
            if isinstance(error, (AuthenticationError, NotFoundError)) or not transient(error):
                _log.info("work item %s was not stopped: %s", work_id, error)
                return False
            if attempt >= STOP_RETRY.max_retries:
                _log.warning("work item %s: stopping it kept failing: %s", work_id, error)
                return False
            retry_after = error.retry_after if isinstance(error, APIError) else None
        STOP_RETRY.wait(attempt, retry_after)
        attempt += 1
