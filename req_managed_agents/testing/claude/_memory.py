"""Memory stores for the Claude emulator: named stores of text memories sessions can mount.

A memory store (``/v1/memory_stores``) is created with a ``name``, read, updated (metadata
as a patch), listed (archived ones on request, by ``created_at[gte|lte]``), archived and
deleted, with its memories and their versions (``_memories``). These routes take the beta
``agent-memory-2026-07-22`` or ``managed-agents-2026-04-01``; an archived store is read-only
(redactions included). On Bedrock a store has a ``backend``, ``{"type": "managed"}``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._resource import Resource
from req_managed_agents.testing.claude._wire import (
    ID,
    _invalid,
    _json_object,
    _merged_metadata,
    _not_found,
    _optional_string,
    _reject_unknown,
    _required_name,
)
from req_managed_agents.testing.server import Records, new_id, utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Route


class MemoryStores(Resource):
    """The memory store routes, and the stores sessions mount."""

    created_bounds = ("gte", "lte")

    def __init__(self, state: ClaudeState) -> None:
        super().__init__(state, state.memory_stores, "/v1/memory_stores")

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/memory_stores", self._create_memory_store),
            ("POST", f"/v1/memory_stores/{ID}", self._update_memory_store),
            *super().routes(),
        ]

    def memory_store(self, store_id: str, *, writing: bool = False) -> dict[str, Any]:
        """A memory store (``writing``: not archived); a 404 for an unknown one."""
        store = self._state.memory_stores.find(store_id)
        if writing and store["archived_at"]:
            raise _invalid(f"memory store {store_id!r} is archived (read-only)")
        return store

    def _create_memory_store(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        fields = {"name", "description", "metadata"}
        _reject_unknown(body, frozenset(fields | {"backend"} if self._state.bedrock else fields))
        backend = body.get("backend") or {"type": "managed"}  # Bedrock's one kind of store
        if backend != {"type": "managed"}:
            raise _invalid("backend: Input should be {'type': 'managed'}")
        now = utc_timestamp()
        store = {
            "id": new_id("memstore"),
            "type": "memory_store",
            "name": _required_name(body),
            "description": _optional_string(body, "description") or "",
            "metadata": _merged_metadata({}, body.get("metadata") or {}),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        if self._state.bedrock:
            store["backend"] = backend
        with self._state.condition:
            self._state.memory_stores[store["id"]] = store
            self._state.memories[store["id"]] = Records("memory", _not_found)
            self._state.memory_versions[store["id"]] = Records("memory version", _not_found)
            return copy.deepcopy(store)

    def _update_memory_store(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"name", "description", "metadata"}))
        with self._state.condition:
            store = self.memory_store(store_id, writing=True)
            updated = copy.deepcopy(store)
            if body.get("name") is not None:
                updated["name"] = _required_name(body)
            if body.get("description") is not None:
                updated["description"] = _optional_string(body, "description")
            if body.get("metadata") is not None:
                updated["metadata"] = _merged_metadata(store["metadata"], body["metadata"])
            if updated != store:
                updated["updated_at"] = utc_timestamp()
                self._state.memory_stores[store_id] = updated
            return copy.deepcopy(updated)

    def _deleting(self, record: dict[str, Any]) -> None:
        del self._state.memories[record["id"]]
        del self._state.memory_versions[record["id"]]
