"""Stores: where the package remembers what must outlive a process - provisioned handles,
tool-ledger entries, batch progress.

Keys are namespaced strings (``provision:<hash>``, ``ledger:<session>:<call>``, ...); values
are JSON values. A store may also offer ``lock()``, a context manager that makes a
read-check-write sequence atomic across everyone sharing the store.

Values must be JSON: ``put`` raises ``TypeError`` for a value JSON cannot hold and
``ValueError`` for a non-finite float or a value nesting too deeply, before anything is
written.

A store may also be a :class:`RecordStore`: records are claimed and changed one key at a time
by compare-and-set, without the store-wide lock (which provisioning holds across HTTP calls),
and may expire. The tool ledger keeps its entries there.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "LOCK_TIMEOUT",
    "RecordStore",
    "Store",
    "check_group",
    "check_ttl",
    "expected_text",
    "json_copy",
    "record_group",
    "record_text",
    "store_lock",
    "strict_json",
]

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


@runtime_checkable
class RecordStore(Protocol):
    """Records: keys claimed and changed one at a time by compare-and-set, each may expire.

    A record is created only where no live record holds its key, and replaced or deleted only
    while it still holds the value the caller last saw - atomically, as far as the store
    reaches (threads, processes, machines), and without the store-wide ``lock()``. That makes
    them the place for "run this exactly once" claims: the cost of one call does not grow with
    the number of records, and a caller never waits for a provision.

    Keys are strings such as ``ledger:<session id>:<tool call id>``; a key's *group* is its
    text up to and including its last ``:`` (``ledger:sess_1:``; ``""`` for a key without
    one), and :meth:`delete_records` forgets a group at once. Values follow the rules of
    ``Store.put`` (``TypeError``/``ValueError`` before anything is written), except that
    ``None`` is refused, since ``get_record`` answers ``None`` for "no record". Two values are
    equal when their canonical JSON texts are (sorted keys, no spaces): key order does not
    matter, but ``1``, ``1.0`` and ``true`` differ. ``ttl`` is seconds from the write (``None``:
    never expires; otherwise a finite number > 0). An expired record is let go of whether or
    not anyone asks for it again: the package's stores sweep them a little at a time, paid
    for by the writes. Records are a namespace of their own: ``get``, ``put``, ``delete`` and
    ``delete_value`` never see them.
    """

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        ...

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        ...

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        ...

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        ...

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
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


def record_text(value: Any) -> str:
    """The canonical JSON text of a record's value (sorted keys, no spaces, UTF-8 encodable),
    so that equal values have equal text - which is how every store compares them."""
    if value is None:
        raise ValueError("a record's value cannot be None: get_record answers None for no record")
    copied = json_copy(value)
    text = json.dumps(copied, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be stored
        return json.dumps(copied, sort_keys=True, separators=(",", ":"))
    return text


def expected_text(expected: Any) -> str | None:
    """The canonical text a compare-and-set compares with; None (which no record holds)
    matches nothing."""
    return None if expected is None else record_text(expected)


def record_group(key: str) -> str:
    """The group of a record key: its text up to and including its last ``:``."""
    if not isinstance(key, str):
        raise TypeError(f"a record key must be a str, not {type(key).__name__}")
    return key[: key.rfind(":") + 1]


def check_group(group: str) -> str:
    """``group`` when it can name a group (a str ending with ``:``)."""
    if not isinstance(group, str):
        raise TypeError(f"a record group must be a str, not {type(group).__name__}")
    if not group.endswith(":"):
        raise ValueError(f"a record group ends with ':' (like 'ledger:sess_1:'), got {group!r}")
    return group


def check_ttl(ttl: float | None) -> float | None:
    """``ttl`` when it is None or a finite number of seconds > 0."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"ttl must be a number of seconds or None, not {type(ttl).__name__}")
    if not 0 < ttl < math.inf:
        raise ValueError(f"ttl must be a finite number of seconds > 0, got {ttl!r}")
    return float(ttl)


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
