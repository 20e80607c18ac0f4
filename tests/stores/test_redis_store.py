"""RedisStore against a real redis-server of the test session's own (see conftest.py).

The store contract shared with MemoryStore and FileStore is in test_store.py; here: the layout
on the server, prefixes, the lock's exclusion, expiry, fencing and renewal, failures, and ten
processes provisioning one spec at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents.errors import ConfigurationError, MissingDependencyError, ProvisioningError
from req_managed_agents.provisioner import RedisStore
from req_managed_agents.testing import ClaudeEmulator
from tests.support.redis import RedisServer, free_port


@pytest.fixture
def raw(redis_url: str) -> Iterator[Any]:
    """A plain redis-py client, to look at (and tamper with) what the store wrote."""
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def store(redis_url: str, redis_prefix: str) -> RedisStore:
    return RedisStore(redis_url, prefix=redis_prefix)


def messages(exc: BaseException) -> str:
    """The messages of an error and of every error it was raised from or during."""
    parts: list[str] = []
    current: BaseException | None = exc
    while current is not None:
        parts.extend(traceback.format_exception_only(type(current), current))
        current = current.__cause__ or current.__context__
    return "".join(parts)


# --- no import cost without the extra ---------------------------------------------------------


def test_importing_the_package_and_the_provisioner_does_not_import_redis() -> None:
    code = (
        "import sys, req_managed_agents, req_managed_agents.provisioner\n"
        "from req_managed_agents.provisioner import RedisStore\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'redis')\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_without_redis_py_making_a_store_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # an import of it fails, as if absent
    with pytest.raises(MissingDependencyError) as caught:
        RedisStore("redis://127.0.0.1:6379/0")
    assert caught.value.extra == "redis"
    assert "pip install 'req-managed-agents[redis]'" in str(caught.value)


# --- layout, values, prefixes -----------------------------------------------------------------


def test_values_are_json_text_under_the_prefix_and_the_lock_is_gone_after(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    store.put("provision:abc", {"name": "caf\u00e9", "n": [1, 2.5, None]})
    store.put("odd", "half \ud83d")
    assert raw.get(f"{redis_prefix}key:provision:abc") == (
        '{"name":"caf\u00e9","n":[1,2.5,null]}'.encode()
    )
    assert raw.get(f"{redis_prefix}key:odd") == b'"half \\ud83d"'
    assert sorted(raw.scan_iter(match=f"{redis_prefix}*")) == [
        f"{redis_prefix}key:odd".encode(),
        f"{redis_prefix}key:provision:abc".encode(),
    ]


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        (b"{not json", "Expecting property name"),
        (b'{"k": NaN}', "NaN is not a JSON value"),
        (b"[-Infinity]", "-Infinity is not a JSON value"),
        (b"1e999", "the number 1e999 is out of range"),
        (b"[" * 100_000 + b"]" * 100_000, "it nests too deeply to parse"),
        ('"caf\u00e9"'.encode()[:-2], "can't decode"),
    ],
    ids=["not json", "nan", "infinity", "overflow", "deep", "cut utf-8"],
)
def test_a_value_that_is_not_json_is_an_error_naming_the_key_and_stays(
    store: RedisStore, raw: Any, redis_prefix: str, stored: bytes, reason: str
) -> None:
    raw.set(f"{redis_prefix}key:provision:abc", stored)
    with pytest.raises(ProvisioningError) as caught:
        store.get("provision:abc")
    assert "'provision:abc'" in str(caught.value)
    assert store.server in str(caught.value)
    assert reason in str(caught.value)
    with pytest.raises(ProvisioningError, match="is corrupt"):
        store.delete_value("anything")
    assert raw.get(f"{redis_prefix}key:provision:abc") == stored


def test_a_key_of_another_type_is_a_provisioning_error(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    raw.rpush(f"{redis_prefix}key:listed", "x")
    with pytest.raises(ProvisioningError, match="WRONGTYPE") as caught:
        store.get("listed")
    assert str(caught.value).startswith(f"cannot read the Redis store {store.server}")


def test_prefixes_keep_stores_apart_even_nested_or_with_glob_characters(
    redis_url: str, redis_prefix: str
) -> None:
    star = RedisStore(redis_url, prefix=f"{redis_prefix}t*:")
    plain = RedisStore(redis_url, prefix=f"{redis_prefix}tx:")
    nested = RedisStore(redis_url, prefix=f"{redis_prefix}t*:sub:")
    handle = {"environment_id": "env_1"}
    for each in (star, plain, nested):
        each.put("digest:env:1", handle)
        each.put("kept", "mine")
    star.delete_value(handle)  # unescaped, SCAN MATCH "t*:key:*" would take the others' too
    star.delete("kept")
    assert star.get("digest:env:1") is None
    assert star.get("kept") is None
    for other in (plain, nested):
        assert other.get("digest:env:1") == handle
        assert other.get("kept") == "mine"
    with star.lock():  # each prefix has its own lock
        nested.put("k", "v")


def test_delete_value_scans_thousands_of_keys_in_batches_without_keys(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    handle = {"agent_id": "agent_1", "kind": "claude"}
    raw.mset(
        {
            f"{redis_prefix}key:k{i}": (
                b'{"kind":"claude","agent_id":"agent_1"}' if i % 3 == 0 else b'"other"'
            )
            for i in range(3000)
        }
    )
    before = raw.info("commandstats")
    started = time.monotonic()
    store.delete_value(handle)
    elapsed = time.monotonic() - started
    after = raw.info("commandstats")
    assert "cmdstat_keys" not in after or after["cmdstat_keys"] == before.get("cmdstat_keys")
    assert after["cmdstat_scan"]["calls"] - before.get("cmdstat_scan", {"calls": 0})["calls"] > 1
    assert store.get("k0") is None
    assert store.get("k2997") is None
    assert store.get("k1") == "other"
    assert sum(1 for _ in raw.scan_iter(match=f"{redis_prefix}key:*", count=1000)) == 2000
    assert elapsed < 5


def test_a_client_with_decoded_responses_works_too(redis_url: str, redis_prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisStore(client, prefix=redis_prefix)
    with store.lock(), store.lock():
        store.put("a", {"x": 1})
        store.put("b", {"x": 1})
    assert store.get("a") == {"x": 1}
    store.delete_value({"x": 1})
    assert store.get("b") is None
    client.close()


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"prefix": b"rma:"}, TypeError),
        ({"lock_ttl": 0}, ValueError),
        ({"lock_ttl": float("nan")}, ValueError),
        ({"lock_timeout": -1}, ValueError),
        ({"lock_timeout": float("inf")}, ValueError),
    ],
    ids=["bytes prefix", "zero ttl", "nan ttl", "negative timeout", "endless timeout"],
)
def test_bad_arguments_are_refused(arguments: dict[str, Any], error: type[Exception]) -> None:
    pytest.importorskip("redis")
    with pytest.raises(error):
        RedisStore("redis://127.0.0.1:6379/0", **arguments)


def test_a_bad_url_or_client_is_refused_without_the_password() -> None:
    pytest.importorskip("redis")
    with pytest.raises(ConfigurationError) as caught:
        RedisStore("http://:s3cret-passw0rd@127.0.0.1:6379/0")
    assert "s3cret-passw0rd" not in messages(caught.value)
    with pytest.raises(TypeError, match=r"redis\.Redis"):
        RedisStore(object())  # type: ignore[arg-type]


# --- the lock ---------------------------------------------------------------------------------


def test_the_lock_excludes_a_second_client_until_released(
    redis_url: str, redis_prefix: str
) -> None:
    first = RedisStore(redis_url, prefix=redis_prefix)
    second = RedisStore(redis_url, prefix=redis_prefix)  # its own connections and lease
    entered = threading.Event()

    def contender() -> None:
        with second.lock():
            entered.set()
            second.put("k", "second")

    with first.lock():
        first.put("k", "first")
        thread = threading.Thread(target=contender, daemon=True)
        thread.start()
        assert not entered.wait(0.3), "a second client entered a held lock"
        assert second.get("k") == "first", "reads do not wait for the lock"
    assert entered.wait(5)
    thread.join(5)
    assert first.get("k") == "second"


def test_waiting_gives_up_after_lock_timeout_naming_lock_server_and_holder(
    redis_url: str, redis_prefix: str
) -> None:
    holder = RedisStore(redis_url, prefix=redis_prefix)
    waiter = RedisStore(redis_url, prefix=redis_prefix, lock_timeout=0.3)
    with holder.lock():
        started = time.monotonic()
        with pytest.raises(ProvisioningError) as caught:
            waiter.put("k", "v")
        assert time.monotonic() - started >= 0.25
    assert str(caught.value) == (
        f"the store lock '{redis_prefix}lock' on {holder.server} is held by "
        f"{socket.gethostname()}:{os.getpid()} for more than 0.3 s"
    )
    waiter.put("k", "v")  # released: it works again
    assert holder.get("k") == "v"


def test_another_thread_holding_the_lock_counts_against_lock_timeout(
    redis_url: str, redis_prefix: str
) -> None:
    store = RedisStore(redis_url, prefix=redis_prefix, lock_timeout=0.2)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock():
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    assert held.wait(5)
    with pytest.raises(ProvisioningError, match="another thread of this process"):
        store.put("k", "v")
    release.set()
    thread.join(5)
    store.put("k", "v")


def test_a_holder_paused_past_the_ttl_loses_the_lock_and_cannot_write(
    redis_url: str, redis_prefix: str, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = RedisStore(redis_url, prefix=redis_prefix, lock_ttl=0.2)
    monkeypatch.setattr(paused, "_keep_alive", lambda lease: None)  # as if the process stalled
    other = RedisStore(redis_url, prefix=redis_prefix, lock_timeout=2)
    with contextlib.ExitStack() as others_hold:
        with paused.lock():
            paused.put("k", "paused")
            time.sleep(0.3)  # past the TTL: the key expires
            others_hold.enter_context(other.lock())  # so another process takes the lock
            other.put("k", "other")
            with pytest.raises(ProvisioningError, match="lost the store lock") as caught:
                paused.put("k", "late")
            with pytest.raises(ProvisioningError, match="lost the store lock"):
                paused.delete("k")
            with pytest.raises(ProvisioningError, match="lost the store lock"):
                paused.delete_value("other")
        # The paused holder's release left the other's lock alone: it still holds and writes.
        assert raw.pttl(f"{redis_prefix}lock") > 0
        other.put("k2", "still holding")
    assert "nothing was written" in str(caught.value)
    assert other.get("k") == "other"
    assert other.get("k2") == "still holding"
    assert raw.get(f"{redis_prefix}lock") is None


def test_renewal_notices_a_lost_lock_and_the_next_write_fails(
    redis_url: str, redis_prefix: str, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    store = RedisStore(redis_url, prefix=redis_prefix, lock_ttl=0.3)
    with store.lock():
        store.put("k", "v")
        raw.delete(f"{redis_prefix}lock")  # evicted, or lost in a failover
        deadline = time.monotonic() + 5  # a renewal (every 0.1 s) finds it gone and says so
        while f"lost the store lock '{redis_prefix}lock'" not in caplog.text:
            assert time.monotonic() < deadline, "renewal never noticed the loss"
            time.sleep(0.02)
        raw.set(f"{redis_prefix}lock", "someone else")
        with pytest.raises(ProvisioningError, match="lost the store lock"):
            store.put("k", "late")
    assert raw.get(f"{redis_prefix}lock") == b"someone else", "release kept another's lock"
    assert store.get("k") == "v"


def test_renewal_keeps_a_hold_far_longer_than_the_ttl(
    redis_url: str, redis_prefix: str, raw: Any
) -> None:
    holder = RedisStore(redis_url, prefix=redis_prefix, lock_ttl=0.5)
    contender = RedisStore(redis_url, prefix=redis_prefix, lock_timeout=0)
    with holder.lock():
        for _ in range(5):  # 1.5 s: three TTLs
            time.sleep(0.3)
            assert raw.pttl(f"{redis_prefix}lock") > 0
            with pytest.raises(ProvisioningError, match="is held by"):
                contender.put("k", "contender")
        holder.put("k", "holder")  # still ours: the write lands
    assert holder.get("k") == "holder"
    contender.put("k", "contender")


def test_a_server_restart_while_holding_loses_the_lock_and_the_data(
    lone_redis_server: RedisServer,
) -> None:
    store = RedisStore(lone_redis_server.url, prefix="p:", lock_ttl=5)
    store.put("kept?", 1)
    with store.lock():
        store.put("k", "before")
        lone_redis_server.stop()
        with pytest.raises(ProvisioningError, match="Connection refused"):
            store.put("k", "while down")
        lone_redis_server.start(lone_redis_server.port)  # no persistence: an empty server
        with pytest.raises(ProvisioningError, match="lost the store lock"):
            store.put("k", "after")
    assert store.get("k") is None
    assert store.get("kept?") is None  # no persistence: the records went with the server
    store.put("k", "again")
    assert store.get("k") == "again"


# --- failures never show a password ---------------------------------------------------------


LONG, SHORT = "s3cret-passw0rd-for-redis", "Pq7"  # the redactor ignores values this short


@pytest.mark.parametrize(
    ("password", "operation"),
    [(LONG, "get"), (LONG, "put"), (LONG, "delete_value"), (LONG, "lock"), (SHORT, "put")],
)
def test_a_server_that_is_down_is_a_provisioning_error_without_the_password(
    password: str, operation: str
) -> None:
    pytest.importorskip("redis")
    port = free_port()  # nothing listens there
    store = RedisStore(f"redis://user:{password}@127.0.0.1:{port}/2", lock_timeout=1)
    assert repr(store) == f"RedisStore('redis://127.0.0.1:{port}/2', prefix='rma:')"

    def hold() -> None:
        with store.lock():
            pass

    calls = {
        "get": lambda: store.get("k"),
        "put": lambda: store.put("k", "v"),
        "delete_value": lambda: store.delete_value("v"),
        "lock": hold,
    }
    started = time.monotonic()
    with pytest.raises(ProvisioningError) as caught:
        calls[operation]()
    assert time.monotonic() - started < 5
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "Connection refused" in str(caught.value)
    assert password not in messages(caught.value)


# --- ten processes, one spec ------------------------------------------------------------------

RACER = """
import dataclasses, json, sys
from req_managed_agents import ClaudeManagedAgents
from req_managed_agents.provisioner import AgentSpec, RedisStore, provision

