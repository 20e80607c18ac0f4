"""The Claude emulator itself: its resources assembled on one state and one server, and what
it offers tests (set-up, faults and observations).
"""

from __future__ import annotations

import copy
import secrets
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import as_script
from req_managed_agents.testing.agentcore._sigv4 import _random_keys, _SigV4Verifier
from req_managed_agents.testing.claude._agents import Agents
from req_managed_agents.testing.claude._api import ClaudeAPI
from req_managed_agents.testing.claude._bedrock import DEFAULT_MODEL as BEDROCK_MODEL
from req_managed_agents.testing.claude._bedrock import bedrock_routes
from req_managed_agents.testing.claude._environments import Environments
from req_managed_agents.testing.claude._events import Events
from req_managed_agents.testing.claude._files import Files
from req_managed_agents.testing.claude._log import SessionLog
from req_managed_agents.testing.claude._memories import Memories
from req_managed_agents.testing.claude._memory import MemoryStores
from req_managed_agents.testing.claude._outcomes import Outcomes
from req_managed_agents.testing.claude._player import Player
from req_managed_agents.testing.claude._resources import SessionResources
from req_managed_agents.testing.claude._sessions import Sessions
from req_managed_agents.testing.claude._state import ClaudeState
from req_managed_agents.testing.claude._stream import EventStream
from req_managed_agents.testing.claude._subagents import Subagents
from req_managed_agents.testing.claude._threads import Threads, _thread_view
from req_managed_agents.testing.claude._turn import Turn, _output_bytes
from req_managed_agents.testing.claude._vaults import Vaults
from req_managed_agents.testing.claude._wire import WORKFLOW_EVENTS, _APIError
from req_managed_agents.testing.claude._work import WorkQueue
from req_managed_agents.testing.claude._work_auth import WorkCredentials
from req_managed_agents.testing.claude._work_items import DEFAULT_LEASE_TTL, WorkItems
from req_managed_agents.testing.server import Lifecycle, LoopbackServer, SseEmulator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Literal

    from req_managed_agents.providers.claude import ClaudeManagedAgents


_MODEL = "claude-sonnet-4-6"


