"""Bringing an AgentCore harness and the endpoint it is invoked at to ``READY`` within one
wall-clock budget.

A ``READY`` harness is not yet invokable: its ``DEFAULT`` endpoint is created after it and
became ``READY`` minutes later on the live service. So the wait has two phases, the harness
(``GetHarness``) then the endpoint (``GetHarnessEndpoint``, whose 404 means "not created
yet", which is why the name is checked before any request); endpoint statuses are read as
harness statuses. There is no waiter for either, so we poll. Statuses are open strings:
``READY`` ends the wait; ``CREATING``/``UPDATING`` continue it; a ``*_FAILED`` status,
``DELETING`` (it can never become ready) or any status we do not know end it with a named
error at once. One monotonic deadline covers the create, every poll and every request
timeout, so a caller's budget is never overrun by a poll cadence or a slow request. A harness
this call created and could not bring to ``READY`` is deleted (best effort, with its own small
budget) before the error is raised: a failed provision leaves nothing billable behind. A
``progress`` callback hears each poll that leaves the wait going (:class:`Progress`: which
phase, the status, the polls, the time so far), on the waiting thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    HarnessDeletingError,
    HarnessFailedError,
    HarnessNotReadyError,
    HarnessReadyTimeoutError,
    HarnessUnknownStatusError,
    ManagedAgentsError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.model._progress import Progress, ProgressCallback
from req_managed_agents.providers.agentcore._client import AgentCoreClient
from req_managed_agents.providers.agentcore.api._endpoints import (
    DEFAULT_ENDPOINT,
    check_endpoint_name,
)
from req_managed_agents.transport._backoff import RetryPolicy, pause

__all__ = [
    "DEFAULT_ENDPOINT",
    "DEFAULT_PROVISION_TIMEOUT",
    "classify_status",
    "create_harness_and_wait",
    "wait_until_ready",
]

DEFAULT_PROVISION_TIMEOUT = 365.0
# Polls for READY start at 0.25 s and double up to the longest pause, which is about a
# dozen polls per budget, between 50 ms and 5 s (:func:`poll_interval_for`); a poll the
# control plane failed waits the longest pause.
READY_POLL = RetryPolicy.poll(5.0, first=0.25)
SHORTEST_LONGEST_PAUSE = 0.05
ROLLBACK_TIMEOUT = 30.0
_log = get_logger(__name__)

_PENDING = frozenset({"CREATING", "UPDATING"})
_FAILED = frozenset({"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})


def classify_status(status: object) -> str:
    """``ready``, ``pending``, ``failed``, ``deleting`` or ``unknown`` for a harness status."""
    if status == "READY":
        return "ready"
    if status in _PENDING:
        return "pending"
    if status in _FAILED:
        return "failed"
    if status == "DELETING":
        return "deleting"
    return "unknown"


def poll_interval_for(timeout: float) -> float:
    """The longest pause between polls: about a dozen polls per budget, 50 ms to 5 s (the
    pauses start at 0.25 s and double up to it)."""
    return max(SHORTEST_LONGEST_PAUSE, min(READY_POLL.cap, timeout / 12))


def wait_until_ready(
    client: AgentCoreClient,
    harness_id: str,
    *,
    deadline: float,
    poll_interval: float,
    endpoint_name: str | None = DEFAULT_ENDPOINT,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Poll until the harness is ``READY`` and then its endpoint ``endpoint_name`` is too
    (None: the harness only); return the harness, or raise a named error saying which phase
    stopped where. ``progress`` hears each poll that leaves the wait going."""
    if endpoint_name is not None:
        check_endpoint_name(endpoint_name)
    poll = _Poll(harness_id, deadline, poll_interval, progress)
    harness = poll.until_ready("harness", lambda: client.get_harness(harness_id, deadline=deadline))
    if endpoint_name is not None:
        poll.until_ready(
            "endpoint",
            lambda: client.get_harness_endpoint(harness_id, endpoint_name, deadline=deadline),
            endpoint_name=endpoint_name,
        )
    poll.ready(endpoint_name)
    return harness


