"""The OpenAI Agents emulator itself: its resources assembled on one state and one server,
and what it offers tests (set-up, faults and observations)."""

from __future__ import annotations

import copy
import secrets
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import as_script
from req_managed_agents.testing.openai._agents import Agents
from req_managed_agents.testing.openai._api import OpenAIAPI
from req_managed_agents.testing.openai._history import History
from req_managed_agents.testing.openai._inputs import Inputs
from req_managed_agents.testing.openai._log import SessionLog
from req_managed_agents.testing.openai._player import Player
from req_managed_agents.testing.openai._sessions import Sessions
from req_managed_agents.testing.openai._state import OpenAIState
from req_managed_agents.testing.openai._stream import EventStream
from req_managed_agents.testing.openai._turn import OpenAITurn
from req_managed_agents.testing.openai._turns import TurnFlow
from req_managed_agents.testing.openai._wire import APIError
from req_managed_agents.testing.server import Lifecycle, LoopbackServer, SseEmulator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.providers.openai import OpenAIAgents

_MODEL = "gpt-5.1"


class OpenAIAgentsEmulator(SseEmulator):
    """An OpenAI Agents API on ``127.0.0.1`` that plays scripted agents.

    Starts serving on construction; ``base_url`` ends in ``/v1`` (give it to a client as
    its base URL) and ``api_key`` is the bearer key it takes (random unless given).
    ``script`` is the default script of agents created without one (over REST, inline in a
    session, or with :meth:`add_agent`); plain strings stand for text-only steps.
    ``ping_interval`` is the silence after which a stream writes a keep-alive comment.
    ``echo_answers=False`` makes the service keep the answers it receives off the stream:
    a tool result's ``function_call_output`` item is recorded (the items list it) but no
    ``turn.item.added`` announces it, so only a catch-up can learn of it.
    """

    def __init__(
        self,
        script: Sequence[OpenAITurn | str] | None = None,
        *,
        api_key: str | None = None,
        ping_interval: float = 1.0,
        echo_answers: bool = True,
    ) -> None:
        lifecycle = Lifecycle(type(self).__name__)
        self.api_key = api_key or f"sk-emu-{secrets.token_hex(16)}"
        self.echo_answers = echo_answers
        self._state = state = OpenAIState(lifecycle.condition, as_script(script, OpenAITurn))
        self._log = log = SessionLog(lifecycle)
        self._flow = flow = TurnFlow(log)
        self._player = player = Player(lifecycle, log, flow, echo_answers=echo_answers)
        self._agents = agents = Agents(state)
        stream = EventStream(lifecycle, state, ping_interval=ping_interval)
        sessions = Sessions(state, log, player, flow, stream)
        routes = [
            *sessions.routes(),  # before the agents': /v1/agents/sessions is no agent id
            *Inputs(state, player).routes(),
            *stream.routes(),
            *History(state).routes(),
            *agents.routes(),
        ]
        super().__init__(LoopbackServer(lifecycle, OpenAIAPI(self.api_key, routes)))
        # The server picks its port as it starts; self-hosted environments' URLs need it.
        self.base_url = sessions.base_url = f"{self._server.base_url}/v1"

    def provider(self, **options: Any) -> OpenAIAgents:
        """An ``OpenAIAgents`` with this emulator's key and URL; ``options`` go to its
        constructor (``timeout``, ``max_retries``, ...)."""
        from req_managed_agents.providers.openai import OpenAIAgents

        return OpenAIAgents(self.api_key, base_url=self.base_url, **options)

    # --- set-up and faults for tests ------------------------------------------------------

    def add_agent(
        self,
        script: Sequence[OpenAITurn | str] | None = None,
        name: str | None = "agent",
        *,
        model: str = _MODEL,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> str:
        """Create an agent that plays ``script`` (default: the emulator's); return its id.
        ``tools`` are tool params as ``POST /v1/agents`` takes them."""
        body: dict[str, Any] = {"model": model, "name": name, "tools": [dict(t) for t in tools]}
        with self._state.condition:
            try:
                agent = self._agents.new_agent(body)
            except APIError as error:
                raise ValueError(error.message) from None
            if script is not None:
                self._state.agent_scripts[agent["id"]] = as_script(script, OpenAITurn)
            return str(agent["id"])

    def refuse_unregistered_results(self, times: int = 1) -> None:
        """Refuse the next ``times`` posts carrying a result for a pending function call as
        the service does when the call's item event outran its registration: a 400 whose
        error is ``{"message": "Unknown pending tool call: <call_id>", "type":
        "invalid_request_error", "param": null, "code": "invalid_request_error"}``, the one
        refusal the ``openai`` SDK retries. Nothing is recorded, the idempotency key
        included, so the same post succeeds afterwards."""
        if times < 1:
            raise ValueError("times must be at least 1")
        with self._state.condition:
            self._state.race_shots += times

    def pending_faults(self) -> int:
        """How many shots of the injected faults have not fired yet (hooks excluded),
        ``refuse_unregistered_results`` shots included."""
        with self._state.condition:
            races = self._state.race_shots
        return super().pending_faults() + races

    def terminate_session(self, session_id: str, message: str = "The session failed.") -> None:
        """Fail the session as the service would: an ``error`` event, its open and queued
        turns ``turn.failed`` (``internal_error``), then ``agent.session.failed`` (the
        session's ``error`` is ``message``). A failed session takes no more input."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            if session.status == "failed" or session.deleted:
                raise ValueError(f"session {session_id!r} has already ended")
            self._flow.fail(session, "internal_error", message, session_failed=True)

    def fail_turn(self, session_id: str, code: str = "server_error") -> None:
        """Give up on the session's open turn as the service does after its retries: an
        ``error`` event, then ``turn.failed`` with ``code`` (a ``SessionTurnError`` code),
        then the next queued turn, or ``agent.session.idle``. The session stays usable."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            if session.active is None:
                raise ValueError(f"session {session_id!r} has no open turn")
            self._player.fail_turn(session, code, "The service gave up on the turn.")

    # --- observation for tests --------------------------------------------------------------

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's event log, oldest first (a copy; kept after the session is
        deleted). Stream fault positions count in it."""
        with self._state.condition:
            return copy.deepcopy(self._state.sessions.known(session_id).log)

    def items(self, session_id: str, subagent_id: str | None = None) -> list[dict[str, Any]]:
        """The root agent's items (or one subagent's), oldest first, as they are now."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            return copy.deepcopy(session.owned_items(subagent_id))

    def turns(self, session_id: str) -> list[dict[str, Any]]:
        """Every turn of the session (root and subagent turns), oldest first."""
        with self._state.condition:
            session = self._state.sessions.known(session_id)
            return [copy.deepcopy(turn.record) for turn in session.turns.values()]

    def session(self, session_id: str) -> dict[str, Any]:
        """The session as ``GET /v1/agents/sessions/{id}`` answers it now."""
        with self._state.condition:
            return self._state.sessions.known(session_id).view()

    def session_ids(self) -> list[str]:
        """Ids of every session created so far, oldest first."""
        with self._state.condition:
            return list(self._state.sessions)
