"""The tool ledger: each tool call runs at most once, even across processes.

Right before a tool runs - on the call's own thread, so a call that never starts is never
claimed - the session claims it for its session id and tool call id with one atomic
create-if-absent on the store (``SET NX`` on Redis, an exclusive link on a ``FileStore``);
when the handler returns, the result is recorded over the claim, even if the run was stopped
meanwhile. A session resumed later - in this process or another one, on another machine with
a shared store - looks there first: a recorded result is posted as it is, without running the
tool again. A call claimed and never finished (the process died while it ran, or after it ran
but before its result was recorded) is ambiguous: the tool's side effect may or may not have
happened. What to do then is the session's ``on_unfinished`` policy:

* ``"error"`` (the default): answer the agent with an error result saying the call was
  interrupted and not run again, so it can check and decide;
* ``"rerun"``: run it again (for tools that are safe to repeat); taking an unfinished claim
  over is itself a compare-and-set, so of two workers resuming one session only one reruns;
* ``"raise"``: stop the run with :class:`~req_managed_agents.errors.UnfinishedToolCallError`.

Entries are records (:class:`~req_managed_agents.stores.RecordStore`): written one key at a
time, never under the store-wide lock that provisioning holds, so a tool call never waits for
a provision. Each expires ``ttl`` seconds after it was written (a week by default), and
:meth:`ToolLedger.forget` drops a finished session's entries at once.

The ledger also remembers what an ``idempotency_key`` names (:meth:`ToolLedger.bind`): the
session a keyed run uses, so that a retried run - after a crash, in another process -
continues that session instead of starting another.
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._leases import DEFAULT_LEASE, Leases, watch
from req_managed_agents.errors import LedgerError
from req_managed_agents.model._vocabulary import ContentBlock, Document, Image, ToolResult
from req_managed_agents.stores import MemoryStore, Store
from req_managed_agents.stores._base import RecordStore
from req_managed_agents.stores._records import records_of

__all__ = [
    "DEFAULT_TTL",
    "LedgerEntry",
    "ToolLedger",
    "UnfinishedPolicy",
    "key_part",
    "result_from_record",
    "result_record",
]

UnfinishedPolicy = Literal["error", "rerun", "raise"]
"""What a session does with a tool call that started before and never finished."""

DEFAULT_TTL = 7 * 24 * 3600.0
"""How long a ledger entry is kept after it was written: a week."""

UNFINISHED_MESSAGE = (
    "this tool call was interrupted earlier (the process running it stopped) and was not "
    "run again, because it may already have had its effect; check before calling it again"
)
RUNNING_ELSEWHERE = (
    "this tool call is being run by another worker resuming this session ({owner}); it was "
    "not run here"
)
# How often a claim or a binding is tried again when its record vanished (expired, forgotten)
# between a failed create and the read of what holds it.
_CLAIM_ATTEMPTS = 3
# What makes a record a held lease (``_leases.leased``): without them it counts as lapsed.
_LEASE_FIELDS = ("lease", "renewed_at", "process")
_log = get_logger(__name__)


@dataclass(frozen=True)
class LedgerEntry:
    """What the ledger knows of one tool call: it started (where, when), and its result
    once it finished. ``record`` is the stored value, as a compare-and-set expects it."""

    started_at: float
    owner: str
    result: ToolResult | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    tool_use_id: str = ""
    # Known to be still held by its owner (as :meth:`ToolLedger.await_finish` left it).
    live: bool = False

    @property
    def finished(self) -> bool:
        return self.result is not None


class ToolLedger:
    """Per session and tool call id: "started", then the result. Thread-safe, and
    process-safe as far as its store is; ``ttl`` (seconds, ``None``: forever) bounds how
    long an entry is kept; ``lease`` (seconds) how long a claim stays live once its owner
    stops renewing it."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        prefix: str = "ledger",
        ttl: float | None = DEFAULT_TTL,
        lease: float = DEFAULT_LEASE,
    ) -> None:
        if ttl is not None and not 0 < ttl < float("inf"):
            raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        if not prefix or ":" in prefix:
            raise ValueError(f"prefix must be a non-empty name without ':', got {prefix!r}")
        self.store: Store = store if store is not None else MemoryStore()
        self.ttl = ttl
        self._records: RecordStore = records_of(self.store)
        self._leases = Leases(self._records, lease=lease, ttl=ttl)
        self.lease = self._leases.lease
        self._prefix = prefix
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    def __repr__(self) -> str:
        return f"ToolLedger({self.store!r}, ttl={self.ttl!r})"

    # -- tool calls -----------------------------------------------------------------------

    def entry(self, session_id: str, tool_use_id: str) -> LedgerEntry | None:
        """What the ledger holds for a call, if anything."""
        key = self._key(session_id, tool_use_id)
        return _entry(key, self._records.get_record(key))

    def claim(
        self, session_id: str, tool_use_id: str, *, over: LedgerEntry | None = None
    ) -> LedgerEntry | None:
        """Record that the call starts now: ``None`` when this caller may run it, else the
        entry found (another caller's claim, or the call's result). With ``over`` (an
        unfinished entry whose lease lapsed), take that claim over instead - which only one
        caller can do. The claim is held (its lease renewed) until :meth:`finish` or
        :meth:`release`."""
        key = self._key(session_id, tool_use_id)
        record = {"started_at": time.time(), "owner": self._owner, "claim": secrets.token_hex(8)}
        for _ in range(_CLAIM_ATTEMPTS):
            if over is None:
                taken = self._leases.add(key, record)
            else:
                taken = self._leases.take(key, over.record, record)
            if taken is not None:
                return None
            found = self.entry(session_id, tool_use_id)
            if found is not None:
                return found
            over = None  # expired or forgotten in between: claim it afresh
        raise LedgerError(f"the ledger entry {key!r} keeps changing; the call was not run", key)

    def release(self, session_id: str, tool_use_id: str) -> None:
        """Drop this caller's claim of a call that never started."""
        self._leases.release(self._key(session_id, tool_use_id), delete=True)

    def leave(self, session_id: str, tool_use_id: str) -> None:
        """Let go of this caller's claim without a result: the call ran and whether it
        acted is unknown, so its entry stays unfinished - lapsed at once, as its owner is
        done with it - for the ``on_unfinished`` policy of whoever resumes the session."""
        key = self._key(session_id, tool_use_id)
        held = self._leases.held(key)
        if held is not None:
            unleased = {k: v for k, v in held.items() if k not in _LEASE_FIELDS}
            self._leases.change(key, unleased, keep=False)

    def finish(
        self,
        session_id: str,
        tool_use_id: str,
        result: ToolResult,
        *,
        over: LedgerEntry | None = None,
    ) -> None:
        """Record the call's answer over this caller's claim (or over ``over``, an entry
        read before, for an answer given without running the call)."""
        key = self._key(session_id, tool_use_id)
        held = self._leases.held(key)
        before = held if held is not None else dict(over.record) if over else None
        record = {
            "started_at": (before or {}).get("started_at", time.time()),
            "owner": (before or {}).get("owner", self._owner),
            "result": result_record(result),
        }
        if held is not None:
            if self._leases.change(key, record, keep=False):
                return
        elif before is not None and self._records.replace_record(key, before, record, ttl=self.ttl):
            return
        if not self._records.add_record(key, record, ttl=self.ttl):
            _log.warning(
                "the ledger entry of tool call %s changed while it ran; its result was not "
                "recorded over it",
                tool_use_id,
            )

    def await_finish(
        self,
        session_id: str,
        entry: LedgerEntry,
        *,
        stop: threading.Event,
        deadline: float | None = None,
    ) -> LedgerEntry | None:
        """Wait while another owner's claim of a call is live: the entry once it finished
        or its lease lapsed (``None`` if it vanished). Still live when ``deadline`` (a
        monotonic time) passes or ``stop`` is set: that entry, whose :attr:`LedgerEntry.live`
        is then True."""
        tool_use_id = entry.tool_use_id
        key = self._key(session_id, tool_use_id)
        last, live = watch(
            lambda: self._records.get_record(key),
            entry.record,
            settled=lambda record: "result" in record,
            stop=stop,
            deadline=deadline,
        )
        found = _entry(key, last)
        if found is None:
            return None
        return replace(found, live=live)

    def forget(self, session_id: str) -> int:
        """Drop every entry of a session that is over; how many there were."""
        return self._records.delete_records(self._key(session_id, ""))

    # -- idempotency keys ------------------------------------------------------------------

    def bind(self, key: str, binding: Mapping[str, Any]) -> dict[str, Any]:
        """Make ``key`` name ``binding`` (a session and what the run sent), unless it names
        one already; the binding in force either way."""
        name = self._binding_key(key)
        for _ in range(_CLAIM_ATTEMPTS):
            if self._records.add_record(name, dict(binding), ttl=self.ttl):
                return dict(binding)
            found = self.binding(key)
            if found is not None:
                return found
        raise LedgerError(f"the binding of idempotency key {key!r} keeps changing", name)

    def binding(self, key: str) -> dict[str, Any] | None:
        """What ``key`` names, if anything."""
        name = self._binding_key(key)
        found = self._records.get_record(name)
        if found is None or (isinstance(found, dict) and isinstance(found.get("phase"), str)):
            return found
        raise LedgerError(
            f"the ledger record {name!r} of idempotency key {key!r} is not a binding "
            f"(found {_shape(found)}); delete it or use another key",
            name,
        )

    def rebind(self, key: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
        """Move ``key`` from ``before`` to ``after`` (compare-and-set)."""
        return self._records.replace_record(
            self._binding_key(key), dict(before), dict(after), ttl=self.ttl
        )

    def unbind(self, key: str) -> bool:
        """Let ``key`` name nothing any more, once its run is over and recorded where no
        retry looks for the key (compare-and-set: a binding moved meanwhile stays); True
        when this call removed it."""
        name = self._binding_key(key)
        found = self._records.get_record(name)
        return found is not None and self._records.delete_record(name, found)

    def _key(self, session_id: str, tool_use_id: str) -> str:
        return f"{self._prefix}:{key_part(session_id)}:{key_part(tool_use_id)}"

    def _binding_key(self, key: str) -> str:
        return f"{self._prefix}-runs:{key_part(key)}"


def key_part(part: str) -> str:
    """A key part without ':' (the store's group separator)."""
    return part.replace("%", "%25").replace(":", "%3A")


def _unescape(part: str) -> str:
    return part.replace("%3A", ":").replace("%25", "%")


def _entry(key: str, record: Any) -> LedgerEntry | None:
    """The entry a record holds; a record of another shape is a :class:`LedgerError`."""
    if record is None:
        return None
    started = record.get("started_at") if isinstance(record, Mapping) else None
    result = record.get("result") if isinstance(record, Mapping) else None
    if (
        not isinstance(record, Mapping)
        or isinstance(started, bool)
        or not isinstance(started, (int, float))
        or not isinstance(record.get("owner"), str)
        or not (result is None or isinstance(result, Mapping))
    ):
        raise LedgerError(
            f"the ledger record {key!r} is not a tool call entry (found {_shape(record)}); "
            "delete it to let the call run, or answer it yourself",
            key,
        )
    return LedgerEntry(
        started_at=float(started),
        owner=str(record["owner"]),
        result=result_from_record(result) if result is not None else None,
        record=dict(record),
        tool_use_id=_unescape(key.rsplit(":", 1)[1]),
    )


def _shape(value: Any) -> str:
    """A record's shape for an error message, never its content."""
    if isinstance(value, Mapping):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:8])
    return f"a JSON {type(value).__name__}"


