"""What one run of a :class:`~req_managed_agents.Session` gathers, and where its live items go.

A run is one prompt (or outcome) and every turn it causes. The worker thread records each
finished turn here, and everything the run reports as it happens - text, tool calls,
confirmations, turn ends - passes through :meth:`Run.emit` to the session's ``on_text``
callback and to the consumer of :meth:`Session.stream`, if there is one.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents.display._progress import Progress
from req_managed_agents.model._stream import StreamItem, TextDelta, TextTracker
from req_managed_agents.model._vocabulary import (
    SessionResult,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.tools._handler import describe_exception
from req_managed_agents.transport._redact import get_logger

__all__ = ["DONE", "Run"]

_log = get_logger(__name__)


class _Done:
    """Put on a run's item queue after its result is set: the stream can end."""


DONE = _Done()


@dataclass
class Run:
    """What one run has gathered so far (changed by the session's worker thread only)."""

    session_id: str | None = None
    on_text: Callable[[str], None] | None = None
    items: queue.Queue[StreamItem | _Done] | None = None
    progress: Progress | None = None
    terminal_tool: str | None = None
    # Events of finished turns (each turn's authoritative record), and those delivered live
    # since the last turn ended; a cancelled run reports both.
    events: list[Mapping[str, Any]] = field(default_factory=list)
    live: list[Mapping[str, Any]] = field(default_factory=list)
    turn_usage: list[Usage] = field(default_factory=list)
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    last_turn: TurnResult | None = None
    outcome: Mapping[str, Any] | None = None
    reprompts: int = 0
    # A reattached session's last turn: history, reported only if the run adds no turn.
    resumed: TurnResult | None = None
    tracker: TextTracker = field(init=False)

    def __post_init__(self) -> None:
        self.tracker = TextTracker(self.emit)

    @property
    def usage(self) -> Usage:
        return sum(self.turn_usage, Usage())

    def emit(self, item: StreamItem) -> None:
        """Report ``item`` live: text to ``on_text`` (whose errors are logged, never let
        through), everything to the stream's consumer."""
        if self.on_text is not None and isinstance(item, TextDelta):
            try:
                self.on_text(item.text)
            except Exception as exc:
                _log.warning("on_text raised %s; continuing", describe_exception(exc))
        if self.progress is not None:
            self.progress(item)
        if self.items is not None:
            self.items.put(item)

    def finish(self, result: SessionResult | None) -> None:
        """Tell the stream's consumer that the result is set (``None``: the run failed)."""
        if self.progress is not None and result is not None:
            self.progress.finish(result)
        if self.items is not None:
            self.items.put(DONE)

    def take(self, turn: TurnResult) -> None:
        """A finished turn's events replace what was seen live (which may include events of
        an attempt the provider then retried)."""
        self.last_turn = turn
        self.events.extend(turn.events)
        self.live.clear()
        if turn.outcome is not None:
            self.outcome = turn.outcome

    def resume(self, turn: TurnResult) -> None:
        """Start from a reattached session's current turn, which is not this run's."""
        self.resumed = self.last_turn = turn
        self.live.clear()

    def called_terminal_tool(self) -> bool:
        return self.terminal_tool_input() is not None

    def terminal_tool_input(self) -> Mapping[str, Any] | None:
        """The input of the last call to the terminal tool that did not fail (a call its
        own validation refused is not an answer)."""
        if self.terminal_tool is None:
            return None
        calls = [
            use
            for use, result in zip(self.tool_uses, self.tool_results)
            if use.name == self.terminal_tool and not result.is_error
        ]
        return calls[-1].input if calls else None

    def result(self, terminal: Terminal, stop_reason: Any) -> SessionResult:
        return SessionResult(
            terminal=terminal,
            text=self.last_turn.text if self.last_turn is not None else "",
            usage=self.usage,
            turns=len(self.turn_usage),
            turn_usage=tuple(self.turn_usage),
            session_id=self.session_id,
            stop_reason=stop_reason,
            events=(
                (*self.events, *self.live)
                if self.turn_usage or self.resumed is None
                else (*self.resumed.events, *self.live)
            ),
            tool_uses=tuple(self.tool_uses),
            tool_results=tuple(self.tool_results),
            terminal_tool_input=self.terminal_tool_input(),
            outcome=self.outcome,
        )
