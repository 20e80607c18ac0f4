"""Records on any store: the forwarding the package's stores share, and the fallback that
keeps records in a plain :class:`Store`.

:func:`records_of` is how a caller (the tool ledger) gets records from whatever store it was
given: the store itself when it is a :class:`RecordStore` (``MemoryStore``, ``FileStore``,
``RedisStore``), else :class:`_PlainStoreRecords`. That fallback is correct but not
contention-free: every record call runs under the store's ``lock()`` (which provisioning may
hold across HTTP calls), and it is atomic only as far as that lock reaches - a store without
``lock()`` gives no atomicity at all.
"""

from __future__ import annotations

import time
from typing import Any

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores._base import (
    RecordStore,
    Store,
    check_group,
    check_ttl,
    expected_text,
    record_group,
    record_text,
    store_lock,
    strict_json,
)

__all__ = ["DelegatedRecords", "records_of"]


def records_of(store: Store) -> RecordStore:
    """Records kept in ``store``: itself when it is a RecordStore, else the fallback."""
    if isinstance(store, RecordStore):
        return store
    return _PlainStoreRecords(store)


class DelegatedRecords:
    """The record methods of a store whose records are kept by ``self._records``, so that the
    record machinery's private names stay out of the store class."""

    _records: RecordStore

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        return self._records.add_record(key, value, ttl=ttl)

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        return self._records.get_record(key)

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        return self._records.replace_record(key, expected, value, ttl=ttl)

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        return self._records.delete_record(key, expected)

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
        return self._records.delete_records(group)


class _PlainStoreRecords:
    """Records as plain keys of a store that has none of its own: ``records:<key>`` holds
    ``{"value": ..., "expires_at": epoch seconds or null}`` and ``record-groups:<group>`` the
    sorted keys of the group, all changed under ``store_lock``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __repr__(self) -> str:
        return f"records in {self.store!r}"

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        group, text, ttl = record_group(key), record_text(value), check_ttl(ttl)
        with store_lock(self.store):
            if self._live(key) is not None:
                return False
            self._write(key, text, ttl)
            keys = self.store.get(_group_key(group)) or []
            if key not in keys:
                self.store.put(_group_key(group), sorted([*keys, key]))
            return True

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        record_group(key)  # the same refusals as the other stores
        found = self._live(key)
        return None if found is None else found["value"]

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        record_group(key)
        text, ttl, old = record_text(value), check_ttl(ttl), expected_text(expected)
        with store_lock(self.store):
            found = self._live(key)
            if found is None or record_text(found["value"]) != old:
                return False
            self._write(key, text, ttl)
            return True

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        group, old = record_group(key), expected_text(expected)
        with store_lock(self.store):
            found = self._live(key)
            if found is None or record_text(found["value"]) != old:
                return False
            self.store.delete(_record_key(key))
            keys = [k for k in self.store.get(_group_key(group)) or [] if k != key]
            if keys:
                self.store.put(_group_key(group), keys)
            else:
                self.store.delete(_group_key(group))
            return True

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
        check_group(group)
        with store_lock(self.store):
            live = 0
            for key in self.store.get(_group_key(group)) or []:
                live += self._live(key) is not None
                self.store.delete(_record_key(key))
            self.store.delete(_group_key(group))
            return live

    def _live(self, key: str) -> dict[str, Any] | None:
        """The live record of ``key``; a ProvisioningError when its key holds something else
        (never treated as absent: it may be a claim)."""
        found = self.store.get(_record_key(key))
        if found is None:
            return None
        expires_at = found.get("expires_at") if isinstance(found, dict) else None
        if (
            not isinstance(found, dict)
            or set(found) != {"value", "expires_at"}
            or found["value"] is None
            or not (expires_at is None or isinstance(expires_at, (int, float)))
        ):
            raise ProvisioningError(
                f"the store key {_record_key(key)!r} of {self.store!r} does not hold a record "
                '({"value": ..., "expires_at": ...}); fix or delete it'
            )
        return found if expires_at is None or time.time() < expires_at else None

    def _write(self, key: str, text: str, ttl: float | None) -> None:
        expires_at = None if ttl is None else time.time() + ttl
        self.store.put(_record_key(key), {"value": strict_json(text), "expires_at": expires_at})


def _record_key(key: str) -> str:
    return f"records:{key}"


def _group_key(group: str) -> str:
    return f"record-groups:{group}"
