"""The Gemini emulator itself: its resources assembled on one state and one server, and
what it offers tests (set-up, faults and observations)."""

from __future__ import annotations

import copy
import secrets
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import as_script
from req_managed_agents.testing.gemini._agents import Agents
from req_managed_agents.testing.gemini._api import GeminiAPI
from req_managed_agents.testing.gemini._environments import Environments
from req_managed_agents.testing.gemini._interactions import Interactions
from req_managed_agents.testing.gemini._log import InteractionLog
from req_managed_agents.testing.gemini._player import Player
from req_managed_agents.testing.gemini._state import GeminiState
from req_managed_agents.testing.gemini._stream import EventStream
from req_managed_agents.testing.gemini._turn import GeminiTurn
from req_managed_agents.testing.gemini._wire import ENDED, RUNNING, APIError
from req_managed_agents.testing.server import Lifecycle, LoopbackServer, SseEmulator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.providers.gemini import GeminiManagedAgents

_RESUME_REFUSALS = (400, 404, 410)


class GeminiEmulator(SseEmulator):
    """A Gemini Interactions API (Managed Agents) on ``127.0.0.1`` that plays scripted agents.

    Starts serving on construction; ``base_url`` is the server's root (give it to a client
    as its base URL: paths start ``/v1/`` or ``/v1beta/``) and ``api_key`` the
    ``x-goog-api-key`` it takes (random unless given). ``script`` is the default script of
    agents created without one (over REST, with :meth:`add_agent`, and the built-in
    agents); plain strings stand for text-only hops. ``ping_interval`` is the silence after
    which a stream writes a keep-alive comment.

    Stream faults (``drop_stream`` and the others) take a position in a conversation's log
    (:meth:`conversation_events`) and, as ``session_id``, a conversation's id: the id of its
    first interaction (None: any conversation).
    """

    def __init__(
        self,
        script: Sequence[GeminiTurn | str] | None = None,
        *,
        api_key: str | None = None,
        ping_interval: float = 1.0,
    ) -> None:
        lifecycle = Lifecycle(type(self).__name__)
        self.api_key = api_key or f"AIza-emu-{secrets.token_hex(16)}"
        self._state = state = GeminiState(lifecycle.condition, as_script(script, GeminiTurn))
        self._log = log = InteractionLog(lifecycle)
        self._agents = Agents(state)
        self._environments = Environments(state)
        stream = EventStream(lifecycle, ping_interval=ping_interval)
        interactions = Interactions(lifecycle, state, log, Player(lifecycle, log), stream)
        routes = [
            *interactions.routes(),
            *self._agents.routes(),
            *self._environments.routes(),
        ]
        super().__init__(LoopbackServer(lifecycle, GeminiAPI(self.api_key, routes)))

    def provider(self, **options: Any) -> GeminiManagedAgents:
        """A ``GeminiManagedAgents`` with this emulator's key and URL; ``options`` go to its
        constructor (``timeout``, ``max_retries``, ...)."""
        from req_managed_agents.providers.gemini import GeminiManagedAgents

        return GeminiManagedAgents(self.api_key, base_url=self.base_url, **options)

    # --- set-up and faults for tests ------------------------------------------------------

    def add_agent(
        self,
        script: Sequence[GeminiTurn | str] | None = None,
        agent_id: str | None = None,
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        description: str | None = None,
    ) -> str:
        """Create an agent that plays ``script`` (default: the emulator's); return its id
        (``agent_id``, or a fresh one). ``tools`` are tools as ``POST /{v}/agents`` takes
        them (``{"type": "function", "name": ...}``): its interactions may call them."""
        body: dict[str, Any] = {"id": agent_id or f"agent-{secrets.token_hex(6)}"}
        if tools:
            body["tools"] = [dict(tool) for tool in tools]
        if description is not None:
            body["description"] = description
        with self._state.condition:
            try:
                agent = self._agents.new_agent(body)
            except APIError as error:
                raise ValueError(error.message) from None
            if script is not None:
                self._state.agent_scripts[agent["id"]] = as_script(script, GeminiTurn)
            return str(agent["id"])

    def add_environment(
        self, *, mode: str = "on_demand", sources: Sequence[Mapping[str, Any]] = ()
    ) -> str:
        """Create an environment (``mode`` ``on_demand`` or ``self_hosted``, ``sources`` as
        ``POST /{v}/environments`` takes them); return its id (``env_...``)."""
        body = {"mode": mode, "sources": [dict(source) for source in sources]}
        with self._state.condition:
            try:
                return str(self._environments.new_environment(body)["id"])
            except APIError as error:
                raise ValueError(error.message) from None

    def not_found_after_create(self, reads: int = 1, times: int = 1) -> None:
        """The next ``times`` interactions created read as not there yet: each answers its
        first ``reads`` GETs (streamed or not) with a 404 ``not_found``, as a service whose
        reads lag its writes does; it runs all the same."""
        if reads < 1 or times < 1:
            raise ValueError("reads and times must be at least 1")
        with self._state.condition:
            self._state.hidden_reads.extend([reads] * times)

    def refuse_resumes(self, times: int = 1, status: int = 400) -> None:
        """The next ``times`` resumes (a GET with ``last_event_id``) cannot resume: each is
        answered ``status`` (400 ``invalid_request``, 404 ``not_found`` or 410), as a
        stream whose events the service no longer keeps."""
        if times < 1:
            raise ValueError("times must be at least 1")
        if status not in _RESUME_REFUSALS:
            raise ValueError(f"status must be one of {_RESUME_REFUSALS}")
        with self._state.condition:
            self._state.resume_refusals.extend([status] * times)

    def fail_interaction(self, interaction_id: str, message: str = "Internal error.") -> None:
        """Fail a running interaction as the service would: an ``error`` event (code
        ``api_error``), then its status ``failed`` and ``interaction.completed``."""
        with self._state.condition:
            interaction = self._state.interactions.known(interaction_id)
            if interaction.status not in RUNNING:
                raise ValueError(f"interaction {interaction_id!r} is not running")
            self._log.end(interaction, "failed", {"code": "api_error", "message": message})

    def pending_faults(self) -> int:
        """How many shots of the injected faults have not fired yet (hooks excluded),
        ``not_found_after_create`` reads and ``refuse_resumes`` included."""
        with self._state.condition:
            own = self._state.pending_shots()
        return super().pending_faults() + own

    # --- observation for tests --------------------------------------------------------------

    def interaction(self, interaction_id: str) -> dict[str, Any]:
        """The interaction as ``GET /{v}/interactions/{id}`` answers it now (deleted ones
        too)."""
        with self._state.condition:
            return self._state.interactions.known(interaction_id).view()

    def interaction_ids(self) -> list[str]:
        """Ids of every interaction created so far, oldest first."""
        with self._state.condition:
            return list(self._state.interactions)

    def events(self, interaction_id: str) -> list[dict[str, Any]]:
        """The interaction's own events, oldest first (a copy)."""
        with self._state.condition:
            return copy.deepcopy(self._state.interactions.known(interaction_id).events)

    def conversation_id(self, interaction_id: str) -> str:
        """The id of the conversation the interaction is a hop of (its first interaction's)."""
        with self._state.condition:
            return self._state.interactions.known(interaction_id).conversation.id

    def conversation_events(self, interaction_id: str) -> list[dict[str, Any]]:
        """Every event of every hop of the interaction's conversation, in the order logged:
        the positions stream faults name."""
        with self._state.condition:
            conversation = self._state.interactions.known(interaction_id).conversation
            return copy.deepcopy(conversation.log)

    def running(self) -> list[str]:
        """Ids of the interactions still running, or waiting for a caller that has not
        answered or continued them (neither ended nor deleted): what a run that stopped
        everywhere leaves none of."""
        with self._state.condition:
            return [
                i.id
                for i in self._state.interactions.values()
                if not (i.deleted or i.continued or i.status in ENDED)
            ]
