"""The in-process store."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from req_managed_agents.stores._base import json_copy

__all__ = ["MemoryStore"]


class MemoryStore:
    """A thread-safe in-process store (forgotten when the process ends)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.RLock()

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
