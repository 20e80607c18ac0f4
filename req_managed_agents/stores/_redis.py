"""``RedisStore``: the ``Store`` protocol on a Redis server, shared across machines.

redis-py is an optional dependency (the ``[redis]`` extra), imported when the first
``RedisStore`` is made, never at package import.

Layout: a store key ``k`` lives at ``<prefix>key:k`` as JSON text, and the lock at
``<prefix>lock``; records (never under the lock) at ``<prefix>rec:`` and ``<prefix>recs:``
(see ``stores/_redis_records.py``). Stores with different prefixes on one server never see
each other (even nested ones like ``a:`` and ``a:b:``; only a prefix beginning with another's
``<prefix>key:``, ``<prefix>rec:`` or ``<prefix>recs:`` would clash). Values get the same
normalisation and refusals as the other stores, before anything is sent. ``delete_value``
walks ``<prefix>key:`` with ``SCAN`` (never ``KEYS``, which blocks the server) and deletes in
batches.

The lock (``lock()``, also taken by every write of a store key) is re-entrant in a thread,
exclusive among the threads of a process and, through the lock key, among processes and
machines:

* acquiring is ``SET <prefix>lock <token> NX PX <lock_ttl>``, with a token unique to this
  holding; a waiter polls (not first come, first served) and gives up after ``lock_timeout``
  with a :class:`ProvisioningError` naming the lock, the server and the holder's host and pid;
* while held, a background thread extends the TTL every ``lock_ttl / 3`` s with a script that
  extends it only if it still holds our token, so a harness provision of several minutes
  keeps it; release deletes the key with a script that deletes only our token;
* every write runs in a script that first checks the lock key still holds our token, so a
  write lands only while its writer holds the lock - checked on the server, atomically. A
  holder that lost the lock (paused, or cut off from the server, for longer than the TTL; the
  server restarted without persistence, evicted the key or failed over to a replica that
  lacked it) writes nothing: its next write raises :class:`ProvisioningError` (at once when
  renewal already saw the loss), and its release leaves the new holder's lock alone.
  Renewals failing for a whole TTL count as a loss too.

What the lock cannot fence is the provider: a holder that lost the lock may still be inside
a provider call while the next holder makes its own. Names are content-addressed, so the next
holder normally finds what the first made; only a loss inside the list-then-create window can
leave one extra resource of the same name, which no record points at.

Durability is the server's. ``provision:`` records lost to a restart without persistence (or
a failover to a replica behind the primary) are rebuilt from the provider by name, but tags
live only in the store: where they matter, run Redis with persistence (``appendonly yes``) and
``maxmemory-policy noeviction`` (the default), or a lost tag stops protecting its environment
from :func:`prune_environments`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from req_managed_agents._redact import get_logger, redact, register_secret
from req_managed_agents.errors import (
    ConfigurationError,
    MissingDependencyError,
    ProvisioningError,
)
from req_managed_agents.stores._base import LOCK_TIMEOUT, json_copy, strict_json
from req_managed_agents.stores._records import DelegatedRecords
from req_managed_agents.stores._redis_records import RedisRecords
from req_managed_agents.transport._backoff import RetryPolicy

if TYPE_CHECKING:
    from redis import Redis
    from redis.commands.core import Script

__all__ = ["LOCK_TTL", "RedisStore", "load_redis"]

# How long the lock outlives a holder that stops renewing it (a crash, a pause, a partition).
LOCK_TTL = 30.0
_INSTALL_HINT = "pip install 'req-managed-agents[redis]'"
_BATCH = 500  # keys per SCAN step and per fenced DEL
# A lock held by another process is asked for again after 10 ms doubling to 100 ms, less up
# to half at random so that waiters do not ask in step.
LOCK_POLL = RetryPolicy(base=0.01, cap=0.1, jitter=0.5)
_log = get_logger(__name__)

# KEYS[1] the lock, ARGV[1] our token. Each answers -1 when the lock is no longer ours.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return -1
"""
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return -1
"""
_FENCED_SET = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('set', KEYS[2], ARGV[2])
return 1
"""
_FENCED_DEL = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
if #KEYS == 1 then return 0 end
return redis.call('del', unpack(KEYS, 2))
"""


def load_redis() -> ModuleType:
    """Import redis-py, or explain which extra to install."""
    try:
        return importlib.import_module("redis")
    except ImportError as exc:
        raise MissingDependencyError(
            f"RedisStore needs the redis package: {_INSTALL_HINT}", extra="redis"
        ) from exc


class _Lease:
    """One holding of the lock: its fencing token, and whether it is still ours."""

    def __init__(self, token: str, confirmed: float) -> None:
        self.token = token
        self.confirmed = confirmed  # monotonic time a request that (re)set the TTL was sent
        self.depth = 0
        self.released = threading.Event()
        self.lost = threading.Event()


class RedisStore(DelegatedRecords):
    """A store on a Redis server, shared safely by threads, processes and machines.

    ``url_or_client`` is a ``redis://``, ``rediss://`` or ``unix://`` URL (timeouts and a
    short retry are set unless the URL says otherwise) or a ``redis.Redis`` client.
    ``prefix`` namespaces every key; ``lock_timeout`` is how long ``lock()`` (and so every
    write) waits for another holder; ``lock_ttl`` is how long the lock outlives a holder that
    stopped renewing it - a crashed process blocks others that long at most.
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        prefix: str = "rma:",
        lock_timeout: float = LOCK_TIMEOUT,
        lock_ttl: float = LOCK_TTL,
    ) -> None:
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, not {type(prefix).__name__}")
        if not 0 <= lock_timeout < float("inf"):
            raise ValueError(f"lock_timeout must be a finite number >= 0, got {lock_timeout!r}")
        if not 0.001 <= lock_ttl < float("inf"):
            raise ValueError(f"lock_ttl must be finite and at least 0.001 s, got {lock_ttl!r}")
        redis = load_redis()
        if isinstance(url_or_client, str):
            client = _connect(redis, url_or_client)
        elif isinstance(url_or_client, redis.Redis):
            client = url_or_client
        else:
            raise TypeError(
                f"RedisStore needs a Redis URL or a redis.Redis, not {type(url_or_client).__name__}"
            )
        self._client: Redis = client
        self._error: type[Exception] = redis.RedisError
        self.server = _describe(redis, client)
        self.prefix = prefix
        self.lock_timeout = lock_timeout
        self.lock_ttl = lock_ttl
        self._ttl_ms = int(lock_ttl * 1000)
        self._keyspace = _encode_key(prefix + "key:")
        self._pattern = _glob_escape(self._keyspace) + b"*"
        self._lock_key = _encode_key(prefix + "lock")
        self._release: Script = client.register_script(_RELEASE)
        self._renew: Script = client.register_script(_RENEW)
        self._set: Script = client.register_script(_FENCED_SET)
        self._del: Script = client.register_script(_FENCED_DEL)
        self._thread_lock = threading.RLock()
        self._lease: _Lease | None = None
        self._records = RedisRecords(
            client, server=self.server, prefix=prefix, talking=self._talking
        )

    def __repr__(self) -> str:
        return f"RedisStore({self.server!r}, prefix={self.prefix!r})"

    # -- the Store protocol ---------------------------------------------------------------

    def get(self, key: str) -> Any:
        """The value under ``key``, or None."""
        # No lock: a GET sees one whole value, and readers should not wait for a provision.
        with self._talking("read"):
            raw = self._client.get(self._key(key))
        return None if raw is None else self._decode(key, raw)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key``."""
        encoded = _encode_value(json_copy(value))  # a value JSON cannot hold fails before sending
        with self._hold() as lease:
            self._fenced(lease, self._set, [self._key(key)], [encoded])

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if absent)."""
        with self._hold() as lease:
            self._fenced(lease, self._del, [self._key(key)], [])

    def delete_value(self, value: Any) -> None:
        """Remove every key whose value equals ``value``."""
        normalised = json_copy(value)
        with self._hold() as lease, self._talking("scan"):
            keys = self._client.scan_iter(match=self._pattern, count=_BATCH)
            for batch in _batches(keys, _BATCH):
                raws = self._client.mget(batch)
                doomed = [
                    name
                    for name, raw in zip(batch, raws)
                    if raw is not None and self._decode(self._name(name), raw) == normalised
                ]
                if doomed:
                    self._fenced(lease, self._del, doomed, [])

    # -- the lock -------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store exclusively (re-entrant in this thread, exclusive across processes
        and machines) while the block runs."""
        with self._hold():
            yield

    @contextlib.contextmanager
    def _hold(self) -> Iterator[_Lease]:
        deadline = time.monotonic() + self.lock_timeout
        if not self._thread_lock.acquire(timeout=self.lock_timeout):
            raise ProvisioningError(
                f"the store lock {self._lock_name} on {self.server} is held by another thread "
                f"of this process for more than {self.lock_timeout:g} s"
            )
        try:
            lease = self._lease
            if lease is None:
                lease = self._lease = self._acquire(deadline)
            lease.depth += 1
            try:
                yield lease
            finally:
                lease.depth -= 1
                if lease.depth == 0:
                    self._lease = None
                    self._let_go(lease)
        finally:
            self._thread_lock.release()

    def _acquire(self, deadline: float) -> _Lease:
        token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(16)}"
        attempt = 0
        while True:
            sent = time.monotonic()
            with self._talking("lock"):
                taken = self._client.set(self._lock_key, token, nx=True, px=self._ttl_ms)
                holder = None if taken else _text(self._client.get(self._lock_key))
            # A SET retried after its reply was lost finds its own token: that is ours too.
            if taken or holder == token:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                who = holder.rsplit(":", 1)[0] if holder else "another process"
                raise ProvisioningError(
                    f"the store lock {self._lock_name} on {self.server} is held by {who} "
                    f"for more than {self.lock_timeout:g} s"
                )
            LOCK_POLL.wait(attempt, limit=left)
            attempt += 1
        lease = _Lease(token, sent)
        threading.Thread(
            target=self._keep_alive,
            args=(lease,),
            name=f"rma-redis-lock-{self.prefix}lock",
            daemon=True,
        ).start()
        return lease

    def _keep_alive(self, lease: _Lease) -> None:
        """Extend the TTL while the lease is held; mark it lost when it is not ours any more."""
        while not lease.released.wait(self.lock_ttl / 3):
            sent = time.monotonic()
            try:
                ours = self._renew(keys=[self._lock_key], args=[lease.token, self._ttl_ms]) == 1
            except self._error as exc:
                if time.monotonic() - lease.confirmed < self.lock_ttl:
                    continue  # try again; the TTL has not run out yet
                _log.warning("cannot renew the store lock %s: %s", self._lock_name, exc)
                ours = False
            if not ours:
                if not lease.released.is_set():
                    lease.lost.set()
                    _log.warning(
                        "lost the store lock %s on %s while holding it; writes under it will fail",
                        self._lock_name,
                        self.server,
                    )
                return
            lease.confirmed = sent

    def _let_go(self, lease: _Lease) -> None:
        """Release the lock if it is still ours. A failure is logged, not raised: the block
        has done its work, and the key expires by itself within ``lock_ttl``."""
        lease.released.set()
        try:
            self._release(keys=[self._lock_key], args=[lease.token])
        except self._error as exc:
            _log.warning(
                "cannot release the store lock %s on %s (it expires within %g s): %s",
                self._lock_name,
                self.server,
                self.lock_ttl,
                exc,
            )

    def _fenced(self, lease: _Lease, script: Script, keys: list[Any], args: list[Any]) -> None:
        """Run a write script that acts only while ``lease`` still holds the lock."""
        if not lease.lost.is_set():
            with self._talking("write"):
                done = script(keys=[self._lock_key, *keys], args=[lease.token, *args])
            if done != -1:
                return
            lease.lost.set()
        raise ProvisioningError(
            f"lost the store lock {self._lock_name} on {self.server} while holding it (held "
            f"past its {self.lock_ttl:g} s TTL without renewal, or the server dropped it); "
            "nothing was written, as another process may hold the lock now"
        )

    # -- helpers --------------------------------------------------------------------------

    @property
    def _lock_name(self) -> str:
        return repr(self.prefix + "lock")

    def _key(self, key: str) -> bytes:
        return self._keyspace + _encode_key(key)

    def _name(self, redis_key: bytes | str) -> str:
        """The store key a Redis key stands for."""
        raw = redis_key if isinstance(redis_key, bytes) else _encode_key(redis_key)
        return raw[len(self._keyspace) :].decode("utf-8", "surrogatepass")

    def _decode(self, key: str, raw: bytes | str) -> Any:
        """A stored value, refusing what JSON does not allow (never silently dropped)."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            return strict_json(text)
        except RecursionError:
            reason = "it nests too deeply to parse"
        except ValueError as exc:  # UnicodeDecodeError included
            reason = str(exc)
        raise ProvisioningError(
            f"the value of {key!r} in the Redis store {self.server} (prefix {self.prefix!r}) "
            f"is corrupt ({reason}); fix or delete it - it may describe a live resource, so "
            "it is never reset automatically"
        )

    @contextlib.contextmanager
    def _talking(self, action: str) -> Iterator[None]:
        """Redis failures (connection refused, timeouts, auth, wrong type) as a
        ProvisioningError naming the server; its URL's password is never part of it."""
        try:
            yield
        except self._error as exc:
            raise ProvisioningError(
                f"cannot {action} the Redis store {self.server} (prefix {self.prefix!r}): "
                f"{redact(str(exc)) or type(exc).__name__}"
            ) from exc


