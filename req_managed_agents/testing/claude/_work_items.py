"""The work items of self-hosted environments: queued, leased, stopped.

A session in a self-hosted environment queues a work item when it is created, and again when
it gets new input after its last item stopped (the sandbox must come back to serve it). An
item moves ``queued`` -> ``starting`` (acknowledged) -> ``active`` (the first heartbeat
claims its lease) -> ``stopping`` (a graceful stop, or its session ended) -> ``stopped``.

Leases are kept on the emulator's clock (:func:`time.monotonic`):

* a poll hands an item out with a new sessions token (the last one handed out is revoked);
  an item handed out but not acknowledged within the poll's ``reclaim_older_than_ms``
  (5000 by default) can be handed out again;
* acknowledging starts the lease (``lease_ttl`` seconds); each heartbeat extends it by its
  ``ttl_seconds`` (the ``desired_ttl_seconds`` asked for, up to ``lease_ttl``);
* a lease that runs out queues a ``starting`` or ``active`` item again (its token revoked,
  its acknowledgement and heartbeats forgotten), so a restarted worker can pick it up; a
  ``stopping`` item whose lease runs out is ``stopped``;
* when its session terminates (or is archived or deleted) a running item goes ``stopping``,
  and its heartbeats answer ``lease_extended: false``.

These rules are applied lazily, by :meth:`WorkItems.sweep`, before anything reads or changes
an item. Every method is called with the emulator's lock held.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._model import _WorkItem
from req_managed_agents.testing.claude._wire import _APIError, _not_found
from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.claude._state import ClaudeState

# What a first heartbeat expects: the lease has not been heartbeated yet.
NO_HEARTBEAT = "NO_HEARTBEAT"
# Unacknowledged items older than this may be handed out again, unless a poll says otherwise.
DEFAULT_RECLAIM_MS = 5000
# The lease an acknowledgement starts, and the longest a heartbeat may ask for (seconds).
DEFAULT_LEASE_TTL = 300

_LIVE = ("starting", "active")
_OPEN = ("queued", "starting", "active")


def secret_of(token: str) -> str:
    """The opaque ``secret`` a poll hands out: URL-safe base64, unpadded, of JSON carrying
    the item's sessions token."""
    payload = json.dumps({"sessions_token": token}).encode()
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def _ended(session: _Session) -> bool:
    return session.deleted or session.status == "terminated"


