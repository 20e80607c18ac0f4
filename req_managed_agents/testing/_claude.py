"""A local Claude Managed Agents API whose agents play scripts instead of calling a model.

It speaks the wire shapes of the real API (paths, headers, JSON bodies, error objects, the SSE
stream) closely enough that a client cannot tell the difference in the parts it exercises, and
adds what the real service cannot offer a test: determinism, fault injection and a full view
of what was sent.

Choices where the real API is undocumented or timing-dependent, made to keep tests
deterministic:

* sent events are echoed into the session log as soon as they are accepted, and the
  ``session.status_running`` that opens a turn is logged before the POST returns; the rest of
  the turn follows on a background thread after the turn's ``delay``;
* archiving a session sets ``archived_at`` and the status ``terminated`` and logs no event;
* deleting a session logs ``session.deleted``, which ends its open streams, and deletes its
  files: its outputs (as the service does) and the copies mounted by its resources;
* a turn's outputs are listed as soon as the turn writes them (the service can lag seconds);
* ``GET /v1/files`` without ``scope_id`` lists every file: uploads, mounted copies and
  outputs, newest first; deleting a session resource deletes its mounted copy.
"""

from __future__ import annotations

import copy
import json
import logging
import mimetypes
import posixpath
import re
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import ToolCall, call
from req_managed_agents.testing._server import (
    ChunkedStream,
    Exchange,
    LoopbackEmulator,
    RecordedRequest,
    RequestFault,
    parse_form_data,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

__all__ = ["ClaudeEmulator", "ToolCall", "Turn", "call"]

logger = logging.getLogger(__name__)

BETA = "managed-agents-2026-04-01"

# The error type each status implies when the emulator (or a fault) does not name one.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_HEARTBEATS = {
    "comment": b": ping\n\n",
    "event": b'event: ping\ndata: {"type":"ping"}\n\n',
}

_DEFAULT_ENVIRONMENT_CONFIG: dict[str, Any] = {
    "type": "cloud",
    "networking": {"type": "unrestricted"},
}

_AGENT_FIELDS = frozenset(
    {
        "name",
        "model",
        "system",
        "description",
        "tools",
        "mcp_servers",
        "skills",
        "multiagent",
        "metadata",
        "execution_identity",
    }
)
_ENVIRONMENT_FIELDS = frozenset({"name", "config", "description", "metadata", "scope"})
_SESSION_FIELDS = frozenset({"agent", "environment_id", "metadata", "title", "resources"})
_FILE_RESOURCE_FIELDS = frozenset({"type", "file_id", "mount_path"})
_LIST_FIELDS = ("tools", "mcp_servers", "skills")  # null clears them to []

# A stream re-checks for a vanished client at least this often (seconds).
_DISCONNECT_POLL = 0.1
_MAX_EVENTS_PAGE = 1000
_MAX_RESOURCE_PAGE = 100
_MAX_FILES_PAGE = 1000
_DEFAULT_PAGE = 20
_MAX_SESSION_FILES = 500

# Mount paths are rooted here; the agent reads its inputs from this directory.
_UPLOADS_DIR = "/mnt/session/uploads"


_ENDS = ("end_turn", "terminated", "error")


@dataclass(frozen=True)
class Turn:
    """One scripted agent turn, played when the session gets its next input.

    ``text`` may be a function of the texts that triggered the turn: the user message, or
    each custom tool result in call order. ``usage`` is ``(input_tokens, output_tokens)``.
    ``delay`` is how long the turn "thinks" after ``session.status_running``. ``end`` picks
    the ending: ``"end_turn"`` (idle; ``requires_action`` when there are ``tool_calls``),
    ``"terminated"`` or ``"error"`` (a terminal ``session.error``, then terminated).
    ``outputs`` maps file names to the bytes the agent writes under
    ``/mnt/session/outputs/``; each becomes a downloadable file scoped to the session
    before the turn's final status event.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    server_tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal["end_turn", "terminated", "error"] = "end_turn"
    outputs: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        # Tuples, so a script cannot change under a running session.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "server_tool_calls", tuple(self.server_tool_calls))
        outputs = {name: _output_bytes(name, data) for name, data in self.outputs.items()}
        object.__setattr__(self, "outputs", MappingProxyType(outputs))


_SCRIPT_FINISHED = Turn(text="(script finished)")


def _as_script(script: Sequence[Turn | str] | None) -> tuple[Turn, ...]:
    """Accept plain strings as text-only turns."""
    return tuple(Turn(text=t) if isinstance(t, str) else t for t in script or ())


def _output_bytes(name: Any, data: Any) -> bytes:
    """Check an output the agent writes: a plain file name (no directories) and bytes."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
        raise ValueError(f"an output needs a plain file name, not {name!r}")
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"output {name!r} must be bytes, not {type(data).__name__}")
    return bytes(data)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _stamp(moment: datetime, timespec: str = "milliseconds") -> str:
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


def _now() -> str:
    return _stamp(datetime.now(timezone.utc))