class _Poll:
    """One wait's deadline, pacing, elapsed time and poll count, over both phases."""

    def __init__(
        self,
        harness_id: str,
        deadline: float,
        poll_interval: float,
        progress: ProgressCallback | None,
    ) -> None:
        self.harness_id = harness_id
        self.deadline = deadline
        self.pacing = READY_POLL.but(cap=poll_interval, base=min(READY_POLL.base, poll_interval))
        self.started = time.monotonic()
        self.polls = 0
        self.progress = progress

    def report(self, endpoint_name: str | None, state: str) -> None:
        """Tell ``progress`` where the wait stands after a poll that leaves it going."""
        self._tell(f"waiting for {self._subject(endpoint_name)} to be READY ({state})")

    def ready(self, endpoint_name: str | None) -> None:
        """Tell ``progress`` the wait is over."""
        self._tell(f"{self._subject(endpoint_name)} is READY")

    def _subject(self, endpoint_name: str | None) -> str:
        harness = f"harness {self.harness_id}"
        return harness if endpoint_name is None else f"endpoint {endpoint_name} of {harness}"

    def _tell(self, what: str) -> None:
        if self.progress is not None:
            elapsed = time.monotonic() - self.started
            self.progress(Progress(what, elapsed, self.polls, unit="poll"))

    def until_ready(
        self, phase: str, read: Any, *, endpoint_name: str | None = None
    ) -> dict[str, Any]:
        status: str | None = None
        phase_polls = 0
        while True:
            if self.deadline - time.monotonic() <= 0:
                raise HarnessReadyTimeoutError(
                    self.harness_id,
                    status,
                    elapsed=time.monotonic() - self.started,
                    polls=self.polls,
                    detail="did not become READY in time",
                    endpoint_name=endpoint_name,
                )
            self.polls += 1
            phase_polls += 1
            try:
                found: dict[str, Any] = read()
            except NotFoundError:
                if endpoint_name is None:
                    raise
                # The endpoint is created after the harness; until then it is not found.
                status = None
                self.report(endpoint_name, "not created yet")
                self.pacing.wait(phase_polls - 1, limit=self.deadline - time.monotonic())
                continue
            except (RateLimitError, ServerError, TransportError) as exc:
                # A throttled or flaky control plane says nothing about the harness: keep
                # waiting while the budget lasts.
                _log.info("polling harness %s failed (%s); still waiting", self.harness_id, exc)
                self.report(endpoint_name, f"{status or 'no status'}; the last poll failed")
                pause(min(self.pacing.cap, self.deadline - time.monotonic()))
                continue
            status = str(found.get("status")) if found.get("status") is not None else None
            elapsed = time.monotonic() - self.started
            telemetry.emit(
                "provision.poll",
                {"elapsed": elapsed, "polls": self.polls},
                {"harness_id": self.harness_id, "status": status, "phase": phase},
            )
            kind = classify_status(status)
            if kind == "ready":
                return found
            if kind != "pending":
                raise _not_ready(
                    kind,
                    self.harness_id,
                    status,
                    found.get("failureReason"),
                    elapsed,
                    self.polls,
                    endpoint_name,
                )
            self.report(endpoint_name, str(status))
            # Quick harnesses are seen quickly; slow ones are not polled more than needed.
            self.pacing.wait(phase_polls - 1, limit=self.deadline - time.monotonic())


def _not_ready(
    kind: str,
    harness_id: str,
    status: str | None,
    reason: object,
    elapsed: float,
    polls: int,
    endpoint_name: str | None,
) -> HarnessNotReadyError:
    facts: dict[str, Any] = {"elapsed": elapsed, "polls": polls, "endpoint_name": endpoint_name}
    if kind == "failed":
        detail = f"failed: {reason}" if reason else "failed"
        return HarnessFailedError(harness_id, status, detail=detail, **facts)
    if kind == "deleting":
        return HarnessDeletingError(harness_id, status, detail="is being deleted", **facts)
    return HarnessUnknownStatusError(
        harness_id, status, detail="reported an unknown status", **facts
    )


def create_harness_and_wait(
    client: AgentCoreClient,
    body: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_PROVISION_TIMEOUT,
    poll_interval: float | None = None,
    endpoint_name: str | None = DEFAULT_ENDPOINT,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """``CreateHarness``, then wait for it and its endpoint ``endpoint_name`` (None: the
    harness only) to be ``READY``, within ``timeout`` seconds in total.

    Returns the ready harness. On any failure after the create, the new harness is deleted
    before the error propagates. ``progress`` hears each poll that leaves the wait going.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if endpoint_name is not None:
        check_endpoint_name(endpoint_name)
    deadline = time.monotonic() + timeout
    harness = client.create_harness(body, deadline=deadline)
    harness_id = str(harness["harnessId"])
    try:
        return wait_until_ready(
            client,
            harness_id,
            deadline=deadline,
            poll_interval=poll_interval
            if poll_interval is not None
            else poll_interval_for(timeout),
            endpoint_name=endpoint_name,
            progress=progress,
        )
    except BaseException:
        _rollback(client, harness_id)
        raise


def _rollback(client: AgentCoreClient, harness_id: str) -> None:
    try:
        client.delete_harness(harness_id, deadline=time.monotonic() + ROLLBACK_TIMEOUT)
    except ManagedAgentsError as exc:
        _log.warning("could not delete harness %s after a failed provision: %s", harness_id, exc)
