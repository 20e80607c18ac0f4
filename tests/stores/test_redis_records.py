"""RedisStore's records on a real redis-server (the contract shared by every store is in
test_records.py): the layout and expiries on the server, writes retried after a lost reply,
corrupt records, large groups, and a server that is down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores import RedisStore, _redis_records
from tests.support.redis import RedisServer


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


def test_records_live_under_their_own_keys_never_the_store_keys_or_lock(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    store.add_record("ledger:s1:c1", {"b": 1, "a": "caf\u00e9"})
    store.add_record("ledger:s1:c2", "v", ttl=60)
    assert sorted(raw.keys(redis_prefix + "*")) == [
        f"{redis_prefix}rec:ledger:s1:c1".encode(),
        f"{redis_prefix}rec:ledger:s1:c2".encode(),
        f"{redis_prefix}recs:ledger:s1:".encode(),
    ]
    stored = raw.get(f"{redis_prefix}rec:ledger:s1:c1")
    assert len(stored) == 32 + len('{"a":"café","b":1}'.encode())
    assert stored[32:].decode() == '{"a":"caf\u00e9","b":1}'  # canonical: sorted, no spaces
    assert raw.smembers(f"{redis_prefix}recs:ledger:s1:") == {
        f"{redis_prefix}rec:ledger:s1:c1".encode(),
        f"{redis_prefix}rec:ledger:s1:c2".encode(),
    }


def test_expiry_is_the_servers_and_the_group_outlives_its_records(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    group = f"{redis_prefix}recs:g:"
    store.add_record("g:short", "v", ttl=10)
    assert 9_000 < raw.pttl(f"{redis_prefix}rec:g:short") <= 10_000
    assert 9_000 < raw.pttl(group) <= 10_000
    store.add_record("g:long", "v", ttl=100)
    assert 99_000 < raw.pttl(group) <= 100_000
    store.add_record("g:shorter", "v", ttl=1)
    assert raw.pttl(group) > 99_000, "a shorter record does not shorten its group"
    store.add_record("g:forever", "v")
    assert raw.pttl(f"{redis_prefix}rec:g:forever") == -1
    assert raw.pttl(group) == -1, "a record that never expires keeps its group"
    store.replace_record("g:short", "v", "w", ttl=500)
    assert 499_000 < raw.pttl(f"{redis_prefix}rec:g:short") <= 500_000
    assert raw.pttl(group) == -1


def test_a_write_retried_after_its_reply_was_lost_reports_that_it_happened(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """redis-py sends a command again when the reply did not arrive: the second run carries
    the same nonce, finds it, and answers as the first did."""
    nonces = iter(letter * 32 for letter in "aabbccd")  # each write sent twice, then another
    monkeypatch.setattr(_redis_records, "_nonce", lambda: next(nonces))
    assert store.add_record("k:1", "v") is True
    assert store.add_record("k:1", "v") is True
    assert store.replace_record("k:1", "v", "w") is True
    assert store.replace_record("k:1", "v", "w") is True
    assert store.get_record("k:1") == "w"
    assert store.delete_record("k:1", "w") is True
    assert store.delete_record("k:1", "w") is True
    assert store.delete_record("k:1", "w") is False  # another caller's delete: nothing left
    assert store.get_record("k:1") is None
    monkeypatch.undo()
    assert store.add_record("k:1", "again") is True


def test_a_deleted_record_leaves_only_a_short_lived_nonce(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    store.add_record("k:1", "v", ttl=5)
    store.delete_record("k:1", "v")
    left = raw.get(f"{redis_prefix}rec:k:1")
    assert len(left) == 32
    assert 0 < raw.pttl(f"{redis_prefix}rec:k:1") <= _redis_records.DELETED_TTL
    assert raw.pttl(f"{redis_prefix}recs:k:") > _redis_records.DELETED_TTL - 1000  # outlives it
    assert store.get_record("k:1") is None
    assert store.replace_record("k:1", "v", "w") is False
    assert store.delete_records("k:") == 0
    assert raw.keys(redis_prefix + "*") == []


def test_delete_records_takes_a_large_group_in_batches(
    store: RedisStore, raw: Any, redis_prefix: str
) -> None:
    pipe = raw.pipeline()
    for i in range(1203):
        key = f"{redis_prefix}rec:big:{i}"
        pipe.set(key, "n" * 32 + "1")
        pipe.sadd(f"{redis_prefix}recs:big:", key)
    pipe.execute()
    store.add_record("big:expired", 1, ttl=0.05)
    store.add_record("other:1", 1)
    time.sleep(0.3)
    assert store.delete_records("big:") == 1203
    assert sorted(raw.keys(f"{redis_prefix}*")) == [
        f"{redis_prefix}rec:other:1".encode(),
        f"{redis_prefix}recs:other:".encode(),
    ]


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        (b"{not json", "Expecting property name"),
        (b"NaN", "NaN is not a JSON value"),
        (b"null", "its value is null"),
        (b"\xff", "can't decode"),
    ],
    ids=["not json", "nan", "null", "not utf-8"],
)
def test_a_corrupt_record_is_an_error_naming_it(
    store: RedisStore, raw: Any, redis_prefix: str, stored: bytes, reason: str
) -> None:
    raw.set(f"{redis_prefix}rec:ledger:s1:c1", b"n" * 32 + stored)
    with pytest.raises(ProvisioningError, match=reason) as caught:
        store.get_record("ledger:s1:c1")
    assert "'ledger:s1:c1'" in str(caught.value)
    assert store.server in str(caught.value)
    assert store.add_record("ledger:s1:c1", "v") is False, "never taken for no record"


def test_a_client_decoding_responses_reads_records_too(redis_url: str, redis_prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisStore(client, prefix=redis_prefix)
    store.add_record("k:1", {"text": "caf\u00e9"})
    assert store.get_record("k:1") == {"text": "caf\u00e9"}
    assert store.delete_records("k:") == 1
    client.close()


def test_a_server_that_is_down_is_a_provisioning_error(lone_redis_server: RedisServer) -> None:
    store = RedisStore(lone_redis_server.url, prefix="p:")
    store.add_record("k:1", "v")
    lone_redis_server.stop()
    calls: dict[str, Callable[[], object]] = {
        "add": lambda: store.add_record("k:2", "v"),
        "get": lambda: store.get_record("k:1"),
        "replace": lambda: store.replace_record("k:1", "v", "w"),
        "delete": lambda: store.delete_record("k:1", "v"),
        "delete_records": lambda: store.delete_records("k:"),
    }
    for name, call in calls.items():
        with pytest.raises(ProvisioningError, match=r"cannot .* the Redis store") as caught:
            call()
        assert store.server in str(caught.value), name
