"""The Claude Managed Agents control plane: agents, environments, sessions, threads, events,
files, memory stores and vaults.

Every method is one documented endpoint and returns the provider's JSON verbatim (plain dicts);
list methods follow the cursor to the last page. Retries follow :mod:`req_managed_agents._retry`:

* GET and DELETE, the ``archive`` POSTs (archiving twice leaves the same state), redacting
  a memory version (likewise), validating an MCP OAuth credential (a probe: a repeat probes
  again and creates nothing) and the updates of sessions, environments, memory stores,
  memories, vaults and credentials (an update sets the fields it names, so a repeat leaves
  the same state) are retried on connection errors, timeouts, 408/429/5xx/529;
* creating a session is retried the same way: a repeat can at worst leave an empty idle
  session behind (with its resources mounted), which does no work;
* creates (agents, environments, memory stores, memories, vaults, credentials, session
  resources, file uploads), agent updates, memory updates with a ``precondition`` and
  ``send_events`` are retried only when the server provably did not act (no connection, or
  a 429/503/529 refusal with ``retry-after``): a repeated create would leave a duplicate
  behind, a repeated conditional update would fail the ``version`` or content hash its own
  first attempt moved on, and a repeated ``user.message`` would prompt the agent twice. The
  session driver recovers ``send_events`` itself: whether an event landed can be read back
  from the session's history, so it checks before re-sending.
"""

from __future__ import annotations

import mimetypes
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal, Union
from urllib.parse import quote

import requests

from req_managed_agents._http import HttpClient, api_error
from req_managed_agents._json import excerpt, loads
from req_managed_agents._redact import Secret
from req_managed_agents._retry import RetryPolicy, parse_retry_after
from req_managed_agents.errors import APIError, ConfigurationError

__all__ = [
    "ANTHROPIC_VERSION",
    "FILES_BETA",
    "MANAGED_AGENTS_BETA",
    "MEMORY_BETA",
    "AuthScheme",
    "ClaudeClient",
]

MANAGED_AGENTS_BETA = "managed-agents-2026-04-01"
FILES_BETA = "files-api-2025-04-14"
# Memory store endpoints take this beta or the managed-agents one; we send both.
MEMORY_BETA = "agent-memory-2026-07-22"
ANTHROPIC_VERSION = "2023-06-01"

# ``x-api-key: <key>`` (the documented default) or ``Authorization: Bearer <key>`` (what the
# official SDK 2.x sends, with ``anthropic-version: 2026-10-21``).
AuthScheme = Literal["x-api-key", "bearer"]
_AUTH_SCHEMES = ("x-api-key", "bearer")

# The API caps history pages at 1000; 100 keeps each response small while paging fast.
EVENTS_PAGE_SIZE = 100
LIST_PAGE_SIZE = 100
# Lists whose items carry their content (``view="full"``) take pages of at most 20.
FULL_VIEW_PAGE_SIZE = 20
# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000

