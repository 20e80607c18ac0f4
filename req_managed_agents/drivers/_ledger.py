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
* ``"raise"``: stop the run with :class:`~req_managed_agents.UnfinishedToolCallError`.

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
from dataclasses import dataclass, field
from typing import Any, Literal

from req_managed_agents.model._vocabulary import ContentBlock, Document, Image, ToolResult
from req_managed_agents.stores import MemoryStore, Store
from req_managed_agents.stores._base import RecordStore
from req_managed_agents.stores._records import records_of
from req_managed_agents.transport._redact import get_logger

__all__ = ["DEFAULT_TTL", "LedgerEntry", "ToolLedger", "UnfinishedPolicy"]

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
_log = get_logger(__name__)


@dataclass(frozen=True)
class LedgerEntry:
    """What the ledger knows of one tool call: it started (where, when), and its result
    once it finished. ``record`` is the stored value, as a compare-and-set expects it."""

    started_at: float
    owner: str
    result: ToolResult | None = None
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        return self.result is not None


class ToolLedger:
    """Per session and tool call id: "started", then the result. Thread-safe, and
    process-safe as far as its store is; ``ttl`` (seconds, ``None``: forever) bounds how
    long an entry is kept."""

    def __init__(
        self, store: Store | None = None, *, prefix: str = "ledger", ttl: float | None = DEFAULT_TTL
    ) -> None:
        if ttl is not None and not 0 < ttl < float("inf"):
            raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        if not prefix or ":" in prefix:
            raise ValueError(f"prefix must be a non-empty name without ':', got {prefix!r}")
        self.store: Store = store if store is not None else MemoryStore()
        self.ttl = ttl
        self._records: RecordStore = records_of(self.store)
        self._prefix = prefix
        self._owner = f"{socket.gethostname()}:{os.getpid()}"
        self._lock = threading.Lock()
        self._claims: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"ToolLedger({self.store!r}, ttl={self.ttl!r})"

    # -- tool calls -----------------------------------------------------------------------

    def entry(self, session_id: str, tool_use_id: str) -> LedgerEntry | None:
        """What the ledger holds for a call, if anything."""
        return _entry(self._records.get_record(self._key(session_id, tool_use_id)))

    def claim(
        self, session_id: str, tool_use_id: str, *, over: LedgerEntry | None = None
    ) -> LedgerEntry | None:
        """Record that the call starts now: ``None`` when this caller may run it, else the
        entry found (another caller's claim, or the call's result). With ``over`` (an
        unfinished entry read before), take that claim over instead - which only one caller
        can do."""
        key = self._key(session_id, tool_use_id)
        record = {"started_at": time.time(), "owner": self._owner, "claim": secrets.token_hex(8)}
        if over is None:
            taken = self._records.add_record(key, record, ttl=self.ttl)
        else:
            taken = self._records.replace_record(key, dict(over.record), record, ttl=self.ttl)
        if taken:
            with self._lock:
                self._claims[key] = record
            return None
        found = self.entry(session_id, tool_use_id)
        if found is None:  # expired or forgotten in between: try once more
            return self.claim(session_id, tool_use_id)
        return found

    def release(self, session_id: str, tool_use_id: str) -> None:
        """Drop this caller's claim of a call that never started."""
        key = self._key(session_id, tool_use_id)
        with self._lock:
            record = self._claims.pop(key, None)
        if record is not None:
            self._records.delete_record(key, record)

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
        with self._lock:
            claimed = self._claims.pop(key, None)
        before = claimed if claimed is not None else dict(over.record) if over else None
        record = {
            "started_at": (before or {}).get("started_at", time.time()),
            "owner": (before or {}).get("owner", self._owner),
            "result": _result_record(result),
        }
        if before is not None and self._records.replace_record(key, before, record, ttl=self.ttl):
            return
        if not self._records.add_record(key, record, ttl=self.ttl):
            _log.warning(
                "the ledger entry of tool call %s changed while it ran; its result was not "
                "recorded over it",
                tool_use_id,
            )

    def forget(self, session_id: str) -> int:
        """Drop every entry of a session that is over; how many there were."""
        return self._records.delete_records(self._key(session_id, ""))

    # -- idempotency keys ------------------------------------------------------------------

    def bind(self, key: str, binding: Mapping[str, Any]) -> dict[str, Any]:
        """Make ``key`` name ``binding`` (a session and what the run sent), unless it names
        one already; the binding in force either way."""
        name = self._binding_key(key)
        if self._records.add_record(name, dict(binding), ttl=self.ttl):
            return dict(binding)
        found = self._records.get_record(name)
        if isinstance(found, dict):
            return found
        # Expired between the two calls: bind again.
        return self.bind(key, binding)

    def binding(self, key: str) -> dict[str, Any] | None:
        """What ``key`` names, if anything."""
        found = self._records.get_record(self._binding_key(key))
        return found if isinstance(found, dict) else None

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
        return f"{self._prefix}:{_escape(session_id)}:{_escape(tool_use_id)}"

    def _binding_key(self, key: str) -> str:
        return f"{self._prefix}-runs:{_escape(key)}"


def _escape(part: str) -> str:
    """A key part without ':' (the store's group separator)."""
    return part.replace("%", "%25").replace(":", "%3A")


def _entry(record: Any) -> LedgerEntry | None:
    if not isinstance(record, Mapping):
        return None
    result = record.get("result")
    return LedgerEntry(
        started_at=float(record.get("started_at") or 0.0),
        owner=str(record.get("owner") or ""),
        result=_result(result) if isinstance(result, Mapping) else None,
        record=dict(record),
    )


def _result_record(result: ToolResult) -> dict[str, Any]:
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


def _result(record: Mapping[str, Any]) -> ToolResult:
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
