from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.provisioner import FileStore, MemoryStore, RedisStore, Store
from req_managed_agents.stores._base import store_lock

AnyStore = Any  # MemoryStore | FileStore | RedisStore: all offer lock() besides the protocol


@pytest.fixture(params=["memory", "file", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> AnyStore:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "redis":  # the session's own redis-server (tests/conftest.py)
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        return RedisStore(url, prefix=prefix)
    return FileStore(tmp_path / "store.json")


def run_in_thread(target: Any, *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


# --- semantics shared by every store ----------------------------------------------------------


def test_both_stores_satisfy_the_protocol(store: AnyStore) -> None:
    assert isinstance(store, Store)


def test_get_put_overwrite_delete(store: AnyStore) -> None:
    assert store.get("provision:abc") is None
    store.put("provision:abc", {"agent_id": "agent_1", "n": 1})
    assert store.get("provision:abc") == {"agent_id": "agent_1", "n": 1}
    store.put("provision:abc", ["replaced"])
    assert store.get("provision:abc") == ["replaced"]
    store.put("other", "kept")
    store.delete("provision:abc")
    assert store.get("provision:abc") is None
    assert store.get("other") == "kept"
    store.delete("provision:abc")  # absent: no error
    store.delete("never-there")


@pytest.mark.parametrize(
    "value", [None, True, 0, -1.5, "", "text \u00e9", [], {}, [1, [2, {"x": None}]]], ids=repr
)
def test_json_values_round_trip(store: AnyStore, value: Any) -> None:
    store.put("k", value)
    assert store.get("k") == value


def test_values_come_back_as_after_a_json_round_trip(store: AnyStore) -> None:
    store.put("k", {"tuple": (1, 2), 3: "int key"})
    assert store.get("k") == {"tuple": [1, 2], "3": "int key"}


def test_put_rejects_values_json_cannot_hold(store: AnyStore) -> None:
    with pytest.raises(TypeError):
        store.put("k", {"set": {1, 2}})
    assert store.get("k") is None


def test_values_are_copies(store: AnyStore) -> None:
    value: dict[str, Any] = {"ids": ["a"], "meta": {"n": 1}}
    store.put("k", value)
    value["ids"].append("mutated after put")
    value["meta"]["n"] = 2
    got = store.get("k")
    assert got == {"ids": ["a"], "meta": {"n": 1}}
    got["ids"].append("mutated after get")
    got["meta"]["n"] = 3
    assert store.get("k") == {"ids": ["a"], "meta": {"n": 1}}


def test_delete_value_removes_every_key_holding_an_equal_value(store: AnyStore) -> None:
    handle = {"environment_id": "env_1", "name": "env_1234abcd", "digest": "1234abcd"}
    store.put("provision:xyz", handle)
    store.put("digest:env:1234abcd", dict(handle))
    store.put("digest:env:99999999", {**handle, "digest": "99999999"})
    store.put("tags:env", ["prod"])
    store.delete_value(dict(reversed(list(handle.items()))))  # key order does not matter
    assert store.get("provision:xyz") is None
    assert store.get("digest:env:1234abcd") is None
    assert store.get("digest:env:99999999") == {**handle, "digest": "99999999"}
    assert store.get("tags:env") == ["prod"]


def test_delete_value_compares_after_a_json_round_trip(store: AnyStore) -> None:
    store.put("a", [1, 2])
    store.put("b", {"1": "x"})
    store.put("c", [1, 2, 3])
    store.delete_value((1, 2))
    store.delete_value({1: "x"})
    assert store.get("a") is None
    assert store.get("b") is None
    assert store.get("c") == [1, 2, 3]
    store.delete_value({"absent": True})  # no match: no error, nothing removed
    assert store.get("c") == [1, 2, 3]


def test_put_rejects_nan(store: AnyStore) -> None:
    with pytest.raises(ValueError, match="JSON"):
        store.put("k", {"ratio": float("nan")})


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "message"),
    [(nested(100_000), "nests too deeply"), ({"ratio": float("inf")}, "must be JSON")],
    ids=["deep", "inf"],
)
def test_a_value_json_cannot_hold_is_a_value_error_and_nothing_changes(
    store: AnyStore, value: Any, message: str
) -> None:
    store.put("k", "before")
    with pytest.raises(ValueError, match=message) as caught:
        store.put("k", value)
    assert not isinstance(caught.value, RecursionError)
    with pytest.raises(ValueError, match=message):
        store.delete_value(value)
    assert store.get("k") == "before"


def test_text_with_a_lone_surrogate_round_trips(store: AnyStore) -> None:
    store.put("k", {"text": "half \ud83d of an emoji", "name": "caf\u00e9"})
    assert store.get("k") == {"text": "half \ud83d of an emoji", "name": "caf\u00e9"}


# --- locking ------------------------------------------------------------------------------


def test_lock_is_reentrant_in_one_thread(store: AnyStore) -> None:
    done = threading.Event()

    def nested() -> None:
        with store.lock(), store.lock(), store_lock(store):
            store.put("k", "v")
            assert store.get("k") == "v"
        done.set()

    thread = run_in_thread(nested)
    thread.join(timeout=5)
    assert done.is_set(), "nested lock() deadlocked"


def test_lock_is_exclusive_across_threads(store: AnyStore) -> None:
    started = threading.Event()
    with store.lock():
        store.put("k", "first")

        def writer() -> None:
            started.set()
            store.put("k", "second")

        thread = run_in_thread(writer)
        assert started.wait(5)
        time.sleep(0.2)
        assert thread.is_alive(), "put did not wait for the lock"
        assert store.get("k") == "first"
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert store.get("k") == "second"


def test_read_check_write_under_lock_is_atomic_across_threads(store: AnyStore) -> None:
    store.put("counter", 0)

    def bump() -> None:
        for _ in range(25):
            with store_lock(store):
                store.put("counter", store.get("counter") + 1)

    threads = [run_in_thread(bump) for _ in range(4)]
    for thread in threads:
        thread.join(timeout=20)
    assert store.get("counter") == 100


def test_store_lock_without_a_lock_is_a_no_op() -> None:
    class Bare:
        def __init__(self) -> None:
            self.data: dict[str, Any] = {}

        def get(self, key: str) -> Any:
            return self.data.get(key)

        def put(self, key: str, value: Any) -> None:
            self.data[key] = value

        def delete(self, key: str) -> None:
            self.data.pop(key, None)

        def delete_value(self, value: Any) -> None:
            self.data = {k: v for k, v in self.data.items() if v != value}

    bare = Bare()
    with store_lock(bare), store_lock(bare):
        bare.put("k", "v")
    assert bare.get("k") == "v"
    with pytest.raises(RuntimeError, match="propagates"), store_lock(bare):
        raise RuntimeError("propagates")


def test_store_lock_uses_the_store_lock() -> None:
    events: list[str] = []

    class Locking(MemoryStore):
        @contextlib.contextmanager
        def lock(self) -> Iterator[None]:
            events.append("acquire")
            yield
            events.append("release")

    locking = Locking()
    with store_lock(locking):
        events.append("body")
    assert events == ["acquire", "body", "release"]


# --- FileStore ------------------------------------------------------------------------------


def test_file_is_one_private_json_object(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    store = FileStore(path)
    store.put("b", {"name": "caf\u00e9"})
    store.put("a", [1])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": [1], "b": {"name": "caf\u00e9"}}
    store.delete("a")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text(encoding="utf-8")) == {"b": {"name": "caf\u00e9"}}


def test_missing_file_reads_as_empty_and_folders_are_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "store.json"
    store = FileStore(path)
    assert store.get("k") is None
    store.delete("k")
    store.delete_value("v")
    store.put("k", "v")
    assert json.loads(path.read_text()) == {"k": "v"}


def test_items_is_every_key_as_one_read_sees_them_without_the_records(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    assert store.items() == {}
    store.put("a", {"name": "x"})
    store.put("b", [1])
    store.add_record("ledger:s:c", "claimed")
    listed = store.items()
    assert listed == {"a": {"name": "x"}, "b": [1]}
    listed["a"]["name"] = "changed"  # a copy: changing it changes nothing stored
    assert store.get("a") == {"name": "x"}


def test_two_instances_share_the_file(tmp_path: Path) -> None:
    first = FileStore(tmp_path / "store.json")
    second = FileStore(tmp_path / "store.json")
    first.put("a", 1)
    second.put("b", 2)
    assert first.get("b") == 2
    assert second.get("a") == 1


CORRUPT = {
    "not json": b"{not json",
    "half written": b'{\n "provision:abc": {\n  "agent_id": "ag',
    "empty": b"",
    "array": b'["a"]',
    "string": b'"store"',
    "nan": b'{"k": NaN}',
    "infinity": b'{"k": [-Infinity]}',
    "float overflow": b'{"k": {"n": 1e999}}',
    "deep": b'{"k": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "deep and cut": b"[" * 100_000,
}


@pytest.mark.parametrize("content", list(CORRUPT.values()), ids=list(CORRUPT))
@pytest.mark.parametrize("operation", ["get", "put", "delete", "delete_value", "items"])
def test_corrupt_file_is_an_error_naming_the_path_and_is_not_overwritten(
    tmp_path: Path, content: bytes, operation: str
) -> None:
    path = tmp_path / "store.json"
    path.write_bytes(content)
    store = FileStore(path)
    calls: dict[str, Callable[[], object]] = {
        "get": lambda: store.get("k"),
        "put": lambda: store.put("k", "v"),
        "delete": lambda: store.delete("k"),
        "delete_value": lambda: store.delete_value("v"),
        "items": store.items,
    }
    with pytest.raises(ProvisioningError) as caught:
        calls[operation]()
    assert str(path) in str(caught.value)
    assert path.read_bytes() == content


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"k": NaN}', "NaN is not a JSON value"),
        (b'{"k": Infinity}', "Infinity is not a JSON value"),
        (b'{"k": -Infinity}', "-Infinity is not a JSON value"),
        (b'{"k": 1e999}', "the number 1e999 is out of range"),
        (b'{"k": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "it nests too deeply to parse"),
    ],
    ids=["nan", "infinity", "minus infinity", "overflow", "deep"],
)
def test_a_file_json_does_not_allow_is_reported_as_corrupt(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "store.json"
    path.write_bytes(content)
    with pytest.raises(ProvisioningError) as caught:
        FileStore(path).get("k")
    assert str(caught.value).startswith(f"the store {path} is corrupt ({reason}); fix or move it")


def test_file_cut_inside_a_utf8_character_is_a_provisioning_error(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    content = '{"k": "caf\u00e9"}'.encode()[:-3]  # ends with the first byte of "é"
    path.write_bytes(content)
    with pytest.raises(ProvisioningError, match=r"store\.json"):
        FileStore(path).put("k", "v")
    assert path.read_bytes() == content


def test_lock_held_elsewhere_times_out_with_a_provisioning_error(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    holder = FileStore(path)
    waiter = FileStore(path, lock_timeout=0.3)  # its own lock file: flock waits as a process
    with holder.lock():
        started = time.monotonic()
        with pytest.raises(ProvisioningError, match=r"store\.json\.lock"):
            waiter.put("k", "v")
        assert time.monotonic() - started >= 0.25
    waiter.put("k", "v")  # released: works again
    assert holder.get("k") == "v"


CRASH_CHILD = """
import os, sys
from req_managed_agents.stores._file import FileStore

store = FileStore(sys.argv[1])
os.replace = lambda *args, **kwargs: os._exit(9)  # killed between temp write and replace
store.put("new", {"agent_id": "agent_new"})
os._exit(0)
"""


def test_crash_before_replace_leaves_the_old_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    store = FileStore(path)
    store.put("old", {"agent_id": "agent_old"})
    original = path.read_bytes()

    result = subprocess.run(
        [sys.executable, "-c", CRASH_CHILD, str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 9, result.stderr  # it died inside os.replace

    assert path.read_bytes() == original
    fresh = FileStore(path)
    assert fresh.get("old") == {"agent_id": "agent_old"}
    assert fresh.get("new") is None
    leftovers = {p.name for p in tmp_path.iterdir()} - {"store.json", "store.json.lock"}
    for name in leftovers:
        assert name.startswith(".store.json.")
        assert name.endswith(".tmp")
    # The store keeps working next to a leftover temp file.
    fresh.put("after", 1)
    assert json.loads(path.read_text()) == {"after": 1, "old": {"agent_id": "agent_old"}}


WRITER_CHILD = """
import os, sys, time
from req_managed_agents.stores._file import FileStore

path, worker, go = sys.argv[1], sys.argv[2], sys.argv[3]
store = FileStore(path)
deadline = time.monotonic() + 20
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("never told to start")
    time.sleep(0.005)
for i in range(40):
    store.put(f"{worker}:{i}", {"worker": worker, "i": i})
"""


def test_processes_writing_at_once_lose_no_keys(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    go = tmp_path / "go"
    workers = ["w0", "w1", "w2"]
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER_CHILD, str(path), worker, str(go)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in workers
    ]
    go.touch()  # release them together, so their puts interleave
    for child in children:
        _, stderr = child.communicate(timeout=60)
        assert child.returncode == 0, stderr
    data = json.loads(path.read_text(encoding="utf-8"))
    expected = {f"{w}:{i}": {"worker": w, "i": i} for w in workers for i in range(40)}
    assert data == expected
    assert FileStore(path).get("w2:39") == {"worker": "w2", "i": 39}


def test_reads_do_not_wait_for_a_writer_holding_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    holder = FileStore(path)
    holder.put("k", "v")
    reader = FileStore(path, lock_timeout=0.2)
    with holder.lock():
        started = time.monotonic()
        assert reader.get("k") == "v"
        assert time.monotonic() - started < 0.2


# --- FileStore: the file system refuses -----------------------------------------------------


def store_calls(store: FileStore) -> dict[str, Callable[[], object]]:
    def hold_lock() -> None:
        with store.lock():
            pass

    return {
        "put": lambda: store.put("k", "v"),
        "delete": lambda: store.delete("k"),
        "delete_value": lambda: store.delete_value("v"),
        "lock": hold_lock,
    }


@pytest.mark.parametrize("operation", ["get", "put", "delete", "delete_value", "lock"])
def test_a_parent_that_is_a_file_is_a_provisioning_error(tmp_path: Path, operation: str) -> None:
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path / "file" / "store.json"
    store = FileStore(path)
    calls = {"get": lambda: store.get("k"), **store_calls(store)}
    with pytest.raises(ProvisioningError) as caught:
        calls[operation]()
    assert str(path) in str(caught.value)
    assert (tmp_path / "file").read_text() == "not a folder"


def test_a_grandparent_that_is_a_file_names_the_reason(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path / "file" / "sub" / "store.json"
    with pytest.raises(ProvisioningError, match="Not a directory") as caught:
        FileStore(path).put("k", "v")
    assert str(path) in str(caught.value)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    if sys.platform == "win32" or os.geteuid() == 0:
        pytest.skip("root ignores folder permissions (and Windows has no such mode bits)")
    folder = tmp_path / "read-only"
    folder.mkdir()
    yield folder
    os.chmod(folder, 0o700)


@pytest.mark.parametrize("operation", ["put", "delete", "delete_value", "lock"])
def test_an_unwritable_folder_is_a_provisioning_error(read_only: Path, operation: str) -> None:
    path = read_only / "store.json"
    os.chmod(read_only, 0o500)  # the lock file cannot be created
    with pytest.raises(ProvisioningError, match="Permission denied") as caught:
        store_calls(FileStore(path))[operation]()
    assert str(path) in str(caught.value)


def test_an_unwritable_folder_with_a_store_in_it_keeps_the_file(read_only: Path) -> None:
    path = read_only / "store.json"
    store = FileStore(path)
    store.put("k", "v")
    original = path.read_bytes()
    os.chmod(read_only, 0o500)  # the lock file opens; the temporary file cannot be created
    with pytest.raises(ProvisioningError, match="Permission denied") as caught:
        store.put("k", "changed")
    assert str(path) in str(caught.value)
    assert path.read_bytes() == original
    assert store.get("k") == "v", "reads still work"


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("tempfile.mkstemp", PermissionError(errno.EACCES, "Permission denied")),
        ("os.fsync", OSError(errno.ENOSPC, "No space left on device")),
        ("os.replace", PermissionError(errno.EPERM, "Operation not permitted")),
    ],
    ids=["mkstemp", "fsync", "replace"],
)
def test_a_failing_write_is_a_provisioning_error_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, error: OSError
) -> None:
    path = tmp_path / "store.json"
    store = FileStore(path)
    store.put("k", "v")
    original = path.read_bytes()

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(target, refuse)
    with pytest.raises(ProvisioningError) as caught:
        store.put("k", "changed")
    monkeypatch.undo()
    assert str(caught.value) == f"cannot write the store {path}: {error.strerror}"
    assert caught.value.__cause__ is error
    assert path.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.json", "store.json.lock"]
    store.put("k", "after")  # the lock was released
    assert store.get("k") == "after"


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_a_lock_the_system_refuses_is_a_provisioning_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    def refuse(*args: Any) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    path = tmp_path / "store.json"
    with pytest.raises(ProvisioningError, match="No locks available") as caught:
        FileStore(path).put("k", "v")
    assert str(path) in str(caught.value)
    assert not path.exists()


def test_a_lone_surrogate_already_in_the_file_is_written_back_escaped(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    path.write_bytes(b'{"old": "\\ud800"}')
    store = FileStore(path)
    store.put("new", "caf\u00e9")
    assert store.get("old") == "\ud800"
    assert store.get("new") == "caf\u00e9"