# What a session can mount, and the field each kind cannot do without.
_RESOURCE_ID_FIELDS = {
    "file": "file_id",
    "github_repository": "url",
    "memory_store": "memory_store_id",
}
_AGENT_REFERENCE_TYPES = ("agent", "agent_with_overrides")
# The API's metadata limits (sessions, vaults, credentials, memory stores).
_MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512
# ``created_at_gte=`` (the SDK's keyword) is sent as ``created_at[gte]=``.
_DATE_FILTER = re.compile(r"(created_at)_(gt|gte|lt|lte)")

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
        memory_beta: str = MEMORY_BETA,
        auth_scheme: AuthScheme = "x-api-key",
    ) -> None:
        if auth_scheme not in _AUTH_SCHEMES:
            raise ConfigurationError(
                f"auth_scheme must be 'x-api-key' or 'bearer', got {auth_scheme!r}"
            )
        self._api_key = api_key
        self.auth_scheme: AuthScheme = auth_scheme
        self.anthropic_version = anthropic_version
        self.beta = beta
        self.files_beta = files_beta
        self.memory_beta = memory_beta
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
        """The API root every path is joined to."""
        return self._http.base_url

    @property
    def timeout(self) -> float:
        """Seconds a request may wait for each read."""
        return self._http.timeout

    def __repr__(self) -> str:
        return f"ClaudeClient(base_url={self.base_url!r}, api_key=***)"

    def close(self) -> None:
        """Release pooled connections."""
        self._closed.set()
        self._http.close()

    def _authenticate(self, request: requests.PreparedRequest) -> None:
        if self.auth_scheme == "bearer":
            request.headers["authorization"] = f"Bearer {self._api_key.reveal()}"
        else:
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

    def get_agent(self, agent_id: str, version: int | None = None) -> Json:
        """An agent: its latest version, or the one ``version`` names."""
        params = None if version is None else {"version": _version("version", version)}
        return self._json("GET", f"/v1/agents/{_segment(agent_id)}", idempotent=True, params=params)

    def update_agent(self, agent_id: str, body: Mapping[str, Any]) -> Json:
        """Update an agent (a new version); pass ``version`` for optimistic concurrency."""
        path = f"/v1/agents/{_segment(agent_id)}"
        return self._json("POST", path, idempotent=False, body=dict(body))

    def list_agents(self, **params: Any) -> list[Json]:
        """Every agent (all pages); ``include_archived=True`` to see archived ones."""
        return self._list_all("/v1/agents", _query(params))

    def list_agent_versions(self, agent_id: str) -> list[Json]:
        """Every version of an agent (all pages), each a full agent object."""
        return self._list_all(f"/v1/agents/{_segment(agent_id)}/versions")

    def archive_agent(self, agent_id: str) -> Json:
        """Make an agent read-only for good; running sessions go on."""
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
        """An environment and its resolved config."""
        return self._json("GET", f"/v1/environments/{_segment(environment_id)}", idempotent=True)

    def update_environment(self, environment_id: str, body: Mapping[str, Any]) -> Json:
        """Change the fields ``body`` names (``POST``); a metadata value of null deletes it."""
        path = f"/v1/environments/{_segment(environment_id)}"
        return self._json("POST", path, idempotent=True, body=dict(body))

    def list_environments(self, **params: Any) -> list[Json]:
        """Every environment (all pages)."""
        return self._list_all("/v1/environments", _query(params))

    def archive_environment(self, environment_id: str) -> Json:
        """Make an environment read-only; sessions already using it go on."""
        path = f"/v1/environments/{_segment(environment_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_environment(self, environment_id: str) -> Json:
        """Delete an environment; the API refuses while a session still references it."""
        path = f"/v1/environments/{_segment(environment_id)}"
        return self._json("DELETE", path, idempotent=True)

    # -- sessions -------------------------------------------------------------------------

    def create_session(
        self,
        agent: str | Mapping[str, Any],
        environment_id: str,
        *,
        vault_ids: Sequence[str] | None = None,
        resources: Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, str] | None = None,
        title: str | None = None,
        budget: Mapping[str, Any] | None = None,
        initial_events: Sequence[Mapping[str, Any]] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """Create a session (``POST /v1/sessions``).

        ``agent`` is an agent id (its latest version), ``{"type": "agent", "id", "version"}``
        (a pinned version) or ``{"type": "agent_with_overrides", "id", ...}``. ``resources``
        are mounted into the container (``file``, ``github_repository``, ``memory_store``);
        ``vault_ids`` lend the agent stored credentials; ``budget`` caps its spending;
        ``initial_events`` (``user.message``, ``user.define_outcome``, at most 50) start work
        at once - then read what they cause from the history, since no stream was attached
        yet. Options left at ``None`` are not sent; each is checked here so that a mistake is
        a :class:`ValueError` naming it.

        A bare session is retried like an idempotent call even when the server may have
        acted: the worst a repeat can leave behind is a second, idle session that does no
        work, whereas giving up loses the whole run. With ``initial_events`` it is not, as a
        repeat would do the work twice.
        """
        body: Json = {
            "agent": _agent_reference(agent),
            "environment_id": _id_value("environment_id", environment_id),
        }
        if vault_ids is not None:
            body["vault_ids"] = [
                _id_value(f"vault_ids[{i}]", v)
                for i, v in enumerate(_items("vault_ids", vault_ids))
            ]
        if resources is not None:
            body["resources"] = [
                _resource(f"resources[{i}]", r)
                for i, r in enumerate(_items("resources", resources))
            ]
        if metadata is not None:
            body["metadata"] = _metadata(metadata)
        if title is not None:
            if not isinstance(title, str):
                raise ValueError(f"title must be a string, got {type(title).__name__}")
            body["title"] = title
        if budget is not None:
            if not isinstance(budget, Mapping):
                raise ValueError(f"budget must be a mapping, got {type(budget).__name__}")
            body["budget"] = dict(budget)
        if initial_events is not None:
            body["initial_events"] = _initial_events(initial_events)
        return self._json(
            "POST",
            "/v1/sessions",
            # A session that starts working at once is no longer harmless to create twice.
            idempotent=initial_events is None,
            body=body,
            telemetry_metadata=telemetry_metadata,
        )

    def get_session(
        self, session_id: str, *, telemetry_metadata: Mapping[str, Any] | None = None
    ) -> Json:
        """A session: status, agent snapshot, resources, usage."""
        return self._json(
            "GET",
            f"/v1/sessions/{_segment(session_id)}",
            idempotent=True,
            telemetry_metadata=telemetry_metadata,
        )

    def update_session(self, session_id: str, body: Mapping[str, Any]) -> Json:
        """Change ``title``, ``metadata`` (null deletes a key), ``budget`` or the agent's
        ``tools``/``mcp_servers`` (an idle session only) with ``POST /v1/sessions/{id}``."""
        path = f"/v1/sessions/{_segment(session_id)}"
        return self._json("POST", path, idempotent=True, body=dict(body))

    def list_sessions(self, **params: Any) -> list[Json]:
        """Every session (all pages), newest first unless ``order="asc"``; ``statuses=[...]``
        and ``created_at_gte=`` etc. filter."""
        return self._list_all("/v1/sessions", _query(params))

    def archive_session(self, session_id: str) -> Json:
        """Block new events but keep the history; a running session must be interrupted first."""
        path = f"/v1/sessions/{_segment(session_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_session(self, session_id: str) -> Json:
        """Delete a session with its events, sandbox and output files."""
        return self._json("DELETE", f"/v1/sessions/{_segment(session_id)}", idempotent=True)

    # -- threads (multi-agent sessions) -----------------------------------------------------

    def list_threads(self, session_id: str, **params: Any) -> list[Json]:
        """Every thread of a session (all pages); ``statuses=[...]`` filters."""
        return self._list_all(f"/v1/sessions/{_segment(session_id)}/threads", _query(params))

    def get_thread(self, session_id: str, thread_id: str) -> Json:
        """One thread of a session."""
        return self._json("GET", _thread_path(session_id, thread_id), idempotent=True)

    def archive_thread(self, session_id: str, thread_id: str) -> Json:
        """Archive one thread of a session."""
        path = f"{_thread_path(session_id, thread_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def list_thread_events(
        self, session_id: str, thread_id: str, *, page_size: int = EVENTS_PAGE_SIZE
    ) -> list[Json]:
        """One thread's whole event history, every page."""
        path = f"{_thread_path(session_id, thread_id)}/events"
        return self._list_all(path, {"limit": page_size})

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
        **query: Any,
    ) -> list[Json]:
        """The session's event history, every page, oldest first unless ``order="desc"``.

        ``types=[...]`` keeps only those event types (sent as ``types[]``);
        ``created_at_gte=``, ``_gt``, ``_lte`` and ``_lt`` (ISO 8601 strings or datetimes,
        sent as ``created_at[gte]`` and so on) bound ``processed_at``.
        """
        path = f"/v1/sessions/{_segment(session_id)}/events"
        params = {**_query(query), "limit": page_size}
        return self._list_all(path, params, None, telemetry_metadata)

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
        """Delete a file (a session's outputs also go when the session is deleted)."""
        path = f"/v1/files/{_segment(file_id)}"
        return self._json("DELETE", path, idempotent=True, headers=self._files_headers())

    # -- memory stores ----------------------------------------------------------------------

    def _memory_headers(self) -> dict[str, str]:
        """Memory store endpoints accept either beta; sending both satisfies any gateway."""
        return {"anthropic-beta": f"{self.memory_beta},{self.beta}"}

    def create_memory_store(self, body: Mapping[str, Any]) -> Json:
        """``POST /v1/memory_stores`` with ``name`` and optional ``description``/``metadata``."""
        if not body.get("name"):
            raise ValueError("a memory store needs a name")
        return self._json(
            "POST",
            "/v1/memory_stores",
            idempotent=False,
            body=dict(body),
            headers=self._memory_headers(),
        )

    def get_memory_store(self, memory_store_id: str) -> Json:
        """A memory store's name, description and metadata."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}"
        return self._json("GET", path, idempotent=True, headers=self._memory_headers())

    def list_memory_stores(self, **params: Any) -> list[Json]:
        """Every memory store (all pages); ``include_archived=True`` to see archived ones."""
        return self._list_all("/v1/memory_stores", _query(params), self._memory_headers())

    def update_memory_store(self, memory_store_id: str, body: Mapping[str, Any]) -> Json:
        """Change a memory store's ``name``, ``description`` or ``metadata``."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}"
        return self._json(
            "POST", path, idempotent=True, body=dict(body), headers=self._memory_headers()
        )

    def archive_memory_store(self, memory_store_id: str) -> Json:
        """Archive a memory store for good: new sessions can no longer attach it."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}/archive"
        return self._json("POST", path, idempotent=True, body={}, headers=self._memory_headers())

    def delete_memory_store(self, memory_store_id: str) -> Json:
        """Delete a memory store."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}"
        return self._json("DELETE", path, idempotent=True, headers=self._memory_headers())

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
            f"/v1/memory_stores/{_segment(memory_store_id)}/memories",
            idempotent=False,
            body={"path": path, "content": content},
            params=_query({"view": view}),
            headers=self._memory_headers(),
        )

    def get_memory(self, memory_store_id: str, memory_id: str, *, view: str | None = None) -> Json:
        """One memory, with its content unless ``view="basic"``."""
        return self._json(
            "GET",
            _memory_path(memory_store_id, memory_id),
            idempotent=True,
            params=_query({"view": view}),
            headers=self._memory_headers(),
        )

    def list_memories(self, memory_store_id: str, **params: Any) -> list[Json]:
        """Every memory of a store (all pages); ``path_prefix``, ``depth`` and ``view`` as
        the API takes them (``depth=1`` groups deeper paths into ``memory_prefix`` items;
        ``view="full"`` adds each memory's content, in pages of 20, the API's cap)."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}/memories"
        return self._list_all(path, _content_query(params), self._memory_headers())

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
            params=_query({"view": view}),
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
        return self._json(
            "DELETE",
            _memory_path(memory_store_id, memory_id),
            idempotent=True,
            params=_query({"expected_content_sha256": expected_content_sha256}),
            headers=self._memory_headers(),
        )

    def get_memory_version(
        self, memory_store_id: str, memory_version_id: str, *, view: str | None = None
    ) -> Json:
        """One entry of a store's change history: the memory as one change left it, and who
        made the change. Content comes with it unless ``view="basic"``; a redacted version
        answers with ``content`` and ``path`` null."""
        return self._json(
            "GET",
            _memory_version_path(memory_store_id, memory_version_id),
            idempotent=True,
            params=_query({"view": view}),
            headers=self._memory_headers(),
        )

    def list_memory_versions(self, memory_store_id: str, **params: Any) -> list[Json]:
        """Every version of a store's memories (all pages), newest first, those of deleted
        memories included; ``memory_id``, ``operation``, ``api_key_id``, ``session_id``,
        ``service_account_id`` and ``created_at_gte``/``created_at_lte`` filter.
        ``view="full"`` adds each version's content, in pages of 20 (the API's cap)."""
        path = f"/v1/memory_stores/{_segment(memory_store_id)}/memory_versions"
        return self._list_all(path, _content_query(params), self._memory_headers())

    def redact_memory_version(self, memory_store_id: str, memory_version_id: str) -> Json:
        """Erase a version's content, hash, size and path for good (a leaked secret, a
        deletion request), keeping who wrote it and when; ``redacted_at`` is then set."""
        return self._json(
            "POST",
            f"{_memory_version_path(memory_store_id, memory_version_id)}/redact",
            # Redacting twice leaves the same state, as archiving does.
            idempotent=True,
            body={},
            headers=self._memory_headers(),
        )

    # -- vaults and their credentials -------------------------------------------------------

    def create_vault(self, body: Mapping[str, Any]) -> Json:
        """``POST /v1/vaults`` with ``display_name`` and optional ``metadata``."""
        if not body.get("display_name"):
            raise ValueError("a vault needs a display_name")
        return self._json("POST", "/v1/vaults", idempotent=False, body=dict(body))

    def get_vault(self, vault_id: str) -> Json:
        """A vault (its credentials are listed separately)."""
        return self._json("GET", f"/v1/vaults/{_segment(vault_id)}", idempotent=True)

    def list_vaults(self, **params: Any) -> list[Json]:
        """Every vault (all pages); ``include_archived=True`` to see archived ones."""
        return self._list_all("/v1/vaults", _query(params))

    def update_vault(self, vault_id: str, body: Mapping[str, Any]) -> Json:
        """Change a vault's ``display_name`` or ``metadata``."""
        path = f"/v1/vaults/{_segment(vault_id)}"
        return self._json("POST", path, idempotent=True, body=dict(body))

    def archive_vault(self, vault_id: str) -> Json:
        """Archive a vault."""
        path = f"/v1/vaults/{_segment(vault_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_vault(self, vault_id: str) -> Json:
        """Delete a vault."""
        return self._json("DELETE", f"/v1/vaults/{_segment(vault_id)}", idempotent=True)

    def create_vault_credential(self, vault_id: str, body: Mapping[str, Any]) -> Json:
        """Store a credential in a vault; ``auth`` (MCP OAuth, static bearer or environment
        variable, by its ``type``) is required."""
        auth = body.get("auth")
        if not isinstance(auth, Mapping) or not auth.get("type"):
            raise ValueError("a vault credential needs an auth mapping with a type")
        path = f"/v1/vaults/{_segment(vault_id)}/credentials"
        return self._json("POST", path, idempotent=False, body=dict(body))

    def get_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """One credential of a vault; its auth comes back without the secret."""
        return self._json("GET", _credential_path(vault_id, credential_id), idempotent=True)

    def list_vault_credentials(self, vault_id: str, **params: Any) -> list[Json]:
        """Every credential of a vault (all pages); ``include_archived=True`` for archived."""
        return self._list_all(f"/v1/vaults/{_segment(vault_id)}/credentials", _query(params))

    def update_vault_credential(
        self, vault_id: str, credential_id: str, body: Mapping[str, Any]
    ) -> Json:
        """Change a credential's ``auth`` (rotate a secret), ``display_name`` or ``metadata``."""
        path = _credential_path(vault_id, credential_id)
        return self._json("POST", path, idempotent=True, body=dict(body))

    def archive_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Archive a credential of a vault."""
        path = f"{_credential_path(vault_id, credential_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Delete a credential of a vault."""
        path = _credential_path(vault_id, credential_id)
        return self._json("DELETE", path, idempotent=True)

    def validate_vault_credential(self, vault_id: str, credential_id: str) -> Json:
        """Probe an MCP OAuth credential against its MCP server now: ``status`` is
        ``valid``, ``invalid`` (the end user should authorize again) or ``unknown``, with the
        failing ``mcp_probe`` step and any ``refresh`` attempted. Other kinds of credential
        are refused by the API."""
        path = f"{_credential_path(vault_id, credential_id)}/mcp_oauth_validate"
        # A probe creates nothing: a repeat probes again, with whatever token is stored then.
        return self._json("POST", path, idempotent=True, body={})


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


