"""Run one turn's tool calls concurrently, each bounded by its own timeout.

A Python thread cannot be stopped, so a tool that outlives ``tool_timeout`` is abandoned:
its result is recorded as an ``is_error`` timeout, its ``ToolContext.cancelled`` is set so a
cooperative tool can return early, its concurrency slot is given back so the remaining tools
still start, and whatever it returns later is not sent. Each call runs on its own daemon
thread for exactly that reason: an abandoned call must never occupy a pooled worker that
the next tool is waiting for, nor keep the interpreter alive at exit.

A :class:`CallGuard` (the tool ledger) is asked on the call's own thread, right before the
handler runs, whether it may run - so a call that never starts is never claimed - and told
its result there as soon as the handler returns, even when the run has stopped waiting: a
call that finished after a stop keeps its real result for whoever resumes the session.

A handler that raises :class:`~req_managed_agents.tools.ToolOutcomeUnknownError` (an MCP server
died mid-call) leaves its call's outcome unknown, as a crash would: the run's
``on_unfinished`` policy answers it - an error result saying it may have acted
(``"error"``), one more run (``"rerun"``), or the claim left unfinished in the ledger and
:class:`~req_managed_agents.errors.UnfinishedToolCallError` raised (``"raise"``).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger, redact
from req_managed_agents.drivers._deferral import DeferredResult
from req_managed_agents.drivers._ledger import UnfinishedPolicy
from req_managed_agents.errors import UnfinishedToolCallError
from req_managed_agents.model._stream import ToolCallProgress
from req_managed_agents.model._vocabulary import (
    Decision,
    Deferred,
    Elicitation,
    ElicitationAnswer,
    SessionInfo,
    ToolResult,
    ToolUse,
)
from req_managed_agents.tools._handler import (
    Handler,
    ToolContext,
    ToolOutcomeUnknownError,
    call_tool,
    describe_exception,
)

__all__ = ["CallGuard", "ToolRunCancelled", "call_bounded", "run_tools", "wait_at_most"]

# How often the dispatcher re-checks deadlines and cancellation while it waits.
_POLL_INTERVAL = 0.05
_NOT_STARTED = "the run stopped before this tool call started; it was not run"
OUTCOME_UNKNOWN = (
    "this tool call was interrupted ({reason}) and was not run again, because it may "
    "already have had its effect; check before calling it again"
)
_log = get_logger(__name__)
T = TypeVar("T")
Confirm = Callable[[ToolUse, ToolContext], Decision]
Elicit = Callable[[Elicitation, ToolContext], ElicitationAnswer]


class ToolRunCancelled(Exception):
    """The session stopped waiting for this turn's tools (internal signal)."""


class CallGuard(Protocol):
    """Decides, on a call's own thread, whether it runs, and hears how it ended."""

    def begin(self, tool_use: ToolUse, cancelled: threading.Event) -> ToolResult | None:
        """Claim the call: ``None`` when this thread may run it, else the answer to give
        instead (a result recorded elsewhere, or why it may not run). A wait here (for
        another worker running the call) ends when ``cancelled`` is set."""
        ...

    def release(self, tool_use: ToolUse) -> None:
        """Give up a claim whose call never started (the run stopped in between)."""
        ...

    def end(self, tool_use: ToolUse, result: ToolResult) -> None:
        """Record what the handler answered."""
        ...

    def leave(self, tool_use: ToolUse) -> None:
        """Give up a claim whose call ran without a known outcome: it stays unfinished."""
        ...


@dataclass
class _Call:
    tool_use: ToolUse
    context: ToolContext
    started: float | None = None
    result: ToolResult | None = None
    holds_slot: bool = False
    reported: bool = False
    failure: BaseException | None = None  # ends the whole run once the call settles


def _context(
    tool_use: ToolUse,
    info: SessionInfo,
    confirm: Confirm | None,
    elicit: Elicit | None,
    on_progress: Callable[[ToolCallProgress], None] | None,
) -> ToolContext:
    """One call's context; its progress reports go to ``on_progress`` until the run stops
    waiting for the call (a report after that would come after the call's answer)."""
    cancelled = threading.Event()
    if on_progress is None:
        return ToolContext(tool_use.id, info, cancelled, confirm=confirm, elicit=elicit)
    report = on_progress

    def report_progress(progress: float, total: float | None, message: str | None) -> None:
        if not cancelled.is_set():
            report(ToolCallProgress(tool_use, progress, total, message))

    return ToolContext(
        tool_use.id,
        info,
        cancelled,
        confirm=confirm,
        report_progress=report_progress,
        elicit=elicit,
    )


