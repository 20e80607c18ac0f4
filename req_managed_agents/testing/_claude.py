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
  outputs, newest first; deleting a session resource deletes its mounted copy;
* the results of confirmed tool calls are logged when the paused turn resumes (after its
  ``session.status_running``), not as each confirmation arrives;
* an interrupt while a turn is paused at ``requires_action`` drops what it waits for and
  logs ``session.usage`` and an ``end_turn`` idle, with no ``session.status_running``
  first; later answers to it are 400s;
* an outcome's ``max_iterations`` counts evaluations; a revision turn plays without a new
  ``session.status_running`` (the session never stopped running); each evaluation's grader
  uses 20 input and 4 output tokens, reported in its span and added to the session's usage;
* an interrupt during an outcome grades its current iteration ``interrupted`` at once, as
  a ``span.outcome_evaluation_start`` and ``_end`` pair; ``fail_turn`` ends it ``failed``
  without spans;
* a ``user.define_outcome`` while another outcome is open, or with a ``file`` rubric naming
  no stored file, is a 400;
* ``initial_events`` are accepted, as SDK 2.16 declares them (the service once refused
  inline events): checked like sent events, logged and played after the session is made;
* a ``user.message`` sent while a turn plays keeps ``processed_at`` null in the history
  until its turn begins; the stream carries its echo as accepted (null), once;
* an agent version pinned at session creation that does not exist is a 404, as
  ``GET /v1/agents/{id}?version=N`` answers; versions are listed newest first;
* a built-in toolset answers ``configs`` with all eight tools resolved; a skill without a
  version pins ``"latest"``; ``self`` in a roster names the agent at the version the
  create or update makes; a memory store resource mounts at ``/mnt/memory/<name slug>``;
* a ``session_thread_id`` on an answer must name the thread its tool use was made on (a
  400 otherwise); an answer without one is echoed with that thread's id;
* an agent whose model does not take mid-conversation system messages refuses a
  ``system.message`` with a 400 whose message names
  ``model_does_not_support_mid_conversation_system``;
* ``session.thread_status_*`` events are logged for subagent threads only (the primary
  thread's status is the session's); archiving a thread keeps its status, and a later
  turn scripted for its name starts a new thread;
* a session's and a thread's ``stats`` are taken at each status change, so two reads in
  between answer the same object.

