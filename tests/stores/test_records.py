"""The RecordStore contract, one suite over every store that keeps records: MemoryStore,
FileStore, RedisStore (the session's own redis-server, see tests/conftest.py) and the fallback
over a plain Store. Then real processes racing for the same records, and records never waiting
for the store-wide lock."""

from __future__ import annotations

import contextlib
import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.stores import FileStore, MemoryStore, RecordStore, RedisStore, Store
from req_managed_agents.stores._base import json_copy
from req_managed_agents.stores._records import records_of

EXPIRED = 0.6  # how long a test waits for a record with a 0.2 s TTL: generous on a busy host


class PlainStore:
    """Only what a user's own store might offer: the Store protocol and a lock."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self._lock = threading.RLock()

    def lock(self) -> threading.RLock:
        return self._lock

    def get(self, key: str) -> Any:
        return json_copy(self.data.get(key))

    def put(self, key: str, value: Any) -> None:
        self.data[key] = json_copy(value)

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def delete_value(self, value: Any) -> None:
        for key in [k for k, v in self.data.items() if v == json_copy(value)]:
            del self.data[key]


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind == "file":
        return FileStore(tmp_path / "store.json")
    if kind == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        return RedisStore(url, prefix=prefix)
    return PlainStore()


@pytest.fixture(params=["memory", "file", "redis", "adapter"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """The store itself: its plain keys are what records must never meet."""
    return make_store(kind, request, tmp_path)


@pytest.fixture
def records(store: Any) -> RecordStore:
    return records_of(store)


# --- what each store is -----------------------------------------------------------------------


def test_every_store_is_a_record_store_and_a_plain_one_gets_the_fallback(
    kind: str, store: Any, records: RecordStore
) -> None:
    assert isinstance(records, RecordStore)
    assert isinstance(store, Store)
    if kind == "adapter":
        assert not isinstance(store, RecordStore)
        assert records is not store
    else:
        assert records is store


# --- add, get, replace, delete ----------------------------------------------------------------


def test_add_creates_once_and_get_reads_the_live_value(records: RecordStore) -> None:
    assert records.get_record("ledger:s1:c1") is None
    assert records.add_record("ledger:s1:c1", {"state": "started", "owner": "a"}) is True
    assert records.add_record("ledger:s1:c1", {"state": "started", "owner": "b"}) is False
    assert records.get_record("ledger:s1:c1") == {"state": "started", "owner": "a"}
    assert records.add_record("ledger:s1:c2", "other") is True
    assert records.get_record("ledger:s1:c2") == "other"


def test_values_come_back_as_copies_after_a_json_round_trip(records: RecordStore) -> None:
    value: dict[Any, Any] = {"ids": ["a"], "tuple": (1, 2), 3: "int key"}
    records.add_record("k:1", value)
    value["ids"].append("mutated after add")
    got = records.get_record("k:1")
    assert got == {"ids": ["a"], "tuple": [1, 2], "3": "int key"}
    got["ids"].append("mutated after get")
    assert records.get_record("k:1") == {"ids": ["a"], "tuple": [1, 2], "3": "int key"}


@pytest.mark.parametrize(
    "value",
    [True, 0, -1.5, "", "text \u00e9", "lone \ud800", [], {}, [1, [2, {"x": None}]]],
    ids=repr,
)
def test_json_values_round_trip(records: RecordStore, value: Any) -> None:
    assert records.add_record("k:v", value)
    assert records.get_record("k:v") == value
    assert records.replace_record("k:v", value, [value]) is True
    assert records.get_record("k:v") == [value]


def test_any_text_is_a_key(records: RecordStore) -> None:
    for key in ["no group", "caf\u00e9:\u00e9t\u00e9", "lone:\udcff", ":", "a:b:c:"]:
        assert records.add_record(key, key) is True
        assert records.get_record(key) == key


def test_replace_acts_only_on_the_expected_live_value(records: RecordStore) -> None:
    assert records.replace_record("k:1", "anything", "new") is False  # absent
    assert records.get_record("k:1") is None
    records.add_record("k:1", {"a": 1, "b": [1, 2]})
    assert records.replace_record("k:1", {"a": 1}, "new") is False
    assert records.replace_record("k:1", None, "new") is False  # no record holds None
    assert records.get_record("k:1") == {"a": 1, "b": [1, 2]}
    assert records.replace_record("k:1", {"b": (1, 2), "a": 1}, "new") is True  # JSON-equal
    assert records.get_record("k:1") == "new"
    assert records.replace_record("k:1", {"a": 1, "b": [1, 2]}, "newer") is False  # stale


@pytest.mark.parametrize(
    ("stored", "expected"),
    [(1, 1.0), (1, True), (0, False), ("1", 1), ([1], (1.0,))],
    ids=repr,
)
def test_equal_means_the_same_canonical_json(
    records: RecordStore, stored: Any, expected: Any
) -> None:
    records.add_record("k:1", stored)
    assert records.replace_record("k:1", expected, "changed") is False
    assert records.delete_record("k:1", expected) is False
    assert records.get_record("k:1") == stored


def test_delete_acts_only_on_the_expected_live_value(records: RecordStore) -> None:
    assert records.delete_record("k:1", "v") is False  # absent
    records.add_record("k:1", {"n": 1})
    assert records.delete_record("k:1", {"n": 2}) is False
    assert records.delete_record("k:1", None) is False
    assert records.get_record("k:1") == {"n": 1}
    assert records.delete_record("k:1", {"n": 1}) is True
    assert records.get_record("k:1") is None
    assert records.delete_record("k:1", {"n": 1}) is False
    assert records.add_record("k:1", "again") is True  # a deleted key can be claimed again
    assert records.get_record("k:1") == "again"


# --- expiry -----------------------------------------------------------------------------------


def test_a_record_expires_and_its_key_can_be_claimed_again(records: RecordStore) -> None:
    assert records.add_record("k:short", "first", ttl=0.2) is True
    assert records.add_record("k:long", "kept", ttl=60) is True
    time.sleep(EXPIRED)
    assert records.get_record("k:short") is None
    assert records.get_record("k:long") == "kept"
    assert records.add_record("k:long", "other") is False
    assert records.add_record("k:short", "second") is True
    assert records.get_record("k:short") == "second"


def test_an_expired_record_cannot_be_replaced_or_deleted(records: RecordStore) -> None:
    records.add_record("k:1", "v", ttl=0.2)
    records.add_record("k:2", "v", ttl=0.2)
    time.sleep(EXPIRED)
    assert records.replace_record("k:1", "v", "new") is False
    assert records.delete_record("k:2", "v") is False
    assert records.get_record("k:1") is None
    assert records.add_record("k:1", "new") is True


def test_replace_sets_the_ttl_afresh(records: RecordStore) -> None:
    records.add_record("k:forever", "v")
    records.add_record("k:mortal", "v", ttl=60)
    assert records.replace_record("k:forever", "v", "soon gone", ttl=0.2) is True
    assert records.replace_record("k:mortal", "v", "kept") is True  # ttl None: never expires
    time.sleep(EXPIRED)
    assert records.get_record("k:forever") is None
    assert records.get_record("k:mortal") == "kept"


@pytest.mark.parametrize("ttl", [0, -1, math.inf, math.nan], ids=repr)
def test_a_ttl_must_be_finite_and_positive(records: RecordStore, ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl"):
        records.add_record("k:1", "v", ttl=ttl)
    records.add_record("k:1", "v")
    with pytest.raises(ValueError, match="ttl"):
        records.replace_record("k:1", "v", "new", ttl=ttl)
    assert records.get_record("k:1") == "v"


@pytest.mark.parametrize("ttl", ["1", True], ids=repr)
def test_a_ttl_is_a_number(records: RecordStore, ttl: Any) -> None:
    with pytest.raises(TypeError, match="ttl"):
        records.add_record("k:1", "v", ttl=ttl)
    assert records.get_record("k:1") is None


# --- groups -----------------------------------------------------------------------------------


def test_delete_records_forgets_one_group_and_counts_its_live_records(
    records: RecordStore,
) -> None:
    for call in ["c1", "c2", "c3"]:
        records.add_record(f"ledger:s1:{call}", call)
    records.add_record("ledger:s1:gone", "x", ttl=0.2)
    records.add_record("ledger:s2:c1", "kept")
    records.add_record("ledger:s1:sub:c1", "kept")  # its group is ledger:s1:sub:
    records.add_record("ledger:s10:c1", "kept")
    time.sleep(EXPIRED)
    assert records.delete_records("ledger:s1:") == 3
    assert [records.get_record(f"ledger:s1:{c}") for c in ["c1", "c2", "c3", "gone"]] == [None] * 4
    assert records.get_record("ledger:s2:c1") == "kept"
    assert records.get_record("ledger:s1:sub:c1") == "kept"
    assert records.get_record("ledger:s10:c1") == "kept"
    assert records.delete_records("ledger:s1:") == 0
    assert records.delete_records("never:") == 0
    assert records.add_record("ledger:s1:c1", "claimed again") is True
    assert records.delete_records("ledger:s1:sub:") == 1


def test_delete_records_does_not_count_deleted_records(records: RecordStore) -> None:
    records.add_record("g:a", 1)
    records.add_record("g:b", 2)
    records.delete_record("g:a", 1)
    assert records.delete_records("g:") == 1


@pytest.mark.parametrize("group", ["ledger", "ledger:s1", ""])
def test_a_group_ends_with_a_colon(records: RecordStore, group: str) -> None:
    records.add_record("ledger:s1:c1", "v")
    with pytest.raises(ValueError, match="':'"):
        records.delete_records(group)
    assert records.get_record("ledger:s1:c1") == "v"


def test_keys_and_groups_are_text(records: RecordStore) -> None:
    bad: Any = 1
    with pytest.raises(TypeError):
        records.add_record(bad, "v")
    with pytest.raises(TypeError):
        records.get_record(bad)
    with pytest.raises(TypeError):
        records.delete_records(bad)


# --- values must be JSON, checked before anything is written ----------------------------------


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"set": {1, 2}}, TypeError),
        (object(), TypeError),
        (math.nan, ValueError),
        ([math.inf], ValueError),
        (None, ValueError),
    ],
    ids=["set", "object", "nan", "inf", "none"],
)
def test_a_value_json_cannot_hold_is_refused_and_nothing_changes(
    records: RecordStore, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        records.add_record("k:new", value)
    assert records.get_record("k:new") is None
    records.add_record("k:old", "v")
    with pytest.raises(error):
        records.replace_record("k:old", "v", value)
    assert records.get_record("k:old") == "v"
    if value is not None:  # None never matches; anything else not JSON is refused
        with pytest.raises(error):
            records.replace_record("k:old", value, "w")
        with pytest.raises(error):
            records.delete_record("k:old", value)
    assert records.get_record("k:old") == "v"
    assert records.add_record("k:new", "fine") is True


def test_a_value_nesting_too_deeply_is_a_value_error(records: RecordStore) -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests too deeply"):
        records.add_record("k:deep", deep)
    assert records.get_record("k:deep") is None


# --- records and plain keys never meet --------------------------------------------------------


def test_records_and_plain_keys_are_separate_namespaces(kind: str, store: Any) -> None:
    records = records_of(store)
    store.put("ledger:s1:c1", {"plain": True})
    assert records.get_record("ledger:s1:c1") is None
    assert records.add_record("ledger:s1:c1", {"record": True}) is True
    assert store.get("ledger:s1:c1") == {"plain": True}
    store.delete_value({"record": True})
    if kind != "adapter":  # the fallback keeps records as plain keys: its wrapper is visible
        store.delete_value({"value": {"record": True}, "expires_at": None})
    assert records.get_record("ledger:s1:c1") == {"record": True}
    store.delete("ledger:s1:c1")
    assert records.get_record("ledger:s1:c1") == {"record": True}
    store.put("ledger:s1:c2", "plain")
    assert records.delete_records("ledger:s1:") == 1
    assert store.get("ledger:s1:c2") == "plain"


# --- exclusion --------------------------------------------------------------------------------


def test_threads_racing_for_the_same_keys_have_one_winner_each(records: RecordStore) -> None:
    keys = [f"race:t:{i}" for i in range(50)]
    wins: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def claim(worker: int) -> None:
        start.wait()
        wins[worker] = [key for key in keys if records.add_record(key, worker)]

    threads = [threading.Thread(target=claim, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(key for won in wins for key in won) == sorted(keys)
    for worker, won in enumerate(wins):
        assert all(records.get_record(key) == worker for key in won)


@contextlib.contextmanager
def store_lock_held_elsewhere(kind: str, store: Any) -> Iterator[None]:
    """The store-wide lock held by someone else, as provisioning holds it across HTTP calls:
    another instance (so another flock or Redis lease), or another thread of a MemoryStore."""
    if kind == "memory":
        taken, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store.lock():
                taken.set()
                release.wait(30)

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        assert taken.wait(10)
        try:
            yield
        finally:
            release.set()
            holder.join(10)
        return
    other = (
        FileStore(store.path) if kind == "file" else RedisStore(store._client, prefix=store.prefix)
    )
    with other.lock():
        yield


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_records_never_wait_for_the_store_lock(kind: str, store: Any) -> None:
    store.add_record("k:old", "v")
    with store_lock_held_elsewhere(kind, store):
        started = time.monotonic()
        assert store.add_record("k:1", "v") is True
        assert store.add_record("k:old", "v", ttl=1) is False
        assert store.get_record("k:1") == "v"
        assert store.replace_record("k:1", "v", "w") is True
        assert store.delete_record("k:1", "w") is True
        assert store.delete_records("k:") == 1
        assert time.monotonic() - started < 5  # a store-lock wait would be 600 s


RACE_CHILD = """
import json, os, sys, time
kind, where, prefix, worker, go = sys.argv[1:6]
if kind == "file":
    from req_managed_agents.stores import FileStore
    store = FileStore(where)
