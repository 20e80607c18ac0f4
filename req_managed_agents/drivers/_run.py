"""What one run of a :class:`~req_managed_agents.Session` gathers, and where its live items go.

A run is one prompt (or outcome) and every turn it causes. The worker thread records each
finished turn here, and everything the run reports as it happens - text, tool calls,
confirmations, turn ends - passes through :meth:`Run.emit` to the session's ``on_text``
callback and to the consumer of :meth:`Session.stream`, if there is one.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._keyed import KeyedRun
from req_managed_agents.model._stream import ItemSink, StreamItem, TextDelta, TextTracker, TurnEnded
from req_managed_agents.model._vocabulary import (
    PendingDecision,
    SessionResult,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.tools._handler import describe_exception

__all__ = ["DONE", "Run", "RunText"]

_log = get_logger(__name__)


class _Done:
    """Put on a run's item queue after its result is set: the stream can end."""


DONE = _Done()


@dataclass
class Run:
    """What one run has gathered so far (changed by the session's worker thread only)."""

    session_id: str | None = None
    # ``on_text(text, new_message)``: see :func:`~req_managed_agents.drivers._options.text_sink`.
    on_text: Callable[[str, bool], None] | None = None
    items: queue.Queue[StreamItem | _Done] | None = None
    progress: ItemSink | None = None  # shows a verbose run: its items, then its result
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
    # Whether anything sees the run's items (``on_text``, a display, a stream's consumer):
    # text is tracked only then.
    watched: bool = field(init=False)
    started: float = field(default_factory=time.monotonic)
    # The run's idempotency-key binding, told of each input and turn (keyed runs only).
    keyed: KeyedRun | None = None
    # The questions a run that stopped for a person left open (see drivers/_deferral.py).
    pending: list[PendingDecision] = field(default_factory=list)

    _held: TurnEnded | None = field(default=None, init=False, repr=False)
    _message: str | None = field(default=None, init=False, repr=False)
    _finished: bool = field(default=False, init=False, repr=False)
    _items_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    # One item at a time through the sinks: a tool's progress comes from its own thread.
    _emit_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.tracker = TextTracker(self.emit)
        self.watched = not (self.on_text is None and self.progress is None and self.items is None)

    @property
    def usage(self) -> Usage:
        return sum(self.turn_usage, Usage())

    def emit(self, item: StreamItem) -> None:
        """Report ``item`` live: text to ``on_text`` (whose errors are logged, never let
        through), everything to the stream's consumer.

        A ``TurnEnded`` reaches the consumer only with the next item, or once the run's
        result is set: the last item of a run must never come before its result, or a
        consumer that stops at it would seem to walk away from a run still going.
        Safe from any thread (a tool call reports its progress from its own)."""
        with self._emit_lock:
            self._emit(item)

    def _emit(self, item: StreamItem) -> None:
        if self.on_text is not None and isinstance(item, TextDelta):
            new_message = self._message is not None and item.message != self._message
            self._message = item.message
            try:
                self.on_text(item.text, new_message)
            except Exception as exc:
                _log.warning("on_text raised %s; continuing", describe_exception(exc))
        if self.progress is not None:
            self.progress(item)
        if self.items is None:
            return
        with self._items_lock:
            if self._held is not None:
                self.items.put(self._held)
                self._held = None
            if isinstance(item, TurnEnded):
                self._held = item
            else:
                self.items.put(item)

    def finish(self, result: SessionResult | None) -> bool:
        """Tell the stream's consumer that the result is set (``None``: the run failed);
        ``False`` when the run was finished already (a stop settles a run whose worker is
        still stuck in I/O, and the worker's own finish comes later)."""
        with self._items_lock:
            if self._finished:
                return False
            self._finished = True
            held, self._held = self._held, None
        if self.progress is not None and result is not None:
            self.progress(result)
        if self.items is not None:
            if held is not None:
                self.items.put(held)
            self.items.put(DONE)
        return True

    def stop_measurements(self, result: SessionResult | None) -> dict[str, float]:
        """What ``session.stop`` measures of the run: its duration, and for a result its
        turns and tokens."""
        measured: dict[str, float] = {"duration": time.monotonic() - self.started}
        if result is not None:
            usage = result.usage
            measured.update(
                turns=result.turns,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_input_tokens=usage.cache_read_input_tokens,
                cache_creation_input_tokens=usage.cache_creation_input_tokens,
            )
        return measured

    def moved(self, session_id: str) -> None:
        """The session's id moved (a Gemini chain's newest interaction): the run reports
        it, and a keyed run's binding names it before the turn goes on."""
        self.session_id = session_id
        if self.keyed is not None:
            self.keyed.moved(session_id)

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
            pending=tuple(self.pending),
        )


class RunText:
    """The session's ``on_text`` sink for its provider (a
    :class:`~req_managed_agents.providers._base.TextSink`): a conversation outlives its runs,
    so each report goes to the text tracker of the run going on, if any."""

    def __init__(self, run: Callable[[], Run | None]) -> None:
        self._run = run

    def __call__(self, message: str, text: str, final: bool) -> None:
        run = self._run()
        if run is not None and run.watched:
            run.tracker.update(message, text, final)

    def append(self, message: str, text: str) -> None:
        run = self._run()
        if run is not None and run.watched:
            run.tracker.append(message, text)
