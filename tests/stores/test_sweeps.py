"""Expired records are let go of by every store, whether or not anyone reads them again:
MemoryStore frees them, FileStore removes their files (and the group folders they leave
empty) from disk - also while other processes write to the same folder - and RedisStore's
group sets drop the members whose records the server expired. Each sweep is paid for a
little at a time by the writes, never by a thread of its own."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.stores import FileStore, MemoryStore, RedisStore
from req_managed_agents.stores import _memory as memory_module

EXPIRED = 0.6  # how long a test waits for a record with a 0.2 s TTL: generous on a busy host
BIG = "x" * 10_000


def traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def record_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.json")) if root.exists() else []


class _Clock:
    """The memory store's monotonic clock, moved by the test: adding 2000 records under
    tracemalloc on a busy machine may outlast any real TTL short enough to wait for."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_memory_store_frees_expired_records_that_are_never_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(memory_module, "time", clock)
    store = MemoryStore()
    threads = threading.active_count()
    tracemalloc.start()
    try:
        before = traced()
        for n in range(2000):
            store.add_record(f"ledger:s{n}:c1", BIG, ttl=1.0)
        assert traced() - before > 2000 * 10_000, "the records are held while they live"
        clock.now += 1.5
        store.add_record("ledger:kept:c1", 0)
        for n in range(2000):  # the writes that pay for the sweep: none reads the old keys
            assert store.replace_record("ledger:kept:c1", n, n + 1) is True
        held = traced() - before
    finally:
        tracemalloc.stop()
    assert held < 500_000, f"{held} bytes still held after every record expired"
    assert store.get_record("ledger:kept:c1") == 2000
    assert threading.active_count() == threads, "no sweeping thread"