class WorkItems:
    """The work items of every self-hosted environment, kept in the emulator's state."""

    def __init__(self, state: ClaudeState, *, lease_ttl: int) -> None:
        if isinstance(lease_ttl, bool) or not isinstance(lease_ttl, int) or lease_ttl < 1:
            raise ValueError("lease_ttl must be a whole number of seconds, at least 1")
        self._state = state
        self.lease_ttl = lease_ttl

    # --- sessions --------------------------------------------------------------------------

    def queue(self, session: _Session) -> None:
        """Queue a work item for a session of a self-hosted environment."""
        if not session.self_hosted:
            return
        record = {
            "id": new_id("work"),
            "type": "work",
            "environment_id": session.record["environment_id"],
            "data": {"type": "session", "id": session.record["id"]},
            "state": "queued",
            "created_at": utc_timestamp(),
            "acknowledged_at": None,
            "started_at": None,
            "latest_heartbeat_at": None,
            "stop_requested_at": None,
            "stopped_at": None,
            "metadata": {},
            "secret": None,
        }
        self._state.work[record["id"]] = _WorkItem(record, session, self.lease_ttl)
        self._state.condition.notify_all()

    def wake(self, session: _Session) -> None:
        """New input for a session whose sandbox is gone: queue an item, unless one is
        queued or running already."""
        self.sweep()
        if session.self_hosted and not any(
            item.session is session and item.state in _OPEN for item in self._state.work.values()
        ):
            self.queue(session)

    # --- the lease rules -------------------------------------------------------------------

    def sweep(self) -> None:
        """Apply what time and the sessions decided since the last look (see the module)."""
        now = time.monotonic()
        for item in self._state.work.values():
            if item.state in _LIVE and _ended(item.session):
                self._to_stopping(item)
            if item.expires_at is not None and item.expires_at <= now:
                if item.state == "stopping":
                    self._to_stopped(item)
                elif item.state in _LIVE:
                    self._requeue(item)

    def item(self, environment_id: str, work_id: str) -> _WorkItem:
        """An item of the environment; a 404 for any other."""
        self.sweep()
        item = self._state.work.get(work_id)
        if item is None or item.environment_id != environment_id:
            raise _not_found("work item", work_id)
        return item

    def of_environment(self, environment_id: str) -> list[_WorkItem]:
        """The environment's items, oldest first."""
        self.sweep()
        return [i for i in self._state.work.values() if i.environment_id == environment_id]

    def hand_out(self, environment_id: str, reclaim_after: float) -> _WorkItem | None:
        """The oldest item a poll may take (queued, and not handed out in the last
        ``reclaim_after`` seconds), with a new sessions token; None when there is none."""
        now = time.monotonic()
        for item in self.of_environment(environment_id):
            if item.state == "queued" and (
                item.polled_at is None or now - item.polled_at >= reclaim_after
            ):
                self._revoke(item)
                item.polled_at = now
                item.token = f"sesstok_{secrets.token_urlsafe(24)}"
                self._state.work_tokens[item.token] = item.id
                return item
        return None

    def holder(self, token: str | None) -> _WorkItem | None:
        """The item whose live sessions token ``token`` is, if any."""
        self.sweep()
        item = self._state.work.get(self._state.work_tokens.get(token or "", ""))
        return item if item is not None and item.token == token else None

    def expire(self, work_id: str) -> None:
        """End an item's lease now, as if its ttl had passed without a heartbeat."""
        item = self._state.work.get(work_id)
        if item is None:
            raise KeyError(f"no work item {work_id!r} in this emulator")
        if item.expires_at is not None:
            item.expires_at = time.monotonic()
        self.sweep()

    # --- what the routes do ----------------------------------------------------------------

    def ack(self, item: _WorkItem) -> None:
        """``queued`` (and handed out) -> ``starting``: the lease starts now."""
        if item.state != "queued":
            raise _APIError(409, f"work item {item.id!r} is {item.state}, not queued")
        if item.polled_at is None:
            raise _APIError(409, f"work item {item.id!r} was not handed out by a poll")
        item.record.update(state="starting", acknowledged_at=utc_timestamp())
        item.polled_at = None
        item.ttl = self.lease_ttl
        item.expires_at = time.monotonic() + item.ttl

    def heartbeat(
        self, item: _WorkItem, expected: str | None, desired: int | None
    ) -> dict[str, Any]:
        """Extend a running item's lease, unless ``expected`` is not the stored heartbeat
        (a 412 naming the lease as it is); a stopping or stopped item's answer says its
        lease was not extended, whatever ``expected`` says."""
        stored = item.record["latest_heartbeat_at"]
        if item.state in ("stopping", "stopped"):
            return self._heartbeat_answer(item, stored or "", extended=False)
        mismatch = expected is not None and expected != (stored or NO_HEARTBEAT)
        if item.state == "queued" or mismatch:
            lease = {
                "last_heartbeat": stored,
                "lease_extended": False,
                "state": item.state,
                "ttl_seconds": item.ttl,
            }
            raise _APIError(
                412,
                f"expected_last_heartbeat does not match the stored heartbeat of {item.id!r};"
                " another worker may hold the lease",
                "invalid_request_error",
                details={"error_code": "heartbeat_precondition_failed", "current_state": lease},
            )
        stamp = self._next_stamp(stored)
        item.record["latest_heartbeat_at"] = stamp
        if item.state == "starting":
            item.record.update(state="active", started_at=stamp)
        item.ttl = self.lease_ttl if desired is None else min(desired, self.lease_ttl)
        item.expires_at = time.monotonic() + item.ttl
        return self._heartbeat_answer(item, stamp, extended=True)

    def stop(self, item: _WorkItem, force: bool) -> None:
        """Forced, or of an item nobody runs: ``stopped``; else a running item goes
        ``stopping`` (a stopping one stays so). A stopped item is a 409."""
        if item.state == "stopped":
            raise _APIError(409, f"work item {item.id!r} is already stopped")
        if force or item.state == "queued":
            self._to_stopped(item)
        elif item.state in _LIVE:
            self._to_stopping(item)

    # --- transitions -----------------------------------------------------------------------

    @staticmethod
    def _heartbeat_answer(item: _WorkItem, stamp: str, *, extended: bool) -> dict[str, Any]:
        return {
            "type": "work_heartbeat",
            "last_heartbeat": stamp,
            "lease_extended": extended,
            "state": item.state,
            "ttl_seconds": item.ttl,
        }

    @staticmethod
    def _next_stamp(previous: str | None) -> str:
        """Now, to the microsecond, and always after ``previous``: a heartbeat must never
        repeat the one before, or a stale worker's expectation could match it."""
        now = datetime.now(timezone.utc)
        if previous is not None:
            before = datetime.fromisoformat(previous.replace("Z", "+00:00"))
            now = max(now, before + timedelta(microseconds=1))
        return utc_timestamp(now, timespec="microseconds")

    def _revoke(self, item: _WorkItem) -> None:
        if item.token is not None:
            self._state.work_tokens.pop(item.token, None)
            item.token = None

    def _requeue(self, item: _WorkItem) -> None:
        self._revoke(item)
        item.record.update(
            state="queued", acknowledged_at=None, started_at=None, latest_heartbeat_at=None
        )
        item.polled_at = item.expires_at = None
        self._state.condition.notify_all()

    def _to_stopping(self, item: _WorkItem) -> None:
        item.record.update(state="stopping", stop_requested_at=utc_timestamp())

    def _to_stopped(self, item: _WorkItem) -> None:
        self._revoke(item)
        now = utc_timestamp()
        item.record.update(state="stopped", stopped_at=now)
        if item.record["stop_requested_at"] is None:
            item.record["stop_requested_at"] = now
        item.polled_at = item.expires_at = None
        self._state.condition.notify_all()
