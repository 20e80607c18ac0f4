"""Memories in the Claude emulator's memory stores, and their versions.

A store's memories (``.../memories``) are texts at paths such as ``/notes/todo.md``:
created (a taken path is a 409), read (``view=full`` by default: with the content), updated
(new content, or a new path; a ``content_sha256`` precondition that fails is a 409), listed
by path (``path_prefix``, and ``depth=1`` folds deeper memories into ``memory_prefix``
items; ``view=basic`` by default, without the content) and deleted (a mismatching
``expected_content_sha256`` is a 409). Every change records a memory version
(``.../memory_versions``), as the service does: ``created``, ``modified`` (an update that
changes neither content nor path records none) or ``deleted`` (without content, hash or
size), written by an ``api_actor`` whose ``api_key_id`` stands for the emulator's key; the
memory's ``memory_version_id`` names its latest one. Versions belong to the store: they stay
after their memory is deleted and go with the store. They are read (``view=full`` by
default), listed newest first (``view=basic`` by default; filtered by ``memory_id``,
``operation``, ``api_key_id``, ``service_account_id``, ``session_id`` and
``created_at[gte|lte]``) and redacted: ``content``, ``path``, ``content_sha256`` and
``content_size_bytes`` become null and ``redacted_at``/``redacted_by`` are set; redacting
again changes nothing. An archived store is read-only (redactions included).
"""

from __future__ import annotations

import copy
import hashlib
import unicodedata
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import (
    _MAX_RESOURCE_PAGE,
    ID,
    _APIError,
    _invalid,
    _json_object,
    _query_choice,
    _query_int,
    _reject_unknown,
    _time_filter,
)
from req_managed_agents.testing.server import new_id, query_value, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._memory import MemoryStores
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Route

_MAX_CONTENT_BYTES = 102_400
_MAX_PATH_BYTES = 1024
_MAX_SEGMENTS = 20
_MAX_FULL_PAGE = 20  # a page of memories or versions with their content holds fewer
_VIEWS = ("basic", "full")
_OPERATIONS = ("created", "modified", "deleted")
# What a redaction clears from a version.
_REDACTED_FIELDS = ("content", "path", "content_sha256", "content_size_bytes")
# The filters of a version list that name the version's author, by the actor type they match.
_ACTOR_FILTERS = {
    "api_key_id": "api_actor",
    "service_account_id": "service_account_actor",
    "session_id": "session_actor",
}


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


def _written_by(version: Mapping[str, Any], name: str, value: str) -> bool:
    """Whether a version's author is the actor an ``api_key_id``-style filter names."""
    author = version["created_by"]
    if not isinstance(author, dict) or author["type"] != _ACTOR_FILTERS[name]:
        return False
    return bool(author[name] == value)