else:
    from req_managed_agents.stores import RedisStore
    store = RedisStore(where, prefix=prefix)
deadline = time.monotonic() + 60
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("never told to start")
    time.sleep(0.002)
added = [i for i in range(50) if store.add_record(f"ledger:race:{i}", worker, ttl=600)]
replaced = [i for i in range(20) if store.replace_record(f"swap:race:{i}", "seed", worker)]
deleted = [i for i in range(20) if store.delete_record(f"drop:race:{i}", "seed")]
print(json.dumps({"added": added, "replaced": replaced, "deleted": deleted}))
"""


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_processes_racing_for_the_same_records_have_one_winner_each(
    kind: str, store: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    for i in range(0, 50, 2):  # half the keys hold an expired record: replaced under a lock
        store.add_record(f"ledger:race:{i}", "expired", ttl=0.05)
    for i in range(20):
        store.add_record(f"swap:race:{i}", "seed")
        store.add_record(f"drop:race:{i}", "seed")
    time.sleep(0.3)
    where = str(store.path) if kind == "file" else request.getfixturevalue("redis_url")
    prefix = "" if kind == "file" else store.prefix
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_CHILD, kind, where, prefix, f"w{w}", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    time.sleep(0.5)  # let them start, so that they all wait for the same signal
    go.touch()
    results: dict[str, dict[str, list[int]]] = {}
    for w, child in enumerate(children):
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        results[f"w{w}"] = json.loads(out)
    for field, count, prefix_ in [("added", 50, "ledger"), ("replaced", 20, "swap")]:
        winners = sorted(i for result in results.values() for i in result[field])
        assert winners == list(range(count)), field
        for worker, result in results.items():
            for i in result[field]:
                assert store.get_record(f"{prefix_}:race:{i}") == worker
    assert sorted(i for result in results.values() for i in result["deleted"]) == list(range(20))
    assert all(store.get_record(f"drop:race:{i}") is None for i in range(20))
