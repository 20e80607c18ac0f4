"""Run one turn's tool calls concurrently, each bounded by its own timeout.

A Python thread cannot be stopped, so a tool that outlives ``tool_timeout`` is abandoned:
its result is recorded as an ``is_error`` timeout, its ``ToolContext.cancelled`` is set so a
cooperative tool can return early, its concurrency slot is given back so the remaining tools
still start, and whatever it returns later is dropped. Each call runs on its own daemon
thread for exactly that reason: an abandoned call must never occupy a pooled worker that
the next tool is waiting for, nor keep the interpreter alive at exit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents.model._vocabulary import SessionInfo, ToolResult, ToolUse
from req_managed_agents.tools._handler import Handler, ToolContext, call_tool

__all__ = ["ToolRunCancelled", "run_tools"]

# How often the dispatcher re-checks deadlines and cancellation while it waits.
_POLL_INTERVAL = 0.05


class ToolRunCancelled(Exception):
    """The session stopped waiting for this turn's tools (internal signal)."""


@dataclass
class _Call:
    tool_use: ToolUse
    context: ToolContext
    started: float | None = None
    result: ToolResult | None = None
    holds_slot: bool = False
    reported: bool = False


class _Turn:
    """The calls of one turn and the concurrency slots they share, under one condition."""

    def __init__(
        self,
        handler: Handler,
        tool_uses: Sequence[ToolUse],
        info: SessionInfo,
        max_concurrency: int,
        telemetry_metadata: Mapping[str, Any],
    ) -> None:
        self.handler = handler
        self.calls = [_Call(tool_use, ToolContext(tool_use.id, info)) for tool_use in tool_uses]
        self.waiting = list(self.calls)
        self.free_slots = max_concurrency
        self.condition = threading.Condition()
        self.telemetry_metadata = telemetry_metadata

    def settle(self, call: _Call, result: ToolResult) -> None:
        """Record ``result`` unless the call already has one; free its slot. Lock held."""
        if call.result is None:
            call.result = result
        if call.holds_slot:
            call.holds_slot = False
            self.free_slots += 1
        self.condition.notify_all()

    def start_waiting_calls(self) -> list[_Call]:
        started = []
        while self.waiting and self.free_slots > 0:
            call = self.waiting.pop(0)
            self.free_slots -= 1
            call.holds_slot = True
            call.started = time.monotonic()
            name = f"rma-tool-{call.tool_use.name}"
            threading.Thread(target=self.work, args=(call,), name=name, daemon=True).start()
            started.append(call)
        return started

    def newly_settled(self) -> list[_Call]:
        """Calls whose result is in and was not reported yet."""
        settled = [call for call in self.calls if call.result is not None and not call.reported]
        for call in settled:
            call.reported = True
        return settled

    def expire(self, tool_timeout: float) -> None:
        now = time.monotonic()
        for call in self.calls:
            started = call.started
            if call.result is None and started is not None and now - started >= tool_timeout:
                call.context.cancelled.set()
                message = f"tool {call.tool_use.name!r} timed out after {tool_timeout:g} s"
                self.settle(call, ToolResult(call.tool_use.id, message, is_error=True))

    def next_deadline(self, tool_timeout: float | None) -> float:
        if tool_timeout is None:
            return _POLL_INTERVAL
        pending = [c.started for c in self.calls if c.result is None and c.started is not None]
        if not pending:
            return _POLL_INTERVAL
        return max(0.0, min(_POLL_INTERVAL, min(pending) + tool_timeout - time.monotonic()))

    def work(self, call: _Call) -> None:
        meta = {**self.telemetry_metadata, "tool": call.tool_use.name}
        meta["tool_use_id"] = call.tool_use.id
        telemetry.emit("tool.start", {"system_time": time.time()}, meta)
        begun = time.monotonic()
        result = ToolResult(call.tool_use.id, "the tool's thread failed", is_error=True)
        try:
            result, raised = call_tool(self.handler, call.tool_use, call.context)
            duration = {"duration": time.monotonic() - begun}
            if raised is not None:
                reason = {"kind": type(raised).__name__, "reason": result.content}
                telemetry.emit("tool.exception", duration, {**meta, **reason})
            else:
                telemetry.emit("tool.stop", duration, {**meta, "is_error": result.is_error})
        finally:  # whatever happened, the call gets a result and gives its slot back
            with self.condition:
                self.settle(call, result)


def run_tools(
    handler: Handler,
    tool_uses: Sequence[ToolUse],
    info: SessionInfo,
    *,
    max_concurrency: int,
    tool_timeout: float | None,
    cancelled: threading.Event,
    telemetry_metadata: Mapping[str, Any],
    on_start: Callable[[ToolUse], None] | None = None,
    on_finish: Callable[[ToolUse, ToolResult], None] | None = None,
) -> list[ToolResult]:
    """Run ``tool_uses`` (at most ``max_concurrency`` at once); results come back in order.

    Raises :class:`ToolRunCancelled` if ``cancelled`` is set before every call finished;
    the calls still running see their ``ToolContext.cancelled`` set. ``on_start`` and
    ``on_finish`` hear of each call as it starts and as its result is in (a timed-out call
    finishes with its timeout error), on the calling thread, in the order they happened.
    """
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    turn = _Turn(handler, tool_uses, info, max_concurrency, telemetry_metadata)
    with turn.condition:
        while True:
            if cancelled.is_set():
                for call in turn.calls:
                    call.context.cancelled.set()
                raise ToolRunCancelled
            if tool_timeout is not None:
                turn.expire(tool_timeout)
            results = [call.result for call in turn.calls]
            for call in turn.newly_settled():
                if on_finish is not None and call.result is not None:
                    on_finish(call.tool_use, call.result)
            if all(result is not None for result in results):
                return [result for result in results if result is not None]
            for call in turn.start_waiting_calls():
                if on_start is not None:
                    on_start(call.tool_use)
            turn.condition.wait(turn.next_deadline(tool_timeout))
