"""Memory stores, their memories and the memories' versions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers.claude.api._core import (
    FULL_VIEW_PAGE_SIZE,
    ClientCore,
    Json,
    body_of,
    query_params,
    segment,
)

__all__ = ["MemoryAPI"]


def content_query(params: Mapping[str, Any]) -> dict[str, Any]:
    """The query of a memory list; with ``view="full"`` its pages are at most 20 long."""
    query = query_params(params)
    if query.get("view") == "full":
        query.setdefault("limit", FULL_VIEW_PAGE_SIZE)
    return query


def _store_path(memory_store_id: str) -> str:
    return f"/v1/memory_stores/{segment(memory_store_id)}"


def _memory_path(memory_store_id: str, memory_id: str) -> str:
    return f"{_store_path(memory_store_id)}/memories/{segment(memory_id)}"


def _memory_version_path(memory_store_id: str, memory_version_id: str) -> str:
    return f"{_store_path(memory_store_id)}/memory_versions/{segment(memory_version_id)}"


class MemoryAPI(ClientCore):
    """Memory stores, their memories and the memories' versions."""

    def create_memory_store(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/memory_stores`` with ``name`` and optional ``description``/``metadata``."""
        body = body_of(body, fields)
        headers = self._memory_headers()
        return self._create("/v1/memory_stores", body, "name", "a memory store", headers=headers)

    def get_memory_store(self, memory_store_id: str) -> Json:
        """A memory store's name, description and metadata."""
        return self._get(_store_path(memory_store_id), headers=self._memory_headers())

    def list_memory_stores(self, **params: Any) -> list[Json]:
        """Every memory store (all pages); ``include_archived=True`` to see archived ones."""
        params = query_params(params)
        return self._list("/v1/memory_stores", params, headers=self._memory_headers())

    def update_memory_store(
        self, memory_store_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change a memory store's ``name``, ``description`` or ``metadata``."""
        body = body_of(body, fields)
        return self._update(_store_path(memory_store_id), body, headers=self._memory_headers())

    def archive_memory_store(self, memory_store_id: str) -> Json:
        """Archive a memory store for good: new sessions can no longer attach it."""
        return self._archive(_store_path(memory_store_id), headers=self._memory_headers())

    def delete_memory_store(self, memory_store_id: str) -> Json:
        """Delete a memory store."""
        return self._delete(_store_path(memory_store_id), headers=self._memory_headers())

    def create_memory(
        self, memory_store_id: str, path: str, content: str, *, view: str | None = None
    ) -> Json:
        """Write a new memory at ``path`` (absolute, such as ``/notes/todo.md``)."""
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"path must be an absolute memory path, got {path!r}")
        if not isinstance(content, str):
            raise ValueError(f"content must be a string, got {type(content).__name__}")
        return self._json(
            "POST",
            f"{_store_path(memory_store_id)}/memories",
            idempotent=False,
            body={"path": path, "content": content},
            params=query_params({"view": view}),
            headers=self._memory_headers(),
        )

    def get_memory(self, memory_store_id: str, memory_id: str, *, view: str | None = None) -> Json:
        """One memory, with its content unless ``view="basic"``."""
        path, params = _memory_path(memory_store_id, memory_id), query_params({"view": view})
        return self._get(path, params=params, headers=self._memory_headers())

    def list_memories(self, memory_store_id: str, **params: Any) -> list[Json]:
        """Every memory of a store (all pages); ``path_prefix``, ``depth`` and ``view`` as
        the API takes them (``depth=1`` groups deeper paths into ``memory_prefix`` items;
        ``view="full"`` adds each memory's content, in pages of 20, the API's cap)."""
        path = f"{_store_path(memory_store_id)}/memories"
        headers = self._memory_headers()
        # A memory_prefix item (depth=1) stands for a folder and has no id.
        return self._list(path, content_query(params), headers=headers, item_required=())

    def update_memory(
        self,
        memory_store_id: str,
        memory_id: str,
        body: Mapping[str, Any],
        *,
        view: str | None = None,
    ) -> Json:
        """Change a memory's ``content`` or ``path`` (a rename).

        Retried like any update unless ``body`` carries a ``precondition``: a repeat of a
        conditional update that did apply would fail its own content-hash check with a 409.
        """
        return self._json(
            "POST",
            _memory_path(memory_store_id, memory_id),
            idempotent="precondition" not in body,
            body=dict(body),
            params=query_params({"view": view}),
            headers=self._memory_headers(),
        )

    def delete_memory(
        self,
        memory_store_id: str,
        memory_id: str,
        *,
        expected_content_sha256: str | None = None,
    ) -> Json:
        """Delete a memory; with ``expected_content_sha256`` only if it still holds that."""
        return self._delete(
            _memory_path(memory_store_id, memory_id),
            params=query_params({"expected_content_sha256": expected_content_sha256}),
            headers=self._memory_headers(),
        )

    def get_memory_version(
        self, memory_store_id: str, memory_version_id: str, *, view: str | None = None
    ) -> Json:
        """One entry of a store's change history: the memory as one change left it, and who
        made the change. Content comes with it unless ``view="basic"``; a redacted version
        answers with ``content`` and ``path`` null."""
        path = _memory_version_path(memory_store_id, memory_version_id)
        params = query_params({"view": view})
        return self._get(path, params=params, headers=self._memory_headers())

    def list_memory_versions(self, memory_store_id: str, **params: Any) -> list[Json]:
        """Every version of a store's memories (all pages), newest first, those of deleted
        memories included; ``memory_id``, ``operation``, ``api_key_id``, ``session_id``,
        ``service_account_id`` and ``created_at_gte``/``created_at_lte`` filter.
        ``view="full"`` adds each version's content, in pages of 20 (the API's cap)."""
        path = f"{_store_path(memory_store_id)}/memory_versions"
        return self._list(path, content_query(params), headers=self._memory_headers())

    def redact_memory_version(self, memory_store_id: str, memory_version_id: str) -> Json:
        """Erase a version's content, hash, size and path for good (a leaked secret, a
        deletion request), keeping who wrote it and when; ``redacted_at`` is then set."""
        path = f"{_memory_version_path(memory_store_id, memory_version_id)}/redact"
        # Redacting twice leaves the same state, as archiving does.
        return self._json("POST", path, idempotent=True, body={}, headers=self._memory_headers())
