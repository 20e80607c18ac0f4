"""Files of the Claude emulator: the Files API and the session resources that mount files.

The Files API stores uploads (``POST /v1/files``, multipart, with an optional
``expires_in_seconds``), lists them (newest first, by ``scope_id`` and by ``ids[]`` too),
answers their metadata, serves the content of downloadable ones and deletes them. A session
resource mounts a read-only copy of a file, with a file id of its own, under
``/mnt/session/uploads`` (only file resources can be added to a running session, and only
they can be removed: a repository stays for the session's lifetime); the files a session's
agent writes to ``/mnt/session/outputs/`` are stored here as downloadable files scoped to
the session.
"""

from __future__ import annotations

import copy
import mimetypes
import posixpath
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_base import _ClaudeBase
from req_managed_agents.testing._server import parse_form_data, query_value, utc_timestamp
from req_managed_agents.testing.claude._wire import (
    _MAX_FILES_PAGE,
    _MAX_SESSION_FILES,
    BETA,
    _betas,
    _invalid,
    _json_object,
    _new_id,
    _not_found,
)

if TYPE_CHECKING:
    from req_managed_agents.testing._claude_base import _Session
    from req_managed_agents.testing._server import Exchange, FormPart

_FILE_RESOURCE_FIELDS = frozenset({"type", "file_id", "mount_path"})

# Mount paths are rooted here; the agent reads its inputs from this directory.
_UPLOADS_DIR = "/mnt/session/uploads"
# How long an upload may be asked to live (seconds).
_MIN_EXPIRY = 3600
_MAX_EXPIRY = 7_776_000
_MAX_IDS = 100  # file ids one list may filter by


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


def _expiry(parts: list[FormPart]) -> str | None:
    """When an upload expires: ``expires_in_seconds`` (3600 to 7776000) from now, if given."""
    values = [part.data for part in parts if part.name == "expires_in_seconds"]
    if not values:
        return None
    text = values[0].decode("ascii", "replace").strip()
    if not text.isdigit() or not _MIN_EXPIRY <= int(text) <= _MAX_EXPIRY:
        raise _invalid(f"expires_in_seconds: an integer from {_MIN_EXPIRY} to {_MAX_EXPIRY}")
    return utc_timestamp(datetime.now(timezone.utc) + timedelta(seconds=int(text)))


@dataclass
class _StoredFile:
    """A Files API file: the metadata the API answers, and the bytes behind it."""

    record: dict[str, Any]
    data: bytes = field(repr=False)

    @property
    def scope_id(self) -> str | None:
        scope = self.record.get("scope")
        return None if scope is None else str(scope["id"])