redis_url, prefix, base_url = sys.argv[1:]
provider = ClaudeManagedAgents(sys.stdin.readline().strip(), base_url=base_url)
store = RedisStore(redis_url, prefix=prefix)
store.get("warm-up")  # connected and imported before the start
spec = AgentSpec(name="support", system_prompt="Be brief.", model="claude-sonnet-4-6")
print("ready", flush=True)
sys.stdin.readline()  # the start, sent to every racer at once
print(json.dumps(dataclasses.asdict(provision(provider, spec, store=store))))
"""


def test_ten_processes_provisioning_one_spec_at_once_make_one_agent_and_environment(
    redis_url: str, redis_prefix: str, raw: Any
) -> None:
    with ClaudeEmulator() as emulator, contextlib.ExitStack() as cleanup:
        # Names are not unique here, so a duplicate would show as a second agent.
        racers = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, redis_url, redis_prefix, emulator.base_url],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(10)
        ]
        for racer in racers:
            cleanup.callback(racer.kill)  # none outlives a failed test (a no-op once exited)
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write(emulator.api_key + "\n")
            racer.stdin.flush()
        for racer in racers:
            assert racer.stdout is not None
            assert racer.stdout.readline() == "ready\n", racer.communicate(timeout=30)[1]
        for racer in racers:  # the barrier: all are waiting on this line
            assert racer.stdin is not None
            racer.stdin.write("go\n")
            racer.stdin.flush()
        outcomes = [racer.communicate(timeout=60) for racer in racers]
        posts = [r.path for r in emulator.requests if r.method == "POST"]
    assert all(racer.returncode == 0 for racer in racers), [err for _, err in outcomes]
    handles = [json.loads(out) for out, _ in outcomes]
    assert all(handle == handles[0] for handle in handles), handles
    assert posts.count("/v1/agents") == 1
    assert posts.count("/v1/environments") == 1
    stored = list(raw.scan_iter(match=f"{redis_prefix}key:provision:*"))
    assert len(stored) == 2  # the agent's record and the environment's