def _connect(redis: ModuleType, url: str) -> Redis:
    """A client for ``url``, with bounded waits: a server that is down fails a call within
    a second, rather than after long retries (the URL's own options win)."""
    retry = importlib.import_module("redis.retry").Retry(
        importlib.import_module("redis.backoff").ExponentialBackoff(cap=0.25, base=0.02), 3
    )
    try:
        client: Redis = redis.Redis.from_url(
            url, socket_connect_timeout=5.0, socket_timeout=10.0, retry=retry
        )
    except ValueError as exc:
        raise ConfigurationError(f"not a usable Redis URL: {redact(str(exc))}") from None
    return client


def _describe(redis: ModuleType, client: Redis) -> str:
    """The server as a URL without credentials; registers the password with the redactor."""
    pool = client.connection_pool
    options = pool.connection_kwargs
    password = options.get("password")
    if isinstance(password, str):
        register_secret(password)
    db = options.get("db", 0)
    if options.get("path"):
        return f"unix://{options['path']}?db={db}"
    scheme = "rediss" if issubclass(pool.connection_class, redis.SSLConnection) else "redis"
    return f"{scheme}://{options.get('host', 'localhost')}:{options.get('port', 6379)}/{db}"


def _encode_key(text: str) -> bytes:
    """Key bytes; ``surrogatepass`` so any Python str works as a key, as in the other stores."""
    return text.encode("utf-8", "surrogatepass")


def _encode_value(value: Any) -> bytes:
    """Readable UTF-8 JSON, with ``\\u`` escapes only for text holding a lone surrogate."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=False, separators=(",", ":")).encode("ascii")


def _glob_escape(pattern: bytes) -> bytes:
    """``pattern`` matched literally by ``SCAN MATCH`` (a prefix may hold ``*?[]\\``)."""
    return b"".join(b"\\" + bytes([c]) if c in b"*?[]\\" else bytes([c]) for c in pattern)


def _text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
