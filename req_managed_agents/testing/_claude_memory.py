"""Memory stores for the Claude emulator: named stores of text memories sessions can mount.

A memory store (``/v1/memory_stores``) is created with a ``name``, read, updated (metadata
as a patch), listed (archived ones on request, by ``created_at[gte|lte]``), archived and
deleted. Its memories (``.../memories``) are texts at paths such as ``/notes/todo.md``:
created (a taken path is a 409), read (``view=full`` by default: with the content), updated
(new content, or a new path; a ``content_sha256`` precondition that fails is a 409), listed
by path (``path_prefix``, and ``depth=1`` folds deeper memories into ``memory_prefix``
items; ``view=basic`` by default, without the content) and deleted (a mismatching
``expected_content_sha256`` is a 409). Every write gives the memory a new
``memory_version_id``; the versions themselves are not kept. These routes take the beta
``agent-memory-2026-07-22`` or ``managed-agents-2026-04-01``; an archived store is
read-only.
"""

from __future__ import annotations

import copy
import hashlib
import unicodedata
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import (
    _MAX_RESOURCE_PAGE,
    _APIError,
    _flag,
    _invalid,
    _json_object,
    _merged_metadata,
    _new_id,
    _not_found,
    _optional_string,
    _query_choice,
    _query_int,
    _reject_unknown,
    _required_name,
    _time_filter,
)
from req_managed_agents.testing._claude_base import _ClaudeBase
from req_managed_agents.testing._server import query_value, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing._server import Exchange

_MAX_CONTENT_BYTES = 102_400
_MAX_PATH_BYTES = 1024
_MAX_SEGMENTS = 20
_MAX_FULL_PAGE = 20  # a page of memories with their content holds fewer
_VIEWS = ("basic", "full")


def _memory_path(value: Any, where: str = "path") -> str:
    """A memory path as the API allows it: absolute, 1 to 20 plain segments, NFC."""
    if not isinstance(value, str) or not value.startswith("/"):
        raise _invalid(f"{where}: must start with '/'")
    segments = value[1:].split("/")
    if not 1 <= len(segments) <= _MAX_SEGMENTS or any(s in ("", ".", "..") for s in segments):
        raise _invalid(f"{where}: 1 to {_MAX_SEGMENTS} segments, none empty, '.' or '..'")
    if len(value.encode()) > _MAX_PATH_BYTES or unicodedata.normalize("NFC", value) != value:
        raise _invalid(f"{where}: at most {_MAX_PATH_BYTES} bytes, in Unicode NFC")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value):
        raise _invalid(f"{where}: no control or format characters")
    return value


def _content(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value.encode()) > _MAX_CONTENT_BYTES:
        raise _invalid(f"content: a string of at most {_MAX_CONTENT_BYTES} bytes")
    return value


def _shown(memory: Mapping[str, Any], view: str) -> dict[str, Any]:
    shown = copy.deepcopy(dict(memory))
    if view == "basic":
        shown["content"] = None
    return shown


