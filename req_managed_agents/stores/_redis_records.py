"""The records of a :class:`RedisStore` (:class:`~req_managed_agents.stores.RecordStore`):
each claimed and changed by one server-side script, never under the store's lock.

Layout, apart from the store's keys (``<prefix>key:``, which ``delete_value`` scans) and its
lock:

* the record ``k`` is the string ``<prefix>rec:k``: a 32-character nonce, unique to the write
  that made it, then the value's canonical JSON text (sorted keys, no spaces - equal values
  have equal bytes, so the scripts compare texts). A record with a TTL has it as the key's own
  expiry, so the server forgets it;
* the group ``g`` is the set ``<prefix>recs:g`` of its records' keys, so ``delete_records``
  finds exactly them without a ``SCAN``. Each write extends the set's expiry to at least its
  record's (or removes it, for a record that never expires), so the set outlives every member.
  A set in use for longer than its records live (``ledger-runs:``, say) would keep the keys of
  every record the server expired: each write also looks at :data:`PRUNE` members picked at
  random and removes those whose record is gone, which holds the dead members to about
  ``1 / (PRUNE - 1)`` of the live ones at a bounded cost per write.

``add_record`` creates the key only where no live record holds it (``SET NX``, in the script
that also adds it to its group). ``replace_record`` and ``delete_record`` compare the stored
text with the expected one and act in the same script. redis-py may send a command again when
its reply was lost: a write whose key already holds its own nonce has happened, and reports
so; that is why a deleted record leaves its nonce behind for :data:`DELETED_TTL` (an empty
text, which every call takes for no record).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from req_managed_agents.errors import ProvisioningError
from req_managed_agents.stores._base import (
    check_group,
    check_ttl,
    expected_text,
    record_group,
    record_text,
    strict_json,
)

if TYPE_CHECKING:
    from redis import Redis
    from redis.commands.core import Script

__all__ = ["DELETED_TTL", "PRUNE", "RedisRecords"]

# How long a deleted record's nonce stays, in ms: longer than redis-py's retries of one call.
DELETED_TTL = 120_000
_NONCE = 32  # characters of hex
_BATCH = 500  # records per step of delete_records
PRUNE = 4
"""Members of a group's set each write looks at, removing those whose record is gone."""

# Lua helpers: write a record, and add it to its group keeping the set's expiry >= its own
# (pruning a few members whose records are gone).
_HELPERS = f"""
local PRUNE = {PRUNE}
local function write(record, text, ttl)
  if ttl == 0 then return redis.call('set', record, text) end
  return redis.call('set', record, text, 'PX', ttl)
end
local function track(group, record, ttl)
  for _, member in ipairs(redis.call('srandmember', group, PRUNE)) do
    if redis.call('exists', member) == 0 then redis.call('srem', group, member) end
  end
  local fresh = redis.call('exists', group) == 0  -- pruned empty, the set is gone
  redis.call('sadd', group, record)
  if ttl == 0 then return redis.call('persist', group) end
  local left = redis.call('pttl', group)
  if fresh or (left >= 0 and left < ttl) then redis.call('pexpire', group, ttl) end
end
"""
# KEYS: the record, its group. ARGV[1]: this write's nonce. Each answers 1 when it acted.
_ADD = (
    _HELPERS
    + """
local current = redis.call('get', KEYS[1])
if current then
  if string.sub(current, 1, 32) == ARGV[1] then return 1 end
  if #current > 32 then return 0 end
end
local ttl = tonumber(ARGV[3])
write(KEYS[1], ARGV[1] .. ARGV[2], ttl)
track(KEYS[2], KEYS[1], ttl)
return 1
"""
)
# ARGV[2]: the expected text (a deleted record's empty text matches none).
_REPLACE = (
    _HELPERS
    + """
local current = redis.call('get', KEYS[1])
if not current then return 0 end
if string.sub(current, 1, 32) == ARGV[1] then return 1 end
if string.sub(current, 33) ~= ARGV[2] then return 0 end
local ttl = tonumber(ARGV[4])
write(KEYS[1], ARGV[1] .. ARGV[3], ttl)
track(KEYS[2], KEYS[1], ttl)
return 1
"""
)
_DELETE = (
    _HELPERS
    + """
local current = redis.call('get', KEYS[1])
if not current then return 0 end
if string.sub(current, 1, 32) == ARGV[1] then return 1 end
if string.sub(current, 33) ~= ARGV[2] then return 0 end
local ttl = tonumber(ARGV[3])
write(KEYS[1], ARGV[1], ttl)
track(KEYS[2], KEYS[1], ttl)
return 1
"""
)
# KEYS[1]: the group; ARGV[1]: how many to take. Answers {taken, how many were live}.
_DELETE_GROUP = """
local records = redis.call('spop', KEYS[1], ARGV[1])
if #records == 0 then return {0, 0} end
local live = 0
for _, text in ipairs(redis.call('mget', unpack(records))) do
  if text and #text > 32 then live = live + 1 end
end
redis.call('del', unpack(records))
return {#records, live}
"""