class _Turn:
    """The calls of one turn and the concurrency slots they share, under one condition."""

    def __init__(
        self,
        handler: Handler,
        tool_uses: Sequence[ToolUse],
        info: SessionInfo,
        max_concurrency: int,
        telemetry_metadata: Mapping[str, Any],
        guard: CallGuard | None,
        on_unknown: UnfinishedPolicy,
        confirm: Confirm | None,
        elicit: Elicit | None,
        on_progress: Callable[[ToolCallProgress], None] | None,
    ) -> None:
        self.handler = handler
        self.info = info
        self.on_unknown = on_unknown
        self.calls = [
            _Call(tool_use, _context(tool_use, info, confirm, elicit, on_progress))
            for tool_use in tool_uses
        ]
        self.waiting = list(self.calls)
        self.free_slots = max_concurrency
        self.condition = threading.Condition()
        self.telemetry_metadata = telemetry_metadata
        self.guard = guard

    def settle(self, call: _Call, result: ToolResult) -> None:
        """Record ``result`` unless the call already has one; free its slot. Lock held."""
        if call.result is None:
            call.result = result
        if call.holds_slot:
            call.holds_slot = False
            self.free_slots += 1
        self.condition.notify_all()

    def stop(self) -> None:
        """Tell every call to stop: those not started never will. Lock held."""
        for call in self.calls:
            call.context.cancelled.set()

    def start_waiting_calls(self) -> list[_Call]:
        started = []
        while self.waiting and self.free_slots > 0:
            call = self.waiting.pop(0)
            self.free_slots -= 1
            call.holds_slot = True
            call.started = time.monotonic()
            name = f"rma-tool-{call.tool_use.name}"
            # In the run's context: a tool's spans belong to the caller's trace.
            context = contextvars.copy_context()
            threading.Thread(
                target=context.run, args=(self.work, call), name=name, daemon=True
            ).start()
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
        result = ToolResult(call.tool_use.id, "the tool's thread failed", is_error=True)
        try:
            result = self._claim_and_run(call)
        finally:  # whatever happened, the call gets a result and gives its slot back
            with self.condition:
                self.settle(call, result)

    def _claim_and_run(self, call: _Call) -> ToolResult:
        use, guard = call.tool_use, self.guard
        if call.context.cancelled.is_set():
            return ToolResult(use.id, _NOT_STARTED, is_error=True)
        if guard is not None:
            try:
                answer = guard.begin(use, call.context.cancelled)
            except Exception as exc:
                reason = "could not record this tool call before running it, so it was not run"
                return ToolResult(use.id, f"{reason}: {describe_exception(exc)}", is_error=True)
            if answer is not None:
                return answer
            if call.context.cancelled.is_set():
                guard.release(use)
                return ToolResult(use.id, _NOT_STARTED, is_error=True)
        result = self._run_settled(call)
        if call.failure is not None or isinstance(result, DeferredResult):
            if guard is not None:
                guard.leave(use)
            return result
        if guard is not None:
            try:
                guard.end(use, result)
            except Exception as exc:
                _log.error("could not record the result of tool call %s: %s", use.id, exc)
        return result

    def _run_settled(self, call: _Call) -> ToolResult:
        """The call's result, its unknown outcome (if the handler raised so) answered by
        the ``on_unfinished`` policy; under ``"raise"``, ``call.failure`` is set instead."""
        result, unknown = self._run(call)
        use = call.tool_use
        if (
            unknown is not None
            and self.on_unknown == "rerun"
            and not call.context.cancelled.is_set()
        ):
            _log.warning("tool call %s (%s) is run again: %s", use.id, use.name, unknown)
            result, unknown = self._run(call)
        if unknown is None:
            return result
        if self.on_unknown == "raise":
            call.failure = UnfinishedToolCallError(use, session_id=self.info.session_id)
        message = OUTCOME_UNKNOWN.format(reason=redact(str(unknown)))
        return ToolResult(use.id, message, is_error=True)

    def _run(self, call: _Call) -> tuple[ToolResult, ToolOutcomeUnknownError | None]:
        meta = {**self.telemetry_metadata, "tool": call.tool_use.name}
        meta["tool_use_id"] = call.tool_use.id
        telemetry.emit("tool.start", {"system_time": time.time()}, meta)
        _log.debug("tool %s (%s) started", call.tool_use.name, call.tool_use.id)
        begun = time.monotonic()
        result, raised = call_tool(self.handler, call.tool_use, call.context)
        duration = {"duration": time.monotonic() - begun}
        if raised is not None:
            reason = {"kind": type(raised).__name__, "reason": result.content}
            telemetry.emit("tool.exception", duration, {**meta, **reason})
        else:
            telemetry.emit("tool.stop", duration, {**meta, "is_error": result.is_error})
        _log.debug(
            "tool %s (%s) finished in %.3f s%s",
            call.tool_use.name,
            call.tool_use.id,
            duration["duration"],
            " with an error" if result.is_error else "",
        )
        if isinstance(raised, Deferred):  # a person answers it later: it waits
            return DeferredResult(call.tool_use.id, raised.reason, deferred=raised), None
        return result, raised if isinstance(raised, ToolOutcomeUnknownError) else None


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
    guard: CallGuard | None = None,
    on_unknown: UnfinishedPolicy = "error",
    confirm: Confirm | None = None,
    elicit: Elicit | None = None,
    on_progress: Callable[[ToolCallProgress], None] | None = None,
) -> list[ToolResult]:
    """Run ``tool_uses`` (at most ``max_concurrency`` at once); results come back in order.

    Raises :class:`ToolRunCancelled` if ``cancelled`` is set before every call finished;
    calls that had not started never start, and those still running see their
    ``ToolContext.cancelled`` set - as they do if anything else ends the wait early (a
    failing ``on_start`` or ``on_finish``). ``on_start`` and ``on_finish`` hear of each call
    as it starts and as its result is in (a timed-out call finishes with its timeout
    error), on the calling thread, in the order they happened. ``on_unknown`` answers a
    call whose handler raised :class:`ToolOutcomeUnknownError` (see the module's docstring);
    ``confirm`` and ``elicit`` become each call's ``ToolContext.confirm`` and ``.elicit``;
    ``on_progress`` hears each
    call's ``ToolContext.report_progress``, on the reporting thread.
    """
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    turn = _Turn(
        handler,
        tool_uses,
        info,
        max_concurrency,
        telemetry_metadata,
        guard,
        on_unknown,
        confirm,
        elicit,
        on_progress,
    )
    with turn.condition:
        try:
            while True:
                if cancelled.is_set():
                    raise ToolRunCancelled
                if tool_timeout is not None:
                    turn.expire(tool_timeout)
                results = [call.result for call in turn.calls]
                for call in turn.calls:
                    if call.failure is not None and call.result is not None:
                        raise call.failure
                for call in turn.newly_settled():
                    if on_finish is not None and call.result is not None:
                        on_finish(call.tool_use, call.result)
                if all(result is not None for result in results):
                    return [result for result in results if result is not None]
                for call in turn.start_waiting_calls():
                    if on_start is not None:
                        on_start(call.tool_use)
                turn.condition.wait(turn.next_deadline(tool_timeout))
        except BaseException:
            turn.stop()
            raise


