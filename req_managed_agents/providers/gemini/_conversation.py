"""One Gemini conversation - a chain of interactions - as a
:class:`~req_managed_agents.providers.Conversation`.

Every input is a new interaction, created streamed with ``previous_interaction_id`` = the
chain's newest (its *head*): a prompt as a ``user_input`` step, the answers to function
calls as ``function_result`` steps. The head is the conversation's id
(``info.session_id``): it moves with each create, the ``moved`` callback hears of it as soon
as ``interaction.created`` names it, and a later process continues the conversation from it
(``interaction_id=``). The turn is read from the :class:`GeminiFeed` until the interaction
ends; ``requires_continuation`` is continued at once (``continuation_token``, no input), at
most ``max_continuations`` times per turn.

A create is not safe to repeat once it may have landed (the API takes no idempotency key
and lists no interactions), so one whose stream broke before naming its interaction ends
the run with :class:`~req_managed_agents.errors.InvocationOutcomeUnknownError`: sending it
again could run the turn - and its tool calls - twice. Once named, nothing is lost: the
feed resumes or catches it up.

Every call and every answer is remembered, so a result is never posted twice by this
conversation. Stopping cancels the running interaction (``POST .../cancel``), after the
create in flight has named it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    ConfigurationError,
    InvocationOutcomeUnknownError,
    ManagedAgentsError,
    NotFoundError,
    SessionError,
    StreamError,
    TransportError,
)
from req_managed_agents.model._vocabulary import (
    Outcome,
    SessionInfo,
    ToolResult,
    ToolUse,
    TurnResult,
)
from req_managed_agents.providers._base import (
    Aborted,
    Confirmations,
    Elicitations,
    EventSink,
    Origin,
    TextSink,
)
from req_managed_agents.providers._feed import FeedConversation
from req_managed_agents.providers._previews import Previews
from req_managed_agents.providers.gemini._client import GeminiClient
from req_managed_agents.providers.gemini._events import (
    CONTINUES,
    RECORDED,
    InteractionFold,
    function_result,
    turn_of,
    user_input,
)
from req_managed_agents.providers.gemini._feed import GeminiFeed, Opened, opening

__all__ = ["PROVIDER_NAME", "GeminiConversation", "open_interaction", "prompt_in"]

PROVIDER_NAME = "gemini"
# How far back :meth:`GeminiConversation.delivered` walks a chain looking for a prompt.
MAX_CHAIN_WALK = 1000
_RUNNING = frozenset({"in_progress", "queued"})
_log = get_logger(__name__)

Event = Mapping[str, Any]
Moved = Callable[[str], None]


def open_interaction(
    client: GeminiClient,
    body: Mapping[str, Any],
    *,
    idle_timeout: float,
    cancelled: threading.Event | None,
    telemetry_metadata: Mapping[str, Any],
) -> Opened:
    """Create an interaction, streamed, and read up to the event that names it. A failure
    after the request may have landed is an unknown outcome, said so (see the module)."""
    try:
        response = client.stream_interaction(
            body,
            idle_timeout=idle_timeout,
            cancelled=cancelled,
            telemetry_metadata=telemetry_metadata,
        )
        return opening(response, idle_timeout)
    except (TransportError, StreamError) as exc:
        if cancelled is not None and cancelled.is_set():
            raise Aborted from exc
        if isinstance(exc, TransportError) and exc.not_sent:
            raise
        raise InvocationOutcomeUnknownError(
            f"creating an interaction failed before it was named ({exc}); the service may have "
            "made it and started its turn, and it offers no way to find it, so it was not sent "
            "again (that could run the turn twice)"
        ) from exc


def prompt_in(interaction: Mapping[str, Any], prompt: str) -> bool:
    """Whether an interaction's input (its ``user_input`` steps, or its ``input``) is
    ``prompt``."""
    candidates: list[Any] = []
    steps = interaction.get("steps")
    candidates += steps if isinstance(steps, list) else []
    given = interaction.get("input")
    if isinstance(given, str):
        return given == prompt
    candidates += given if isinstance(given, list) else [given]
    texts = [_input_text(item) for item in candidates]
    contents = "".join(
        str(item.get("text", ""))
        for item in candidates
        if isinstance(item, Mapping) and item.get("type") == "text"
    )
    return prompt in texts or (bool(contents) and contents == prompt)


def _input_text(step: object) -> str | None:
    if not isinstance(step, Mapping) or step.get("type") != "user_input":
        return None
    content = step.get("content")
    return "".join(
        str(part.get("text", ""))
        for part in (content if isinstance(content, list) else ())
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


class GeminiConversation(FeedConversation):
    """Drives one chain; created by :meth:`GeminiManagedAgents.open_conversation`.

    ``base`` is every create's body but its input (agent, tools, environment, ...).
    ``opened`` is the stream of the interaction the chain was created with, from
    ``created_with`` (its turn runs as the conversation opens: the first
    :meth:`send_prompt` of that prompt follows it instead of creating another).
    """

    _feed: GeminiFeed

    def __init__(
        self,
        client: GeminiClient,
        head: str,
        *,
        base: Mapping[str, Any],
        origin: Origin,
        idle_timeout: float,
        max_continuations: int,
        on_event: EventSink,
        metadata: Mapping[str, Any],
        telemetry_metadata: Mapping[str, Any],
        on_text: TextSink | None = None,
        opened: Opened | None = None,
        created_with: str | None = None,
        moved: Moved | None = None,
    ) -> None:
        self.info = SessionInfo(head, PROVIDER_NAME, dict(metadata))
        self.origin = origin
        self._client = client
        self._base = dict(base)
        self._idle_timeout = idle_timeout
        self._max_continuations = max_continuations
        self._on_event = on_event
        self._telemetry = dict(telemetry_metadata)
        self._previews = Previews(on_text) if on_text is not None else None
        self._moved = moved
        self._initial = created_with
        self._created_with = created_with
        self._resumed = origin != "created"
        # Function calls seen, by id, and the ids answered.
        self._uses: dict[str, ToolUse] = {}
        self._answered: set[str] = set()
        # Interactions this conversation made (deleted by discard()).
        self._made: list[str] = [head] if opened is not None else []
        self._lock = threading.Lock()
        self._running: str | None = opened.interaction_id if opened is not None else None
        self._interrupted = False
        self._stop = threading.Event()
        self._aborted = False
        self._feed = GeminiFeed(
            client, head, idle_timeout=idle_timeout, telemetry_metadata=telemetry_metadata
        )
        self._feed.start()
        if opened is not None:
            self._feed.follow(opened)

    @property
    def head(self) -> str:
        """The chain's newest interaction: where the next input goes, and where a later
        process continues the conversation."""
        return self.info.session_id

    # -- driving --------------------------------------------------------------------------

    def resume(self) -> TurnResult | None:
        """The head's turn: followed to its end when it is still running, else rebuilt from
        what it recorded (its function calls, unanswered, among it)."""
        if not self._resumed:
            return None
        self._resumed = False
        interaction = self._client.get_interaction(self.head, telemetry_metadata=self._telemetry)
        if interaction.get("status") in _RUNNING:
            with self._lock:
                self._running = self.head
            self._feed.attach(self.head)
            return self._follow([InteractionFold(self.head)], [])
        event = {"event_type": RECORDED, "interaction": interaction}
        self._on_event(event)
        fold = InteractionFold(self.head)
        fold.add(event)
        fold.completed = True
        return self._follow([fold], [event])

    def accepts_input(self) -> bool:
        try:
            self._client.get_interaction(self.head, telemetry_metadata=self._telemetry)
        except NotFoundError:
            return False
        return True

    def send_prompt(self, prompt: str) -> TurnResult:
        self._check_feed()
        self._interrupted = False
        if self._initial is not None and prompt == self._initial:
            self._initial = None
            return self._follow([InteractionFold(self.head)], [])  # the create's turn
        self._initial = None
        return self._create({"input": user_input(prompt)})

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Elicitations = (),
    ) -> TurnResult:
        self._check_feed()
        self._interrupted = False
        if confirmations or elicitations:
            raise ConfigurationError("Gemini interactions ask for no confirmations or elicitations")
        passed = {use.id: use for use in tool_uses}
        steps = []
        for result in results:
            if result.tool_use_id in self._answered:
                continue
            use = passed.get(result.tool_use_id) or self._uses.get(result.tool_use_id)
            if use is None:
                raise ConfigurationError(
                    f"no function call {result.tool_use_id!r} is waiting in interaction {self.head}"
                )
            steps.append(function_result(use, result))
        if not steps:
            raise SessionError(f"every call of interaction {self.head} was answered already")
        self._answered.update(str(step["call_id"]) for step in steps)
        return self._create({"input": steps})

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        raise ConfigurationError("Gemini interactions have no outcomes (Claude only)")

    def unanswered_tool_uses(self) -> list[ToolUse]:
        return [use for use_id, use in self._uses.items() if use_id not in self._answered]

    def send_event(self, event: Mapping[str, Any]) -> None:
        raise SessionError("Gemini takes inputs only as new interactions; send a prompt")

    def interrupt(self) -> None:
        """Cancel the running interaction; one whose create is in flight is cancelled as
        soon as its stream names it."""
        with self._lock:
            self._interrupted = True
            running = self._running
        if running is not None:
            self._cancel(running)

    def abort(self) -> None:
        self._stop.set()
        super().abort()

    def close(self) -> None:
        """Release the connections. A conversation closed before anyone followed the turn
        its creation started stops that turn too: no driver will."""
        if self._initial is not None:
            self.interrupt()
        self.abort()

    def history_mark(self) -> str | None:
        """The head: the interactions after it are what came since."""
        return self.head

    def delivered(self, prompt: str, after: str | None) -> bool | None:
        """Whether an interaction of the chain after ``after`` (walking back from the head
        by ``previous_interaction_id``) took ``prompt`` as its input."""
        if self.origin == "created" and after is None and prompt == self._created_with:
            return True
        interaction_id: str | None = self.head
        for _ in range(MAX_CHAIN_WALK):
            if interaction_id is None or interaction_id == after:
                return False
            interaction = self._client.get_interaction(
                interaction_id, include_input=True, telemetry_metadata=self._telemetry
            )
            if prompt_in(interaction, prompt):
                return True
            previous = interaction.get("previous_interaction_id")
            interaction_id = previous if isinstance(previous, str) and previous else None
        return False

    def _delete_session(self) -> None:
        for interaction_id in reversed(self._made):
            self._client.delete_interaction(interaction_id)

    # -- internals ------------------------------------------------------------------------

    def _create(self, fields: Mapping[str, Any]) -> TurnResult:
        self._start(fields)
        return self._follow([InteractionFold(self.head)], [])

    def _start(self, fields: Mapping[str, Any]) -> None:
        """Create the chain's next interaction and hand its stream to the feed; the head
        moves to it at once."""
        if self._aborted:
            raise Aborted
        body = {**self._base, **fields, "previous_interaction_id": self.head}
        opened = open_interaction(
            self._client,
            body,
            idle_timeout=self._idle_timeout,
            cancelled=self._stop,
            telemetry_metadata=self._telemetry,
        )
        if self._stop.is_set():  # aborted while it was being created
            opened.response.close()
            self._cancel(opened.interaction_id)
            raise Aborted
        interaction_id = opened.interaction_id
        self.info = replace(self.info, session_id=interaction_id)
        self._made.append(interaction_id)
        with self._lock:
            self._running = interaction_id
            interrupted = self._interrupted
        if self._moved is not None:
            self._moved(interaction_id)
        self._feed.follow(opened)
        if interrupted:
            self._cancel(interaction_id)

    def _follow(self, hops: list[InteractionFold], events: list[Event]) -> TurnResult:
        """Read the last hop to its end, continue it while it asks for continuation, and
        fold the hops into the turn."""
        while True:
            fold = hops[-1]
            while not fold.completed:
                event = self._next()
                if not isinstance(event, Mapping):
                    continue  # no history is queued on this feed
                self._on_event(event)
                events.append(event)
                preview = fold.add(event)
                if preview is not None and self._previews is not None:
                    self._previews.add(preview[0], 0, preview[1])
            if self._previews is not None:
                for key, text in fold.texts():
                    self._previews.finish(key, text)
            if fold.status != CONTINUES or not fold.continuation_token:
                break
            if len(hops) > self._max_continuations:
                _log.warning(
                    "interaction %s: continued %d times; stopping",
                    fold.interaction_id,
                    len(hops) - 1,
                )
                with self._lock:
                    self._running = None
                turn = turn_of(hops, events)
                return replace(
                    turn,
                    terminal="terminated",
                    stop_reason={
                        "type": "max_continuations",
                        "max_continuations": self._max_continuations,
                    },
                )
            self._start({"continuation_token": fold.continuation_token})
            hops.append(InteractionFold(self.head))
        with self._lock:
            self._running = None
        turn = turn_of(hops, events)
        for use in turn.tool_uses:
            self._uses.setdefault(use.id, use)
        return turn

    def _cancel(self, interaction_id: str) -> None:
        try:
            self._client.cancel_interaction(interaction_id, telemetry_metadata=self._telemetry)
        except ManagedAgentsError as exc:
            _log.warning("could not cancel interaction %s: %s", interaction_id, exc)