def test_a_file_store_removes_expired_record_files_and_emptied_groups(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    root = tmp_path / "store.json.records"
    for n in range(200):
        store.add_record(f"ledger:s{n}:c1", BIG, ttl=0.2)
    store.add_record("ledger:s0:live", "kept", ttl=600)  # keeps its group
    store.add_record("ledger:forever:c1", "kept")
    time.sleep(EXPIRED)
    for n in range(100):  # adds pay for the sweep; none reads the expired keys
        store.add_record(f"other:{n % 5}", "v")
    assert sorted(p.parent.name for p in record_files(root)) == sorted(
        [root_name(store, g) for g in ["ledger:s0:", "ledger:forever:"]]
        + [root_name(store, "other:")] * 5
    )
    assert len(list(root.iterdir())) == 3, "the emptied group folders are gone"
    assert store.get_record("ledger:s0:live") == "kept"
    assert store.get_record("ledger:forever:c1") == "kept"


def root_name(store: FileStore, group: str) -> str:
    return store._records._folder(group).name  # type: ignore[attr-defined]


def test_one_add_sweeps_a_bounded_number_of_entries_however_many_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from req_managed_agents.stores import _file_sweep

    store = FileStore(tmp_path / "store.json")
    with monkeypatch.context() as fast:
        fast.setattr(os, "fsync", lambda descriptor: None)
        fast.setattr(_file_sweep, "SWEEP_STEP", 0)  # the walk begins below, where it is counted
        for i in range(2000):
            store.add_record(f"ledger:s{i % 20}:c{i}", {"i": i}, ttl=600)
    seen: list[str] = []
    scandir = os.scandir

    class Counted:
        def __init__(self, path: Any) -> None:
            self._inner = scandir(path)

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self._inner.close()

        def __iter__(self) -> Counted:
            return self

        def __next__(self) -> Any:
            entry = next(self._inner)
            seen.append(entry.name)
            return entry

        def close(self) -> None:
            self._inner.close()

    monkeypatch.setattr(os, "scandir", Counted)
    for n in range(50):
        before = len(seen)
        store.add_record(f"new:{n}", "v")
        assert len(seen) - before <= _file_sweep.SWEEP_STEP + 1  # the walk reads one ahead
    assert len(seen) >= 50 * _file_sweep.SWEEP_STEP, "each add paid its part"
    assert len(record_files(tmp_path / "store.json.records")) == 2050


SWEEPER = textwrap.dedent(
    """
    import os, sys, time
    from req_managed_agents.stores import FileStore
    store = FileStore(sys.argv[1])
    done, deadline = sys.argv[2], time.monotonic() + 120  # until the writer is done
    n = 0
    while not os.path.exists(done) and time.monotonic() < deadline:
        n += 1
        store.add_record(f"sweeper:{n % 50}", "v", ttl=0.01)  # expires at once: more to sweep
    """
)


def test_sweeping_processes_never_remove_a_record_another_process_just_wrote(
    tmp_path: Path,
) -> None:
    """Records expiring and being written again, groups emptied and written to again, in
    one process while two others sweep the same folder as hard as they can: every record
    the writer holds is there at the end, with its value."""
    path, done = tmp_path / "store.json", tmp_path / "writer-done"
    sweepers = [
        subprocess.Popen([sys.executable, "-c", SWEEPER, str(path), str(done)]) for _ in range(2)
    ]
    store = FileStore(path)
    held: dict[str, str] = {}
    try:
        for n in range(1, 301):  # a fixed amount of racing, however busy the machine is
            group = f"g{n % 7}:"
            # Expires at once, then is written again over the expired file.
            assert store.add_record(f"{group}again{n % 11}", "gone", ttl=0.001) is True
            time.sleep(0.002)
            assert store.add_record(f"{group}again{n % 11}", f"v{n}", ttl=600) is True
            held[f"{group}again{n % 11}"] = f"v{n}"
            assert store.delete_record(f"{group}again{n % 11}", f"v{n}") is True
            del held[f"{group}again{n % 11}"]
            # A group emptied (so a sweep may remove its folder), then written to again.
            assert store.add_record(f"{group}k{n}", n, ttl=600) is True
            held[f"{group}k{n}"] = str(n)
            if n % 3 == 0:
                assert store.delete_record(f"{group}k{n}", n) is True
                del held[f"{group}k{n}"]
            assert store.replace_record(f"{group}k{n}", n, str(n)) is (n % 3 != 0)
    finally:
        done.touch()
        for sweeper in sweepers:
            assert sweeper.wait(60) == 0
    missing = {key: value for key, value in held.items() if store.get_record(key) != value}
    assert missing == {}


def test_a_redis_group_set_drops_the_members_whose_records_expired(
    redis_url: str, redis_prefix: str
) -> None:
    import redis

    store = RedisStore(redis_url, prefix=redis_prefix)
    raw = redis.Redis.from_url(redis_url)
    group = f"{redis_prefix}recs:ledger-runs:"
    try:
        store.add_record("ledger-runs:first", "v", ttl=600)  # keeps the set alive throughout
        for n in range(300):
            store.add_record(f"ledger-runs:old{n}", "v", ttl=600)
        assert raw.scard(group) == 301
        for n in range(300):  # the server expires them, however long the writes took
            raw.pexpire(f"{redis_prefix}rec:ledger-runs:old{n}", 1)
        deadline = time.monotonic() + 30
        while raw.exists(*[f"{redis_prefix}rec:ledger-runs:old{n}" for n in range(300)]):
            assert time.monotonic() < deadline, "the server did not expire the records"
            time.sleep(0.01)
        for n in range(300):  # one long-lived group: its set never expires while in use
            store.add_record(f"ledger-runs:new{n}", "v", ttl=600)
        members = raw.scard(group)
        assert members <= 301 + 60, f"{members} members for 301 live records"
        assert raw.pttl(group) > 500_000
        for n in range(300):
            assert store.get_record(f"ledger-runs:new{n}") == "v"
    finally:
        raw.close()


def test_a_redis_group_set_pruned_empty_starts_again_with_an_expiry(
    redis_url: str, redis_prefix: str
) -> None:
    import redis

    store = RedisStore(redis_url, prefix=redis_prefix)
    raw = redis.Redis.from_url(redis_url)
    group = f"{redis_prefix}recs:g:"
    try:
        store.add_record("g:1", "v", ttl=600)
        assert store.replace_record("g:1", "v", "w", ttl=0.2) is True  # the set keeps 600 s
        time.sleep(EXPIRED)
        store.add_record("g:2", "v", ttl=10)  # prunes g:1, emptying the set first
        assert raw.smembers(group) == {f"{redis_prefix}rec:g:2".encode()}
        assert 0 < raw.pttl(group) <= 10_000, "never a set without an expiry"
    finally:
        raw.close()