def result_record(result: ToolResult) -> dict[str, Any]:
    """``result`` as JSON for a store (images and documents as base64)."""
    record: dict[str, Any] = {
        "tool_use_id": result.tool_use_id,
        "content": result.content,
        "is_error": result.is_error,
    }
    if result.blocks:
        record["blocks"] = [_block_record(block) for block in result.blocks]
    return record


def _block_record(block: ContentBlock) -> Any:
    if isinstance(block, str):
        return block
    data = base64.b64encode(block.data).decode("ascii")
    if isinstance(block, Image):
        return {"type": "image", "media_type": block.media_type, "data": data}
    return {"type": "document", "media_type": block.media_type, "data": data, "title": block.title}


def result_from_record(record: Mapping[str, Any]) -> ToolResult:
    """The :class:`ToolResult` that :func:`result_record` stored."""
    blocks: list[ContentBlock] = []
    for block in record.get("blocks") or ():
        if isinstance(block, str):
            blocks.append(block)
        elif isinstance(block, Mapping):
            data = base64.b64decode(str(block.get("data", "")))
            if block.get("type") == "image":
                blocks.append(Image(data, str(block.get("media_type"))))
            else:
                title = block.get("title")
                blocks.append(Document(data, str(block.get("media_type")), title))
    return ToolResult(
        str(record.get("tool_use_id", "")),
        str(record.get("content", "")),
        bool(record.get("is_error")),
        tuple(blocks),
    )
