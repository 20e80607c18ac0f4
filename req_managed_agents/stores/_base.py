"""Stores: where the package remembers what must outlive a process - provisioned handles,
tool-ledger entries, batch progress.

Keys are namespaced strings (``provision:<hash>``, ``ledger:<session>:<call>``, ...); values
are JSON values. A store may also offer ``lock()``, a context manager that makes a
read-check-write sequence atomic across everyone sharing the store.

Values must be JSON: ``put`` raises ``TypeError`` for a value JSON cannot hold and
``ValueError`` for a non-finite float or a value nesting too deeply, before anything is
written.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = ["LOCK_TIMEOUT", "Store", "json_copy", "store_lock", "strict_json"]

# How long to wait for another process to release the store: provisioning holds it across
# the provider calls (a harness may take minutes to become ready), so be patient.
LOCK_TIMEOUT = 600.0


@runtime_checkable
class Store(Protocol):
    """A key-value store for provisioning records (JSON values)."""

    def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        ...

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key``."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        ...

    def delete_value(self, value: Any) -> None:
        """Remove every key whose value equals ``value``."""
        ...


@contextlib.contextmanager
def store_lock(store: Store) -> Iterator[None]:
    """The store's own lock when it has one; otherwise a no-op."""
    lock = getattr(store, "lock", None)
    if lock is None:
        yield
        return
    with lock():
        yield


def json_copy(value: Any) -> Any:
    """A JSON round trip: what comes out is what a FileStore would give back."""
    if value is None:
        return None
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except RecursionError:
        raise ValueError("a store value nests too deeply to be stored as JSON") from None
    except ValueError as exc:
        raise ValueError(f"a store value must be JSON: {exc}") from None


def strict_json(text: str) -> Any:
    """Parse stored JSON, refusing what Python's parser takes but JSON does not allow
    (``NaN``, ``Infinity``, a number too large for a float)."""
    return json.loads(text, parse_float=_finite_float, parse_constant=_not_json)


def _finite_float(text: str) -> float:
    """A JSON number as a float, refusing one too large (Python would read ``1e999`` as inf)."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text} is out of range")
    return number


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")
