"""Leases: how a ledger record says that its owner is alive and still at work.

A claim on a tool call (and a keyed run's binding while it runs) is a record in a shared
store. A record alone cannot tell a call still running in a slow process from one whose
process died: so the owner holds a *lease* on it. The record carries ``lease`` (seconds) and
``renewed_at`` (the owner's wall clock), and :class:`Leases` renews every record it holds on
one thread, every third of the lease, by compare-and-set - so a record someone else took
over is never written again. A record whose lease lapsed is *unfinished*: its owner is gone.

Whether a lease lapsed is judged three ways (:func:`watch`):

* the record names its owner's process (boot, PID namespace, pid and start time, on Linux):
  a reader on the same machine and PID namespace sees at once that the process is gone -
  the common case of a worker killed and started again;
* a record renewed more than two leases ago by the reader's clock lapsed at once (clocks of
  the machines sharing a store must agree to within a lease);
* any other is watched on the reader's own monotonic clock, and lapsed when it has not
  changed for a whole lease.

A record written by a version without leases has none, and counts as lapsed.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from typing_extensions import TypeGuard

from req_managed_agents._redact import get_logger
from req_managed_agents.stores._base import RecordStore
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["CLAIM_POLL", "DEFAULT_LEASE", "Leases", "check_lease", "lapsed_long_ago", "watch"]

DEFAULT_LEASE = 30.0
"""Seconds a held record stays live without a renewal; it is renewed every third of it."""
# How often a reader looks again at a record held by someone else: 0.05 s growing to 1 s.
CLAIM_POLL = RetryPolicy.poll(1.0, first=0.05)
_log = get_logger(__name__)

Record = dict[str, Any]


def check_lease(lease: float) -> float:
    """``lease`` when it is a usable number of seconds (at least 0.3: renewing a third of it
    must outrun a busy machine's scheduling)."""
    if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not 0.3 <= lease < 1e9:
        raise ValueError(f"lease must be a number of seconds from 0.3 up, got {lease!r}")
    return float(lease)


def leased(record: Mapping[str, Any], lease: float) -> Record:
    """``record`` marked as held for ``lease`` seconds from now, by this process."""
    held = {**record, "lease": lease, "renewed_at": time.time()}
    process = _process_identity(os.getpid())
    if process is not None:
        held["process"] = process
    return held


def lapsed_long_ago(record: Mapping[str, Any]) -> bool:
    """Whether the record's lease (if any) has lapsed beyond doubt: its owner's process is
    seen gone from this machine, it was renewed more than two leases ago, or it never had a
    lease at all."""
    lease, renewed = record.get("lease"), record.get("renewed_at")
    if not _number(lease) or not _number(renewed):
        return True
    if _process_gone(record.get("process")):
        return True
    return time.time() - float(renewed) > 2 * float(lease)


def watch(
    read: Callable[[], Mapping[str, Any] | None],
    first: Mapping[str, Any],
    *,
    settled: Callable[[Mapping[str, Any]], bool],
    stop: threading.Event,
    deadline: float | None,
) -> tuple[Mapping[str, Any] | None, bool]:
    """Watch a record held by someone else until it is ``settled`` (finished, say), gone, or
    its lease lapses. Returns the last record read (``None``: gone) and whether it is still
    held (``True`` only when ``deadline`` - a monotonic time - came first). Stops at once,
    returning what it has, when ``stop`` is set."""
    record: Mapping[str, Any] | None = first
    changed = time.monotonic()
    attempt = 0
    while record is not None and not settled(record) and not lapsed_long_ago(record):
        lease = float(record["lease"])
        now = time.monotonic()
        if now - changed >= lease:
            return record, False
        if deadline is not None and now >= deadline:
            return record, True
        if stop.wait(CLAIM_POLL.delay(attempt)):
            return record, True
        attempt += 1
        fresh = read()
        if fresh != record:
            changed = time.monotonic()
        record = fresh
    return record, False


class Leases:
    """The records this process holds, kept alive by one renewing thread (started while it
    holds any). Every change to a held record goes through here, so a renewal and a change
    never race: each is one compare-and-set from the record last written."""

    def __init__(self, records: RecordStore, *, lease: float, ttl: float | None) -> None:
        self.lease = check_lease(lease)
        self._records = records
        self._ttl = ttl
        self._held: dict[str, Record] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def add(self, key: str, record: Mapping[str, Any]) -> Record | None:
        """Create ``key`` as a held record; the record written, or ``None`` when the key is
        taken."""
        written = leased(record, self.lease)
        if not self._records.add_record(key, written, ttl=self._ttl):
            return None
        self._hold(key, written)
        return written

    def take(self, key: str, before: Mapping[str, Any], record: Mapping[str, Any]) -> Record | None:
        """Replace ``before`` (someone else's lapsed record) with ``record``, held from now;
        ``None`` when ``before`` is not there any more."""
        written = leased(record, self.lease)
        if not self._records.replace_record(key, dict(before), written, ttl=self._ttl):
            return None
        self._hold(key, written)
        return written

    def held(self, key: str) -> Record | None:
        """The record as this process last wrote it, while it holds ``key``."""
        with self._lock:
            return self._held.get(key)

    def change(self, key: str, record: Mapping[str, Any], *, keep: bool) -> bool:
        """Replace the held record with ``record`` (held on if ``keep``, else let go of);
        False when the record was taken away meanwhile (then it is not held any more)."""
        with self._lock:
            before = self._held.pop(key, None)
            self._wake.notify_all()  # holding nothing more, the renewing thread ends now
            if before is None:
                return False
            written = leased(record, self.lease) if keep else dict(record)
            if not self._records.replace_record(key, before, written, ttl=self._ttl):
                return False
            if keep:
                self._held[key] = written
            return True

    def release(self, key: str, *, delete: bool) -> None:
        """Stop holding ``key``, deleting its record if ``delete`` (and still ours)."""
        with self._lock:
            before = self._held.pop(key, None)
            self._wake.notify_all()
            if before is not None and delete:
                self._records.delete_record(key, before)

    def _hold(self, key: str, record: Record) -> None:
        with self._lock:
            self._held[key] = record
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._renew_while_held, name="rma-ledger-leases", daemon=True
                )
                self._thread.start()
            self._wake.notify_all()

    def _renew_while_held(self) -> None:
        with self._lock:
            while self._held:
                self._wake.wait(self.lease / 3)
                for key in list(self._held):
                    self._renew(key)
            self._thread = None

    def _renew(self, key: str) -> None:
        """One renewal (lock held): a record that changed under us was taken over, and is
        not ours to renew any more."""
        before = self._held[key]
        if time.time() - float(before["renewed_at"]) < self.lease / 3:
            return
        renewed = leased(before, self.lease)
        try:
            kept = self._records.replace_record(key, before, renewed, ttl=self._ttl)
        except Exception as exc:  # the store is down: try again at the next round
            _log.warning("could not renew the lease of %s: %s", key, exc)
            return
        if kept:
            self._held[key] = renewed
            return
        _log.warning("the lease of %s was taken over: its owner here lost it", key)
        del self._held[key]


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@functools.lru_cache(maxsize=4)
def _machine() -> str | None:
    """This kernel's boot and this process's PID namespace: pids compare only within both."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return f"{boot.read().strip()}/{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return None  # not Linux (or no /proc): leases alone tell


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), None if there is none or it
    has died (a zombie waiting for its parent): with the pid, it names one process even
    after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) <= 19 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


@functools.lru_cache(maxsize=4)
def _process_identity(pid: int) -> str | None:
    machine = _machine()
    started = _start_time(pid)
    return None if machine is None or started is None else f"{machine}/{pid}/{started}"


def _process_gone(identity: object) -> bool:
    """Whether the process ``identity`` names ran on this machine and is gone."""
    if not isinstance(identity, str) or identity.count("/") != 3:
        return False
    machine = _machine()
    if machine is None:
        return False
    boot_ns, pid, started = identity.rsplit("/", 2)
    if boot_ns != machine or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started