class _APIError(Exception):
    """Raised by a route to answer with the API's error object."""

    def __init__(self, status: int, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or _ERROR_TYPES.get(status, "api_error")


def _invalid(message: str) -> _APIError:
    return _APIError(400, message)


def _not_found(kind: str, object_id: str) -> _APIError:
    return _APIError(404, f"{kind} {object_id!r} was not found")


def _json_object(request: RecordedRequest, *, optional: bool = False) -> dict[str, Any]:
    if optional and request.body is None:
        return {}
    if not isinstance(request.body, dict):
        raise _invalid("the request body must be a JSON object")
    return request.body


def _reject_unknown(body: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in body:
        if key not in allowed:
            raise _invalid(f"{key}: Extra inputs are not permitted")


def _required_name(body: Mapping[str, Any]) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("name: Field required (a non-empty string)")
    return name


def _resolved_model(model: Any) -> dict[str, Any]:
    """The API always answers the model as an object with its defaults filled in."""
    if isinstance(model, str) and model:
        return {"id": model, "speed": "standard"}
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        resolved = {"speed": "standard", **model}
        if isinstance(resolved.get("effort"), str):
            resolved["effort"] = {"type": resolved["effort"]}
        return resolved
    raise _invalid("model: must be a model id or an object with an id")


def _resolved_config(config: Any) -> dict[str, Any]:
    if config is None:
        return copy.deepcopy(_DEFAULT_ENVIRONMENT_CONFIG)
    if not isinstance(config, dict) or config.get("type") not in ("cloud", "self_hosted"):
        raise _invalid("config: must be an object whose type is 'cloud' or 'self_hosted'")
    resolved = copy.deepcopy(config)
    if resolved["type"] == "cloud":
        resolved.setdefault("networking", {"type": "unrestricted"})
    return resolved


def _merged_metadata(current: Mapping[str, str], patch: Any, *, empty_deletes: bool) -> Any:
    if not isinstance(patch, dict):
        raise _invalid("metadata: must be an object")
    merged = dict(current)
    for key, value in patch.items():
        if value is None or (empty_deletes and value == ""):
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _text_of(content: Any) -> str:
    """The text blocks of a content list, joined; what a scripted turn receives as input."""
    if not isinstance(content, list):
        return ""
    blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(str(b.get("text", "")) for b in blocks)


def _query(request: RecordedRequest, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None


def _flag(request: RecordedRequest, name: str) -> bool:
    return (_query(request, name) or "").lower() in ("true", "1")


def _betas(request: RecordedRequest) -> set[str]:
    return {b.strip() for b in request.headers.get("anthropic-beta", "").split(",")}


def _is_files_path(path: str) -> bool:
    """The Files API is generally available: its paths need no beta header."""
    return path == "/v1/files" or path.startswith("/v1/files/")


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


@dataclass
class _StoredFile:
    """A Files API file: the metadata the API answers, and the bytes behind it."""

    record: dict[str, Any]
    data: bytes = field(repr=False)

    @property
    def scope_id(self) -> str | None:
        scope = self.record.get("scope")
        return None if scope is None else str(scope["id"])


class _Session:
    """A session's REST object plus what the emulator needs to play its script."""

    def __init__(self, record: dict[str, Any], script: tuple[Turn, ...]) -> None:
        self.record = record
        self.script = script
        self.log: list[dict[str, Any]] = []
        self.turns_played = 0
        self.queued_inputs: deque[list[str]] = deque()
        self.busy = False  # a turn is being played
        self.interrupted = False
        self.gave_up = False  # fail_turn ended the running turn already
        # Custom tool use ids of the last turn, in call order -> result text once answered.
        self.pending: dict[str, str | None] = {}
        self.answered: set[str] = set()
        self.deleted = False

    @property
    def status(self) -> str:
        return str(self.record["status"])


class ClaudeEmulator(LoopbackEmulator):
    """A Claude Managed Agents API on ``127.0.0.1`` that plays scripted agents.

    Starts serving on construction. ``script`` is the default script of agents created
    without one (over REST or with :meth:`add_agent`). ``ping_interval`` is the silence after
    which a stream writes a heartbeat, in the form ``heartbeat`` names (``"comment"``: a
    ``: ping`` line; ``"event"``: an ``event: ping`` frame). ``unique_names`` makes a second
    agent or environment of the same name a 409. ``sse_ids`` adds ``id:`` lines to frames.
    ``downloadable_uploads`` marks uploaded files downloadable, which the real API never
    does, for tests that want their uploads back.
    """

    def __init__(
        self,
        script: Sequence[Turn | str] | None = None,
        *,
        api_key: str | None = None,
        ping_interval: float = 1.0,
        heartbeat: Literal["comment", "event"] = "comment",
        unique_names: bool = False,
        sse_ids: bool = False,
        downloadable_uploads: bool = False,
    ) -> None:
        if ping_interval <= 0:
            raise ValueError("ping_interval must be positive")
        if heartbeat not in _HEARTBEATS:
            raise ValueError(f"heartbeat must be 'comment' or 'event', not {heartbeat!r}")
        self._default_script = _as_script(script)
        super().__init__()
        self.api_key = api_key or f"sk-ant-emu-{secrets.token_hex(16)}"
        self._ping_interval = ping_interval
        self._heartbeat = _HEARTBEATS[heartbeat]
        self._unique_names = unique_names
        self._sse_ids = sse_ids
        self._downloadable_uploads = downloadable_uploads
        self._agents: dict[str, dict[str, Any]] = {}
        self._agent_scripts: dict[str, tuple[Turn, ...]] = {}
        self._environments: dict[str, dict[str, Any]] = {}
        self._sessions: dict[str, _Session] = {}
        self._cursors: dict[str, tuple[str, int]] = {}
        self._files: dict[str, _StoredFile] = {}  # oldest first
        self._last_file_time = datetime.min.replace(tzinfo=timezone.utc)
        one = r"([A-Za-z0-9_\-]+)"
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            ("POST", "/v1/agents", self._create_agent),
            ("GET", "/v1/agents", self._list_agents),
            ("GET", f"/v1/agents/{one}", self._get_agent),
            ("POST", f"/v1/agents/{one}", self._update_agent),
            ("POST", f"/v1/agents/{one}/archive", self._archive_agent),
            ("POST", "/v1/environments", self._create_environment),
            ("GET", "/v1/environments", self._list_environments),
            ("GET", f"/v1/environments/{one}", self._get_environment),
            ("POST", f"/v1/environments/{one}", self._update_environment),
            ("POST", f"/v1/environments/{one}/archive", self._archive_environment),
            ("DELETE", f"/v1/environments/{one}", self._delete_environment),
            ("POST", "/v1/sessions", self._create_session),
            ("GET", "/v1/sessions", self._list_sessions),
            ("GET", f"/v1/sessions/{one}", self._get_session),
            ("POST", f"/v1/sessions/{one}/archive", self._archive_session),
            ("DELETE", f"/v1/sessions/{one}", self._delete_session),
            ("POST", f"/v1/sessions/{one}/events", self._post_events),
            ("GET", f"/v1/sessions/{one}/events", self._list_events),
            ("GET", f"/v1/sessions/{one}/events/stream", self._stream_events),
            ("POST", f"/v1/sessions/{one}/resources", self._add_resource),
            ("GET", f"/v1/sessions/{one}/resources", self._list_resources),
            ("GET", f"/v1/sessions/{one}/resources/{one}", self._get_resource),
            ("DELETE", f"/v1/sessions/{one}/resources/{one}", self._delete_resource),
            ("POST", "/v1/files", self._upload_file),
            ("GET", "/v1/files", self._list_files),
            ("GET", f"/v1/files/{one}", self._get_file),
            ("DELETE", f"/v1/files/{one}", self._delete_file),
            ("GET", f"/v1/files/{one}/content", self._download_file),
        ]
        self._routes = [(method, re.compile(path), route) for method, path, route in routes]
        self._start()

    def __enter__(self) -> ClaudeEmulator:
        return self

    # --- set-up and faults for tests ------------------------------------------------------

    def add_agent(
        self,
        script: Sequence[Turn | str] | None = None,
        name: str = "agent",
        *,
        model: str = "claude-sonnet-4-6",
    ) -> str:
        """Create an agent that plays ``script`` (default: the emulator's); return its id."""
        with self._condition:
            try:
                agent = self._new_agent({"name": name, "model": model})
            except _APIError as error:
                raise ValueError(error.message) from None
            if script is not None:
                self._agent_scripts[agent["id"]] = _as_script(script)
            return str(agent["id"])

    def add_environment(self, name: str = "env", *, config: Mapping[str, Any] | None = None) -> str:
        """Create an environment (default config: cloud, unrestricted); return its id."""
        with self._condition:
            try:
                return str(self._new_environment({"name": name, "config": config})["id"])
            except _APIError as error:
                raise ValueError(error.message) from None

    def drop_stream(self, at_event: int, session_id: str | None = None, times: int = 1) -> None:
        """Cut the next ``times`` stream connections about to send event ``at_event``.

        ``at_event`` is a 0-based position in the session's event log (echoed user events
        included). The socket closes without the terminating chunk; the event stays in the
        history. ``session_id=None`` matches any session.
        """
        self._add_drop(session_id, at_event, times)

    def stall_stream(self, at_event: int, seconds: float, session_id: str | None = None) -> None:
        """Once: before sending event ``at_event``, go silent (no pings) for ``seconds``, then
        close the connection."""
        self._add_stall(session_id, at_event, seconds)

    def duplicate_stream_events(self, enabled: bool = True) -> None:
        """Write every event twice on the streams (history is unaffected)."""
        self._set_duplicate_events(enabled)

    def terminate_session(self, session_id: str) -> None:
        """Log ``session.status_terminated`` as if the service had failed the session."""
        with self._condition:
            self._terminate(self._known_session(session_id))

    def fail_turn(self, session_id: str, error_type: str = "model_overloaded_error") -> None:
        """Give up on the running turn the way the service does after its retries: a
        ``session.error`` with ``retry_status`` ``exhausted``, then an idle with stop reason
        ``retries_exhausted``. The scripted turn stops playing."""
        error = {
            "type": error_type,
            "message": "the service gave up after retrying",
            "retry_status": {"type": "exhausted"},
        }
        with self._condition:
            session = self._known_session(session_id)
            session.gave_up = True
            self._append(session, {"type": "session.error", "error": error})
            self._finish_turn(session, {"type": "retries_exhausted"})
            self._condition.notify_all()

    def add_output(self, session_id: str, name: str, data: bytes) -> dict[str, Any]:
        """Store a file as if the session's agent had written ``/mnt/session/outputs/<name>``;
        return its metadata. Writing a name again adds a newer file of that name."""
        content = _output_bytes(name, data)
        with self._condition:
            session = self._known_session(session_id)
            if session.deleted:
                raise ValueError(f"session {session_id!r} was deleted")
            return copy.deepcopy(self._write_output(session, name, content).record)

    # --- observation for tests --------------------------------------------------------------

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's event log, oldest first (a copy; kept after the session is deleted)."""
        with self._condition:
            return copy.deepcopy(self._known_session(session_id).log)

    def session_ids(self) -> list[str]:
        """Ids of every session created so far, oldest first."""
        with self._condition:
            return list(self._sessions)

    def files(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Metadata of the stored files, oldest first (copies): every file, or only those
        scoped to ``session_id`` (its outputs)."""
        with self._condition:
            return [
                copy.deepcopy(f.record)
                for f in self._files.values()
                if session_id in (None, f.scope_id)
            ]

    # --- dispatch -------------------------------------------------------------------------

    def _handle(self, exchange: Exchange) -> None:
        request = exchange.request
        try:
            self._check_headers(request)
            route, ids = self._route(request)
            payload = route(exchange, *ids)
        except _APIError as error:
            self._respond_error(exchange, error.status, error.error_type, error.message)
            return
        if payload is not None:
            exchange.respond_json(200, payload, {"request-id": _new_id("req")})

    def _answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        error_type = fault.error_type or _ERROR_TYPES.get(fault.status, "api_error")
        headers = {} if fault.retry_after is None else {"retry-after": fault.retry_after}
        self._respond_error(exchange, fault.status, error_type, fault.message, headers)

    def _respond_error(
        self,
        exchange: Exchange,
        status: int,
        error_type: str,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        request_id = _new_id("req")
        body = {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id,
        }
        exchange.respond_json(status, body, {**(headers or {}), "request-id": request_id})

    def _check_headers(self, request: RecordedRequest) -> None:
        key = request.headers.get("x-api-key")
        authorization = request.headers.get("authorization", "")
        if key is None and authorization.startswith("Bearer "):
            key = authorization[len("Bearer ") :]
        if key != self.api_key:
            raise _APIError(401, "invalid x-api-key")
        if "anthropic-version" not in request.headers:
            raise _invalid("anthropic-version: header is required")
        if BETA not in _betas(request) and not _is_files_path(request.path):
            raise _APIError(404, f"Not found (this API needs the anthropic-beta header {BETA})")

    def _route(self, request: RecordedRequest) -> tuple[Callable[..., Any], tuple[str, ...]]:
        for method, pattern, route in self._routes:
            match = pattern.fullmatch(request.path)
            if match and method == request.method:
                return route, match.groups()
        raise _APIError(404, f"no route for {request.method} {request.path}")

    def _page(
        self,
        request: RecordedRequest,
        items: list[Any],
        *,
        scope: str,
        max_limit: int,
        with_prev: bool = False,
        default_limit: int = _DEFAULT_PAGE,
    ) -> dict[str, Any]:
        """Cut ``items`` into pages behind opaque cursors; a cursor only works in its scope."""
        raw_limit = _query(request, "limit")
        try:
            limit = default_limit if raw_limit is None else int(raw_limit)
        except ValueError:
            raise _invalid("limit: must be an integer") from None
        if not 1 <= limit <= max_limit:
            raise _invalid(f"limit: must be between 1 and {max_limit}")
        offset = 0
        page = _query(request, "page")
        if page:
            cursor = self._cursors.get(page)
            if cursor is None or cursor[0] != scope:
                raise _invalid("page: invalid page cursor")
            offset = cursor[1]
        end = offset + limit
        result: dict[str, Any] = {
            "data": copy.deepcopy(items[offset:end]),
            "next_page": self._cursor(scope, end) if end < len(items) else None,
        }
        if with_prev:
            result["prev_page"] = self._cursor(scope, max(0, offset - limit)) if offset else None
        return result

    def _cursor(self, scope: str, offset: int) -> str:
        token = _new_id("page")
        self._cursors[token] = (scope, offset)
        return token

    # --- agents ---------------------------------------------------------------------------

    def _check_name_free(
        self, records: Mapping[str, Mapping[str, Any]], kind: str, name: str, own_id: str = ""
    ) -> None:
        if self._unique_names and any(
            r["name"] == name and r["id"] != own_id for r in records.values()
        ):
            raise _APIError(409, f"an {kind} named {name!r} already exists")

    def _new_agent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        if "model" not in body:
            raise _invalid("model: Field required")
        self._check_name_free(self._agents, "agent", name)
        now = _now()
        agent = {
            "id": _new_id("agent"),
            "type": "agent",
            "name": name,
            "description": body.get("description"),
            "system": body.get("system"),
            "model": _resolved_model(body["model"]),
            "tools": body.get("tools") or [],
            "skills": body.get("skills") or [],
            "mcp_servers": body.get("mcp_servers") or [],
            "multiagent": body.get("multiagent"),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=False),
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._agents[agent["id"]] = agent
        self._agent_scripts[agent["id"]] = self._default_script
        return agent

    def _agent(self, agent_id: str) -> dict[str, Any]:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise _not_found("agent", agent_id)
        return agent

    def _create_agent(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS)
        with self._condition:
            return dict(self._new_agent(body))

    def _get_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        with self._condition:
            return dict(self._agent(agent_id))

    def _update_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS | {"version"})
        with self._condition:
            agent = self._agent(agent_id)
            if agent["archived_at"]:
                raise _invalid("an archived agent cannot be updated")
            if "version" in body and body["version"] != agent["version"]:
                raise _APIError(
                    409, f"version {body['version']} is not the current version {agent['version']}"
                )
            updated = dict(agent)
            for key, value in body.items():
                if key == "name":
                    updated["name"] = _required_name(body)
                    self._check_name_free(self._agents, "agent", updated["name"], agent_id)
                elif key == "model":
                    updated["model"] = _resolved_model(value)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        agent["metadata"], value, empty_deletes=False
                    )
                elif key in _LIST_FIELDS:
                    updated[key] = value or []
                elif key != "version":
                    updated[key] = value
            if updated != agent:  # a no-op update keeps the version
                updated["version"] = agent["version"] + 1
                updated["updated_at"] = _now()
                self._agents[agent_id] = updated
            return dict(updated)

    def _list_agents(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        with self._condition:
            agents = [a for a in self._agents.values() if archived or not a["archived_at"]]
            return self._page(
                request, agents, scope=f"agents:{archived}", max_limit=_MAX_RESOURCE_PAGE
            )

    def _archive_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            agent = self._agent(agent_id)
            if not agent["archived_at"]:
                agent["archived_at"] = agent["updated_at"] = _now()
            return dict(agent)

    # --- environments ---------------------------------------------------------------------

    def _new_environment(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        self._check_name_free(self._environments, "environment", name)
        now = _now()
        environment = {
            "id": _new_id("env"),
            "type": "environment",
            "name": name,
            "description": body.get("description") or "",
            "config": _resolved_config(body.get("config")),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=True),
            "scope": body.get("scope"),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._environments[environment["id"]] = environment
        return environment

    def _environment(self, environment_id: str) -> dict[str, Any]:
        environment = self._environments.get(environment_id)
        if environment is None:
            raise _not_found("environment", environment_id)
        return environment

    def _create_environment(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS)
        with self._condition:
            return dict(self._new_environment(body))

    def _get_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._condition:
            return dict(self._environment(environment_id))

    def _update_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS - {"scope"})
        with self._condition:
            environment = self._environment(environment_id)
            if environment["archived_at"]:
                raise _invalid("an archived environment cannot be updated")
            updated = dict(environment)
            for key, value in body.items():
                if key == "name":
                    updated["name"] = _required_name(body)
                    self._check_name_free(
                        self._environments, "environment", updated["name"], environment_id
                    )
                elif key == "config":
                    updated["config"] = _resolved_config(value)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        environment["metadata"], value, empty_deletes=True
                    )
                else:
                    updated[key] = value
            if updated != environment:
                updated["updated_at"] = _now()
                self._environments[environment_id] = updated
            return dict(updated)

    def _list_environments(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        with self._condition:
            environments = [
                e for e in self._environments.values() if archived or not e["archived_at"]
            ]
            return self._page(
                request,
                environments,
                scope=f"environments:{archived}",
                max_limit=_MAX_RESOURCE_PAGE,
            )

    def _archive_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            environment = self._environment(environment_id)
            if not environment["archived_at"]:
                environment["archived_at"] = environment["updated_at"] = _now()
            return dict(environment)

    def _delete_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._condition:
            self._environment(environment_id)
            if any(
                not s.deleted and s.record["environment_id"] == environment_id
                for s in self._sessions.values()
            ):
                raise _invalid("the environment is used by sessions; delete them first")
            del self._environments[environment_id]
        return {"id": environment_id, "type": "environment_deleted"}

    # --- sessions -------------------------------------------------------------------------

    def _known_session(self, session_id: str) -> _Session:
        """For the test-facing methods: deleted sessions stay observable."""
        session = self._sessions.get(session_id)
        if session is None:
            raise KeyError(f"no session {session_id!r} in this emulator")
        return session

    def _live_session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None or session.deleted:
            raise _not_found("session", session_id)
        return session

    def _create_session(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        if "events" in body or "initial_events" in body:
            raise _invalid(
                "events: Extra inputs are not permitted (create the session bare, open its"
                " stream, then POST /v1/sessions/{id}/events)"
            )
        _reject_unknown(body, _SESSION_FIELDS)
        reference = body.get("agent")
        agent_id = reference.get("id") if isinstance(reference, dict) else reference
        if not isinstance(agent_id, str):
            raise _invalid("agent: Field required (an agent id or {type, id, version})")
        environment_id = body.get("environment_id")
        if not isinstance(environment_id, str):
            raise _invalid("environment_id: Field required")
        resources = body.get("resources") or []
        if not isinstance(resources, list):
            raise _invalid("resources: Input should be a valid list")
        if len(resources) > _MAX_SESSION_FILES:
            raise _invalid(f"resources: a session can have at most {_MAX_SESSION_FILES} files")
        with self._condition:
            agent = self._agent(agent_id)
            environment = self._environment(environment_id)
            if agent["archived_at"]:
                raise _invalid(f"agent {agent_id!r} is archived")
            if environment["archived_at"]:
                raise _invalid(f"environment {environment_id!r} is archived")
            # All checked before anything is made, so a bad entry leaves no stray copies.
            mounts = [
                self._file_resource(spec, f"resources[{i}].") for i, spec in enumerate(resources)
            ]
            now = _now()
            snapshot_keys = ("id", "type", "name", "version", "model", "system", "description")
            session_id = _new_id("sesn")
            record: dict[str, Any] = {
                "id": session_id,
                "type": "session",
                "status": "idle",
                "agent": {key: agent[key] for key in (*snapshot_keys, *_LIST_FIELDS)},
                "environment_id": environment_id,
                "title": body.get("title"),
                "metadata": dict(body.get("metadata") or {}),
                "resources": [],
                "vault_ids": [],
                "budget": None,
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": 0,
                    },
                },
                "created_at": now,
                "updated_at": now,
                "archived_at": None,
            }
            session = _Session(record, self._agent_scripts[agent_id])
            self._sessions[session_id] = session
            for source, mount_path in mounts:
                self._mount(session, source, mount_path)
            return copy.deepcopy(record)

    def _get_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            return copy.deepcopy(self._live_session(session_id).record)

    def _list_sessions(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        agent_id = _query(request, "agent_id")
        order = _query(request, "order") or "desc"
        if order not in ("asc", "desc"):
            raise _invalid("order: must be 'asc' or 'desc'")
        with self._condition:
            records = [
                s.record
                for s in self._sessions.values()
                if not s.deleted
                and (archived or not s.record["archived_at"])
                and agent_id in (None, s.record["agent"]["id"])
            ]
            if order == "desc":
                records.reverse()
            return self._page(
                request,
                records,
                scope=f"sessions:{order}:{archived}:{agent_id}",
                max_limit=_MAX_RESOURCE_PAGE,
                with_prev=True,
            )

    def _archive_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            session = self._live_session(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be archived; interrupt it first")
            if not session.record["archived_at"]:
                session.record["archived_at"] = _now()
                self._set_status(session, "terminated")
            return copy.deepcopy(session.record)

    def _delete_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            session = self._live_session(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be deleted; interrupt it first")
            session.deleted = True
            self._append(session, {"type": "session.deleted"})
            mounted = {r["file_id"] for r in session.record["resources"]}
            for file_id, stored in list(self._files.items()):
                if stored.scope_id == session_id or file_id in mounted:
                    del self._files[file_id]
        return {"id": session_id, "type": "session_deleted"}

    # --- session resources ----------------------------------------------------------------

    def _file_resource(self, spec: Any, where: str) -> tuple[_StoredFile, str]:
        """Check a file resource; return the file to mount and where it lands.

        ``where`` prefixes field names in messages (``"resources[0]."`` at session creation).
        """
        if not isinstance(spec, dict) or spec.get("type") != "file":
            raise _invalid(f"{where}type: the emulator supports only 'file' resources")
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
        now = _now()
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
            if resource["id"] == resource_id:
                return resource
        raise _not_found("session resource", resource_id)

    def _add_resource(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        with self._condition:
            session = self._live_session(session_id)
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
            session.record["resources"].remove(resource)
            self._files.pop(resource["file_id"], None)  # the session's copy goes with it
        return {"id": resource_id, "type": "session_resource_deleted"}

    # --- files ----------------------------------------------------------------------------

    def _file_time(self) -> str:
        """A creation time later than every earlier file's, so "newest" is never a tie.

        In microseconds, so that the bump past a tie stays far below what a test can see.
        """
        now = datetime.now(timezone.utc)
        self._last_file_time = max(now, self._last_file_time + timedelta(microseconds=1))
        return _stamp(self._last_file_time, "microseconds")

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
            if part.name not in ("file", "purpose"):  # purpose: sent by some clients, unused
                raise _invalid(f"{part.name}: Extra inputs are not permitted")
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
            return dict(stored.record)

    def _list_files(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        scope_id = _query(request, "scope_id")
        if scope_id is not None and BETA not in _betas(request):
            raise _invalid(
                f"scope_id: listing a session's files needs the anthropic-beta header {BETA}"
            )
        with self._condition:
            newest_first = [
                f.record for f in reversed(self._files.values()) if scope_id in (None, f.scope_id)
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

    # --- events ---------------------------------------------------------------------------

    def _post_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        if "events" not in body:
            raise _invalid("events: Field required (send {'events': [...]})")
        events = body["events"]
        if not isinstance(events, list):
            raise _invalid("events: Input should be a valid list")
        if not events:
            raise _invalid("events: value must contain at least 1 item")
        with self._condition:
            session = self._live_session(session_id)
            if session.record["archived_at"]:
                raise _invalid("the session is archived")
            if session.status == "terminated":
                raise _invalid("the session is terminated")
            answering: set[str] = set()
            for index, event in enumerate(events):
                self._check_event(session, index, event, answering)
            echoes = [self._accept(session, event) for event in events]
            if answering and not session.busy and session.pending:
                # Some of the requested results are still missing: idle again, naming them.
                missing = [use_id for use_id, text in session.pending.items() if text is None]
                self._finish_turn(session, {"type": "requires_action", "event_ids": missing})
            return {"data": copy.deepcopy(echoes)}

    def _check_event(self, session: _Session, index: int, event: Any, answering: set[str]) -> None:
        where = f"events[{index}]"
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise _invalid(f"{where}: must be an object with a type")
        kind = event["type"]
        if kind == "user.message":
            content = event.get("content")
            if not isinstance(content, list) or not content:
                raise _invalid(f"{where}.content: must be a non-empty list of content blocks")
            for block in content:
                if not isinstance(block, dict) or block.get("type") == "redacted":
                    raise _invalid(f"{where}.content: invalid or redacted content block")
        elif kind == "user.custom_tool_result":
            use_id = event.get("custom_tool_use_id")
            if not isinstance(use_id, str):
                raise _invalid(f"{where}.custom_tool_use_id: Field required")
            if use_id in session.answered or use_id in answering:
                raise _invalid(f"{where}.custom_tool_use_id: {use_id!r} was already answered")
            if use_id not in session.pending:
                raise _invalid(
                    f"{where}.custom_tool_use_id: no pending agent.custom_tool_use {use_id!r}"
                )
            if not isinstance(event.get("content", []), list):
                raise _invalid(f"{where}.content: must be a list of content blocks")
            answering.add(use_id)
        elif kind == "user.tool_confirmation":
            if not isinstance(event.get("tool_use_id"), str) or event.get("result") not in (
                "allow",
                "deny",
            ):
                raise _invalid(f"{where}: needs tool_use_id and result 'allow' or 'deny'")
        elif kind != "user.interrupt":
            raise _invalid(f"{where}.type: {kind!r} is not supported by the emulator")

    def _accept(self, session: _Session, event: dict[str, Any]) -> dict[str, Any]:
        """Log a checked user event and act on it; return its echo."""
        echo = self._append(session, event)
        kind = event["type"]
        if kind == "user.message":
            self._give_input(session, [_text_of(event["content"])])
        elif kind == "user.custom_tool_result":
            use_id = event["custom_tool_use_id"]
            session.pending[use_id] = _text_of(event.get("content"))
            session.answered.add(use_id)
            results = [text for text in session.pending.values() if text is not None]
            if len(results) == len(session.pending):
                session.pending = {}
                self._give_input(session, results)
        elif kind == "user.interrupt" and session.busy:
            session.interrupted = True
        return echo

    def _list_events(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            session = self._live_session(session_id)
            return self._page(
                exchange.request,
                session.log,
                scope=f"events:{session_id}",
                max_limit=_MAX_EVENTS_PAGE,
            )

    def _append(self, session: _Session, event: Mapping[str, Any]) -> dict[str, Any]:
        fields = {k: v for k, v in event.items() if k not in ("type", "id", "processed_at")}
        logged = {"type": event["type"], "id": _new_id("sevt"), **fields, "processed_at": _now()}
        session.log.append(logged)
        self._condition.notify_all()
        return logged

    def _set_status(self, session: _Session, status: str) -> None:
        session.record["status"] = status
        session.record["updated_at"] = _now()

    # --- playing the script ---------------------------------------------------------------

    def _give_input(self, session: _Session, inputs: list[str]) -> None:
        if session.busy:
            session.queued_inputs.append(inputs)
        else:
            turn = self._begin_turn(session)
            self._start_thread("turn", self._run_turns, session, turn, inputs)

    def _begin_turn(self, session: _Session) -> Turn:
        session.busy = True
        session.interrupted = False
        self._set_status(session, "running")
        self._append(session, {"type": "session.status_running"})
        played = session.turns_played
        session.turns_played += 1
        return session.script[played] if played < len(session.script) else _SCRIPT_FINISHED

    def _run_turns(self, session: _Session, turn: Turn, inputs: list[str]) -> None:
        """The session's worker: play turns until no input is queued."""
        upcoming: tuple[Turn, list[str]] | None = (turn, inputs)
        while upcoming is not None:
            upcoming = self._play(session, *upcoming)

    def _next_turn(self, session: _Session) -> tuple[Turn, list[str]] | None:
        """Called in the lock hold that logs a turn's last event, so no input can slip by."""
        if self._stopping or session.status == "terminated" or not session.queued_inputs:
            session.busy = False
            return None
        inputs = session.queued_inputs.popleft()
        return self._begin_turn(session), inputs

    def _turn_cut(self, session: _Session) -> bool:
        return (
            self._stopping
            or session.interrupted
            or session.gave_up
            or session.status == "terminated"
        )

    def _play(
        self, session: _Session, turn: Turn, inputs: list[str]
    ) -> tuple[Turn, list[str]] | None:
        """Play one turn; return the next one if input is already queued for it."""
        with self._condition:
            self._condition.wait_for(lambda: self._turn_cut(session), timeout=turn.delay)
            if self._turn_cut(session):
                self._cut_turn(session)
                return self._next_turn(session)
        text, failure = turn.text, ""
        if callable(text):
            try:
                text = text(inputs)  # user code: run without the lock
            except Exception as error:
                logger.exception("the scripted text of a turn raised")
                failure = f"the scripted turn text raised {error!r}"
        with self._condition:
            if self._turn_cut(session):
                self._cut_turn(session)
            elif failure:
                self._fail(session, failure)
            else:
                self._emit_turn(session, turn, str(text))
            return self._next_turn(session)

    def _cut_turn(self, session: _Session) -> None:
        """End a turn early: an interrupt ends it as end_turn; close or terminate end it bare,
        and so does fail_turn, which already logged the turn's end."""
        if session.gave_up:
            session.gave_up = False
        elif session.interrupted and not self._stopping and session.status != "terminated":
            self._finish_turn(session, {"type": "end_turn"})

    def _emit_turn(self, session: _Session, turn: Turn, text: str) -> None:
        start = self._append(session, {"type": "span.model_request_start"})
        if text:
            self._append(
                session, {"type": "agent.message", "content": [{"type": "text", "text": text}]}
            )
        for server_call in turn.server_tool_calls:
            use = self._append(
                session,
                {
                    "type": "agent.tool_use",
                    "name": server_call.name,
                    "input": dict(server_call.input),
                    "evaluated_permission": "allow",
                },
            )
            self._append(
                session,
                {
                    "type": "agent.tool_result",
                    "tool_use_id": use["id"],
                    "content": [{"type": "text", "text": server_call.result}],
                    "is_error": False,
                },
            )
        input_tokens, output_tokens = turn.usage
        self._append(
            session,
            {
                "type": "span.model_request_end",
                "model_request_start_id": start["id"],
                "is_error": False,
                "model_usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            },
        )
        usage = session.record["usage"]
        usage["input_tokens"] += input_tokens
        usage["output_tokens"] += output_tokens
        tool_use_ids = [
            self._append(
                session,
                {"type": "agent.custom_tool_use", "name": c.name, "input": dict(c.input)},
            )["id"]
            for c in turn.tool_calls
        ]
        session.pending = dict.fromkeys(tool_use_ids)
        for name, data in turn.outputs.items():
            self._write_output(session, name, data)
        if turn.end == "terminated":
            self._append_usage(session)
            self._terminate(session)
        elif turn.end == "error":
            self._append_usage(session)
            self._fail(session, "scripted error")
        elif tool_use_ids:
            self._finish_turn(session, {"type": "requires_action", "event_ids": tool_use_ids})
        else:
            self._finish_turn(session, {"type": "end_turn"})

    def _append_usage(self, session: _Session) -> None:
        usage = copy.deepcopy(session.record["usage"])
        self._append(session, {"type": "session.usage", "usage": usage, "budget": None})

    def _finish_turn(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        self._append_usage(session)  # the API always reports usage right before an idle
        self._set_status(session, "idle")
        self._append(session, {"type": "session.status_idle", "stop_reason": stop_reason})

    def _fail(self, session: _Session, message: str) -> None:
        error = {"type": "unknown_error", "message": message, "retry_status": {"type": "terminal"}}
        self._append(session, {"type": "session.error", "error": error})
        self._terminate(session)

    def _terminate(self, session: _Session) -> None:
        self._set_status(session, "terminated")
        session.queued_inputs.clear()
        session.pending = {}
        self._append(session, {"type": "session.status_terminated"})

    # --- the event stream -----------------------------------------------------------------

    def _stream_events(self, exchange: Exchange, session_id: str) -> None:
        with self._condition:
            session = self._live_session(session_id)
            # No replay: only events logged from now on. Taken before the response head is
            # sent, so nothing logged after the client sees the stream open can be missed.
            cursor = len(session.log)
        stream = exchange.open_stream(
            session_id,
            "text/event-stream",
            {"request-id": _new_id("req"), "Cache-Control": "no-cache"},
        )
        self._pump(session, stream, cursor)

    def _pump(self, session: _Session, stream: ChunkedStream, cursor: int) -> None:
        """Forward new log events to one stream until it ends; ping when it is quiet."""
        quiet_since = time.monotonic()
        poll = min(self._ping_interval, _DISCONNECT_POLL)
        while True:
            with self._condition:
                if len(session.log) <= cursor and not self._stopping:
                    self._condition.wait(poll)
                if self._stopping:
                    stream.abort("emulator_closed")
                    return
                fresh = session.log[cursor:]
            for position, event in enumerate(fresh, start=cursor):
                if not stream.send_event(self._frame(event), position):
                    return
                if event["type"] == "session.deleted":  # nothing follows it
                    stream.finish("session_deleted")
                    return
            cursor += len(fresh)
            now = time.monotonic()
            if fresh:
                quiet_since = now
            elif now - quiet_since >= self._ping_interval:
                if not stream.write(self._heartbeat):
                    return
                quiet_since = now
            if stream.client_gone():
                stream.abort("client_closed")
                return

    def _frame(self, event: Mapping[str, Any]) -> bytes:
        lines = [f"event: {event['type']}"]
        if self._sse_ids:
            lines.append(f"id: {event['id']}")
        lines.append("data: " + json.dumps(event, separators=(",", ":")))
        return ("\n".join(lines) + "\n\n").encode()
