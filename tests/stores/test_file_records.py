"""FileStore's records (the contract shared by every store is in test_records.py): the layout
and modes, a call touching only its own group's files whatever else is stored, corrupt record
files, failures of the file system, group deletion racing with adds, and the group lock."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores import FileStore, _file_sweep
from req_managed_agents.stores._file_records import FileRecords

POSIX_MODES = pytest.mark.skipif(sys.platform == "win32", reason="Windows has no such mode bits")


def file_records(store: FileStore) -> FileRecords:
    records = store._records
    assert isinstance(records, FileRecords)
    return records


def group_folder(store: FileStore, group: str) -> Path:
    return file_records(store)._folder(group)


def record_file(store: FileStore, key: str) -> Path:
    return file_records(store)._paths(key[: key.rfind(":") + 1], key)[1]


def snapshot(root: Path) -> dict[Path, tuple[int, int, int]]:
    """Every file and folder under ``root``: inode, modification time, size."""
    return {
        path: (path.stat().st_ino, path.stat().st_mtime_ns, path.stat().st_size)
        for path in [root, *root.rglob("*")]
    }


# --- layout -----------------------------------------------------------------------------------


@POSIX_MODES
def test_records_are_private_files_beside_the_store(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("ledger:s1:c1", {"state": "started"}, ttl=60)
    store.add_record("ledger:s1:c2", "forever")
    root = tmp_path / "store.json.records"
    folder = group_folder(store, "ledger:s1:")
    assert folder.parent == root
    assert not (tmp_path / "store.json").exists(), "records never touch the store's file"
    for path in [root, folder]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert json.loads((folder / ".group").read_text()) == "ledger:s1:"
    first = json.loads(record_file(store, "ledger:s1:c1").read_text())
    assert first["value"] == {"state": "started"}
    assert 55 < first["expires_at"] - time.time() <= 60
    assert json.loads(record_file(store, "ledger:s1:c2").read_text()) == {
        "expires_at": None,
        "value": "forever",
    }
    store.replace_record("ledger:s1:c2", "forever", "replaced")
    names = {path.name for path in folder.iterdir()}
    assert names == {".group", ".lock", record_file(store, "ledger:s1:c1").name,
                     record_file(store, "ledger:s1:c2").name}  # fmt: skip
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_delete_records_removes_the_group_folder(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("ledger:s1:c1", 1)
    store.add_record("ledger:s2:c1", 2)
    assert store.delete_records("ledger:s1:") == 1
    root = tmp_path / "store.json.records"
    assert sorted(root.iterdir()) == [group_folder(store, "ledger:s2:")]


def test_an_expired_record_file_is_removed_when_found(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("k:1", "v", ttl=0.1)
    store.add_record("k:2", "v", ttl=60)
    time.sleep(0.3)
    assert store.get_record("k:1") is None
    assert not record_file(store, "k:1").exists()
    assert record_file(store, "k:2").exists()


def test_two_instances_share_the_records(tmp_path: Path) -> None:
    first, second = FileStore(tmp_path / "store.json"), FileStore(tmp_path / "store.json")
    assert first.add_record("k:1", "first") is True
    assert second.add_record("k:1", "second") is False
    assert second.replace_record("k:1", "first", "second") is True
    assert first.get_record("k:1") == "second"


# --- the cost of one call ---------------------------------------------------------------------


def test_one_call_touches_only_its_own_group_however_many_records_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileStore(tmp_path / "store.json")
    store.put("provision:abc", {"agent_id": "agent_1"})
    with monkeypatch.context() as fast:  # 3000 fsyncs would only make the setup slow
        fast.setattr(os, "fsync", lambda descriptor: None)
        for i in range(3000):
            store.add_record(f"ledger:s{i % 30}:c{i}", {"i": i})
    store.add_record("ledger:s7:mine", "v")
    before = snapshot(tmp_path)
    store_file = (tmp_path / "store.json").read_bytes()

    def no_listing(*args: Any) -> Any:
        raise AssertionError("a record call listed a folder")

    with monkeypatch.context() as watched:
        # Apart from the few entries each add looks at for the sweep (test_sweeps.py).
        watched.setattr(_file_sweep, "SWEEP_STEP", 0)
        watched.setattr(os, "scandir", no_listing)
        watched.setattr(os, "listdir", no_listing)
        assert store.add_record("ledger:s7:new", "v") is True
        assert store.add_record("ledger:s7:mine", "other") is False
        assert store.get_record("ledger:s7:mine") == "v"
        assert store.replace_record("ledger:s7:mine", "v", "w") is True
        assert store.delete_record("ledger:s7:new", "v") is True

    after = snapshot(tmp_path)
    own = group_folder(store, "ledger:s7:")
    changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    assert changed, "the calls changed something"
    assert all(path == own or path.parent == own for path in changed), sorted(changed)
    assert (tmp_path / "store.json").read_bytes() == store_file
    assert len(list((tmp_path / "store.json.records").iterdir())) == 30


# --- corrupt record files ---------------------------------------------------------------------

CORRUPT = {
    "not json": b"{not json",
    "half written": b'{"expires_at":null,"val',
    "empty": b"",
    "array": b"[1]",
    "no expiry": b'{"value": 1}',
    "extra field": b'{"value": 1, "expires_at": null, "owner": "x"}',
    "null value": b'{"value": null, "expires_at": null}',
    "text expiry": b'{"value": 1, "expires_at": "soon"}',
    "nan": b'{"value": NaN, "expires_at": null}',
    "deep": b'{"value": ' + b"[" * 100_000 + b"]" * 100_000 + b', "expires_at": null}',
    "cut utf-8": b'{"value": "caf\xc3',
}


@pytest.mark.parametrize("content", list(CORRUPT.values()), ids=list(CORRUPT))
@pytest.mark.parametrize("operation", ["get", "add", "replace", "delete"])
def test_a_corrupt_record_file_is_an_error_naming_it_and_is_kept(
    tmp_path: Path, content: bytes, operation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_file_sweep, "SWEEP_STEP", 0)  # the add's sweep could take it early
    store = FileStore(tmp_path / "store.json")
    store.add_record("ledger:s1:c1", "v", ttl=0.05)  # expired: an add would replace it
    path = record_file(store, "ledger:s1:c1")
    path.write_bytes(content)
    time.sleep(0.1)
    calls: dict[str, Callable[[], object]] = {
        "get": lambda: store.get_record("ledger:s1:c1"),
        "add": lambda: store.add_record("ledger:s1:c1", "w"),
        "replace": lambda: store.replace_record("ledger:s1:c1", "v", "w"),
        "delete": lambda: store.delete_record("ledger:s1:c1", "v"),
    }
    with pytest.raises(ProvisioningError) as caught:
        calls[operation]()
    assert str(path) in str(caught.value)
    assert "is corrupt" in str(caught.value)
    assert path.read_bytes() == content
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_corrupt_record_is_deleted_with_its_group_and_counted(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("g:a", 1)
    store.add_record("g:b", 2)
    record_file(store, "g:b").write_bytes(b"{not json")
    assert store.delete_records("g:") == 2
    assert not group_folder(store, "g:").exists()


# --- the file system refuses ------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["add", "get", "replace", "delete", "delete_records"])
def test_a_parent_that_is_a_file_is_a_provisioning_error(tmp_path: Path, operation: str) -> None:
    (tmp_path / "file").write_text("not a folder")
    store = FileStore(tmp_path / "file" / "store.json")
    calls: dict[str, Callable[[], object]] = {
        "add": lambda: store.add_record("k:1", "v"),
        "get": lambda: store.get_record("k:1"),
        "replace": lambda: store.replace_record("k:1", "v", "w"),
        "delete": lambda: store.delete_record("k:1", "v"),
        "delete_records": lambda: store.delete_records("k:"),
    }
    with pytest.raises(ProvisioningError, match="Not a directory") as caught:
        calls[operation]()
    assert str(tmp_path / "file" / "store.json.records") in str(caught.value)
    assert (tmp_path / "file").read_text() == "not a folder"


def test_an_unwritable_group_folder_is_a_provisioning_error(tmp_path: Path) -> None:
    if sys.platform == "win32" or os.geteuid() == 0:
        pytest.skip("root ignores folder permissions (and Windows has no such mode bits)")
    store = FileStore(tmp_path / "store.json")
    store.add_record("k:1", "v")
    folder = group_folder(store, "k:")
    os.chmod(folder, 0o500)
    try:
        with pytest.raises(ProvisioningError, match="Permission denied") as caught:
            store.add_record("k:2", "v")
        assert str(record_file(store, "k:2")) in str(caught.value)
        assert store.get_record("k:1") == "v", "reads still work"
    finally:
        os.chmod(folder, 0o700)


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("os.fsync", OSError(errno.ENOSPC, "No space left on device")),
        ("os.link", OSError(errno.EPERM, "Operation not permitted")),
    ],
    ids=["fsync", "link"],
)
def test_a_failing_add_is_a_provisioning_error_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, error: OSError
) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("k:old", "v")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(target, refuse)
    with pytest.raises(ProvisioningError) as caught:
        store.add_record("k:1", "v")
    monkeypatch.undo()
    path = record_file(store, "k:1")
    assert str(caught.value) == f"cannot add the record 'k:1' ({path}): {error.strerror}"
    assert caught.value.__cause__ is error
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(".")) == [
        record_file(store, "k:old").name
    ]
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".tmp-")] == []
    assert store.add_record("k:1", "v") is True


def test_a_leftover_temporary_file_does_no_harm(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store.json")
    store.add_record("k:1", "v")
    (group_folder(store, "k:") / ".tmp-leftover").write_bytes(b'{"expires_at":null,"va')
    assert store.add_record("k:2", "w") is True
    assert store.get_record("k:1") == "v"
    assert store.delete_records("k:") == 2


# --- the group lock ---------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_a_group_lock_held_elsewhere_times_out_naming_it(tmp_path: Path) -> None:
    import fcntl

    store = FileStore(tmp_path / "store.json", lock_timeout=0.3)
    store.add_record("k:1", "v")
    lock_path = group_folder(store, "k:") / ".lock"
    with open(lock_path, "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(ProvisioningError, match=r"\.lock is held by another process"):
            store.replace_record("k:1", "v", "w")
        assert time.monotonic() - started >= 0.25
        assert store.add_record("k:2", "v") is True, "creating needs no lock"
        assert store.get_record("k:1") == "v", "reading needs no lock"
        assert FileStore(tmp_path / "store.json").add_record("other:1", "v") is True
    assert store.replace_record("k:1", "v", "w") is True


def test_deleting_a_group_while_threads_add_to_it_loses_nothing(tmp_path: Path) -> None:
    """Adds racing with ``delete_records`` emptying and removing the folder: every add
    succeeds once, and each record is either counted by one deletion or still there at the
    end (never lost inside a folder being removed)."""
    store = FileStore(tmp_path / "store.json")
    stop = threading.Event()
    deleted: list[int] = []
    errors: list[BaseException] = []
    added: list[list[str]] = [[] for _ in range(4)]

    def add(worker: int) -> None:
        try:
            for i in range(150):
                key = f"g:w{worker}-{i}"
                assert store.add_record(key, i) is True
                added[worker].append(key)
        except BaseException as exc:
            errors.append(exc)

    def delete() -> None:
        try:
            while not stop.is_set():
                deleted.append(store.delete_records("g:"))
        except BaseException as exc:
            errors.append(exc)

    swaps = {"created": 0, "deleted one by one": 0}

    def replace() -> None:  # records changed under the deletions: counted, never an error
        try:
            while not stop.is_set():
                for i in range(5):
                    swaps["created"] += store.add_record(f"g:swap-{i}", "a")
                    store.replace_record(f"g:swap-{i}", "a", "b")
                    swaps["deleted one by one"] += store.delete_record(f"g:swap-{i}", "b")
        except BaseException as exc:
            errors.append(exc)

    others = [threading.Thread(target=delete), threading.Thread(target=replace)]
    adders = [threading.Thread(target=add, args=(w,)) for w in range(4)]
    for thread in [*others, *adders]:
        thread.start()
    for thread in adders:
        thread.join(timeout=120)
    stop.set()
    for thread in others:
        thread.join(timeout=60)
    assert errors == []
    keys = [key for keys in added for key in keys]
    assert len(keys) == 600
    swapped = [f"g:swap-{i}" for i in range(5)]
    remaining = sum(store.get_record(key) is not None for key in [*keys, *swapped])
    created = len(keys) + swaps["created"]
    assert sum(deleted) == created - swaps["deleted one by one"] - remaining
    assert sum(deleted) > 0
    assert store.delete_records("g:") == remaining
    assert list((tmp_path / "store.json.records").iterdir()) == [], "the folder goes too"