def call_bounded(
    work: Callable[[ToolContext], T],
    context: ToolContext,
    *,
    timeout: float | None,
    cancelled: threading.Event,
    name: str,
) -> T:
    """Run ``work(context)`` on its own daemon thread and wait for it, as for a tool call:
    :class:`TimeoutError` after ``timeout`` seconds, :class:`ToolRunCancelled` as soon as
    ``cancelled`` is set (either way ``context.cancelled`` is set and the call abandoned);
    its exception, if it raised one."""
    box: list[Any] = []
    done = threading.Event()

    def target() -> None:
        try:
            box.append((True, work(context)))
        except BaseException as exc:
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(
        target=contextvars.copy_context().run, args=(target,), name=name, daemon=True
    ).start()
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(_POLL_INTERVAL):
        if cancelled.is_set():
            context.cancelled.set()
            raise ToolRunCancelled
        if deadline is not None and time.monotonic() >= deadline:
            context.cancelled.set()
            raise TimeoutError(f"no answer within {timeout:g} s")
    ok, value = box[0]
    if not ok:
        raise value
    return cast(T, value)


def wait_at_most(call: Callable[[], None], seconds: float, *, name: str) -> None:
    """Run ``call`` on a daemon thread and wait for it at most ``seconds`` (it goes on in the
    background after that, and cannot keep the interpreter from exiting)."""
    thread = threading.Thread(target=call, name=name, daemon=True)
    thread.start()
    thread.join(seconds)
