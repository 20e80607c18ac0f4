"""Session resources of the Claude emulator: files, GitHub repositories and memory stores.

Resources are given at session creation (``resources``), and files can be added later
(``/v1/sessions/{id}/resources``). A file resource mounts a read-only copy of a stored file,
with a file id of its own, under ``/mnt/session/uploads`` (only file resources can be added to
a running session, and only they can be removed, which deletes the copy: a repository stays
for the session's lifetime, and only its authorization token can be updated; the token is kept,
never answered). A memory store resource mounts at ``/mnt/memory/<name slug>``.
"""

from __future__ import annotations

import copy
import posixpath
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import (
    _MAX_FILES_PAGE,
    _MAX_SESSION_FILES,
    ID,
    SESSION_PATH,
    _invalid,
    _json_object,
    _not_found,
    _optional_string,
    _reject_unknown,
)
from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._files import Files
    from req_managed_agents.testing.claude._memory import MemoryStores
    from req_managed_agents.testing.claude._model import _Session, _StoredFile
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Route

_FILE_RESOURCE_FIELDS = frozenset({"type", "file_id", "mount_path"})
# Mount paths are rooted here; the agent reads its inputs from this directory.
_UPLOADS_DIR = "/mnt/session/uploads"
_MAX_INSTRUCTIONS = 4096
_REPOSITORY_URL = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)")


def _mount_path(mount_path: Any, file_id: str, where: str) -> str:
    """Where a mounted file lands: every mount path is rooted under the uploads directory."""
    if mount_path is None:
        return f"{_UPLOADS_DIR}/{file_id}"
    if not isinstance(mount_path, str):
        raise _invalid(f"{where}mount_path: must be a string")
    path = posixpath.normpath("/" + mount_path.lstrip("/"))  # ".." cannot climb out
    if path == "/":
        raise _invalid(f"{where}mount_path: must name a file")
    return _UPLOADS_DIR + path


