"""The one retry and backoff policy: how every retry and poll loop in the package paces itself.

Every loop that waits before trying again - an HTTP request, a stream reconnect, a resent
tool result, a retried invocation, a batch prompt held back by a rate limit, a harness or
endpoint coming up, a store lock, a deletion settling - names its own :class:`RetryPolicy`
at the top of its module and asks it for each delay. This module is the only place that
computes a delay or reads ``retry-after``, so no loop can wait a day because a server said so.

What may be retried depends on whether a duplicate could do harm:

* an **idempotent** request (GET, DELETE, archive) is retried on connection failures, read
  timeouts and the retryable statuses;
* a **non-idempotent** request (a create, a posted message) is retried only when the failure
  proves the server did not act on it: the connection was never established, the server
  refused it up front *and said when to come back* (429, 503 or 529 with ``retry-after``:
  a bare 503 may come from a proxy that timed out while the server went on), or it named a
  throttling error code.

The server has the last word where it speaks: ``x-should-retry: false`` (as the Anthropic API
sends it) forbids a retry, ``x-should-retry: true`` allows one for an idempotent request or a
refusal. Waits grow by ``multiplier`` from ``base`` up to ``cap``, less up to ``jitter`` of
themselves at random; a server's ``retry-after`` wins when given, and one longer than
``max_retry_after`` is not waited out at all (the loop gives up and reports the error).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["RetryPolicy", "SendBudget", "parse_retry_after", "parse_should_retry", "pause"]

# Our own generator: jitter must not advance the caller's global ``random`` stream (a user's
# seeded simulation, or hypothesis, would see its sequence change under a background retry).
_JITTER = random.Random()


@dataclass(frozen=True)
class RetryPolicy:
    """How patiently one loop retries: data, asked for each delay (see the module docs)."""

    max_retries: int = 2
    base: float = 0.5
    cap: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    retry_statuses: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504, 529})
    # Statuses that mean "refused before doing anything", safe to retry for any request.
    refused_statuses: frozenset[int] = frozenset({429, 503, 529})
    # Provider error codes that no amount of waiting fixes (a monthly spend cap, say).
    never_retry_error_types: frozenset[str] = frozenset({"enforced_spend_limit_reached"})
    # Provider error codes that mean "refused before acting", whatever the status (AWS may
    # throttle with a 400).
    refused_error_types: frozenset[str] = frozenset(
        {"ThrottlingException", "TooManyRequestsException", "ServiceUnavailableException"}
    )

    @classmethod
    def poll(cls, interval: float, *, first: float | None = None) -> RetryPolicy:
        """A poll loop's pacing: ``first`` (default ``interval``) doubling up to ``interval``,
        no jitter; it runs until its caller's deadline."""
        start = interval if first is None else min(first, interval)
        return cls(max_retries=0, base=start, cap=interval, jitter=0.0)

    def but(self, **changes: Any) -> RetryPolicy:
        """A copy with some fields changed (e.g. ``max_retries`` from a caller's option)."""
        return replace(self, **changes)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based): the server's
        ``retry-after`` when given, else the growing, jittered backoff."""
        if retry_after is not None:
            return max(0.0, retry_after)
        grown = min(self.cap, self.base * self.multiplier ** min(attempt, 64))
        return grown * (1 - self.jitter * _JITTER.random())

    def honours(self, retry_after: float | None) -> bool:
        """Whether a server's requested wait is one this loop will wait out."""
        return retry_after is None or retry_after <= self.max_retry_after

    def should_retry(
        self,
        status: int,
        error_type: str | None,
        *,
        idempotent: bool,
        retry_after: float | None = None,
        server_says: bool | None = None,
    ) -> bool:
        """Whether an error answer is worth another attempt for this kind of request.
        ``server_says`` is the answer's ``x-should-retry`` (:func:`parse_should_retry`)."""
        if not self.honours(retry_after) or server_says is False:
            return False
        if error_type in self.never_retry_error_types:
            return False
        if error_type in self.refused_error_types:
            return True
        refused = status in self.refused_statuses and retry_after is not None
        if server_says is True:
            return idempotent or refused
        if idempotent:
            return status in self.retry_statuses
        return refused

    def wait(
        self,
        attempt: int,
        retry_after: float | None = None,
        *,
        stop: threading.Event | None = None,
        limit: float | None = None,
    ) -> bool:
        """Sleep before retry ``attempt``, never longer than ``limit`` seconds (what is left
        of the caller's deadline); ``False`` if ``stop`` was set meanwhile. An Event wait,
        so Ctrl-C in the main thread interrupts it at once."""
        seconds = self.delay(attempt, retry_after)
        return pause(seconds if limit is None else min(seconds, limit), stop)


class SendBudget:
    """How many more times one input may go out, counted across every layer that sends it.

    Retry loops nest: the HTTP client retries a request, a delivery resends an input whose
    answer was lost, a result that overtook its call is posted again. Each asks the same
    budget before it sends, so one input never goes out more than ``sends`` times in all -
    the named maximum of the loop that owns it - however the layers' own policies add up.
    Thread-safe.
    """

    def __init__(self, sends: int) -> None:
        if sends < 1:
            raise ValueError("a send budget allows at least one send")
        self.sends = sends
        self._left = sends
        self._lock = threading.Lock()

    @property
    def left(self) -> int:
        """Sends not spent yet."""
        with self._lock:
            return self._left

    def spend(self) -> bool:
        """Take one send; False when none is left (then nothing may go out)."""
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def pause(seconds: float, stop: threading.Event | None = None) -> bool:
    """Sleep ``seconds`` unless ``stop`` is set first (then ``False``)."""
    return not (stop or threading.Event()).wait(max(0.0, seconds))


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms``, then ``retry-after`` as
    seconds or an HTTP date); ``None`` when it asked for nothing readable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def parse_should_retry(headers: Mapping[str, str]) -> bool | None:
    """The server's ``x-should-retry`` verdict: ``True``, ``False`` or ``None`` (unsaid)."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(value)
