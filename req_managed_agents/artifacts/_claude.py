"""``ClaudeFiles``: a Claude Managed Agents session's files through the Files API.

A session has two kinds of files. Outputs are what the agent writes under
:attr:`ClaudeFiles.OUTPUTS_DIR` (``/mnt/session/outputs``): they become files scoped to the
session, listed with ``scope_id`` (possibly a few seconds after the turn that wrote them), and
they are downloadable. Inputs are what ``put`` uploads and mounts read-only under
``/mnt/session/uploads`` for the agent to read; the API does not offer uploaded files for
download, so ``fetch`` of an input fails with the API's error. ``list`` shows both. Names
repeat when an agent rewrites a file: ``list`` shows every copy, ``fetch`` and ``delete`` act
on the newest.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from req_managed_agents.artifacts._base import check_name
from req_managed_agents.errors import ArtifactNotFoundError
from req_managed_agents.model._vocabulary import Artifact

__all__ = ["ClaudeFiles"]


@dataclass(frozen=True)
class _Entry:
    artifact: Artifact
    resource_id: str | None  # set for inputs: the session resource that mounts the file


class ClaudeFiles:
    """The files of one Claude session (``client`` is ``ClaudeManagedAgents(...).client``)."""

    OUTPUTS_DIR = "/mnt/session/outputs"
    UPLOADS_DIR = "/mnt/session/uploads"

    def __init__(self, client: Any, session_id: str) -> None:
        if not session_id:
            raise ValueError("ClaudeFiles needs a session id")
        self._client = client
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"ClaudeFiles(session_id={self.session_id!r})"

    @classmethod
    def output_path(cls, name: str) -> str:
        """Where an agent must write ``name`` for it to become a downloadable artifact (for
        system prompts: "save the report to {output_path('report.csv')}")."""
        return f"{cls.OUTPUTS_DIR}/{check_name(name)}"

    def _entries(self) -> list[_Entry]:
        entries = [
            _Entry(_artifact(record), None)
            for record in self._client.list_files(scope_id=self.session_id)
        ]
        for resource in self._client.list_session_resources(self.session_id):
            if resource.get("type") == "file" and isinstance(resource.get("file_id"), str):
                record = self._client.get_file(resource["file_id"])
                entries.append(_Entry(_artifact(record), str(resource.get("id"))))
        return sorted(entries, key=lambda entry: _newest_first(entry.artifact))

    def list(self) -> list[Artifact]:
        """The session's outputs and inputs (every page), newest first."""
        return [entry.artifact for entry in self._entries()]

    def _newest(self, name: str) -> _Entry:
        check_name(name)
        for entry in self._entries():
            if entry.artifact.name == name:
                return entry
        raise ArtifactNotFoundError(name, f"session {self.session_id}")

    def fetch(self, name: str) -> bytes:
        """The bytes of the newest session file called ``name``."""
        return bytes(self._client.download_file(self._newest(name).artifact.id))

    def put(self, name: str, data: bytes) -> Artifact:
        """Upload ``data`` and mount it read-only at ``/mnt/session/uploads/<name>`` for the
        agent to read."""
        check_name(name)
        media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        record = self._client.upload_file(bytes(data), filename=name, content_type=media_type)
        self._client.attach_file(self.session_id, record["id"], mount_path=f"/{name}")
        return _artifact(record)

    def delete(self, name: str) -> None:
        """Delete the newest output called ``name``, or detach the newest input of that name."""
        entry = self._newest(name)
        if entry.resource_id is not None:
            self._client.delete_session_resource(self.session_id, entry.resource_id)
        else:
            self._client.delete_file(entry.artifact.id)


def _artifact(record: Mapping[str, Any]) -> Artifact:
    size = record.get("size_bytes")
    media_type = record.get("mime_type")
    return Artifact(
        name=str(record.get("filename", "")),
        size=size if isinstance(size, int) else None,
        id=str(record.get("id", "")),
        created_at=_timestamp(record.get("created_at")),
        media_type=media_type if isinstance(media_type, str) else None,
    )


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _newest_first(artifact: Artifact) -> tuple[bool, float]:
    created = artifact.created_at
    return (created is None, -created.timestamp() if created is not None else 0.0)