class RedisRecords:
    """Records on the Redis server ``server`` under ``prefix`` (see the module docs);
    ``talking`` turns a Redis failure into the store's ProvisioningError."""

    def __init__(
        self,
        client: Redis,
        *,
        server: str,
        prefix: str,
        talking: Callable[[str], AbstractContextManager[None]],
    ) -> None:
        self._client = client
        self._server = server
        self._prefix = prefix
        self._talking = talking
        self._add: Script = client.register_script(_ADD)
        self._replace: Script = client.register_script(_REPLACE)
        self._delete: Script = client.register_script(_DELETE)
        self._delete_group: Script = client.register_script(_DELETE_GROUP)

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        """Create ``key`` unless a live record holds it; True when this call created it."""
        group, text, ms = record_group(key), record_text(value), _milliseconds(check_ttl(ttl))
        with self._talking("add a record to"):
            done = self._add(keys=self._keys(key, group), args=[_nonce(), text, ms])
        return bool(done == 1)

    def get_record(self, key: str) -> Any:
        """The live record's value, or None (absent or expired)."""
        record_group(key)  # the same refusals as the other calls
        with self._talking("read a record from"):
            raw = self._client.get(self._encode(f"rec:{key}"))
        if raw is None or len(raw) <= _NONCE:
            return None
        return self._decode(key, raw[_NONCE:])

    def replace_record(
        self, key: str, expected: Any, value: Any, *, ttl: float | None = None
    ) -> bool:
        """Replace the live record only if its value equals ``expected``; True when replaced."""
        group, text, ms = record_group(key), record_text(value), _milliseconds(check_ttl(ttl))
        old = expected_text(expected)
        if old is None:
            return False
        with self._talking("replace a record in"):
            done = self._replace(keys=self._keys(key, group), args=[_nonce(), old, text, ms])
        return bool(done == 1)

    def delete_record(self, key: str, expected: Any) -> bool:
        """Delete the live record only if its value equals ``expected``; True when deleted."""
        group, old = record_group(key), expected_text(expected)
        if old is None:
            return False
        with self._talking("delete a record from"):
            done = self._delete(keys=self._keys(key, group), args=[_nonce(), old, DELETED_TTL])
        return bool(done == 1)

    def delete_records(self, group: str) -> int:
        """Delete every record of ``group`` (which ends with ``:``); how many were live."""
        group_key = self._encode(f"recs:{check_group(group)}")
        live = 0
        with self._talking("delete records from"):
            while True:
                taken, found = self._delete_group(keys=[group_key], args=[_BATCH])
                live += int(found)
                if int(taken) < _BATCH:
                    return live

    def _keys(self, key: str, group: str) -> list[bytes]:
        return [self._encode(f"rec:{key}"), self._encode(f"recs:{group}")]

    def _encode(self, name: str) -> bytes:
        """A Redis key under the prefix; ``surrogatepass`` so any str works, as elsewhere."""
        return (self._prefix + name).encode("utf-8", "surrogatepass")

    def _decode(self, key: str, raw: bytes | str) -> Any:
        """A record's value, refusing what JSON does not allow (never taken for no record:
        it may be a claim). A client made with ``decode_responses`` gives text already."""
        try:
            value = strict_json(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        except RecursionError:
            reason = "it nests too deeply to parse"
        except ValueError as exc:  # UnicodeDecodeError included
            reason = str(exc)
        else:
            if value is not None:
                return value
            reason = "its value is null"
        raise ProvisioningError(
            f"the record {key!r} in the Redis store {self._server} (prefix {self._prefix!r}) "
            f"is corrupt ({reason}); fix or delete it - it may be a claim, so it is never "
            "reset automatically"
        )


def _nonce() -> str:
    return secrets.token_hex(_NONCE // 2)


def _milliseconds(ttl: float | None) -> int:
    """A TTL as Redis takes it: whole milliseconds, at least 1; 0 for none."""
    return 0 if ttl is None else max(1, round(ttl * 1000))