# What a session may be created with (the API's own limit on their number).
_INITIAL_EVENT_TYPES = frozenset({"user.message", "user.define_outcome"})
_MAX_INITIAL_EVENTS = 50


def _initial_events(events: Any) -> list[Json]:
    checked = []
    for i, event in enumerate(_items("initial_events", events)):
        if not isinstance(event, Mapping) or event.get("type") not in _INITIAL_EVENT_TYPES:
            raise ValueError(
                f"initial_events[{i}] must be a user.message or user.define_outcome event"
            )
        checked.append(dict(event))
    if not checked or len(checked) > _MAX_INITIAL_EVENTS:
        raise ValueError(f"initial_events holds 1 to {_MAX_INITIAL_EVENTS} events")
    return checked


def _query(params: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters spelled as the API expects: booleans as ``true``/``false``, lists in
    bracket form (``types[]=a&types[]=b``), ``created_at_gte`` as ``created_at[gte]`` and
    datetimes in ISO 8601; ``None`` values are left out."""
    query: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        date_filter = _DATE_FILTER.fullmatch(key)
        name = f"{date_filter[1]}[{date_filter[2]}]" if date_filter else key
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, (list, tuple)):
            value = list(value)
            if not name.endswith("[]"):
                name += "[]"
        query[name] = value
    return query


def _thread_path(session_id: str, thread_id: str) -> str:
    return f"/v1/sessions/{_segment(session_id)}/threads/{_segment(thread_id)}"


def _content_query(params: Mapping[str, Any]) -> dict[str, Any]:
    """The query of a memory list; with ``view="full"`` its pages are at most 20 long."""
    query = _query(params)
    if query.get("view") == "full":
        query.setdefault("limit", FULL_VIEW_PAGE_SIZE)
    return query


def _memory_path(memory_store_id: str, memory_id: str) -> str:
    return f"/v1/memory_stores/{_segment(memory_store_id)}/memories/{_segment(memory_id)}"


def _memory_version_path(memory_store_id: str, memory_version_id: str) -> str:
    store = _segment(memory_store_id)
    return f"/v1/memory_stores/{store}/memory_versions/{_segment(memory_version_id)}"


def _credential_path(vault_id: str, credential_id: str) -> str:
    return f"/v1/vaults/{_segment(vault_id)}/credentials/{_segment(credential_id)}"


def _id_value(field: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
    return value


def _version(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{field} must be an integer of at least 1, got {value!r}")
    return value


def _items(field: str, value: object) -> list[Any]:
    """A list or tuple as a list; a lone string would otherwise pass as a list of letters."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list, got {type(value).__name__}")
    return list(value)


