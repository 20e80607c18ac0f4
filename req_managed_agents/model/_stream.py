"""What a run looks like while it happens: the items :meth:`Session.stream` yields.

Providers report the agent's text as it is written, per message, as "the whole text of this
message so far" (Claude's ``event_delta`` previews, then the recorded ``agent.message``;
AgentCore's ``contentBlockDelta`` pieces, attempt after attempt). :class:`TextTracker` turns
those reports into :class:`TextDelta` items that are exactly once: a report that repeats
what was already yielded (a duplicate event, a retried AgentCore attempt replaying the same
text, the recorded message after its previews) yields nothing new; a report that goes further
yields only the new part. If a report contradicts what was yielded (a retried attempt that
wrote something else), a :class:`TextReset` withdraws the message's text first and the new
text follows, so a consumer that applies resets always shows what the provider recorded.
Joining the deltas of a message between resets gives exactly its final text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

from req_managed_agents.model._recent import RecentSet
from req_managed_agents.model._vocabulary import (
    Decision,
    HookEvent,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
)

__all__ = [
    "ConfirmationAnswered",
    "MessageDone",
    "StreamItem",
    "TextDelta",
    "TextReset",
    "TextTracker",
    "ToolCallFinished",
    "ToolCallStarted",
    "TurnEnded",
]


@dataclass(frozen=True)
class TextDelta:
    """New text of the agent's message ``message`` (an opaque key), as it is written."""

    text: str
    message: str


@dataclass(frozen=True)
class TextReset:
    """Forget the text yielded so far for ``message``: the provider rewrote it (a retried
    AgentCore attempt that said something else). Its new text follows as deltas."""

    message: str


@dataclass(frozen=True)
class MessageDone:
    """The agent finished message ``message``; ``text`` is all of it, as recorded."""

    text: str
    message: str


@dataclass(frozen=True)
class ToolCallStarted:
    """A local tool call began running."""

    tool_use: ToolUse


@dataclass(frozen=True)
class ToolCallFinished:
    """A local tool call finished (or was abandoned); ``result`` is what goes back."""

    tool_use: ToolUse
    result: ToolResult


@dataclass(frozen=True)
class ConfirmationAnswered:
    """A provider tool that asks for permission was allowed or denied."""

    tool_use: ToolUse
    decision: Decision


@dataclass(frozen=True)
class TurnEnded:
    """A provider turn ended; ``number`` counts the run's turns from 1."""

    turn: TurnResult
    number: int


StreamItem = Union[
    TextDelta,
    TextReset,
    MessageDone,
    ToolCallStarted,
    ToolCallFinished,
    ConfirmationAnswered,
    HookEvent,
    TurnEnded,
    SessionResult,
]
"""One item of :meth:`Session.stream`; the last one is always the :class:`SessionResult`.
A turn's :class:`HookEvent` items come just before its :class:`TurnEnded`."""

ItemSink = Callable[[StreamItem], None]
FINISHED_MESSAGES_KEPT = 1000


class TextTracker:
    """Turns "the text of message M so far" reports into exactly-once text items.

    Used from one thread at a time (the session's worker).
    """

    def __init__(self, emit: ItemSink) -> None:
        self._emit = emit
        self._shown: dict[str, str] = {}
        # Finished messages, to drop their duplicates: bounded over a long session.
        self._done = RecentSet(FINISHED_MESSAGES_KEPT)

    def update(self, message: str, text: str, final: bool) -> None:
        """Report ``text``, the whole text of ``message`` so far; ``final`` once recorded."""
        if message in self._done:
            return  # a duplicate of a finished message
        shown = self._shown.get(message, "")
        if text.startswith(shown):
            if len(text) > len(shown):
                self._emit(TextDelta(text[len(shown) :], message))
                self._shown[message] = text
        elif not shown.startswith(text) or final:
            # Not a replay still catching up: the text changed under what was shown.
            self._emit(TextReset(message))
            if text:
                self._emit(TextDelta(text, message))
            self._shown[message] = text
        if final:
            self._done.add(message)
            self._shown.pop(message, None)
            self._emit(MessageDone(text, message))
