"""The Claude Managed Agents control plane: agents, environments, sessions, events, files.

Every method is one documented endpoint and returns the provider's JSON verbatim (plain dicts);
list methods follow the cursor to the last page. Retries follow :mod:`req_managed_agents._retry`:

* GET and DELETE, and the ``archive`` POSTs (archiving twice leaves the same state), are
  retried on connection errors, timeouts, 408/429/5xx/529;
* creating a session is retried the same way: a repeat can at worst leave an empty idle
  session behind, which does no work;
* agent and environment creates and ``send_events`` are retried only when the server
  provably did not act (no connection, or a 429/503/529 refusal with ``retry-after``): a
  repeated create would leave a duplicate behind, and a repeated ``user.message`` would
  prompt the agent twice. The session driver recovers ``send_events`` itself: whether an
  event landed can be read back from the session's history, so it checks before re-sending.
"""

from __future__ import annotations

import mimetypes
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Union
from urllib.parse import quote

import requests

from req_managed_agents._http import HttpClient, api_error
from req_managed_agents._json import excerpt, loads
from req_managed_agents._redact import Secret
from req_managed_agents._retry import RetryPolicy, parse_retry_after
from req_managed_agents.errors import APIError

__all__ = ["ANTHROPIC_VERSION", "FILES_BETA", "MANAGED_AGENTS_BETA", "ClaudeClient"]

MANAGED_AGENTS_BETA = "managed-agents-2026-04-01"
FILES_BETA = "files-api-2025-04-14"
ANTHROPIC_VERSION = "2023-06-01"

# The API caps history pages at 1000; 100 keeps each response small while paging fast.
EVENTS_PAGE_SIZE = 100
LIST_PAGE_SIZE = 100
# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000

Json = dict[str, Any]
FileContent = Union[bytes, BinaryIO, str, "os.PathLike[str]"]


def _segment(value: str) -> str:
    """One path segment; an id can never escape into another path."""
    if not value or value in (".", ".."):
        # requests collapses dot segments (even percent-encoded ones) into another path.
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


def _parse_anthropic_error(response: requests.Response) -> APIError:
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = excerpt(response.content, _ERROR_BODY_EXCERPT)
    error = body.get("error") if isinstance(body, dict) else None
    error_type = message = None
    if isinstance(error, dict):
        details = error.get("details")
        error_type = error.get("type")
        if isinstance(details, dict) and isinstance(details.get("error_code"), str):
            error_type = details["error_code"]
        message = error.get("message")
    if not isinstance(message, str) or not message:
        text = body.strip() if isinstance(body, str) else ""
        message = text or response.reason or f"HTTP {response.status_code}"
    request_id = response.headers.get("request-id") or (
        body.get("request_id") if isinstance(body, dict) else None
    )
    return api_error(
        response.status_code,
        error_type if isinstance(error_type, str) else None,
        message,
        request_id,
        body=body,
        retry_after=parse_retry_after(response.headers),
    )


