"""Bringing an AgentCore harness to ``READY`` within one wall-clock budget.

There is no waiter for harnesses, so we poll ``GetHarness``. Statuses are open strings:
``READY`` ends the wait; ``CREATING``/``UPDATING`` continue it; a ``*_FAILED`` status,
``DELETING`` (it can never become ready) or any status we do not know end it with a named
error at once. One monotonic deadline covers the create, every poll and every request
timeout, so a caller's budget is never overrun by a poll cadence or a slow request. A harness
this call created and could not bring to ``READY`` is deleted (best effort, with its own small
budget) before the error is raised: a failed provision leaves nothing billable behind.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents.errors import (
    HarnessDeletingError,
    HarnessFailedError,
    HarnessNotReadyError,
    HarnessReadyTimeoutError,
    HarnessUnknownStatusError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers.agentcore._client import AgentCoreClient
from req_managed_agents.transport._backoff import RetryPolicy, pause
from req_managed_agents.transport._redact import get_logger

__all__ = [
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
) -> dict[str, Any]:
    """Poll until the harness is ``READY`` (returned) or a named error says why not."""
    pacing = READY_POLL.but(cap=poll_interval, base=min(READY_POLL.base, poll_interval))
    started = time.monotonic()
    polls = 0
    status: str | None = None
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HarnessReadyTimeoutError(
                harness_id,
                status,
                elapsed=time.monotonic() - started,
                polls=polls,
                detail="did not become READY in time",
            )
        try:
            harness = client.get_harness(harness_id, deadline=deadline)
        except (RateLimitError, ServerError, TransportError) as exc:
            # A throttled or flaky control plane says nothing about the harness: keep
            # waiting while the budget lasts.
            polls += 1
            _log.info("polling harness %s failed (%s); still waiting", harness_id, exc)
            pause(min(pacing.cap, deadline - time.monotonic()))
            continue
        polls += 1
        status = str(harness.get("status")) if harness.get("status") is not None else None
        elapsed = time.monotonic() - started
        telemetry.emit(
            "provision.poll",
            {"elapsed": elapsed, "polls": polls},
            {"harness_id": harness_id, "status": status},
        )
        kind = classify_status(status)
        if kind == "ready":
            return harness
        if kind != "pending":
            raise _not_ready(kind, harness_id, status, harness.get("failureReason"), elapsed, polls)
        # Quick harnesses are seen quickly; slow ones are not polled more than needed.
        pacing.wait(polls - 1, limit=deadline - time.monotonic())


def _not_ready(
    kind: str, harness_id: str, status: str | None, reason: object, elapsed: float, polls: int
) -> HarnessNotReadyError:
    if kind == "failed":
        detail = f"failed: {reason}" if reason else "failed"
        return HarnessFailedError(harness_id, status, elapsed=elapsed, polls=polls, detail=detail)
    if kind == "deleting":
        return HarnessDeletingError(
            harness_id, status, elapsed=elapsed, polls=polls, detail="is being deleted"
        )
    return HarnessUnknownStatusError(
        harness_id, status, elapsed=elapsed, polls=polls, detail="reported an unknown status"
    )


def create_harness_and_wait(
    client: AgentCoreClient,
    body: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_PROVISION_TIMEOUT,
    poll_interval: float | None = None,
) -> dict[str, Any]:
    """``CreateHarness``, then wait for ``READY`` within ``timeout`` seconds in total.

    Returns the ready harness. On any failure after the create, the new harness is deleted
    before the error propagates.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
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
        )
    except BaseException:
        _rollback(client, harness_id)
        raise


def _rollback(client: AgentCoreClient, harness_id: str) -> None:
    try:
        client.delete_harness(harness_id, deadline=time.monotonic() + ROLLBACK_TIMEOUT)
    except ManagedAgentsError as exc:
        _log.warning("could not delete harness %s after a failed provision: %s", harness_id, exc)
