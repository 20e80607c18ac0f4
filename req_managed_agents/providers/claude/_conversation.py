"""One Claude Managed Agents session as a :class:`~req_managed_agents.providers.Conversation`.

Inputs go out as posted events; the turn they start is read back from the session's
:class:`EventFeed` until a boundary event. The conversation remembers every custom tool use
and every result, so an idle that points at tool uses from an earlier batch still resolves,
an idle for calls already answered is recognised as stale, and a result is never posted twice.

A post that fails without proving it did not land (a reset connection, a 5xx, a rate limit
the HTTP layer gave up on) is not simply retried and not simply given up on: the session's
history says whether the events arrived, so the conversation looks there and re-sends only
what is missing, a few times, with a growing pause that honours ``retry-after``.

The agent's text reaches ``on_text`` as it is written: the stream asks for ``event_delta``
previews of ``agent.message`` events, whose text adds up per message id until the recorded
message (the authoritative text) ends it. Previews are not session events: they never reach
``on_event`` nor a turn's events. While an outcome is being worked toward, an idle that ends
a turn before the outcome's grading has settled does not end the turn.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    NotFoundError,
)
from req_managed_agents.model._vocabulary import (
    Elicitation,
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
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._delivery import ClaudeWire, answered_id, answers_landed
from req_managed_agents.providers.claude._events import (
    CUSTOM_TOOL_RESULT,
    CUSTOM_TOOL_USE,
    DEFINE_OUTCOME,
    ELICITATION_RESPONSE,
    MCP_ELICITATION,
    OUTCOME_EVALUATION_END,
    OUTCOME_SETTLED,
    SANDBOX_TOOL_RESULT,
    SANDBOX_TOOL_USE,
    TOOL_CONFIRMATION,
    asks_permission,
    custom_tool_result,
    define_outcome,
    elicitation_of,
    elicitation_response,
    is_boundary,
    normalize,
    sandbox_tool_result,
    text_of,
    tool_confirmation,
    tool_use_of,
    user_message,
)
from req_managed_agents.providers.claude._feed import EventFeed

__all__ = ["PROVIDER_NAME", "ClaudeConversation"]

PROVIDER_NAME = "claude"
_log = get_logger(__name__)

_PREVIEWS = frozenset({"event_start", "event_delta"})

Event = Mapping[str, Any]


class ClaudeConversation(FeedConversation):
    """Drives one session; created by :meth:`ClaudeManagedAgents.open_conversation`."""

    _feed: EventFeed

    def __init__(
        self,
        client: ClaudeClient,
        session_id: str,
        *,
        resumed: bool,
        idle_timeout: float,
        on_event: EventSink,
        metadata: Mapping[str, Any],
        telemetry_metadata: Mapping[str, Any],
        on_text: TextSink | None = None,
        cancelled: threading.Event | None = None,
        provider_name: str = PROVIDER_NAME,
        origin: Origin = "created",
    ) -> None:
        self.info = SessionInfo(session_id, provider_name, dict(metadata))
        self.origin = origin
        self._client = client
        self._on_event = on_event
        self._telemetry = dict(telemetry_metadata)
        self._resumed = resumed
        # Every custom tool use and every provider tool use asking permission, by id, and
        # the ids already answered (results, confirmations): an idle may name old ones.
        self._tool_uses: dict[str, ToolUse] = {}
        self._asks: dict[str, ToolUse] = {}
        self._elicitations: dict[str, Elicitation] = {}  # Claude on Bedrock
        # Built-in tool uses: a self-hosted environment's sandbox (here) runs those the
        # idle waits on, and answers them with user.tool_result.
        self._sandbox: dict[str, ToolUse] = {}
        self._answered: set[str] = set()
        self._outcome_pending = False
        # The text of each agent message being previewed, per content block.
        self._previews = Previews(on_text) if on_text is not None else None
        self._aborted = False
        self._feed = EventFeed(
            client,
            session_id,
            idle_timeout=idle_timeout,
            deliver_history=resumed,
            telemetry_metadata=telemetry_metadata,
            event_deltas=on_text is not None,
        )
        self._feed.start()
        self._delivery = Delivery(
            ClaudeWire(client, session_id, self._feed, self._telemetry),
            keyed=False,
            stopped=lambda seconds: self._feed.wait_stopped(seconds) or self._aborted,
            session_id=session_id,
        )
        self._wait_connected(cancelled)

    def _wait_connected(self, cancelled: threading.Event | None) -> None:
        """Block until the stream is attached: only then may the first input go out."""
        try:
            self._feed.wait_connected(cancelled)
        except FeedClosed:
            self._aborted = True
            raise Aborted from None

    # -- driving --------------------------------------------------------------------------

    def resume(self) -> TurnResult | None:
        if not self._resumed:
            return None
        self._resumed = False
        history = self._history()
        boundaries = [i for i, event in enumerate(history) if is_boundary(event)]
        last = boundaries[-1] if boundaries else -1
        tail = history[last + 1 :]
        # Busy is read off the history itself, not off a status fetched at another moment:
        # activity after the last turn's end means a turn is under way.
        if any(_is_activity(event) for event in tail):
            for event in tail:
                self._on_event(event)
            return self._await_turn(tail)
        if last == -1:
            return None  # never prompted
        previous = boundaries[-2] if len(boundaries) > 1 else -1
        turn_events = history[previous + 1 : last + 1]
        for event in (*turn_events, *tail):
            self._on_event(event)
        turn = self._normalize(turn_events)
        if turn.terminal != "terminated" and self._archived():
            return replace(turn, terminal="terminated", stop_reason={"type": "archived"})
        resolved = self._resolve(turn)
        return resolved if resolved is not None else self._await_turn(tail)

    def _archived(self) -> bool:
        """Archiving adds no event: only the session's status shows it."""
        return self._status() == "terminated"

    def _status(self) -> str | None:
        """The session's status now; None once it is deleted."""
        try:
            session = self._client.get_session(self.session_id, telemetry_metadata=self._telemetry)
        except NotFoundError:
            return None
        status = session.get("status")
        return str(status) if status is not None else ""

    def accepts_input(self) -> bool:
        return self._status() not in (None, "terminated")

    def send_prompt(self, prompt: str) -> TurnResult:
        self._check_feed()
        message = user_message(prompt)

        def landed(history: Sequence[Event]) -> dict[int, str]:
            # A user.message has no id of ours: one posted since ours that says the same is it.
            for event in history:
                if event.get("type") == "user.message" and text_of(event) == prompt:
                    return {0: str(event.get("id"))}
            return {}

        return self._await_turn(after=self._delivery.post([message], landed))

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Elicitations = (),
    ) -> TurnResult:
        self._check_feed()
        # A subagent's call is answered like any other: its id alone routes the answer.
        events = [
            sandbox_tool_result(result)
            if result.tool_use_id in self._sandbox
            else custom_tool_result(result)
            for result in results
            if result.tool_use_id not in self._answered
        ]
        events += [
            tool_confirmation(use.id, decision)
            for use, decision in confirmations
            if use.id not in self._answered
        ]
        events += [
            elicitation_response(elicitation.id, answer)
            for elicitation, answer in elicitations
            if elicitation.id not in self._answered
        ]
        if events:
            self._delivery.post(events, answers_landed(events))
            self._answered.update(answered_id(event) for event in events)
        # The turn the answers resume starts at once, not at their echo, which the service
        # need not stream: the session waits for these answers alone, and an idle naming
        # only calls already answered is recognised as stale (_resolve).
        return self._await_turn()

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        self._check_feed()
        event = define_outcome(outcome)

        def landed(history: Sequence[Event]) -> dict[int, str]:
            for seen in history:
                if (
                    seen.get("type") == DEFINE_OUTCOME
                    and seen.get("description") == outcome.description
                ):
                    return {0: str(seen.get("id"))}
            return {}

        self._outcome_pending = True
        return self._await_turn(after=self._delivery.post([event], landed))

    def unanswered_tool_uses(self) -> list[ToolUse]:
        return [use for use_id, use in self._tool_uses.items() if use_id not in self._answered]

    def send_event(self, event: Mapping[str, Any]) -> None:
        self._client.send_events(self.session_id, [event], telemetry_metadata=self._telemetry)

    def interrupt(self) -> None:
        """Send ``user.interrupt`` once any input still in flight has landed: the service
        takes events in order, and an interrupt ahead of the prompt it means would stop
        nothing while the prompt starts a turn nobody watches."""
        self._delivery.interrupt()

    def close(self) -> None:
        self.abort()

    def history_mark(self) -> str | None:
        return self._feed.newest_id()

    def delivered(self, prompt: str, after: str | None) -> bool | None:
        return any(
            event.get("type") == "user.message" and text_of(event) == prompt
            for event in self._feed.history_after(after)
        )

    def _delete_session(self) -> None:
        self._client.delete_session(self.session_id)

    # -- internals ------------------------------------------------------------------------

    def _observe(self, event: Event, *, live: bool = True) -> None:
        """Remember what an event changes; ``live`` events also report their text."""
        kind = event.get("type")
        if kind == "agent.message":  # the most frequent, and none of the kinds below
            if live and self._previews is not None:
                self._previews.finish(str(event.get("id", "")), text_of(event))
        elif kind == CUSTOM_TOOL_USE:
            tool_use = tool_use_of(event)
            self._tool_uses.setdefault(tool_use.id, tool_use)
        elif asks_permission(event):
            tool_use = tool_use_of(event)
            self._asks.setdefault(tool_use.id, tool_use)
        elif kind == SANDBOX_TOOL_USE:
            tool_use = tool_use_of(event)
            self._sandbox.setdefault(tool_use.id, tool_use)
        elif kind == MCP_ELICITATION:
            elicitation = elicitation_of(event)
            self._elicitations.setdefault(elicitation.id, elicitation)
        elif kind in (
            CUSTOM_TOOL_RESULT,
            TOOL_CONFIRMATION,
            ELICITATION_RESPONSE,
            SANDBOX_TOOL_RESULT,
        ):
            self._answered.add(answered_id(event))
        elif kind == DEFINE_OUTCOME:
            self._outcome_pending = True  # a resumed session may be working toward one
        elif kind == OUTCOME_EVALUATION_END and event.get("result") in OUTCOME_SETTLED:
            self._outcome_pending = False

    def _preview(self, event: Event) -> None:
        """Add an ``event_delta`` to its message's text; an ``event_start`` (again, after a
        reconnect) starts the message's preview over."""
        previews = self._previews
        if previews is None:
            return
        if event.get("type") == "event_start":
            started = event.get("event")
            if isinstance(started, Mapping):
                previews.restart(str(started.get("id", "")))
            return
        delta = event.get("delta")
        content = delta.get("content") if isinstance(delta, Mapping) else None
        text = content.get("text") if isinstance(content, Mapping) else None
        if not isinstance(text, str) or not isinstance(delta, Mapping):
            return
        index = delta.get("index")
        previews.add(str(event.get("event_id", "")), index if isinstance(index, int) else 0, text)

    def _await_turn(
        self, prefix: Sequence[Event] = (), after: set[str] | None = None
    ) -> TurnResult:
        """Read events until a turn ends. With ``after`` (the ids of the events we just
        posted), the turn starts at their echo: anything before it - say the idle that
        follows an exhausted error of the previous turn - is delivered but cannot end it."""
        batch = list(prefix)
        started = not after
        while True:
            item = self._next()
            events = item.events if isinstance(item, History) else [item]
            for event in events:
                if event.get("type") in _PREVIEWS:
                    self._preview(event)
                    continue
                self._observe(event)
                self._on_event(event)
                if not started:
                    if event.get("id") not in (after or ()):
                        continue
                    started = True
                batch.append(event)
                if not is_boundary(event):
                    continue
                turn = self._resolve(self._normalize(batch))
                if turn is not None:
                    return turn

    def _normalize(self, batch: Sequence[Event]) -> TurnResult:
        return normalize(batch, self._tool_uses, self._asks, self._elicitations, self._sandbox)

    def _resolve(self, turn: TurnResult) -> TurnResult | None:
        """Drop the calls already answered. ``None`` when the turn has not really ended: an
        idle that is entirely stale (it names only calls whose answers are on their way), or
        an ``end_turn`` while the outcome being worked toward has not been settled."""
        if turn.terminal == "end_turn" and self._outcome_pending:
            return None
        if turn.terminal != "requires_action":
            return turn
        fresh = tuple(use for use in turn.tool_uses if use.id not in self._answered)
        asks = tuple(use for use in turn.confirmations if use.id not in self._answered)
        asked = tuple(e for e in turn.elicitations if e.id not in self._answered)
        if (turn.tool_uses or turn.confirmations or turn.elicitations) and not (
            fresh or asks or asked
        ):
            return None
        return replace(turn, tool_uses=fresh, confirmations=asks, elicitations=asked)


_ACTIVITY_PREFIXES = ("user.", "agent.", "span.")
_ACTIVITY_TYPES = frozenset({"session.status_running", "session.status_rescheduled"})


def _is_activity(event: Event) -> bool:
    kind = str(event.get("type", ""))
    if kind == "user.interrupt":
        return False  # interrupting an idle session changes nothing
    return kind in _ACTIVITY_TYPES or kind.startswith(_ACTIVITY_PREFIXES)