def _checkout(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    field = {"branch": "name", "commit": "sha"}.get(str(kind))
    if field is None:
        raise _invalid(f"{where}checkout.type: Input should be 'branch' or 'commit'")
    _reject_unknown(value, frozenset({"type", field}))
    if not isinstance(value.get(field), str) or not value[field]:
        raise _invalid(f"{where}checkout.{field}: Field required")
    return {"type": kind, field: value[field]}


def _repository(spec: Mapping[str, Any], where: str) -> tuple[dict[str, Any], str | None]:
    """A GitHub repository resource and its token (kept, never answered)."""
    _reject_unknown(
        spec, frozenset({"type", "url", "authorization_token", "mount_path", "checkout"})
    )
    url = spec.get("url")
    found = _REPOSITORY_URL.fullmatch(url) if isinstance(url, str) else None
    if found is None or found.group(2).endswith(".git"):
        raise _invalid(f"{where}url: https://github.com/<owner>/<repo>, without '.git'")
    token = _optional_string(spec, "authorization_token")
    mount_path = _optional_string(spec, "mount_path") or f"/workspace/{found.group(2)}"
    now = utc_timestamp()
    resource = {
        "id": new_id("sesrsc"),
        "type": "github_repository",
        "url": url,
        "mount_path": mount_path,
        "checkout": _checkout(spec.get("checkout"), where),
        "created_at": now,
        "updated_at": now,
    }
    return resource, token


class SessionResources:
    """The session resource routes, and the checks and mounts of resources at creation."""

    def __init__(self, state: ClaudeState, files: Files, memory: MemoryStores) -> None:
        self._state = state
        self._files = files
        self._memory = memory

    def routes(self) -> list[Route]:
        resource = f"{SESSION_PATH}/resources/{ID}"
        return [
            ("POST", f"{SESSION_PATH}/resources", self._add_resource),
            ("GET", f"{SESSION_PATH}/resources", self._list_resources),
            ("GET", resource, self._get_resource),
            ("POST", resource, self._update_resource),
            ("DELETE", resource, self._delete_resource),
        ]

    def file_resource(self, spec: Any, where: str) -> tuple[_StoredFile, str]:
        """Check a file resource; return the file to mount and where it lands.

        ``where`` prefixes field names in messages (``"resources[0]."`` at session creation).
        """
        if not isinstance(spec, dict) or spec.get("type") != "file":
            raise _invalid(
                f"{where}type: Input should be 'file', 'github_repository' or 'memory_store'"
            )
        for key in spec:
            if key not in _FILE_RESOURCE_FIELDS:
                raise _invalid(f"{where}{key}: Extra inputs are not permitted")
        file_id = spec.get("file_id")
        if not isinstance(file_id, str):
            raise _invalid(f"{where}file_id: Field required")
        return self._state.files.find(file_id), _mount_path(spec.get("mount_path"), file_id, where)

    def mount(self, session: _Session, source: _StoredFile, mount_path: str) -> dict[str, Any]:
        """Mount a read-only copy of ``source``: the API gives the copy a file id of its own."""
        original = source.record
        mounted = self._files.new_file(
            original["filename"],
            original["mime_type"],
            source.data,
            downloadable=bool(original["downloadable"]),  # a copy is as downloadable as its source
        )
        now = utc_timestamp()
        resource = {
            "id": new_id("sesrsc"),
            "type": "file",
            "file_id": mounted.record["id"],
            "mount_path": mount_path,
            "created_at": now,
            "updated_at": now,
        }
        session.record["resources"].append(resource)
        return resource

    def memory_resource(self, spec: Mapping[str, Any], where: str) -> dict[str, Any]:
        """Check a memory store resource; return it as the session shows it."""
        _reject_unknown(spec, frozenset({"type", "memory_store_id", "access", "instructions"}))
        store_id = spec.get("memory_store_id")
        if not isinstance(store_id, str):
            raise _invalid(f"{where}memory_store_id: Field required")
        store = self._memory.memory_store(store_id)
        if store["archived_at"]:
            raise _invalid(f"{where}memory_store_id: memory store {store_id!r} is archived")
        access = spec.get("access") or "read_write"
        if access not in ("read_write", "read_only"):
            raise _invalid(f"{where}access: Input should be 'read_write' or 'read_only'")
        instructions = _optional_string(spec, "instructions")
        if instructions is not None and len(instructions) > _MAX_INSTRUCTIONS:
            raise _invalid(f"{where}instructions: at most {_MAX_INSTRUCTIONS} characters")
        slug = re.sub(r"[^a-z0-9]+", "-", store["name"].lower()).strip("-") or store_id
        return {
            "type": "memory_store",
            "memory_store_id": store_id,
            "access": access,
            "instructions": instructions,
            "name": store["name"],
            "description": store["description"],
            "mount_path": f"/mnt/memory/{slug}",
        }

    def _resource(self, session: _Session, resource_id: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = session.record["resources"]
        for resource in resources:
            if resource.get("id") == resource_id:  # a memory store resource has no id
                return resource
        raise _not_found("session resource", resource_id)

    def _add_resource(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            if body.get("type") != "file":
                raise _invalid("type: only 'file' resources can be added to a running session")
            source, mount_path = self.file_resource(body, "")
            if len(session.record["resources"]) >= _MAX_SESSION_FILES:
                raise _invalid(f"a session can have at most {_MAX_SESSION_FILES} files")
            return dict(self.mount(session, source, mount_path))

    def _list_resources(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            resources = self._state.sessions.find(session_id).record["resources"]
            return self._state.page(
                exchange.request,
                resources,
                max_limit=_MAX_FILES_PAGE,
                default_limit=max(1, len(resources)),  # no limit: all of them
            )

    def _get_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            return dict(self._resource(self._state.sessions.find(session_id), resource_id))

    def _update_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        """Rotate a repository's token: the only change a resource takes."""
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"authorization_token"}))
        token = body.get("authorization_token")
        if not isinstance(token, str) or not token:
            raise _invalid("authorization_token: Field required")
        with self._state.condition:
            resource = self._resource(self._state.sessions.find(session_id), resource_id)
            if resource["type"] != "github_repository":
                raise _invalid("only a github_repository resource's token can be updated")
            self._state.tokens[resource_id] = token
            resource["updated_at"] = utc_timestamp()
            return copy.deepcopy(resource)

    def _delete_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            resource = self._resource(session, resource_id)
            if resource["type"] != "file":
                raise _invalid("a repository stays mounted for the session's lifetime")
            session.record["resources"].remove(resource)
            self._state.files.pop(resource["file_id"], None)  # the session's copy goes with it
        return {"id": resource_id, "type": "session_resource_deleted"}