:class:`ClaudeEmulator` is built from layers, one module each: the wire vocabulary
(``claude._wire``), the resolution of configurations into what the API answers
(``claude._config``), sessions, threads and paging (``_claude_base``), agents and
environments (``_claude_agents``), files and session resources (``_claude_files``), vaults
(``_claude_vaults``), memory stores (``_claude_memory``), the checks of sent events
(``claude._inputs``), the scripted-turn player (``_claude_player``), sent events and the
history (``_claude_events``), the session routes (``_claude_sessions``), the SSE stream with
its live previews (``_claude_stream``) and the thread routes (``_claude_threads``). This
module holds the emulator itself: its constructor and test-facing methods, authentication
and routing.
"""

from __future__ import annotations

import copy
import secrets
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_player import Turn, _output_bytes
from req_managed_agents.testing._claude_sessions import _SessionsAPI
from req_managed_agents.testing._claude_stream import _HEARTBEATS
from req_managed_agents.testing._claude_threads import _thread_view, _ThreadsAPI
from req_managed_agents.testing._script import ToolCall, as_script, call
from req_managed_agents.testing._server import Router
from req_managed_agents.testing.claude._wire import (
    _ERROR_TYPES,
    BETA,
    MEMORY_BETA,
    _APIError,
    _betas,
    _invalid,
    _is_files_path,
    _is_memory_path,
    _new_id,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

    from req_managed_agents.providers.claude import ClaudeManagedAgents
    from req_managed_agents.testing._server import Exchange, RecordedRequest, RequestFault

__all__ = ["ClaudeEmulator", "ToolCall", "Turn", "call"]


class ClaudeEmulator(_ThreadsAPI, _SessionsAPI):
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
        self._default_script = as_script(script, Turn)
        super().__init__()
        self.api_key = api_key or f"sk-ant-emu-{secrets.token_hex(16)}"
        self._ping_interval = ping_interval
        self._heartbeat = _HEARTBEATS[heartbeat]
        self._unique_names = unique_names
        self._sse_ids = sse_ids
        self._downloadable_uploads = downloadable_uploads
        # The state the layers declare (see _claude_base).
        self._agents = {}
        self._agent_versions = {}
        self._agent_scripts = {}
        self._environments = {}
        self._sessions = {}
        self._cursors = {}
        self._files = {}
        self._last_file_time = datetime.min.replace(tzinfo=timezone.utc)
        self._tokens = {}
        self._vaults = {}
        self._credentials = {}
        self._memory_stores = {}
        self._memories = {}
        self._memory_versions = {}
        one = r"([A-Za-z0-9_\-]+)"
        session = f"/v1/sessions/{one}"
        thread = f"{session}/threads/{one}"
        vault = f"/v1/vaults/{one}"
        credential = f"{vault}/credentials/{one}"
        store = f"/v1/memory_stores/{one}"
        routes: list[tuple[str, str, Callable[..., Any]]] = [
            ("POST", "/v1/agents", self._create_agent),
            ("GET", "/v1/agents", self._list_agents),
            ("GET", f"/v1/agents/{one}", self._get_agent),
            ("POST", f"/v1/agents/{one}", self._update_agent),
            ("POST", f"/v1/agents/{one}/archive", self._archive_agent),
            ("GET", f"/v1/agents/{one}/versions", self._list_agent_versions),
            ("POST", "/v1/environments", self._create_environment),
            ("GET", "/v1/environments", self._list_environments),
            ("GET", f"/v1/environments/{one}", self._get_environment),
            ("POST", f"/v1/environments/{one}", self._update_environment),
            ("POST", f"/v1/environments/{one}/archive", self._archive_environment),
            ("DELETE", f"/v1/environments/{one}", self._delete_environment),
            ("POST", "/v1/sessions", self._create_session),
            ("GET", "/v1/sessions", self._list_sessions),
            ("GET", session, self._get_session),
            ("POST", session, self._update_session),
            ("POST", f"{session}/archive", self._archive_session),
            ("DELETE", session, self._delete_session),
            ("POST", f"{session}/events", self._post_events),
            ("GET", f"{session}/events", self._list_events),
            ("GET", f"{session}/events/stream", self._stream_events),
            ("POST", f"{session}/resources", self._add_resource),
            ("GET", f"{session}/resources", self._list_resources),
            ("GET", f"{session}/resources/{one}", self._get_resource),
            ("POST", f"{session}/resources/{one}", self._update_resource),
            ("DELETE", f"{session}/resources/{one}", self._delete_resource),
            ("GET", f"{session}/threads", self._list_threads),
            ("GET", thread, self._get_thread),
            ("POST", f"{thread}/archive", self._archive_thread),
            ("GET", f"{thread}/events", self._list_thread_events),
            ("GET", f"{thread}/stream", self._stream_thread),
            ("POST", "/v1/vaults", self._create_vault),
            ("GET", "/v1/vaults", self._list_vaults),
            ("GET", vault, self._get_vault),
            ("POST", vault, self._update_vault),
            ("DELETE", vault, self._delete_vault),
            ("POST", f"{vault}/archive", self._archive_vault),
            ("POST", f"{vault}/credentials", self._create_credential),
            ("GET", f"{vault}/credentials", self._list_credentials),
            ("GET", credential, self._get_credential),
            ("POST", credential, self._update_credential),
            ("DELETE", credential, self._delete_credential),
            ("POST", f"{credential}/archive", self._archive_credential),
            ("POST", f"{credential}/mcp_oauth_validate", self._validate_credential),
            ("POST", "/v1/memory_stores", self._create_memory_store),
            ("GET", "/v1/memory_stores", self._list_memory_stores),
            ("GET", store, self._get_memory_store),
            ("POST", store, self._update_memory_store),
            ("DELETE", store, self._delete_memory_store),
            ("POST", f"{store}/archive", self._archive_memory_store),
            ("POST", f"{store}/memories", self._create_memory),
            ("GET", f"{store}/memories", self._list_memories),
            ("GET", f"{store}/memories/{one}", self._get_memory),
            ("POST", f"{store}/memories/{one}", self._update_memory),
            ("DELETE", f"{store}/memories/{one}", self._delete_memory),
            ("GET", f"{store}/memory_versions", self._list_memory_versions),
            ("GET", f"{store}/memory_versions/{one}", self._get_memory_version),
            ("POST", f"{store}/memory_versions/{one}/redact", self._redact_memory_version),
            ("POST", "/v1/files", self._upload_file),
            ("GET", "/v1/files", self._list_files),
            ("GET", f"/v1/files/{one}", self._get_file),
            ("DELETE", f"/v1/files/{one}", self._delete_file),
            ("GET", f"/v1/files/{one}/content", self._download_file),
        ]
        self._routes = Router(routes)
        self._start()

    # --- set-up and faults for tests ------------------------------------------------------

    def provider(self, **options: Any) -> ClaudeManagedAgents:
        """A ``ClaudeManagedAgents`` with this emulator's key and URL; ``options`` go to its
        constructor (``timeout``, ``max_retries``, ...)."""
        from req_managed_agents.providers.claude import ClaudeManagedAgents

        return ClaudeManagedAgents(self.api_key, base_url=self.base_url, **options)

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
                self._agent_scripts[agent["id"]] = as_script(script, Turn)
            return str(agent["id"])

    def add_environment(self, name: str = "env", *, config: Mapping[str, Any] | None = None) -> str:
        """Create an environment (default config: cloud, unrestricted); return its id."""
        with self._condition:
            try:
                return str(self._new_environment({"name": name, "config": config})["id"])
            except _APIError as error:
                raise ValueError(error.message) from None

    def drop_stream(
        self,
        at_event: int,
        session_id: str | None = None,
        times: int = 1,
        *,
        after_deltas: int | None = None,
    ) -> None:
        """Cut the next ``times`` stream connections about to send event ``at_event``.

        ``at_event`` is a 0-based position in the session's event log (echoed user events
        included). The socket closes without the terminating chunk; the event stays in the
        history. ``session_id=None`` matches any session. The cut comes before the event's
        previews, or, with ``after_deltas=k``, in the middle of them: after its
        ``event_start`` and ``k`` of its ``event_delta`` frames (all of them if it has fewer),
        before the event itself. On a connection that asked for no previews of the event,
        both cut before the event.
        """
        if after_deltas is not None and after_deltas < 0:
            raise ValueError("after_deltas must not be negative")
        previews = 0 if after_deltas is None else after_deltas + 1  # event_start first
        self._add_stream_fault("drop", session_id, at_event, times, previews=previews)

    def stall_stream(self, at_event: int, seconds: float, session_id: str | None = None) -> None:
        """Once: before sending event ``at_event``, go silent (no pings) for ``seconds``, then
        close the connection."""
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        self._add_stream_fault("stall", session_id, at_event, 1, seconds)

    def corrupt_stream(self, at_event: int, session_id: str | None = None, times: int = 1) -> None:
        """On the next ``times`` stream connections about to send event ``at_event``, write a
        frame whose ``data:`` is not JSON (the first half of the event's) instead of it.

        The stream carries on with the next event; the event stays in the history, so a
        client can recover it by paging the history. One fault per event and connection:
        stalls come first, then drops, corruptions and duplications.
        """
        self._add_stream_fault("corrupt", session_id, at_event, times)

    def duplicate_stream(
        self, at_event: int, session_id: str | None = None, times: int = 1
    ) -> None:
        """Write event ``at_event``'s frame twice on the next ``times`` stream connections
        about to send it (see :meth:`duplicate_stream_events` for every event)."""
        self._add_stream_fault("duplicate", session_id, at_event, times)

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
        ``retries_exhausted``. The scripted turn stops playing, and the outcome it worked
        toward, if any, ends ``failed``."""
        error = {
            "type": error_type,
            "message": "the service gave up after retrying",
            "retry_status": {"type": "exhausted"},
        }
        with self._condition:
            session = self._known_session(session_id)
            session.gave_up = True
            self._settle_outcome(session, "failed", "The turn failed: the service gave up.")
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

    def events(self, session_id: str, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The session's event log, oldest first (a copy; kept after the session is
        deleted), or the log of one of its threads."""
        with self._condition:
            session = self._known_session(session_id)
            if thread_id is None:
                return copy.deepcopy(session.log)
            if thread_id not in session.threads:
                raise KeyError(f"no thread {thread_id!r} in session {session_id!r}")
            return copy.deepcopy(session.threads[thread_id].log)

    def threads(self, session_id: str) -> list[dict[str, Any]]:
        """The session's threads as the API shows them, the primary one first (copies)."""
        with self._condition:
            session = self._known_session(session_id)
            return [_thread_view(session, t) for t in session.threads.values()]

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
        betas = _betas(request)
        if _is_memory_path(request.path):
            if not betas & {BETA, MEMORY_BETA}:
                raise _APIError(404, f"Not found (memory stores need the beta {MEMORY_BETA})")
        elif BETA not in betas and not _is_files_path(request.path):
            raise _APIError(404, f"Not found (this API needs the anthropic-beta header {BETA})")

    def _route(self, request: RecordedRequest) -> tuple[Callable[..., Any], tuple[str, ...]]:
        found = self._routes.match(request.method, request.path)
        if found is None:
            raise _APIError(404, f"no route for {request.method} {request.path}")
        return found