class Memories:
    """The memory and memory version routes of the ``stores``.

    ``api_key`` is the emulator's: the memory versions name it, by an id that is not it.
    """

    def __init__(self, state: ClaudeState, stores: MemoryStores, *, api_key: str) -> None:
        self._state = state
        self._stores = stores
        self._api_key = api_key

    def routes(self) -> list[Route]:
        store = f"/v1/memory_stores/{ID}"
        return [
            ("POST", f"{store}/memories", self._create_memory),
            ("GET", f"{store}/memories", self._list_memories),
            ("GET", f"{store}/memories/{ID}", self._get_memory),
            ("POST", f"{store}/memories/{ID}", self._update_memory),
            ("DELETE", f"{store}/memories/{ID}", self._delete_memory),
            ("GET", f"{store}/memory_versions", self._list_memory_versions),
            ("GET", f"{store}/memory_versions/{ID}", self._get_memory_version),
            ("POST", f"{store}/memory_versions/{ID}/redact", self._redact_memory_version),
        ]

    def _api_actor(self) -> dict[str, str]:
        """The author of what comes in over REST: the key, by an id that is not the secret."""
        digest = hashlib.sha256(self._api_key.encode()).hexdigest()[:24]
        return {"type": "api_actor", "api_key_id": f"apikey_{digest}"}

    def _memory(self, store_id: str, memory_id: str) -> dict[str, Any]:
        self._stores.memory_store(store_id)
        return self._state.memories[store_id].find(memory_id)

    def _check_path_free(self, store_id: str, path: str, own_id: str = "") -> None:
        for memory in self._state.memories[store_id].values():
            if memory["path"] == path and memory["id"] != own_id:
                raise _APIError(409, f"a memory already exists at {path!r}")

    def _write(self, memory: dict[str, Any], content: str, operation: str) -> None:
        """Give a memory new content: a new version, with its hash and size."""
        data = content.encode()
        memory.update(
            content=content,
            content_sha256=hashlib.sha256(data).hexdigest(),
            content_size_bytes=len(data),
            memory_version_id=new_id("memver"),
            updated_at=utc_timestamp(),
        )
        self._record_version(memory, operation)

    def _record_version(self, memory: Mapping[str, Any], operation: str) -> None:
        """Add a version to the store's history: the memory as this change left it (a
        ``deleted`` version keeps only its path)."""
        deleted = operation == "deleted"
        version = {
            "id": new_id("memver") if deleted else memory["memory_version_id"],
            "type": "memory_version",
            "memory_store_id": memory["memory_store_id"],
            "memory_id": memory["id"],
            "operation": operation,
            "path": memory["path"],
            "content": None if deleted else memory["content"],
            "content_sha256": None if deleted else memory["content_sha256"],
            "content_size_bytes": None if deleted else memory["content_size_bytes"],
            "created_at": utc_timestamp() if deleted else memory["updated_at"],
            "created_by": self._api_actor(),
            "redacted_at": None,
            "redacted_by": None,
        }
        self._state.memory_versions[memory["memory_store_id"]][version["id"]] = version

    def _create_memory(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        request = exchange.request
        body = _json_object(request)
        _reject_unknown(body, frozenset({"path", "content"}))
        view = _query_choice(request, "view", _VIEWS) or "basic"
        path = _memory_path(body.get("path"))
        if "content" not in body:
            raise _invalid('content: Field required ("" for an empty memory)')
        content = _content(body["content"])
        with self._state.condition:
            self._stores.memory_store(store_id, writing=True)
            self._check_path_free(store_id, path)
            memory: dict[str, Any] = {
                "id": new_id("mem"),
                "type": "memory",
                "memory_store_id": store_id,
                "path": path,
                "created_at": utc_timestamp(),
            }
            self._write(memory, content, "created")
            self._state.memories[store_id][memory["id"]] = memory
            return _shown(memory, view)

    def _get_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        view = _query_choice(exchange.request, "view", _VIEWS) or "full"
        with self._state.condition:
            return _shown(self._memory(store_id, memory_id), view)

    def _update_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        request = exchange.request
        body = _json_object(request)
        _reject_unknown(body, frozenset({"path", "content", "precondition"}))
        view = _query_choice(request, "view", _VIEWS) or "basic"
        with self._state.condition:
            self._stores.memory_store(store_id, writing=True)
            memory = self._memory(store_id, memory_id)
            precondition = body.get("precondition")
            if precondition is not None:
                if not isinstance(precondition, dict) or precondition.get("type") != (
                    "content_sha256"
                ):
                    raise _invalid("precondition.type: Input should be 'content_sha256'")
                if precondition.get("content_sha256") != memory["content_sha256"]:
                    raise _APIError(409, "the memory's content_sha256 does not match")
            path = memory["path"]
            if body.get("path") is not None:
                path = _memory_path(body["path"])
                self._check_path_free(store_id, path, memory_id)
            content = memory["content"] if body.get("content") is None else body["content"]
            content = _content(content)
            if (path, content) != (memory["path"], memory["content"]):
                # As the service: an update that changes nothing adds no version.
                memory["path"] = path
                self._write(memory, content, "modified")
            return _shown(memory, view)

    def _delete_memory(self, exchange: Exchange, store_id: str, memory_id: str) -> dict[str, Any]:
        expected = query_value(exchange.request, "expected_content_sha256")
        with self._state.condition:
            self._stores.memory_store(store_id, writing=True)
            memory = self._memory(store_id, memory_id)
            if expected is not None and expected != memory["content_sha256"]:
                raise _APIError(409, "the memory's content_sha256 does not match")
            del self._state.memories[store_id][memory_id]
            self._record_version(memory, "deleted")
        return {"id": memory_id, "type": "memory_deleted"}

    def _list_memories(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        request = exchange.request
        view = _query_choice(request, "view", _VIEWS) or "basic"
        depth = _query_int(request, "depth", low=0) or 0
        prefix = query_value(request, "path_prefix") or "/"
        if not prefix.startswith("/") or not prefix.endswith("/"):
            raise _invalid("path_prefix: must start and end with '/'")
        with self._state.condition:
            self._stores.memory_store(store_id)
            memories = sorted(self._state.memories[store_id].values(), key=lambda m: m["path"])
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
            return self._state.page(
                request,
                items,
                max_limit=_MAX_FULL_PAGE if view == "full" else _MAX_RESOURCE_PAGE,
            )

    def _memory_version(self, store_id: str, version_id: str) -> dict[str, Any]:
        self._stores.memory_store(store_id)
        return self._state.memory_versions[store_id].find(version_id)

    def _get_memory_version(
        self, exchange: Exchange, store_id: str, version_id: str
    ) -> dict[str, Any]:
        view = _query_choice(exchange.request, "view", _VIEWS) or "full"
        with self._state.condition:
            return _shown(self._memory_version(store_id, version_id), view)

    def _list_memory_versions(self, exchange: Exchange, store_id: str) -> dict[str, Any]:
        request = exchange.request
        view = _query_choice(request, "view", _VIEWS) or "basic"
        operation = _query_choice(request, "operation", _OPERATIONS)
        memory_id = query_value(request, "memory_id")
        authors = {
            name: value
            for name in _ACTOR_FILTERS
            if (value := query_value(request, name)) is not None
        }
        created = _time_filter(request, bounds=("gte", "lte"))
        with self._state.condition:
            self._stores.memory_store(store_id)
            versions = [
                _shown(v, view)
                for v in reversed(self._state.memory_versions[store_id].values())
                if (memory_id is None or v["memory_id"] == memory_id)
                and (operation is None or v["operation"] == operation)
                and all(_written_by(v, name, value) for name, value in authors.items())
                and created(v["created_at"])
            ]
            return self._state.page(
                request,
                versions,
                max_limit=_MAX_FULL_PAGE if view == "full" else _MAX_RESOURCE_PAGE,
            )

    def _redact_memory_version(
        self, exchange: Exchange, store_id: str, version_id: str
    ) -> dict[str, Any]:
        _reject_unknown(_json_object(exchange.request, optional=True), frozenset())
        with self._state.condition:
            self._stores.memory_store(store_id, writing=True)
            version = self._memory_version(store_id, version_id)
            if version["redacted_at"] is None:
                version.update(dict.fromkeys(_REDACTED_FIELDS))
                version["redacted_at"] = utc_timestamp()
                version["redacted_by"] = self._api_actor()
            return copy.deepcopy(version)