class _FilesAPI(_ClaudeBase):
    """The stored files, the Files API routes and the session resource routes."""

    _files: dict[str, _StoredFile]  # oldest first
    _last_file_time: datetime
    _downloadable_uploads: bool

    # --- files ----------------------------------------------------------------------------

    def _file_time(self) -> str:
        """A creation time later than every earlier file's, so "newest" is never a tie.

        In microseconds, so that the bump past a tie stays far below what a test can see.
        """
        now = datetime.now(timezone.utc)
        self._last_file_time = max(now, self._last_file_time + timedelta(microseconds=1))
        return utc_timestamp(self._last_file_time, "microseconds")

    def _new_file(
        self,
        filename: str,
        mime_type: str,
        data: bytes,
        *,
        downloadable: bool = False,
        scope_id: str | None = None,
    ) -> _StoredFile:
        record: dict[str, Any] = {
            "id": _new_id("file"),
            "type": "file",
            "filename": filename,
            "mime_type": mime_type,
            "size_bytes": len(data),
            "created_at": self._file_time(),
            "downloadable": downloadable,
        }
        if scope_id is not None:
            record["scope"] = {"type": "session", "id": scope_id}
        stored = _StoredFile(record, data)
        self._files[record["id"]] = stored
        return stored

    def _write_output(self, session: _Session, name: str, data: bytes) -> _StoredFile:
        mime_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return self._new_file(
            name, mime_type, data, downloadable=True, scope_id=session.record["id"]
        )

    def _file(self, file_id: str) -> _StoredFile:
        stored = self._files.get(file_id)
        if stored is None:
            raise _not_found("file", file_id)
        return stored

    def _upload_file(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        try:
            parts = parse_form_data(request.raw_body, request.headers.get("content-type", ""))
        except ValueError as error:
            raise _invalid(f"the body must be multipart/form-data: {error}") from None
        for part in parts:
            # purpose: sent by some clients, unused; expires_in_seconds: SDK 2.16.
            if part.name not in ("file", "purpose", "expires_in_seconds"):
                raise _invalid(f"{part.name}: Extra inputs are not permitted")
        expires_at = _expiry(parts)
        uploads = [part for part in parts if part.name == "file"]
        if len(uploads) != 1:
            raise _invalid("file: exactly one file part is required")
        upload = uploads[0]
        filename = re.split(r"[/\\]", upload.filename or "")[-1]  # the last path component
        if not filename:
            raise _invalid("file: the part needs a filename")
        if not upload.content_type:
            raise _invalid("file: the part needs a content type (the file's MIME type)")
        with self._condition:
            stored = self._new_file(
                filename,
                upload.content_type,
                upload.data,
                downloadable=self._downloadable_uploads,
            )
            if expires_at is not None:
                stored.record["expires_at"] = expires_at
            return dict(stored.record)

    def _list_files(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        scope_id = query_value(request, "scope_id")
        if scope_id is not None and BETA not in _betas(request):
            raise _invalid(
                f"scope_id: listing a session's files needs the anthropic-beta header {BETA}"
            )
        ids = {*request.query.get("ids[]", []), *request.query.get("ids", [])}
        if len(ids) > _MAX_IDS:
            raise _invalid(f"ids: at most {_MAX_IDS} file ids")
        with self._condition:
            newest_first = [
                f.record
                for f in reversed(self._files.values())
                if scope_id in (None, f.scope_id) and (not ids or f.record["id"] in ids)
            ]
            return self._page(
                request, newest_first, scope=f"files:{scope_id}", max_limit=_MAX_FILES_PAGE
            )

    def _get_file(self, exchange: Exchange, file_id: str) -> dict[str, Any]:
        with self._condition:
            return copy.deepcopy(self._file(file_id).record)

    def _download_file(self, exchange: Exchange, file_id: str) -> None:
        with self._condition:
            stored = self._file(file_id)
            if not stored.record["downloadable"]:
                raise _invalid(f"file {file_id!r} is not downloadable")
        headers = {"request-id": _new_id("req"), "Content-Type": stored.record["mime_type"]}
        exchange.respond(200, stored.data, headers)

    def _delete_file(self, exchange: Exchange, file_id: str) -> dict[str, Any]:
        with self._condition:
            self._file(file_id)
            del self._files[file_id]
        return {"id": file_id, "type": "file_deleted"}

    def _delete_session_files(self, session: _Session) -> None:
        """Delete what goes with a deleted session: its outputs and its mounted copies."""
        mounted = {r.get("file_id") for r in session.record["resources"]}
        for file_id, stored in list(self._files.items()):
            if stored.scope_id == session.record["id"] or file_id in mounted:
                del self._files[file_id]

    # --- session resources ----------------------------------------------------------------

    def _file_resource(self, spec: Any, where: str) -> tuple[_StoredFile, str]:
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
        return self._file(file_id), _mount_path(spec.get("mount_path"), file_id, where)

    def _mount(self, session: _Session, source: _StoredFile, mount_path: str) -> dict[str, Any]:
        """Mount a read-only copy of ``source``: the API gives the copy a file id of its own."""
        original = source.record
        mounted = self._new_file(
            original["filename"],
            original["mime_type"],
            source.data,
            downloadable=bool(original["downloadable"]),  # a copy is as downloadable as its source
        )
        now = utc_timestamp()
        resource = {
            "id": _new_id("sesrsc"),
            "type": "file",
            "file_id": mounted.record["id"],
            "mount_path": mount_path,
            "created_at": now,
            "updated_at": now,
        }
        session.record["resources"].append(resource)
        return resource

    def _resource(self, session: _Session, resource_id: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = session.record["resources"]
        for resource in resources:
            if resource.get("id") == resource_id:  # a memory store resource has no id
                return resource
        raise _not_found("session resource", resource_id)

    def _add_resource(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        with self._condition:
            session = self._live_session(session_id)
            if body.get("type") != "file":
                raise _invalid("type: only 'file' resources can be added to a running session")
            source, mount_path = self._file_resource(body, "")
            if len(session.record["resources"]) >= _MAX_SESSION_FILES:
                raise _invalid(f"a session can have at most {_MAX_SESSION_FILES} files")
            return dict(self._mount(session, source, mount_path))

    def _list_resources(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            resources = self._live_session(session_id).record["resources"]
            return self._page(
                exchange.request,
                resources,
                scope=f"resources:{session_id}",
                max_limit=_MAX_FILES_PAGE,
                default_limit=max(1, len(resources)),  # no limit: all of them
            )

    def _get_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        with self._condition:
            return dict(self._resource(self._live_session(session_id), resource_id))

    def _delete_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        with self._condition:
            session = self._live_session(session_id)
            resource = self._resource(session, resource_id)
            if resource["type"] != "file":
                raise _invalid("a repository stays mounted for the session's lifetime")
            session.record["resources"].remove(resource)
            self._files.pop(resource["file_id"], None)  # the session's copy goes with it
        return {"id": resource_id, "type": "session_resource_deleted"}
