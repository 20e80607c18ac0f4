"""Files of the Claude emulator: the Files API, and the files sessions write.

The Files API stores uploads (``POST /v1/files``, multipart, with an optional
``expires_in_seconds``), lists them (newest first, by ``scope_id`` and by ``ids[]`` too),
answers their metadata, serves the content of downloadable ones and deletes them. The files a
session's agent writes to ``/mnt/session/outputs/`` are stored here as downloadable files
scoped to the session; the read-only copies that session resources mount are stored here too
(see ``_resources``).
"""

from __future__ import annotations

import copy
import mimetypes
import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._model import _StoredFile
from req_managed_agents.testing.claude._wire import (
    _MAX_FILES_PAGE,
    BETA,
    ID,
    _betas,
    _coded,
    _invalid,
)
from req_managed_agents.testing.server import new_id, parse_form_data, query_value, utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, FormPart, Route

# How long an upload may be asked to live (seconds).
_MIN_EXPIRY = 3600
_MAX_EXPIRY = 7_776_000
_MAX_IDS = 100  # file ids one list may filter by


def _expiry(parts: list[FormPart]) -> str | None:
    """When an upload expires: ``expires_in_seconds`` (3600 to 7776000) from now, if given."""
    values = [part.data for part in parts if part.name == "expires_in_seconds"]
    if not values:
        return None
    text = values[0].decode("ascii", "replace").strip()
    if not text.isdigit() or not _MIN_EXPIRY <= int(text) <= _MAX_EXPIRY:
        raise _invalid(f"expires_in_seconds: an integer from {_MIN_EXPIRY} to {_MAX_EXPIRY}")
    return utc_timestamp(datetime.now(timezone.utc) + timedelta(seconds=int(text)))


class Files:
    """The stored files (in the state) and the Files API routes."""

    def __init__(self, state: ClaudeState, *, downloadable_uploads: bool) -> None:
        self._state = state
        self._downloadable_uploads = downloadable_uploads

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/files", self._upload_file),
            ("GET", "/v1/files", self._list_files),
            ("GET", f"/v1/files/{ID}", self._get_file),
            ("DELETE", f"/v1/files/{ID}", self._delete_file),
            ("GET", f"/v1/files/{ID}/content", self._download_file),
        ]

    def _file_time(self) -> str:
        """A creation time later than every earlier file's, so "newest" is never a tie.

        In microseconds, so that the bump past a tie stays far below what a test can see.
        """
        now = datetime.now(timezone.utc)
        self._state.last_file_time = max(
            now, self._state.last_file_time + timedelta(microseconds=1)
        )
        return utc_timestamp(self._state.last_file_time, "microseconds")

    def new_file(
        self,
        filename: str,
        mime_type: str,
        data: bytes,
        *,
        downloadable: bool = False,
        scope_id: str | None = None,
    ) -> _StoredFile:
        """Store a file; ``scope_id`` scopes it to a session (its outputs)."""
        record: dict[str, Any] = {
            "id": new_id("file"),
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
        self._state.files[record["id"]] = stored
        return stored

    def write_output(self, session: _Session, name: str, data: bytes) -> _StoredFile:
        """Store a file the session's agent wrote to ``/mnt/session/outputs/``."""
        mime_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return self.new_file(
            name, mime_type, data, downloadable=True, scope_id=session.record["id"]
        )

    def delete_session_files(self, session: _Session) -> None:
        """Delete what goes with a deleted session: its outputs and its mounted copies."""
        mounted = {r.get("file_id") for r in session.record["resources"]}
        for file_id, stored in list(self._state.files.items()):
            if stored.scope_id == session.record["id"] or file_id in mounted:
                del self._state.files[file_id]

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
        with self._state.condition:
            stored = self.new_file(
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
        with self._state.condition:
            newest_first = [
                f.record
                for f in reversed(self._state.files.values())
                if scope_id in (None, f.scope_id) and (not ids or f.record["id"] in ids)
            ]
            return self._state.page(request, newest_first, max_limit=_MAX_FILES_PAGE)

    def _get_file(self, exchange: Exchange, file_id: str) -> dict[str, Any]:
        with self._state.condition:
            return copy.deepcopy(self._state.files.find(file_id).record)

    def _download_file(self, exchange: Exchange, file_id: str) -> None:
        with self._state.condition:
            stored = self._state.files.find(file_id)
            if not stored.record["downloadable"]:
                message = f"file {file_id!r} is not downloadable"
                raise _coded("file_not_downloadable", message)
        headers = {"request-id": new_id("req"), "Content-Type": stored.record["mime_type"]}
        exchange.respond(200, stored.data, headers)

    def _delete_file(self, exchange: Exchange, file_id: str) -> dict[str, Any]:
        with self._state.condition:
            self._state.files.remove(file_id)
        return {"id": file_id, "type": "file_deleted"}
