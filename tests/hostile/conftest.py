"""The hostile-answer sweep's fixtures: the fault matrix's fast backoff (a missing name fails
there), so that a run which gives up or recovers does it quickly."""

from __future__ import annotations

from tests.faults.conftest import fast_backoff

__all__ = ["fast_backoff"]
