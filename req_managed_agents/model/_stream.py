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

A provider reports each delta as a piece that follows the text it reported so far
(:meth:`TextTracker.append`), and the whole text only where it must (a restart, the recorded
message): a piece costs its own length, so a message of ``n`` deltas costs time linear in its
length, however long it grows.
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
    "ToolCallProgress",
    "ToolCallStarted",
    "TurnEnded",
    "register_run_view",
    "run_view",
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
class ToolCallProgress:
    """A running local tool call said how far it is (an MCP server's progress report,
    through ``ToolContext.report_progress``): ``progress`` grows, ``total`` is its end
    when known, ``message`` the tool's own words. It comes between the call's
    :class:`ToolCallStarted` and :class:`ToolCallFinished`, from the tool's thread."""

    tool_use: ToolUse
    progress: float
    total: float | None = None
    message: str | None = None


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
    ToolCallProgress,
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
_run_views: list[Callable[[], ItemSink]] = []


def register_run_view(make: Callable[[], ItemSink]) -> None:
    """Show each ``verbose=True`` run with ``make()``: given the run's items, then its result.
    :mod:`req_managed_agents.display` plugs its view in when the package is imported, so the
    drivers (:func:`run_view`) never import display code."""
    _run_views[:] = [make]


def run_view() -> ItemSink | None:
    """A new view for a verbose run (None before one is registered)."""
    return _run_views[0]() if _run_views else None


class _Shown:
    """One message's text yielded since its last reset, and how far into it the provider's
    text so far reaches: that text is always ``text()[:reported]``."""

    __slots__ = ("length", "pieces", "reported")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.length = 0
        self.reported = 0

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]  # joined once, then kept joined
        return self.pieces[0] if self.pieces else ""

    def add(self, piece: str) -> None:
        self.pieces.append(piece)
        self.length += len(piece)
        self.reported = self.length

    def replace(self, text: str) -> None:
        self.pieces = [text] if text else []
        self.length = self.reported = len(text)


class TextTracker:
    """Turns "the text of message M so far" reports into exactly-once text items.

    Used from one thread at a time (the session's worker).
    """

    def __init__(self, emit: ItemSink) -> None:
        self._emit = emit
        self._shown: dict[str, _Shown] = {}
        # Finished messages, to drop their duplicates: bounded over a long session.
        self._done = RecentSet(FINISHED_MESSAGES_KEPT)

    def update(self, message: str, text: str, final: bool) -> None:
        """Report ``text``, the whole text of ``message`` so far; ``final`` once recorded."""
        if message in self._done:
            return  # a duplicate of a finished message
        shown = self._shown.get(message)
        before = shown.text() if shown is not None else ""
        if text.startswith(before):
            if len(text) > len(before):
                self._emit(TextDelta(text[len(before) :], message))
                self._state(message).replace(text)
            elif shown is not None:
                shown.reported = len(text)
        elif not before.startswith(text) or final:
            # Not a replay still catching up: the text changed under what was shown.
            self._reset(message, text)
        elif shown is not None:
            shown.reported = len(text)  # a replay, caught up to here
        if final:
            self._done.add(message)
            self._shown.pop(message, None)
            self._emit(MessageDone(text, message))

    def append(self, message: str, piece: str) -> None:
        """Report that ``piece`` follows the text of ``message`` reported so far: as
        :meth:`update` with that text and ``piece``, in time proportional to ``piece``."""
        if message in self._done:
            return
        shown = self._state(message)
        at = shown.reported
        if at == shown.length:  # the provider is at the end of what was shown
            if piece:
                shown.add(piece)
                self._emit(TextDelta(piece, message))
            return
        # A replay (the text started over): the piece repeats what was shown, goes past
        # it, or says something else.
        text = shown.text()
        end = at + len(piece)
        if end <= shown.length:
            if text.startswith(piece, at):
                shown.reported = end
                return
        elif piece.startswith(text[at:]):
            new = piece[shown.length - at :]
            shown.add(new)
            self._emit(TextDelta(new, message))
            return
        self._reset(message, text[:at] + piece)

    def _state(self, message: str) -> _Shown:
        shown = self._shown.get(message)
        if shown is None:
            shown = self._shown[message] = _Shown()
        return shown

    def _reset(self, message: str, text: str) -> None:
        """Withdraw what was shown of ``message`` and show ``text`` instead."""
        self._emit(TextReset(message))
        if text:
            self._emit(TextDelta(text, message))
        self._state(message).replace(text)