class _MemoryAPI(_ClaudeBase):
    """The memory store and memory routes."""

    _memory_stores: dict[str, dict[str, Any]]
    _memories: dict[str, dict[str, dict[str, Any]]]  # store id -> memory id -> memory

    def _memory_store(self, store_id: str, *, writing: bool = False) -> dict[str, Any]:
        store = self._memory_stores.get(store_id)
        if store is None:
            raise _not_found("memory store", store_id)
        if writing and store["archived_at"]:
            raise _invalid(f"memory store {store_id!r} is archived (read-only)")
        return store

    def _create_memory_store(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"name", "description", "metadata"}))
        now = utc_timestamp()
        store = {
            "id": _new_id("memstore"),
            "type": "memory_store",
            "name": _required_name(body),
            "description": _optional_string(body, "description") or "",
            "metadata": _merged_metadata({}, body.get("metadata") or {}),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        with self._condition:
            self._memory_stores[store["id"]] = store
            self._memories[store["id"]] = {}
            return copy.deepcopy(store)

    def _get_memory_store(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        with self._condition:
            return copy.deepcopy(self._memory_store(store_id))

    def _update_memory_store(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"name", "description", "metadata"}))
        with self._condition:
            store = self._memory_store(store_id, writing=True)
            updated = copy.deepcopy(store)
            if body.get("name") is not None:
                updated["name"] = _required_name(body)
            if body.get("description") is not None:
                updated["description"] = _optional_string(body, "description")
            if body.get("metadata") is not None:
                updated["metadata"] = _merged_metadata(store["metadata"], body["metadata"])
            if updated != store:
                updated["updated_at"] = utc_timestamp()
                self._memory_stores[store_id] = updated
            return copy.deepcopy(updated)

    def _list_memory_stores(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        created = _time_filter(request, bounds=("gte", "lte"))
        with self._condition:
            stores = [
                s
                for s in self._memory_stores.values()
                if (archived or not s["archived_at"]) and created(s["created_at"])
            ]
            return self._page(request, stores, scope="stores", max_limit=_MAX_RESOURCE_PAGE)

    def _archive_memory_store(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            store = self._memory_store(store_id)
            if not store["archived_at"]:
                store["archived_at"] = store["updated_at"] = utc_timestamp()
            return copy.deepcopy(store)

    def _delete_memory_store(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        with self._condition:
            self._memory_store(store_id)
            del self._memory_stores[store_id]
            del self._memories[store_id]
        return {"id": store_id, "type": "memory_store_deleted"}

    # --- memories -------------------------------------------------------------------------

    def _memory(self, store_id: str, memory_id: str) -> dict[str, Any]:
        self._memory_store(store_id)
        memory = self._memories[store_id].get(memory_id)
        if memory is None:
            raise _not_found("memory", memory_id)
        return memory

    def _check_path_free(self, store_id: str, path: str, own_id: str = "") -> None:
        for memory in self._memories[store_id].values():
            if memory["path"] == path and memory["id"] != own_id:
                raise _APIError(409, f"a memory already exists at {path!r}")

    def _write(self, memory: dict[str, Any], content: str) -> None:
        """Give a memory new content: a new version, with its hash and size."""
        data = content.encode()
        memory.update(
            content=content,
            content_sha256=hashlib.sha256(data).hexdigest(),
            content_size_bytes=len(data),
            memory_version_id=_new_id("memver"),
            updated_at=utc_timestamp(),
        )

    def _create_memory(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        request = exchange.request
        body = _json_object(request)
        _reject_unknown(body, frozenset({"path", "content"}))
        view = _query_choice(request, "view", _VIEWS) or "basic"
        path = _memory_path(body.get("path"))
        if "content" not in body:
            raise _invalid('content: Field required ("" for an empty memory)')
        content = _content(body["content"])
        with self._condition:
            self._memory_store(store_id, writing=True)
            self._check_path_free(store_id, path)
            memory: dict[str, Any] = {
                "id": _new_id("mem"),
                "type": "memory",
                "memory_store_id": store_id,
                "path": path,
                "created_at": utc_timestamp(),
            }
            self._write(memory, content)
            self._memories[store_id][memory["id"]] = memory
            return _shown(memory, view)

    def _get_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        view = _query_choice(exchange.request, "view", _VIEWS) or "full"
        with self._condition:
            return _shown(self._memory(store_id, memory_id), view)

    def _update_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        request = exchange.request
        body = _json_object(request)
        _reject_unknown(body, frozenset({"path", "content", "precondition"}))
        view = _query_choice(request, "view", _VIEWS) or "basic"
        with self._condition:
            self._memory_store(store_id, writing=True)
            memory = self._memory(store_id, memory_id)
            precondition = body.get("precondition")
            if precondition is not None:
                if not isinstance(precondition, dict) or precondition.get("type") != (
                    "content_sha256"
                ):
                    raise _invalid("precondition.type: Input should be 'content_sha256'")
                if precondition.get("content_sha256") != memory["content_sha256"]:
                    raise _APIError(409, "the memory's content_sha256 does not match")
            if body.get("path") is not None:
                path = _memory_path(body["path"])
                self._check_path_free(store_id, path, memory_id)
                memory["path"] = path
            content = memory["content"] if body.get("content") is None else body["content"]
            self._write(memory, _content(content))
            return _shown(memory, view)

    def _delete_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        expected = query_value(exchange.request, "expected_content_sha256")
        with self._condition:
            self._memory_store(store_id, writing=True)
            memory = self._memory(store_id, memory_id)
            if expected is not None and expected != memory["content_sha256"]:
                raise _APIError(409, "the memory's content_sha256 does not match")
            del self._memories[store_id][memory_id]
        return {"id": memory_id, "type": "memory_deleted"}

    def _list_memories(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        request = exchange.request
        view = _query_choice(request, "view", _VIEWS) or "basic"
        depth = _query_int(request, "depth", low=0) or 0
        prefix = query_value(request, "path_prefix") or "/"
        if not prefix.startswith("/") or not prefix.endswith("/"):
            raise _invalid("path_prefix: must start and end with '/'")
        with self._condition:
            self._memory_store(store_id)
            memories = sorted(self._memories[store_id].values(), key=lambda m: m["path"])
            items: list[dict[str, Any]] = []
            folded: set[str] = set()
            for memory in memories:
                if not memory["path"].startswith(prefix):
                    continue
                below = memory["path"][len(prefix) :].split("/")
                if depth and len(below) > depth:
                    folder = prefix + "/".join(below[:depth]) + "/"
                    if folder not in folded:
                        folded.add(folder)
                        items.append({"type": "memory_prefix", "path": folder})
                    continue
                items.append(_shown(memory, view))
            return self._page(
                request,
                items,
                scope=f"memories:{store_id}",
                max_limit=_MAX_FULL_PAGE if view == "full" else _MAX_RESOURCE_PAGE,
            )
