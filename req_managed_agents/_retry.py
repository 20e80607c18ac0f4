"""Retry and backoff policy as data.

What may be retried depends on whether a duplicate could do harm:

* an **idempotent** request (GET, DELETE, archive) is retried on connection failures, read
  timeouts and the retryable statuses;
* a **non-idempotent** request (a create, a posted message) is retried only when the failure
  proves the server did not act on it: the connection was never established, the server
  refused it up front *and said when to come back* (429, 503 or 529 with ``retry-after``:
  a bare 503 may come from a proxy that timed out while the server went on), or it named a
  throttling error code.

Waits grow exponentially with jitter up to a cap; a server's ``retry-after`` wins when given,
and a ``retry-after`` longer than :attr:`RetryPolicy.max_retry_after` is not waited out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

__all__ = ["RetryPolicy", "parse_retry_after"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry one HTTP request."""

    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
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

    def should_retry(
        self,
        status: int,
        error_type: str | None,
        *,
        idempotent: bool,
        retry_after: float | None = None,
    ) -> bool:
        """Whether an error answer is worth another attempt for this kind of request."""
        if error_type in self.never_retry_error_types:
            return False
        if error_type in self.refused_error_types:
            return True
        if idempotent:
            return status in self.retry_statuses
        return status in self.refused_statuses and retry_after is not None

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        base = min(self.backoff_cap, self.backoff_base * 2.0**attempt)
        return base * (1 - self.jitter * random.random())


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms``, then ``retry-after``)."""
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
