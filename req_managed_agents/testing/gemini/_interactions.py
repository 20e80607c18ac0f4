"""Interactions: ``POST /{v}/interactions`` (create: a first hop, the function results of
a hop that ``requires_action``, a next message, or a continuation), ``GET``, ``.../cancel``
and ``DELETE`` of ``/{v}/interactions/{id}``.

Every create makes a new interaction, the next hop of its conversation. What it may carry
depends on the interaction ``previous_interaction_id`` names (400 ``invalid_request``
otherwise, and for an id that does not exist or was deleted):

* none: ``input`` with user input, no ``function_result``, no ``continuation_token``;
* one that ``requires_action``: exactly one ``function_result`` per pending call (an
  unknown ``call_id``, a call answered twice or left unanswered is refused), nothing else;
* one that ``requires_continuation``: its ``continuation_token`` and no ``input``;
* one that has ended (``completed``, ``failed``, ``cancelled``, ``incomplete``,
  ``budget_exceeded``): user input (its pending calls, if it was cancelled waiting, are void);
* one still running: refused.

The ``agent`` must be the previous hop's. Continuing one hop twice branches the
conversation (each branch plays the same next turn), as chains of ids allow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.gemini._model import Conversation, Interaction
from req_managed_agents.testing.gemini._player import result_text
from req_managed_agents.testing.gemini._request import create_request, texts
from req_managed_agents.testing.gemini._state import function_names
from req_managed_agents.testing.gemini._wire import (
    ENDED,
    INTERACTION_PATH,
    INTERACTIONS_PATH,
    RUNNING,
    APIError,
    invalid,
    not_found,
    now,
)
from req_managed_agents.testing.server import new_id, query_value

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._log import InteractionLog
    from req_managed_agents.testing.gemini._player import Player
    from req_managed_agents.testing.gemini._request import CreateRequest
    from req_managed_agents.testing.gemini._state import GeminiState
    from req_managed_agents.testing.gemini._stream import EventStream
    from req_managed_agents.testing.server import Exchange, Lifecycle, RecordedRequest, Route

_GET_QUERY = ("stream", "last_event_id", "include_input")


class Interactions:
    """The interaction routes, on the shared state."""

    def __init__(
        self,
        lifecycle: Lifecycle,
        state: GeminiState,
        log: InteractionLog,
        player: Player,
        stream: EventStream,
    ) -> None:
        self._lifecycle = lifecycle
        self._state = state
        self._log = log
        self._player = player
        self._stream = stream

    def routes(self) -> list[Route]:
        return [
            ("POST", INTERACTIONS_PATH, self._create),
            ("GET", INTERACTION_PATH, self._get),
            ("POST", f"{INTERACTION_PATH}/cancel", self._cancel),
            ("DELETE", INTERACTION_PATH, self._delete),
        ]

    # --- create ---------------------------------------------------------------------------

    def _create(self, exchange: Exchange) -> dict[str, Any] | None:
        _check_query(exchange.request, ())
        request = create_request(exchange.request.body)
        state = self._state
        with state.condition:
            agent, functions = state.agent_named(request.agent)
            functions |= function_names(request.body.get("tools"))
            environment_id = self._environment(request.body.get("environment"))
            if request.previous_id is None:
                interaction = self._first_hop(request, agent, functions)
            else:
                interaction = self._next_hop(request, agent, functions)
            interaction.environment_id = environment_id
            if state.hidden_reads:
                interaction.hidden_reads = state.hidden_reads.popleft()
            state.interactions[interaction.id] = interaction
            self._log.created(interaction)
            self._player.play(interaction)
            if not request.stream:
                if not request.background:  # answered once the hop has stopped
                    state.condition.wait_for(
                        lambda: interaction.status not in RUNNING or self._lifecycle.stopping
                    )
                return interaction.view()
        self._stream.serve(exchange, interaction, 0)
        return None

    def _new(
        self,
        request: CreateRequest,
        agent: str,
        functions: frozenset[str],
        conversation: Conversation | None,
        turn_index: int,
        inputs: list[str],
    ) -> Interaction:
        interaction_id = new_id("int")
        return Interaction(
            id=interaction_id,
            agent=request.agent,
            conversation=conversation or Conversation(interaction_id),
            script=self._state.script_of(agent),
            turn_index=turn_index,
            inputs=inputs,
            request=request.body,
            functions=functions,
            created=now(),
            input_steps=request.steps,
        )

    def _first_hop(
        self, request: CreateRequest, agent: str, functions: frozenset[str]
    ) -> Interaction:
        if request.continuation_token is not None:
            raise invalid("continuation_token needs the previous_interaction_id that issued it.")
        if not request.steps:
            raise invalid("input is required.")
        if request.results:
            call_id = request.results[0]["call_id"]
            raise invalid(f"function_result for unknown call id '{call_id}': no call is pending.")
        return self._new(request, agent, functions, None, 0, texts(request.steps))

    def _next_hop(
        self, request: CreateRequest, agent: str, functions: frozenset[str]
    ) -> Interaction:
        previous_id = str(request.previous_id)
        previous = self._state.interactions.get(previous_id)
        if previous is None or previous.deleted:
            raise invalid(f"previous_interaction_id '{previous_id}' does not exist.")
        if previous.agent.removeprefix("agents/") != agent:
            raise invalid(f"agent must be the previous interaction's agent, '{previous.agent}'.")
        if previous.status in RUNNING:
            raise invalid(f"Interaction '{previous_id}' is still running ({previous.status}).")
        functions |= previous.functions
        if request.continuation_token is not None or previous.status == "requires_continuation":
            inputs = self._continuation(request, previous)
        elif previous.status == "requires_action":
            inputs = _answers(request, previous)
        else:
            assert previous.status in ENDED
            if not request.steps:
                raise invalid("input is required.")
            if request.results:
                call_id = request.results[0]["call_id"]
                raise invalid(
                    f"function_result for unknown call id '{call_id}': interaction "
                    f"'{previous_id}' has no pending call ({previous.status})."
                )
            inputs = texts(request.steps)
        previous.continued = True
        conversation = previous.conversation
        return self._new(request, agent, functions, conversation, previous.turn_index + 1, inputs)

    @staticmethod
    def _continuation(request: CreateRequest, previous: Interaction) -> list[str]:
        if previous.status != "requires_continuation":
            raise invalid(f"Interaction '{previous.id}' does not require continuation.")
        if request.continuation_token != previous.continuation_token:
            raise invalid("continuation_token is not the one the previous interaction issued.")
        if request.steps:
            raise invalid("A continuation carries no input.")
        return list(previous.inputs)

    def _environment(self, given: Any) -> str | None:
        if given is None:
            return None
        if isinstance(given, str):
            return self._state.environment_named(given)
        if not isinstance(given, dict) or given.get("type") != "remote":
            raise invalid("environment must be an environment id or a remote environment.")
        environment_id = given.get("environment_id")
        if environment_id is None:
            return None
        if not isinstance(environment_id, str):
            raise invalid("environment.environment_id must be a string.")
        return self._state.environment_named(environment_id)

    # --- get, cancel, delete --------------------------------------------------------------

    def _get(self, exchange: Exchange, interaction_id: str) -> dict[str, Any] | None:
        request = exchange.request
        _check_query(request, _GET_QUERY)
        stream = _flag(request, "stream")
        include_input = _flag(request, "include_input")
        last_event_id = query_value(request, "last_event_id")
        if last_event_id is not None and not stream:
            raise invalid("last_event_id can only be used if stream is true.")
        state = self._state
        with state.condition:
            interaction = state.interactions.find(interaction_id)
            if interaction.hidden_reads > 0:
                interaction.hidden_reads -= 1
                raise not_found("interaction", interaction_id)
            if not stream:
                return interaction.view(include_input)
            cursor = 0
            if last_event_id is not None:
                cursor = self._resume_cursor(interaction, last_event_id)
        self._stream.serve(exchange, interaction, cursor)
        return None

    def _resume_cursor(self, interaction: Interaction, last_event_id: str) -> int:
        """Where a resumed stream starts: the event after ``last_event_id``."""
        refusals = self._state.resume_refusals
        position = interaction.event_ids.get(last_event_id)
        if refusals or position is None:
            status = refusals.popleft() if refusals else 400
            raise APIError(
                status,
                f"The stream of interaction '{interaction.id}' cannot be resumed from event "
                f"'{last_event_id}'.",
            )
        return position + 1

    def _cancel(self, exchange: Exchange, interaction_id: str) -> dict[str, Any]:
        _check_query(exchange.request, ())
        with self._state.condition:
            interaction = self._state.interactions.find(interaction_id)
            if interaction.status != "cancelled":
                if interaction.status in ENDED:
                    raise invalid(
                        f"Interaction '{interaction_id}' has ended ({interaction.status}) "
                        "and cannot be cancelled."
                    )
                self._log.cancel(interaction)
            return interaction.view()

    def _delete(self, exchange: Exchange, interaction_id: str) -> dict[str, Any]:
        _check_query(exchange.request, ())
        with self._state.condition:
            interaction = self._state.interactions.find(interaction_id)
            if interaction.status not in ENDED:
                self._log.cancel(interaction)
            interaction.deleted = True  # a 404 to the API, kept for tests
            self._lifecycle.announce(interaction.id)  # its streams end
        return {}


def _answers(request: CreateRequest, previous: Interaction) -> list[str]:
    """The results answering each of ``previous``'s pending calls once, in call order."""
    if len(request.results) != len(request.steps):
        raise invalid(
            f"Interaction '{previous.id}' requires action: the input must be function_result "
            "steps only."
        )
    by_call: dict[str, Any] = {}
    for step in request.results:
        call_id = step["call_id"]
        if call_id not in previous.pending_calls:
            raise invalid(f"function_result for unknown call id '{call_id}'.")
        if call_id in by_call:
            raise invalid(f"Function call '{call_id}' is answered more than once.")
        by_call[call_id] = step["result"]
    missing = [call_id for call_id in previous.pending_calls if call_id not in by_call]
    if missing:
        raise invalid(f"Function call '{missing[0]}' has no function_result.")
    return [result_text(by_call[call_id]) for call_id in previous.pending_calls]


def _check_query(request: RecordedRequest, allowed: tuple[str, ...]) -> None:
    for name in request.query:
        if name not in allowed:
            raise invalid(f"Unknown query parameter '{name}'.")


def _flag(request: RecordedRequest, name: str) -> bool:
    value = query_value(request, name)
    if value not in (None, "true", "false"):
        raise invalid(f"{name} must be 'true' or 'false'.")
    return value == "true"