def _agent_reference(agent: object) -> str | Json:
    """The session's ``agent``: an id, or a ``{"type": "agent" | "agent_with_overrides"}``
    mapping whose ``id`` and ``version`` (when given) are checked."""
    if isinstance(agent, str):
        return _id_value("agent", agent)
    if not isinstance(agent, Mapping):
        raise ValueError(f"agent must be an agent id or a mapping, got {type(agent).__name__}")
    if agent.get("type") not in _AGENT_REFERENCE_TYPES:
        raise ValueError(
            f"agent.type must be 'agent' or 'agent_with_overrides', got {agent.get('type')!r}"
        )
    _id_value("agent.id", agent.get("id"))
    if "version" in agent:
        _version("agent.version", agent["version"])
    return dict(agent)


def _resource(field: str, resource: object) -> Json:
    """One session resource, of a known ``type`` and with the id that type needs."""
    if not isinstance(resource, Mapping):
        raise ValueError(f"{field} must be a mapping, got {type(resource).__name__}")
    kind = resource.get("type")
    required = _RESOURCE_ID_FIELDS.get(kind) if isinstance(kind, str) else None
    if required is None:
        known = ", ".join(repr(k) for k in _RESOURCE_ID_FIELDS)
        raise ValueError(f"{field}.type must be one of {known}, got {kind!r}")
    _id_value(f"{field}.{required}", resource.get(required))
    return dict(resource)


def _metadata(metadata: object) -> dict[str, str]:
    """String keys and values within the API's limits (16 pairs, 64- and 512-char caps)."""
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata must be a mapping, got {type(metadata).__name__}")
    if len(metadata) > _MAX_METADATA_PAIRS:
        raise ValueError(f"metadata holds at most {_MAX_METADATA_PAIRS} pairs, got {len(metadata)}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not 1 <= len(key) <= _MAX_METADATA_KEY:
            raise ValueError(
                f"metadata keys must be strings of 1 to {_MAX_METADATA_KEY} characters, got {key!r}"
            )
        if not isinstance(value, str):
            raise ValueError(f"metadata[{key!r}] must be a string, got {type(value).__name__}")
        if len(value) > _MAX_METADATA_VALUE:
            raise ValueError(
                f"metadata[{key!r}] is {len(value)} characters long; "
                f"the API allows at most {_MAX_METADATA_VALUE}"
            )
    return dict(metadata)