class ClaudeEmulator(SseEmulator):
    """A Claude Managed Agents API on ``127.0.0.1`` that plays scripted agents.

    Starts serving on construction. ``script`` is the default script of agents created
    without one (over REST or with :meth:`add_agent`). ``ping_interval`` is the silence after
    which a stream writes a heartbeat, in the form ``heartbeat`` names (``"comment"``: a
    ``: ping`` line; ``"event"``: an ``event: ping`` frame). ``unique_names`` makes a second
    agent or environment of the same name a 409. ``sse_ids`` adds ``id:`` lines to frames.
    ``downloadable_uploads`` marks uploaded files downloadable, which the real API never
    does, for tests that want their uploads back. ``lease_ttl`` is the lease (seconds) of a
    self-hosted environment's work item: what acknowledging it starts and the longest a
    heartbeat extends it by (the service's default, 300; short in tests).
    ``echo_answers=False`` keeps the answers a client sends (``user.custom_tool_result``,
    ``user.tool_confirmation``, ``user.tool_result``, ``user.mcp_elicitation_response``)
    off the streams: the send's answer and the history still carry them.

    ``flavor="bedrock"`` serves Claude Managed Agents on Amazon Bedrock instead: requests
    are signed with SigV4 for service ``bedrock`` in ``region`` with ``access_key_id`` /
    ``secret_access_key`` (random unless given; botocore checks them, so it needs the
    ``[aws]`` extra), or carry ``api_key`` as a Bedrock API key (``Authorization: Bearer``);
    sessions take a sandbox ARN as ``environment_id``, a ``working_directory`` and an
    ``execution_identity``, and have no vaults.
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
        flavor: Literal["anthropic", "bedrock"] = "anthropic",
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        lease_ttl: int = DEFAULT_LEASE_TTL,
        echo_answers: bool = True,
    ) -> None:
        if flavor not in ("anthropic", "bedrock"):
            raise ValueError(f"flavor is 'anthropic' or 'bedrock', not {flavor!r}")
        self.flavor = flavor
        self.echo_answers = echo_answers
        self.region = region
        random_id, random_secret = _random_keys()
        self.access_key_id = access_key_id or random_id
        self.secret_access_key = secret_access_key or random_secret
        sigv4 = None
        if flavor == "bedrock":
            keys = (self.access_key_id, self.secret_access_key)
            sigv4 = _SigV4Verifier(*keys, region, service="bedrock")
        # Built leaves first: each part is handed the state and the parts it calls.
        lifecycle = Lifecycle(type(self).__name__)
        self._state = state = ClaudeState(lifecycle.condition)
        state.bedrock = flavor == "bedrock"
        stream = EventStream(
            lifecycle,
            state,
            ping_interval=ping_interval,
            heartbeat=heartbeat,
            sse_ids=sse_ids,
            echo_answers=echo_answers,
        )
        self.api_key = api_key or f"sk-ant-emu-{secrets.token_hex(16)}"
        self._log = log = SessionLog(lifecycle)
        self._outcomes = outcomes = Outcomes(log)
        self._files = files = Files(state, downloadable_uploads=downloadable_uploads)
        player = Player(lifecycle, log, Subagents(log), outcomes, files)
        self._work = work = WorkItems(state, lease_ttl=lease_ttl)
        events = Events(state, log, player, outcomes, work)
        self._agents = agents = Agents(
            state, default_script=self._script(script), unique_names=unique_names
        )
        self._environments = environments = Environments(state, unique_names=unique_names)
        vaults = Vaults(state)
        memory = MemoryStores(state)
        resources = SessionResources(state, files, memory)
        sessions = Sessions(
            state,
            log,
            agents=agents,
            environments=environments,
            resources=resources,
            files=files,
            events=events,
            work=work,
        )
        routes = [
            *agents.routes(),
            *sessions.routes(),
            *events.routes(),
            *stream.routes(),
            *Threads(state, stream).routes(),
            *memory.routes(),
            *Memories(state, memory, api_key=self.api_key).routes(),
        ]
        self._credentials = credentials = WorkCredentials(state, work)
        if state.bedrock:  # no environments, vaults, files or session resources there
            routes = bedrock_routes(routes)
        else:
            routes += [
                *environments.routes(),
                *WorkQueue(lifecycle, state, work).routes(),
                *resources.routes(),
                *vaults.routes(),
                *files.routes(),
            ]
        api = ClaudeAPI(
            self.api_key, routes, sigv4=sigv4, credentials=None if state.bedrock else credentials
        )
        super().__init__(LoopbackServer(lifecycle, api))

    def _script(self, script: Sequence[Turn | str] | None) -> tuple[Turn, ...]:
        """A script as turns; on Bedrock, none naming an event Claude on Bedrock never sends."""
        turns = as_script(script, Turn)
        if self.flavor == "bedrock":
            for turn in turns:
                for event in turn.events:
                    if isinstance(event, str) and event in WORKFLOW_EVENTS:
                        raise ValueError(f"Claude on Bedrock sends no {event!r} events")
        return turns

    # --- set-up and faults for tests ------------------------------------------------------

    def provider(self, **options: Any) -> ClaudeManagedAgents:
        """A ``ClaudeManagedAgents`` with this emulator's key and URL (the Bedrock flavor: a
        ``ClaudeManagedAgentsBedrock`` signing with its credentials in its region);
        ``options`` go to its constructor (``timeout``, ``max_retries``, ...)."""
        from req_managed_agents.providers.claude import (
            ClaudeManagedAgents,
            ClaudeManagedAgentsBedrock,
        )

        if self.flavor == "bedrock":
            credentials = {
                "access_key_id": self.access_key_id,
                "secret_access_key": self.secret_access_key,
            }
            return ClaudeManagedAgentsBedrock(
                self.region, credentials=credentials, base_url=self.base_url, **options
            )
        return ClaudeManagedAgents(self.api_key, base_url=self.base_url, **options)

    def add_agent(
        self,
        script: Sequence[Turn | str] | None = None,
        name: str = "agent",
        *,
        model: str | None = None,
    ) -> str:
        """Create an agent that plays ``script`` (default: the emulator's); return its id.
        ``model`` defaults to Claude Sonnet 4.6 (on Bedrock its US inference profile)."""
        if model is None:
            model = BEDROCK_MODEL if self.flavor == "bedrock" else _MODEL
        with self._state.condition:
            try:
                body: dict[str, Any] = {"name": name, "model": model}
                if self.flavor == "bedrock":  # a Bedrock agent always runs as a role
                    role = "arn:aws:iam::123456789012:role/EmulatorAgent"
                    body["execution_identity"] = {"type": "aws_role", "role_arn": role}
                agent = self._agents.new_agent(body)
            except _APIError as error:
                raise ValueError(error.message) from None
            if script is not None:
                self._state.agent_scripts[agent["id"]] = self._script(script)
            return str(agent["id"])

    def add_environment(self, name: str = "env", *, config: Mapping[str, Any] | None = None) -> str:
        """Create an environment (default config: cloud, unrestricted); return its id."""
        with self._state.condition:
            try:
                return str(
                    self._environments.new_environment({"name": name, "config": config})["id"]
                )
            except _APIError as error:
                raise ValueError(error.message) from None

    def environment_key(self, environment_id: str) -> str:
        """The key of a self-hosted environment (made the first time it is asked for): what
        a worker polls with, sent as ``Authorization: Bearer``. A cloud environment has none."""
        try:
            return self._credentials.environment_key(environment_id)
        except _APIError as error:
            raise ValueError(error.message) from None

    def work_items(self, environment_id: str | None = None) -> list[dict[str, Any]]:
        """The work items of self-hosted environments (of one, with ``environment_id``), as
        the API shows them now, oldest first (copies; never a secret)."""
        with self._state.condition:
            self._work.sweep()
            return [
                item.view()
                for item in self._state.work.values()
                if environment_id in (None, item.environment_id)
            ]

    def expire_lease(self, work_id: str) -> None:
        """End a work item's lease now, as if its ttl had passed with no heartbeat: a
        starting or active item is queued again (its sessions token no longer works), a
        stopping one is stopped."""
        with self._state.condition:
            self._work.expire(work_id)

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
        self._server.faults.add_stream_fault("drop", session_id, at_event, times, previews=previews)

    def terminate_session(self, session_id: str) -> None:
        """Log ``session.status_terminated`` as if the service had failed the session."""
        with self._state.condition:
            self._log.terminate(self._state.sessions.known(session_id))

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
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            session.gave_up = True
            self._outcomes.settle(session, "failed", "The turn failed: the service gave up.")
            self._log.append(session, {"type": "session.error", "error": error})
            self._log.finish_turn(session, {"type": "retries_exhausted"})
            self._state.condition.notify_all()

    def add_output(self, session_id: str, name: str, data: bytes) -> dict[str, Any]:
        """Store a file as if the session's agent had written ``/mnt/session/outputs/<name>``;
        return its metadata. Writing a name again adds a newer file of that name."""
        content = _output_bytes(name, data)
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            if session.deleted:
                raise ValueError(f"session {session_id!r} was deleted")
            return copy.deepcopy(self._files.write_output(session, name, content).record)

    # --- observation for tests --------------------------------------------------------------

    def events(self, session_id: str, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The session's event log, oldest first (a copy; kept after the session is
        deleted), or the log of one of its threads."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            if thread_id is None:
                return copy.deepcopy(session.log)
            if thread_id not in session.threads:
                raise KeyError(f"no thread {thread_id!r} in session {session_id!r}")
            return copy.deepcopy(session.threads[thread_id].log)

    def threads(self, session_id: str) -> list[dict[str, Any]]:
        """The session's threads as the API shows them, the primary one first (copies)."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            return [_thread_view(session, t) for t in session.threads.values()]

    def session_ids(self) -> list[str]:
        """Ids of every session created so far, oldest first."""
        with self._state.condition:
            return list(self._state.sessions)

    def files(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Metadata of the stored files, oldest first (copies): every file, or only those
        scoped to ``session_id`` (its outputs)."""
        with self._state.condition:
            return [
                copy.deepcopy(f.record)
                for f in self._state.files.values()
                if session_id in (None, f.scope_id)
            ]
