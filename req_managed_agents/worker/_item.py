"""Serving one work item, on a thread of its own: claim it, drive its session while the
session needs this machine, then let it go.

The session is driven by the drivers' :class:`~req_managed_agents.Session`, reattached with
``session_id=`` and acting with the item's sessions token, so reconnects, deduplication,
catch-up and the tool ledger work as for any run; each time the session needs us (see
``_activity``) a new ``Session`` is opened and ``run(None)`` finishes what the session is
doing, returning at the turn's end. After ``idle_grace`` seconds with nothing to do the item
is stopped; a session that ended has its item stopped at once.

How it ends is a :class:`WorkItemReport`:

* ``stopped``: served, then stopped (the session went idle, ended, or its item was
  stopping); ``skipped``: stopped without serving (a terminated session, not a session);
* ``left``: the worker stopped while the session was mid-turn or waiting on calls: its
  session was detached and the item left to its lease - the API cannot hand an item back,
  so when the lease runs out (at most its ttl) the item is queued again and the next worker
  resumes the session, the ledger keeping each call to one run;
* ``lease_lost``: another worker may hold the item; its session was detached (running tools
  told to stop) and the item left alone;
* ``failed``: it could not be claimed or served; the log says why.

**What is kept.** A session's tool ledger entries are what lets the next worker resuming it run
no call twice, so they are forgotten only when no worker can need them - judged from a look at
the session taken after serving it, before its item is stopped:

* it ended (terminated, archived, deleted): nothing more happens in it, so its entries are
  forgotten and its folder removed;
* it is idle, waiting on nothing of ours, and our lease is secure (see ``Lease.secure``): every
  call it made was answered, which no resuming worker asks about again, and while we hold the
  item no other worker serves the session, so nobody claims a new call until the entries are
  gone. Its folder stays: a later turn, served from a new item, works in it;
* anything else - left to its lease, a lost lease, a wait this worker could not answer (an
  unfinished call under ``on_unfinished="raise"``), a session we could not look at - keeps
  every entry until the ledger's ttl.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from req_managed_agents import telemetry
from req_managed_agents._redact import forget_secret, get_logger
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import (
    AuthenticationError,
    ConfigurationError,
    ManagedAgentsError,
    SessionError,
)
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._provider import ClaudeManagedAgents
from req_managed_agents.providers.claude.api._work import sessions_token
from req_managed_agents.tools._handler import describe_exception
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.worker._activity import ACTIVITY_POLL, SessionLook, look_at
from req_managed_agents.worker._folders import remove_session_folder, session_folder
from req_managed_agents.worker._handler import ToolRouter, route_tools
from req_managed_agents.worker._lease import ClaimFailed, Lease, LeaseEnd, stop_item
from req_managed_agents.worker._settings import WorkerSettings

__all__ = ["RUN_RETRY", "ItemOutcome", "ItemServer", "WorkItemReport"]

ItemOutcome = Literal["stopped", "skipped", "left", "lease_lost", "failed"]
"""How serving a work item ended (see :class:`WorkItemReport`)."""

RUN_RETRY = RetryPolicy(max_retries=0, base=1.0, cap=30.0)
"""Between runs of a session that failed on the network or the service (say its tool
results could not be posted): from 1 s, doubling up to 30 s, while the lease lasts."""

# A worker serves a session for as long as it goes on: no cap on the turns of one run.
_MAX_TURNS = 1_000_000
_log = get_logger(__name__)


@dataclass(frozen=True)
class WorkItemReport:
    """How serving one work item ended: ``outcome`` (``stopped``, ``skipped``, ``left``,
    ``lease_lost`` or ``failed``; see the module), why (``detail``), how many times the
    session was driven (``runs``), how many tool calls ran here, and how long it took."""

    work_id: str
    session_id: str | None
    outcome: ItemOutcome
    detail: str = ""
    runs: int = 0
    tool_calls: int = 0
    duration: float = 0.0


class ItemServer:
    """Serves one polled item (see the module); :meth:`serve` on the item's thread,
    :meth:`end` from any thread."""

    def __init__(
        self, settings: WorkerSettings, queue: ClaudeClient, item: Mapping[str, Any]
    ) -> None:
        self._settings = settings
        self._queue = queue
        self._item = item
        self.work_id = str(item.get("id"))
        data = item.get("data")
        session = (
            data.get("id") if isinstance(data, Mapping) and data.get("type") == "session" else None
        )
        self.session_id = str(session) if session is not None else None
        self._tags = {
            "environment_id": settings.environment_id,
            "work_id": self.work_id,
            "session_id": self.session_id,
            "worker_id": settings.worker_id,
        }
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._session: Session | None = None
        self._lease: Lease | None = None
        self._token_refused = False
        self._runs = self._tool_calls = 0

    def end(self) -> None:
        """Stop serving: a running session is detached (its tools told to stop, its remote
        turn left running), and the item released as the module says."""
        with self._lock:
            self._ended.set()
            session = self._session
        if session is not None:
            session.detach()

    def serve(self) -> WorkItemReport:
        """Claim, serve and release the item; never raises."""
        started = time.monotonic()
        telemetry.emit("worker.item.start", {"system_time": time.time()}, self._tags)
        try:
            outcome, detail = self._serve()
        except Exception as exc:  # a defect: the worker goes on with its other items
            _log.error("work item %s failed", self.work_id, exc_info=True)
            outcome, detail = "failed", describe_exception(exc)
        report = WorkItemReport(
            self.work_id,
            self.session_id,
            outcome,
            detail,
            self._runs,
            self._tool_calls,
            time.monotonic() - started,
        )
        telemetry.emit(
            "worker.item.stop",
            {"duration": report.duration, "runs": report.runs, "tool_calls": report.tool_calls},
            {**self._tags, "outcome": outcome, "detail": detail},
        )
        self._forget_credentials()
        return report

    def _forget_credentials(self) -> None:
        """Let the redactor go of the item's secret and token: nothing here uses them any
        more, and a worker serving sessions for months would hold one pair per item."""
        secret = self._item.get("secret")
        if not isinstance(secret, str) or not secret:
            return
        token = sessions_token(secret)
        forget_secret(secret)
        if token is not None:
            forget_secret(token.reveal())

    def _serve(self) -> tuple[ItemOutcome, str]:
        try:
            client = self._queue.for_work_item(self._item)
        except ConfigurationError as exc:
            return "failed", str(exc)
        lease = Lease(
            self._queue,
            client,
            self._settings.environment_id,
            self.work_id,
            on_end=self._lease_ended,
            tags=self._tags,
        )
        try:
            lease.claim()
        except ClaimFailed as failed:
            if lease.end == "shutdown":  # its session ended before it was claimed
                self._let_go_of_session(client, lease)
            if failed.stop:
                stop_item(client, self._settings.environment_id, self.work_id, self._tags)
            if lease.end == "shutdown":
                return "skipped", failed.reason
            return "failed", f"not claimed: {failed.reason}"
        self._lease = lease
        try:
            outcome, detail = self._serve_session(client)
            if outcome in ("stopped", "skipped"):
                self._let_go_of_session(client, lease)
        except Exception as exc:  # a defect: stopped like any item we let go of
            _log.error("work item %s: serving failed", self.work_id, exc_info=True)
            outcome, detail = "failed", describe_exception(exc)
        finally:
            lease.release()
        if lease.end == "lost" or self._token_refused:
            return "lease_lost", lease.reason or "the item's token was refused"
        if outcome != "left":
            stop_item(client, self._settings.environment_id, self.work_id, self._tags)
        return outcome, detail

    def _let_go_of_session(self, client: ClaudeClient, lease: Lease) -> None:
        """Forget the session's ledger entries, and remove its folder, when no worker can
        need them any more (see the module); a failure is logged, never raised."""
        session_id = self.session_id
        if session_id is None:
            return
        look = self._look(client, session_id)
        over = look is not None and look.ended
        answered = (
            look is not None
            and look.status == "idle"
            and not look.waits_on_us
            and lease.secure()
            and not self._token_refused
        )
        if not (over or answered):
            return
        try:
            self._settings.ledger.forget(session_id)
            if over:
                remove_session_folder(self._settings.workdir, session_id)
        except (ManagedAgentsError, OSError) as exc:
            _log.warning(
                "work item %s: could not clean up after session %s: %s",
                self.work_id,
                session_id,
                describe_exception(exc),
            )

    def _lease_ended(self, end: LeaseEnd, reason: str) -> None:
        _log.info("work item %s: lease ended (%s: %s)", self.work_id, end, reason)
        self.end()

    # -- the session ----------------------------------------------------------------------

    def _serve_session(self, client: ClaudeClient) -> tuple[ItemOutcome, str]:
        session_id = self.session_id
        if session_id is None:
            return "skipped", "not a session's work item"
        look = self._look(client, session_id)
        if look is not None and look.ended:
            return "skipped", "its session has ended"
        try:
            folder = session_folder(self._settings.workdir, session_id)
            toolset = self._settings.toolset(folder)
        except Exception as exc:  # an unsafe id, a full disk, a toolset that cannot start
            return "failed", describe_exception(exc)
        router = route_tools(self._settings.handler, toolset)
        provider = ClaudeManagedAgents.with_client(client)
        unanswerable: str | None = None  # a wait a run failed on for good: not tried again
        idle_since = time.monotonic()
        attempt = failures = 0
        while not self._ended.is_set():
            if look is not None and look.ended:
                return "stopped", "its session ended"
            if look is not None and look.needs_serving(unanswerable):
                failure = self._drive(provider, session_id, router)
                idle_since, attempt = time.monotonic(), 0
                if failure is not None and not _retryable(failure):
                    unanswerable = look.newest_id
                elif failure is not None:  # the next run picks up from the ledger
                    if self._ended.wait(RUN_RETRY.delay(failures)):
                        break
                    failures += 1
                else:
                    failures = 0
                look = self._look(client, session_id)
                continue
            left = self._settings.idle_grace - (time.monotonic() - idle_since)
            if left <= 0:
                return "stopped", "its session went idle"
            if self._ended.wait(min(left, ACTIVITY_POLL.delay(attempt))):
                break
            attempt += 1
            look = self._look(client, session_id)
        return self._after_end(client, session_id)

    def _after_end(self, client: ClaudeClient, session_id: str) -> tuple[ItemOutcome, str]:
        """Serving was ended from outside: by the lease, or by the worker stopping."""
        lease = self._lease
        if lease is not None and lease.end == "shutdown":
            return "stopped", lease.reason
        if (lease is not None and lease.end == "lost") or self._token_refused:
            return "lease_lost", ""
        look = self._look(client, session_id)
        if look is None or (not look.ended and (look.busy or look.waits_on_us)):
            return "left", "the worker stopped mid-turn; the item is left to its lease"
        return "stopped", "the worker stopped while the session was idle"

    def _drive(
        self, provider: ClaudeManagedAgents, session_id: str, router: ToolRouter
    ) -> ManagedAgentsError | None:
        """One run of the session, which finishes what the session is doing; what it
        failed with, if it did."""
        settings = self._settings
        session = Session(
            provider,
            handler=router,
            session_id=session_id,
            ledger=settings.ledger,
            on_unfinished=settings.on_unfinished,
            tool_timeout=settings.tool_timeout,
            confirm=settings.confirm,
            max_turns=_MAX_TURNS,
            telemetry_metadata=self._tags,
        )
        with self._lock:
            if self._ended.is_set():
                return None
            self._session = session
        self._runs += 1
        try:
            result = session.run(None)
            self._tool_calls += len(result.tool_uses)
            return None
        except ManagedAgentsError as exc:
            if not self._ended.is_set():  # else: detached on the way in
                _log.warning(
                    "work item %s: serving session %s failed: %s",
                    self.work_id,
                    session_id,
                    describe_exception(exc),
                )
            return exc
        finally:
            with self._lock:
                self._session = None
            session.close()  # the run is over: nothing remote is stopped

    def _look(self, client: ClaudeClient, session_id: str) -> SessionLook | None:
        """The session now; None when it cannot be told (a transient failure). A refused
        token means the lease is gone: serving ends."""
        try:
            return look_at(client, session_id, self._tags)
        except AuthenticationError:
            self._token_refused = True
            self.end()
            return None
        except ManagedAgentsError as exc:
            _log.info("work item %s: could not look at its session: %s", self.work_id, exc)
            return None


def _retryable(error: ManagedAgentsError) -> bool:
    """Whether another run may get past the failure: anything but a session that cannot go
    on as told (a confirmation nothing may answer, an unfinished call under
    ``on_unfinished="raise"``) - the network, the stream, a busy service, results the
    service refused for now."""
    return not isinstance(error, (SessionError, ConfigurationError))