class ClaudeClient:
    """Thread-safe client for the Claude Managed Agents REST API (one pooled session)."""

    def __init__(
        self,
        api_key: Secret,
        *,
        base_url: str,
        timeout: float,
        max_retries: int,
        http: requests.Session | None = None,
        anthropic_version: str = ANTHROPIC_VERSION,
        beta: str = MANAGED_AGENTS_BETA,
        files_beta: str = FILES_BETA,
    ) -> None:
        self._api_key = api_key
        self.anthropic_version = anthropic_version
        self.beta = beta
        self.files_beta = files_beta
        self._http = HttpClient(
            base_url,
            timeout=timeout,
            retry=RetryPolicy(max_retries=max_retries),
            parse_error=_parse_anthropic_error,
            authenticate=self._authenticate,
            session=http,
        )
        self._closed = threading.Event()

    @property
    def base_url(self) -> str:
        return self._http.base_url

    @property
    def timeout(self) -> float:
        return self._http.timeout

    def __repr__(self) -> str:
        return f"ClaudeClient(base_url={self.base_url!r}, api_key=***)"

    def close(self) -> None:
        """Release pooled connections."""
        self._closed.set()
        self._http.close()

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        request.headers["x-api-key"] = self._api_key.reveal()
        request.headers["anthropic-version"] = self.anthropic_version
        request.headers.setdefault("anthropic-beta", self.beta)

    def _json(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        response = self._http.request(
            method,
            path,
            idempotent=idempotent,
            json=body,
            params=params,
            headers=headers,
            telemetry_metadata=telemetry_metadata,
        )
        return _json_object(response, f"{method} {path}")

    def _list_all(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> list[Json]:
        return list(self._iter_pages(path, params, headers, telemetry_metadata))

    def _iter_pages(
        self,
        path: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        telemetry_metadata: Mapping[str, Any] | None,
    ) -> Iterator[Json]:
        """Follow ``next_page`` cursors (or the older ``has_more``/``last_id``) to the end."""
        query: dict[str, Any] = {"limit": LIST_PAGE_SIZE, **(params or {})}
        seen_cursors: set[str] = set()
        while True:
            page = self._json(
                "GET",
                path,
                idempotent=True,
                params=query,
                headers=headers,
                telemetry_metadata=telemetry_metadata,
            )
            data = page.get("data")
            if not isinstance(data, list):
                raise APIError(200, None, f"GET {path} returned no 'data' list", None, body=page)
            yield from (item for item in data if isinstance(item, dict))
            cursor = page.get("next_page")
            if isinstance(cursor, str) and cursor:
                if cursor in seen_cursors:
                    return  # a server repeating a cursor would otherwise loop forever
                seen_cursors.add(cursor)
                query = {**query, "page": cursor}
                query.pop("after_id", None)
            elif page.get("has_more") and isinstance(page.get("last_id"), str):
                if page["last_id"] in seen_cursors:
                    return
                seen_cursors.add(page["last_id"])
                query = {**query, "after_id": page["last_id"]}
            else:
                return

    # -- agents ---------------------------------------------------------------------------

    def create_agent(self, body: Mapping[str, Any]) -> Json:
        """``POST /v1/agents``; ``name`` and ``model`` are required by the API."""
        if not body.get("name"):
            raise ValueError("an agent needs a name")
        return self._json("POST", "/v1/agents", idempotent=False, body=dict(body))

    def get_agent(self, agent_id: str) -> Json:
        return self._json("GET", f"/v1/agents/{_segment(agent_id)}", idempotent=True)

    def update_agent(self, agent_id: str, body: Mapping[str, Any]) -> Json:
        """Update an agent (a new version); pass ``version`` for optimistic concurrency."""
        path = f"/v1/agents/{_segment(agent_id)}"
        return self._json("POST", path, idempotent=False, body=dict(body))

    def list_agents(self, **params: Any) -> list[Json]:
        """Every agent (all pages); ``include_archived=True`` to see archived ones."""
        return self._list_all("/v1/agents", _query(params))

    def archive_agent(self, agent_id: str) -> Json:
        return self._json(
            "POST", f"/v1/agents/{_segment(agent_id)}/archive", idempotent=True, body={}
        )

    # -- environments ---------------------------------------------------------------------

    def create_environment(self, body: Mapping[str, Any]) -> Json:
        """``POST /v1/environments`` with ``name`` and an optional ``config``."""
        if not body.get("name"):
            raise ValueError("an environment needs a name")
        return self._json("POST", "/v1/environments", idempotent=False, body=dict(body))

    def get_environment(self, environment_id: str) -> Json:
        return self._json("GET", f"/v1/environments/{_segment(environment_id)}", idempotent=True)

    def list_environments(self, **params: Any) -> list[Json]:
        """Every environment (all pages)."""
        return self._list_all("/v1/environments", _query(params))

    def archive_environment(self, environment_id: str) -> Json:
        path = f"/v1/environments/{_segment(environment_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    # -- sessions -------------------------------------------------------------------------

    def create_session(
        self,
        agent_id: str,
        environment_id: str,
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """Create a bare session: the API rejects inline events, and the stream must be
        attached before the first message is sent or fast events are missed.

        Retried like an idempotent call even when the server may have acted: the worst a
        repeat can leave behind is a second, empty, idle session, whereas giving up loses
        the whole run.
        """
        if not agent_id or not environment_id:
            raise ValueError("a session needs both an agent id and an environment id")
        body = {"agent": agent_id, "environment_id": environment_id}
        return self._json(
            "POST",
            "/v1/sessions",
            idempotent=True,
            body=body,
            telemetry_metadata=telemetry_metadata,
        )

    def get_session(
        self, session_id: str, *, telemetry_metadata: Mapping[str, Any] | None = None
    ) -> Json:
        return self._json(
            "GET",
            f"/v1/sessions/{_segment(session_id)}",
            idempotent=True,
            telemetry_metadata=telemetry_metadata,
        )

    def list_sessions(self, **params: Any) -> list[Json]:
        """Every session (all pages), newest first unless ``order="asc"``."""
        return self._list_all("/v1/sessions", _query(params))

    def archive_session(self, session_id: str) -> Json:
        path = f"/v1/sessions/{_segment(session_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_session(self, session_id: str) -> Json:
        return self._json("DELETE", f"/v1/sessions/{_segment(session_id)}", idempotent=True)

    # -- events ---------------------------------------------------------------------------

    def send_events(
        self,
        session_id: str,
        events: Sequence[Mapping[str, Any]],
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """Post events in one request; the API rejects an empty list, so we refuse it first."""
        if not events:
            raise ValueError("send_events needs at least one event")
        path = f"/v1/sessions/{_segment(session_id)}/events"
        return self._json(
            "POST",
            path,
            idempotent=False,
            body={"events": [dict(e) for e in events]},
            telemetry_metadata=telemetry_metadata,
        )

    def list_events(
        self,
        session_id: str,
        *,
        page_size: int = EVENTS_PAGE_SIZE,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> list[Json]:
        """The session's whole event history, oldest first, every page."""
        path = f"/v1/sessions/{_segment(session_id)}/events"
        return self._list_all(path, {"limit": page_size}, None, telemetry_metadata)

    def open_event_stream(
        self,
        session_id: str,
        *,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        event_deltas: Sequence[str] = (),
    ) -> requests.Response:
        """Open ``GET /v1/sessions/{id}/events/stream`` and return the streaming response.

        The socket read timeout is ``idle_timeout``: heartbeats keep it alive, silence ends it.
        ``event_deltas`` asks for live previews of those event types (``agent.message``):
        ``event_start``/``event_delta`` frames that are never stored in the history.
        """
        path = f"/v1/sessions/{_segment(session_id)}/events/stream"
        return self._http.request(
            "GET",
            path,
            idempotent=True,
            params={"event_deltas[]": list(event_deltas)} if event_deltas else None,
            headers={"accept": "text/event-stream"},
            stream=True,
            read_timeout=idle_timeout,
            cancelled=cancelled,
            telemetry_metadata={**(telemetry_metadata or {}), "session_id": session_id},
        )

    # -- session resources ----------------------------------------------------------------

    def attach_file(self, session_id: str, file_id: str, mount_path: str | None = None) -> Json:
        """Mount an uploaded file into a session (read-only, under ``/mnt/session/uploads``)."""
        body: Json = {"type": "file", "file_id": file_id}
        if mount_path is not None:
            body["mount_path"] = mount_path
        path = f"/v1/sessions/{_segment(session_id)}/resources"
        return self._json("POST", path, idempotent=False, body=body)

    def list_session_resources(self, session_id: str) -> list[Json]:
        """The resources (mounted files, repositories) attached to a session."""
        path = f"/v1/sessions/{_segment(session_id)}/resources"
        return self._list_all(path)

    def delete_session_resource(self, session_id: str, resource_id: str) -> Json:
        """Detach a resource from a session."""
        path = f"/v1/sessions/{_segment(session_id)}/resources/{_segment(resource_id)}"
        return self._json("DELETE", path, idempotent=True)

    # -- files ----------------------------------------------------------------------------

    def _files_headers(self) -> dict[str, str]:
        return {"anthropic-beta": f"{self.files_beta},{self.beta}"}

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
        response = self._http.request(
            "POST",
            "/v1/files",
            idempotent=False,
            files=fields,
            headers={"anthropic-beta": self.files_beta},
        )
        data = _json_object(response, "POST /v1/files")
        if "id" not in data:
            raise APIError(response.status_code, None, "file upload returned no id", None)
        return data

    def list_files(self, *, scope_id: str | None = None, **params: Any) -> list[Json]:
        """Every file (all pages); ``scope_id=<session id>`` lists a session's outputs."""
        query = _query(params)
        if scope_id is not None:
            query["scope_id"] = scope_id
        return self._list_all("/v1/files", query, self._files_headers())

    def get_file(self, file_id: str) -> Json:
        """A file's metadata (name, size, MIME type, scope)."""
        path = f"/v1/files/{_segment(file_id)}"
        return self._json("GET", path, idempotent=True, headers=self._files_headers())

    def download_file(self, file_id: str) -> bytes:
        """A file's raw bytes."""
        path = f"/v1/files/{_segment(file_id)}/content"
        response = self._http.request("GET", path, idempotent=True, headers=self._files_headers())
        return response.content

    def delete_file(self, file_id: str) -> Json:
        path = f"/v1/files/{_segment(file_id)}"
        return self._json("DELETE", path, idempotent=True, headers=self._files_headers())


def _json_object(response: requests.Response, what: str) -> Json:
    """A successful response's JSON object; an empty body is ``{}``. Anything else is an
    :class:`APIError` quoting a bounded prefix of the body."""
    if not response.content:
        return {}
    try:
        data = loads(response.content)
    except ValueError as exc:
        raise APIError(
            response.status_code,
            None,
            f"expected JSON from {what} ({exc}), got {excerpt(response.content)!r}",
            response.headers.get("request-id"),
        ) from None
    if not isinstance(data, dict):
        raise APIError(
            response.status_code,
            None,
            f"expected a JSON object from {what}",
            response.headers.get("request-id"),
        )
    return data


def _query(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters with booleans spelled as the API expects."""
    return {
        key: ("true" if value else "false") if isinstance(value, bool) else value
        for key, value in params.items()
        if value is not None
    }
