"""The in-process store."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from req_managed_agents.stores._base import (
    check_group,
    check_ttl,
    expected_text,
    json_copy,
    record_group,
    record_text,
    strict_json,
)

__all__ = ["MemoryStore"]

# Expired records are swept once the writes since the last sweep reach the number of records
# that sweep left (and at least this many): each sweep costs one pass over the records, so a
# write pays O(1) for it, and the records held - live or expired - stay below twice the live
# ones at the last sweep, plus this.
SWEEP_AFTER = 64


@dataclass(frozen=True)
class _Record:
    """One record: its canonical text and when (monotonic time) it expires, if ever."""

    text: str
    expires_at: float | None

    def live(self, now: float) -> bool:
        return self.expires_at is None or now < self.expires_at


class MemoryStore:
    """A thread-safe in-process store (forgotten when the process ends).

    Records (:class:`~req_managed_agents.stores.RecordStore`) have a lock of their own, held
    only for a dictionary step, so a claim never waits for a provision holding ``lock()``.
    Expired records are dropped when read, and by a sweep the writes pay for (see
    ``SWEEP_AFTER``), so a record nobody asks for again does not outlive its TTL for long.
    """

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._groups: dict[str, dict[str, _Record]] = {}
        self._records_lock = threading.Lock()
        self._writes = 0
        self._sweep_after = SWEEP_AFTER

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._data)} keys)"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store exclusively while the block runs."""
        with self._lock:
            yield

    def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        with self._lock:
            return json_copy(self._data.get(key))

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key``."""
        with self._lock:
            self._data[key] = json_copy(value)

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        with self._lock:
            self._data.pop(key, None)

    def delete_value(self, value: Any) -> None:
        """Remove every key whose value equals ``value``."""
        normalised = json_copy(value)
        with self._lock:
            for key in [k for k, v in self._data.items() if v == normalised]:
                del self._data[key]

    # -- records ----------------------------------------------------------------------------

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        group, text, ttl = record_group(key), record_text(value), check_ttl(ttl)
        with self._records_lock:
            now = time.monotonic()
            records = self._groups.setdefault(group, {})
            found = records.get(key)
            if found is not None and found.live(now):
                return False
            records[key] = _Record(text, None if ttl is None else now + ttl)
            self._wrote(now)
            return True

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        group = record_group(key)
        with self._records_lock:
            records = self._groups.get(group, {})
            found = records.get(key)
            if found is None:
                return None
            if not found.live(time.monotonic()):
                self._forget(group, key)
                return None
        return strict_json(found.text)

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        group, text, ttl = record_group(key), record_text(value), check_ttl(ttl)
        old = expected_text(expected)
        with self._records_lock:
            now = time.monotonic()
            records = self._groups.get(group, {})
            found = records.get(key)
            if found is None or not found.live(now) or found.text != old:
                return False
            records[key] = _Record(text, None if ttl is None else now + ttl)
            self._wrote(now)
            return True

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        group, old = record_group(key), expected_text(expected)
        with self._records_lock:
            records = self._groups.get(group, {})
            found = records.get(key)
            if found is None or not found.live(time.monotonic()) or found.text != old:
                return False
            self._forget(group, key)
            return True

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
        check_group(group)
        with self._records_lock:
            records = self._groups.pop(group, {})
            now = time.monotonic()
            return sum(record.live(now) for record in records.values())

    def _wrote(self, now: float) -> None:
        """Count a write; sweep when enough were made (the caller holds the records lock)."""
        self._writes += 1
        if self._writes < self._sweep_after:
            return
        held = 0
        for group in list(self._groups):
            records = self._groups[group]
            for key in [key for key, record in records.items() if not record.live(now)]:
                del records[key]
            if records:
                held += len(records)
            else:
                del self._groups[group]
        self._writes = 0
        self._sweep_after = max(SWEEP_AFTER, held)

    def _forget(self, group: str, key: str) -> None:
        """Drop one record, and its group once empty (the caller holds the records lock)."""
        records = self._groups[group]
        del records[key]
        if not records:
            del self._groups[group]
