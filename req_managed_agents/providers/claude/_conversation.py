"""One Claude Managed Agents session as a :class:`~req_managed_agents.providers.Conversation`.

Inputs go out as posted events; the turn they start is read back from the session's
:class:`EventFeed` until a boundary event. The conversation remembers every custom tool use
and every result, so an idle that points at tool uses from an earlier batch still resolves,
an idle for calls already answered is recognised as stale, and a result is never posted twice.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents._vocabulary import SessionInfo, ToolResult, ToolUse, TurnResult
from req_managed_agents.errors import ManagedAgentsError, ServerError, TransportError
from req_managed_agents.providers._base import Aborted, EventSink
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._events import (
    CUSTOM_TOOL_RESULT,
    CUSTOM_TOOL_USE,
    custom_tool_result,
    interrupt,
    is_boundary,
    normalize,
    tool_use_of,
    user_message,
)
from req_managed_agents.providers.claude._feed import EventFeed, FeedClosed, History

__all__ = ["PROVIDER_NAME", "ClaudeConversation"]

PROVIDER_NAME = "claude"
_log = get_logger(__name__)

# Tool results whose POST failed ambiguously are re-checked against the history and the
# missing ones re-sent, this many times, with a growing pause.
RESULT_RESEND_ATTEMPTS = 3
RESULT_RESEND_BACKOFF = 1.0
_CONNECT_POLL = 0.05
_BUSY_STATUSES = frozenset({"running", "rescheduling"})

Event = Mapping[str, Any]


class ClaudeConversation:
    """Drives one session; created by :meth:`ClaudeManagedAgents.open_conversation`."""

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
    ) -> None:
        self.info = SessionInfo(session_id, PROVIDER_NAME, dict(metadata))
        self._client = client
        self._on_event = on_event
        self._resumed = resumed
        self._tool_uses: dict[str, ToolUse] = {}
        self._answered: set[str] = set()
        self._aborted = False
        self._feed = EventFeed(
            client,
            session_id,
            idle_timeout=idle_timeout,
            deliver_history=resumed,
            telemetry_metadata=telemetry_metadata,
        )
        self._feed.start()
        self._wait_connected()

    def _wait_connected(self) -> None:
        """Block until the stream is attached: only then may the first input go out."""
        while not self._feed.connected.wait(_CONNECT_POLL):
            if self._aborted:
                raise Aborted
            if not self._feed.alive:
                self._next()  # raises the error that ended the feed
                return

    @property
    def session_id(self) -> str:
        return self.info.session_id

    # -- driving --------------------------------------------------------------------------

    def resume(self) -> TurnResult | None:
        if not self._resumed:
            return None
        self._resumed = False
        item = self._next()
        history = item.events if isinstance(item, History) else [item]
        for event in history:
            self._observe(event)
        if not history:
            return None
        boundaries = [i for i, event in enumerate(history) if is_boundary(event)]
        last = boundaries[-1] if boundaries else -1
        status = self._client.get_session(self.session_id).get("status")
        if status in _BUSY_STATUSES or last == -1:
            tail = history[last + 1 :]
            for event in tail:
                self._on_event(event)
            return self._await_turn(tail)
        previous = boundaries[-2] if len(boundaries) > 1 else -1
        turn_events = history[previous + 1 : last + 1]
        for event in turn_events:
            self._on_event(event)
        return self._resolve(normalize(turn_events, self._tool_uses))

    def send_prompt(self, prompt: str) -> TurnResult:
        self._client.send_events(self.session_id, [user_message(prompt)])
        return self._await_turn()

    def send_tool_results(
        self, tool_uses: Sequence[ToolUse], results: Sequence[ToolResult]
    ) -> TurnResult:
        pending = [result for result in results if result.tool_use_id not in self._answered]
        if pending:
            self._post_results(pending)
            self._answered.update(result.tool_use_id for result in pending)
        return self._await_turn()

    def unanswered_tool_uses(self) -> list[ToolUse]:
        return [use for use_id, use in self._tool_uses.items() if use_id not in self._answered]

    def send_event(self, event: Mapping[str, Any]) -> None:
        self._client.send_events(self.session_id, [event])

    def interrupt(self) -> None:
        try:
            self._client.send_events(self.session_id, [interrupt()])
        except ManagedAgentsError as exc:
            _log.warning("could not interrupt session %s: %s", self.session_id, exc)

    def abort(self) -> None:
        self._aborted = True
        self._feed.stop(join_timeout=0.5)

    def close(self) -> None:
        self.abort()

    # -- internals ------------------------------------------------------------------------

    def _next(self) -> Event | History:
        if self._aborted:
            raise Aborted
        try:
            return self._feed.get()
        except FeedClosed:
            raise Aborted from None

    def _observe(self, event: Event) -> None:
        kind = event.get("type")
        if kind == CUSTOM_TOOL_USE:
            tool_use = tool_use_of(event)
            self._tool_uses.setdefault(tool_use.id, tool_use)
        elif kind == CUSTOM_TOOL_RESULT:
            self._answered.add(str(event.get("custom_tool_use_id")))

    def _await_turn(self, prefix: Sequence[Event] = ()) -> TurnResult:
        batch = list(prefix)
        while True:
            item = self._next()
            events = item.events if isinstance(item, History) else [item]
            for event in events:
                self._observe(event)
                self._on_event(event)
                batch.append(event)
                if not is_boundary(event):
                    continue
                turn = self._resolve(normalize(batch, self._tool_uses))
                if turn is not None:
                    return turn

    def _resolve(self, turn: TurnResult) -> TurnResult | None:
        """Drop tool uses already answered; ``None`` for an idle that is entirely stale
        (it names only calls whose results are already on their way)."""
        if turn.terminal != "requires_action":
            return turn
        fresh = tuple(use for use in turn.tool_uses if use.id not in self._answered)
        if turn.tool_uses and not fresh:
            return None
        return replace(turn, tool_uses=fresh)

    def _post_results(self, results: Sequence[ToolResult]) -> None:
        """Post results once; after an ambiguous failure, re-send only what the history
        shows did not land (a duplicate result is detectable, so this is safe)."""
        events = [custom_tool_result(result) for result in results]
        try:
            self._client.send_events(self.session_id, events)
            return
        except (TransportError, ServerError) as exc:
            failure: ManagedAgentsError = exc
        for attempt in range(RESULT_RESEND_ATTEMPTS):
            time.sleep(RESULT_RESEND_BACKOFF * 2.0**attempt * (1 - 0.25 * random.random()))
            if self._aborted:
                raise Aborted
            try:
                landed = {
                    str(event.get("custom_tool_use_id"))
                    for event in self._client.list_events(self.session_id)
                    if event.get("type") == CUSTOM_TOOL_RESULT
                }
                missing = [e for e in events if e["custom_tool_use_id"] not in landed]
                if missing:
                    self._client.send_events(self.session_id, missing)
                return
            except (TransportError, ServerError) as exc:
                failure = exc
        raise failure
