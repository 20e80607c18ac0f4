"""The tool ledger: each tool call runs at most once, even across processes.

Before a tool runs, the session records "started" for its session id and tool call id; when
it has an answer, it records the result. A session resumed later - in this process or in
another one, on another machine with a shared store - looks there first: a recorded result
is posted as it is, without running the tool again. A call that started and never finished
(the process died while it ran, or after it ran but before its result was recorded) is
ambiguous: the tool's side effect may or may not have happened. What to do then is the
session's ``on_unfinished`` policy:

* ``"error"`` (the default): answer the agent with an error result saying the call was
  interrupted and not run again, so it can check and decide;
* ``"rerun"``: run it again (for tools that are safe to repeat);
* ``"raise"``: stop the run with :class:`~req_managed_agents.UnfinishedToolCallError`.

The ledger keeps its records in a provisioning :class:`~req_managed_agents.provisioner.Store`
(``MemoryStore`` for one process, ``FileStore`` for one machine, ``RedisStore`` for many),
and claims a call under the store's lock, so two workers resuming one session cannot both
start the same call.
"""

from __future__ import annotations

import base64
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from req_managed_agents.model._vocabulary import ContentBlock, Document, Image, ToolResult
from req_managed_agents.stores import MemoryStore, Store
from req_managed_agents.stores._base import store_lock

__all__ = ["LedgerEntry", "ToolLedger", "UnfinishedPolicy"]

UnfinishedPolicy = Literal["error", "rerun", "raise"]
"""What a session does with a tool call that started before and never finished."""

UNFINISHED_MESSAGE = (
    "this tool call was interrupted earlier (the process running it stopped) and was not "
    "run again, because it may already have had its effect; check before calling it again"
)


@dataclass(frozen=True)
class LedgerEntry:
    """What the ledger knows of one tool call: it started (where, when), and its result
    once it finished."""

    started_at: float
    owner: str
    result: ToolResult | None = None

    @property
    def finished(self) -> bool:
        return self.result is not None


class ToolLedger:
    """Per session and tool call id: "started", then the result. Thread-safe, and
    process-safe as far as its store is."""

    def __init__(self, store: Store | None = None, *, prefix: str = "ledger") -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self._prefix = prefix
        self._owner = f"{socket.gethostname()}:{os.getpid()}"

    def __repr__(self) -> str:
        return f"ToolLedger({self.store!r})"

    def claim(self, session_id: str, tool_use_id: str) -> LedgerEntry | None:
        """Record that the call starts now, unless the ledger has it already: ``None`` when
        this caller may run it, else the entry found."""
        key = self._key(session_id, tool_use_id)
        with store_lock(self.store):
            found = _entry(self.store.get(key))
            if found is not None:
                return found
            self.store.put(key, {"started_at": time.time(), "owner": self._owner})
        return None

    def restart(self, session_id: str, tool_use_id: str) -> None:
        """Claim an unfinished call again (the ``rerun`` policy)."""
        key = self._key(session_id, tool_use_id)
        self.store.put(key, {"started_at": time.time(), "owner": self._owner})

    def finish(self, session_id: str, tool_use_id: str, result: ToolResult) -> None:
        """Record the call's answer."""
        key = self._key(session_id, tool_use_id)
        with store_lock(self.store):
            started = _entry(self.store.get(key))
            record: dict[str, Any] = {
                "started_at": started.started_at if started else time.time(),
                "owner": started.owner if started else self._owner,
                "result": _result_record(result),
            }
            self.store.put(key, record)

    def entry(self, session_id: str, tool_use_id: str) -> LedgerEntry | None:
        """What the ledger holds for a call, if anything."""
        return _entry(self.store.get(self._key(session_id, tool_use_id)))

    def _key(self, session_id: str, tool_use_id: str) -> str:
        return f"{self._prefix}:{session_id}:{tool_use_id}"


def _entry(record: Any) -> LedgerEntry | None:
    if not isinstance(record, Mapping):
        return None
    result = record.get("result")
    return LedgerEntry(
        started_at=float(record.get("started_at") or 0.0),
        owner=str(record.get("owner") or ""),
        result=_result(result) if isinstance(result, Mapping) else None,
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
