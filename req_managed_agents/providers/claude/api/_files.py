"""The Files API: uploads, session outputs and their downloads."""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from typing import Any

from req_managed_agents.providers.claude.api._core import (
    ClientCore,
    FileContent,
    Json,
    query_params,
    segment,
)

__all__ = ["FilesAPI"]


class FilesAPI(ClientCore):
    """The Files API: uploads, session outputs and their downloads."""

    def upload_file(
        self,
        file: FileContent,
        *,
        filename: str | None = None,
        content_type: str | None = None,
        purpose: str | None = None,
    ) -> Json:
        """Upload bytes, an open binary file or a path; the part always carries a MIME type
        (the API rejects parts without one), guessed from the file name unless given."""
        if isinstance(file, (str, os.PathLike)):
            path = Path(file)
            name = filename or path.name
            with path.open("rb") as handle:
                return self._upload(handle.read(), name, content_type, purpose)
        if isinstance(file, bytes):
            if not filename:
                raise ValueError("uploading bytes needs a filename")
            return self._upload(file, filename, content_type, purpose)
        name = filename or os.path.basename(getattr(file, "name", "") or "")
        if not name:
            raise ValueError("uploading a file object needs a filename")
        return self._upload(file.read(), name, content_type, purpose)

    def _upload(
        self, content: bytes, filename: str, content_type: str | None, purpose: str | None
    ) -> Json:
        media_type = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
        fields: dict[str, Any] = {"file": (filename, content, media_type)}
        if purpose is not None:
            fields["purpose"] = (None, purpose)
        headers = {"anthropic-beta": self.files_beta}
        return self._json("POST", "/v1/files", idempotent=False, files=fields, headers=headers)

    def list_files(self, *, scope_id: str | None = None, **params: Any) -> list[Json]:
        """Every file (all pages); ``scope_id=<session id>`` lists a session's outputs."""
        query = query_params(params)
        if scope_id is not None:
            query["scope_id"] = scope_id
        return self._list("/v1/files", query, headers=self._files_headers())

    def get_file(self, file_id: str) -> Json:
        """A file's metadata (name, size, MIME type, scope)."""
        return self._get(f"/v1/files/{segment(file_id)}", headers=self._files_headers())

    def download_file(self, file_id: str) -> bytes:
        """A file's raw bytes."""
        path = f"/v1/files/{segment(file_id)}/content"
        response = self._http.request(
            "GET", path, idempotent=True, headers=self._files_headers(), max_body=None
        )
        return response.content

    def delete_file(self, file_id: str) -> Json:
        """Delete a file (a session's outputs also go when the session is deleted)."""
        return self._delete(f"/v1/files/{segment(file_id)}", headers=self._files_headers())
