"""One OpenAI Agents session as a :class:`~req_managed_agents.providers.Conversation`.

Inputs go out as posted events (each under an idempotency key: :class:`Delivery`); the turn
they start is read back from the session's :class:`OpenAIFeed` until a session event says
where the session stands - ``idle``, ``requires_action``, ``failed`` or ``budget_reached``.

A prompt's turn begins with the first root turn the service creates after the post: a
status announced before it (the idle a stream reports on connect, say) belongs to the past.
The calls a ``requires_action`` asks for are read from the session it carries, so a call
whose own item was missed is still answered; calls already answered are dropped, and a
status naming only those is stale. Every call and every answer is remembered, so a result is
never posted twice.

The agent's text reaches ``on_text`` as it is written (``output_text.delta``), message by
message, until the finished message (its item's ``done``) settles it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ConfigurationError, NotFoundError
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
from req_managed_agents.providers._delivery import Delivery
from req_managed_agents.providers._feed import FeedClosed, FeedConversation, History
from req_managed_agents.providers._previews import Previews
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.providers.openai._delivery import OpenAIWire, stable_key
from req_managed_agents.providers.openai._events import (
    BOUNDARIES,
    ITEM_ADDED,
    ITEM_DONE,
    TEXT_DELTA,
    TURN_CREATED,
    answered_id,
    approval_result,
    assistant_text,
    message,
    normalize,
    required_uses,
    tool_result,
    user_text,
)
from req_managed_agents.providers.openai._feed import OpenAIFeed, Opened

__all__ = ["PROVIDER_NAME", "OpenAIConversation"]

PROVIDER_NAME = "openai"
_log = get_logger(__name__)

# Boundaries that end a wait even before the input's turn began: the input never got one.
_ENDS_UNSTARTED = frozenset({"agent.session.failed", "agent.session.budget_reached"})
# A session in these states takes no input.
_CLOSED_STATUSES = frozenset({"failed", "budget_reached"})

Event = Mapping[str, Any]


class OpenAIConversation(FeedConversation):
    """Drives one session; created by :meth:`OpenAIAgents.open_conversation`.

    ``created_with`` is the prompt the session was created with (its turn is running as
    the conversation opens): the first :meth:`send_prompt` of that prompt follows that turn
    instead of posting the prompt again. ``opened`` is the stream the creation answered
    with.
    """

    def __init__(
        self,
        client: OpenAIClient,
        session_id: str,
        *,
        resumed: bool,
        created_with: str | None,
        idle_timeout: float,
        on_event: EventSink,
        metadata: Mapping[str, Any],
        telemetry_metadata: Mapping[str, Any],
        on_text: TextSink | None = None,
        cancelled: threading.Event | None = None,
        provider_name: str = PROVIDER_NAME,
        opened: Opened | None = None,
        origin: Origin = "created",
    ) -> None:
        self.info = SessionInfo(session_id, provider_name, dict(metadata))
        self.origin = origin
        self._client = client
        self._on_event = on_event
        self._telemetry = dict(telemetry_metadata)
        self._resumed = resumed
        self._initial = created_with
        # Function calls and approval requests seen, by id, and the ids already answered.
        self._uses: dict[str, ToolUse] = {}
        self._asks: dict[str, ToolUse] = {}
        self._answered: set[str] = set()
        # The service's turns: which subagent ran each (None: the root agent).
        self._threads: dict[str, str | None] = {}
        self._root_turns: set[str] = set()
        self._prompts: set[str] = {_digest(created_with)} if created_with is not None else set()
        # The text of each message being written, per content part.
        self._previews = Previews(on_text) if on_text is not None else None
        self._aborted = False
        self._feed = OpenAIFeed(
            client,
            session_id,
            idle_timeout=idle_timeout,
            deliver_history=resumed,
            idle=not resumed and created_with is None,
            telemetry_metadata=telemetry_metadata,
            opened=opened,
        )
        self._feed.start()
        self._delivery = Delivery(
            OpenAIWire(client, session_id, self._telemetry),
            keyed=True,
            stopped=self._pause,
            session_id=session_id,
        )
        self._cancelled = cancelled
        try:
            self._feed.wait_connected(cancelled)
        except FeedClosed:
            self.close()
            raise Aborted from None

    # -- driving --------------------------------------------------------------------------

    def resume(self) -> TurnResult | None:
        if not self._resumed:
            return None
        self._resumed = False
        history = self._history()
        starts = [i for i, e in enumerate(history) if self._root_start(e)]
        if not starts:
            return None  # never prompted
        current = history[starts[-1] :]
        for event in current:
            self._on_event(event)
        if current[-1].get("type") not in BOUNDARIES:
            return self._await_turn(current, started=True)  # a turn is under way
        resolved = self._resolve(normalize(current, self._root_turns, self._threads))
        return resolved if resolved is not None else self._await_turn(started=True)

    def accepts_input(self) -> bool:
        try:
            session = self._client.get_session(self.session_id, telemetry_metadata=self._telemetry)
        except NotFoundError:
            return False
        return session.get("status") not in _CLOSED_STATUSES

    def send_prompt(self, prompt: str) -> TurnResult:
        self._check_feed()
        if self._initial is not None and prompt == self._initial:
            self._initial = None
            return self._await_turn(baseline=frozenset())  # the turn the create started
        self._initial = None
        baseline = frozenset(self._root_turns)
        self._delivery.post([message(prompt)])
        self._prompts.add(_digest(prompt))
        return self._await_turn(baseline=baseline)

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Elicitations = (),
    ) -> TurnResult:
        self._check_feed()
        if elicitations:
            raise ConfigurationError("OpenAI Agents sessions ask for no elicitations")
        passed = {use.id: use for use in tool_uses}
        events: list[dict[str, Any]] = []
        for result in results:
            if result.tool_use_id in self._answered:
                continue
            use = passed.get(result.tool_use_id) or self._uses.get(result.tool_use_id)
            if use is None or use.turn_id is None:
                raise ConfigurationError(
                    f"no function call {result.tool_use_id!r} is waiting in session "
                    f"{self.session_id}"
                )
            events.append(tool_result(use, result))
        events += [
            approval_result(use, decision)
            for use, decision in confirmations
            if use.id not in self._answered
        ]
        if events:
            self._delivery.post(events, key=stable_key(self.session_id, events))
            self._answered.update(answered_id(event) for event in events)
        return self._await_turn(started=True)

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        raise ConfigurationError("OpenAI Agents sessions have no outcomes (Claude only)")

    def unanswered_tool_uses(self) -> list[ToolUse]:
        return [use for use_id, use in self._uses.items() if use_id not in self._answered]

    def send_event(self, event: Mapping[str, Any]) -> None:
        self._delivery.post([event])

    def interrupt(self) -> None:
        """Cancel the running turn once any input still in flight has landed."""
        self._delivery.interrupt()

    def close(self) -> None:
        """Release the connections. A conversation stopped (``cancelled``) before anyone
        followed the turn its creation started stops that turn too: no driver will."""
        if self._initial is not None and self._cancelled is not None and self._cancelled.is_set():
            self._delivery.interrupt()
        self.abort()

    def history_mark(self) -> str | None:
        """The newest item's id: the items after it are what came since."""
        for item in self._client.iter_items(
            self.session_id, order="desc", telemetry_metadata=self._telemetry
        ):
            return str(item.get("id"))
        return None

    def delivered(self, prompt: str, after: str | None) -> bool | None:
        if self.origin == "created" and after is None and _digest(prompt) in self._prompts:
            return True  # the session was created with it
        return any(
            user_text(item) == prompt
            for item in self._client.iter_items(
                self.session_id, order="asc", after=after, telemetry_metadata=self._telemetry
            )
        )

    def _delete_session(self) -> None:
        self._client.delete_session(self.session_id)

    # -- internals ------------------------------------------------------------------------

    def _pause(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True as soon as the conversation stops."""
        return self._feed.wait_stopped(seconds) or self._aborted

    def _root_start(self, event: Event) -> bool:
        turn = event.get("turn")
        return (
            event.get("type") == TURN_CREATED
            and isinstance(turn, Mapping)
            and turn.get("subagent_id") is None
        )

    def _observe(self, event: Event, *, live: bool = True) -> None:
        """Remember what an event changes; ``live`` events also report their text."""
        kind = event.get("type")
        if kind == TURN_CREATED:
            turn = event.get("turn")
            subagent = turn.get("subagent_id") if isinstance(turn, Mapping) else None
            turn_id = str(event.get("turn_id"))
            self._threads[turn_id] = subagent if isinstance(subagent, str) else None
            if subagent is None:
                self._root_turns.add(turn_id)
        elif kind in (ITEM_ADDED, ITEM_DONE):
            self._observe_item(event.get("item"), kind == ITEM_DONE and live)
        elif kind in BOUNDARIES:
            calls, asks = required_uses(event.get("session"), self._threads)
            for use in calls:
                self._uses.setdefault(use.id, use)
            for use in asks:
                self._asks.setdefault(use.id, use)
        elif kind == TEXT_DELTA and live:
            self._preview(event)

    def _observe_item(self, item: object, finished_live: bool) -> None:
        if not isinstance(item, Mapping):
            return
        kind = item.get("type")
        if kind == "function_call_output":
            self._answered.add(str(item.get("call_id")))
            return
        prompt = user_text(item)
        if prompt is not None:
            self._prompts.add(_digest(prompt))
            return
        text = assistant_text(item)
        if text is not None and finished_live and self._previews is not None:
            self._previews.finish(str(item.get("id", "")), text)

    def _preview(self, event: Event) -> None:
        """Add a text delta to its message."""
        delta = event.get("delta")
        if self._previews is None or not isinstance(delta, str):
            return
        index = event.get("content_index")
        key = index if isinstance(index, int) else 0
        self._previews.add(str(event.get("item_id", "")), key, delta)

    def _await_turn(
        self,
        prefix: Sequence[Event] = (),
        *,
        started: bool = False,
        baseline: frozenset[str] = frozenset(),
    ) -> TurnResult:
        """Read events until a turn ends. Unless ``started``, the turn begins with the first
        root turn the service creates that ``baseline`` does not hold; a session that fails
        or runs out of budget first ends it too (the input never got a turn)."""
        batch = list(prefix)
        while True:
            item = self._next()
            events = item.events if isinstance(item, History) else [item]
            for event in events:
                self._observe(event)
                self._on_event(event)
                kind = event.get("type")
                if not started:
                    begins = self._root_start(event) and event.get("turn_id") not in baseline
                    if not begins and kind not in _ENDS_UNSTARTED:
                        continue
                    started = True
                batch.append(event)
                if kind not in BOUNDARIES:
                    continue
                turn = self._resolve(normalize(batch, self._root_turns, self._threads))
                if turn is not None:
                    return turn

    def _resolve(self, turn: TurnResult) -> TurnResult | None:
        """Drop the calls already answered. ``None`` when the turn has not really ended: a
        status that names only calls whose answers are on their way."""
        if turn.terminal != "requires_action":
            return turn
        fresh = tuple(use for use in turn.tool_uses if use.id not in self._answered)
        asks = tuple(use for use in turn.confirmations if use.id not in self._answered)
        if fresh or asks:
            return replace(turn, tool_uses=fresh, confirmations=asks)
        if turn.tool_uses or turn.confirmations:
            return None
        # Only actions this library cannot answer (a computer-use approval, an environment
        # to reconnect): the run stops, and the session waits for them.
        return replace(turn, terminal="terminated", stop_reason={"type": "unsupported_action"})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
