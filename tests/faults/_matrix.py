"""What every fault matrix scenario shares: the tools and script, the scenario and runtime
types, the driving and the checks.

A scenario injects one fault into a fresh emulator, runs the two-tool, three-turn script to
completion over real sockets and is held to what a user relies on: the run ends as the
undisturbed run did (or, where recovering is not safe, with the named error), every tool
call ran exactly once, ``handle_event`` saw what the service sent, and nothing - no thread,
no socket, no open stream - is left behind. Every problem found is reported, not only the
first, so a failing scenario reads as a diagnosis. What differs per provider is a
:class:`Runtime` (``tests/faults/_runtimes``).
"""

from __future__ import annotations

import collections
import gc
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, Optional, TypeVar

from req_managed_agents import (
    SessionInfo,
    SessionResult,
    ToolContext,
    Tools,
    Usage,
    run_to_completion,
)
from req_managed_agents.errors import ManagedAgentsError
from req_managed_agents.testing import RecordedRequest, call
from req_managed_agents.testing.server import LoopbackEmulator

PROMPT = "Compute."
# The driver's idle timeout, and a stall twice as long: the stall outlasts it. A second, not
# less: on a busy machine an emulator thread can be starved for a few tenths of a second, and
# a silence the scenario did not inject must not pass for one it did (on AgentCore an idle
# timeout ends the run).
IDLE_TIMEOUT = 1.0
STALL_SECONDS = 2 * IDLE_TIMEOUT
# Heartbeats (keep-alives) well inside the idle timeout, so only a stall is silent that long.
PING_INTERVAL = IDLE_TIMEOUT / 3
# Short enough to keep the suite fast, long enough that ignoring it shows in the timings.
RETRY_AFTER = 0.05
# Retries the providers are built with (HTTP max_retries; AgentCore invoke_retries): a burst
# of failures longer than this exhausts them.
RETRIES = 2
STATUSES = (429, 503, 529)
BURSTS = (1, 3)
# A recovering run takes well under a second; one that hangs is stopped here.
RUN_TIMEOUT = 4.0
# How long threads, sockets and streams may take to wind down after a run.
GRACE = 2.0

# Every emulator is one: what the shared checks use of it (requests, faults, streams).
Emulator = LoopbackEmulator
_E = TypeVar("_E", bound=LoopbackEmulator)
# Sets a scenario's fault up; returns, for faults injected later by a hook, whether the hook
# ran (a fault whose moment never came was not tested).
Inject = Callable[[Any], Optional[Callable[[], bool]]]


class MatrixTools(Tools):
    """``add`` and ``mul``, counting executions per tool use id; records every event."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()
        self.events: list[Mapping[str, Any]] = []
        self._lock = threading.Lock()

        @self.tool
        def add(a: int, b: int, context: ToolContext) -> int:
            """Add two integers."""
            self._count(context)
            return a + b

        @self.tool
        def mul(a: int, b: int, context: ToolContext) -> int:
            """Multiply two integers."""
            self._count(context)
            return a * b

    def _count(self, context: ToolContext) -> None:
        with self._lock:
            self.calls[context.tool_use_id] += 1

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        with self._lock:
            self.events.append(event)


@dataclass(frozen=True)
class RequestKind:
    """The requests of one kind in a run: a method, a whole-path regex, a body filter."""

    method: str
    path: str
    where: Callable[[RecordedRequest], bool] | None = None

    def of(self, requests: Sequence[RecordedRequest]) -> list[RecordedRequest]:
        pattern = re.compile(self.path)
        return [
            r
            for r in requests
            if r.method == self.method
            and pattern.fullmatch(r.path)
            and (self.where is None or self.where(r))
        ]


@dataclass(frozen=True)
class Scenario:
    """One fault and what the run must do about it.

    ``error``: the library must give up with this error (recovering would be unsafe or the
    retry budget is spent); None: it must recover. ``kind``, ``burst`` and ``retry_after``
    describe a request fault, so the waits between its retries can be checked.
    ``usage_lost``: the 0-based turn whose ``metadata`` (its usage) never reached the client.
    ``echoed``: whether the service streams the answers it receives (tool results,
    confirmations) back, or only records them.
    """

    id: str
    inject: Inject
    error: type[ManagedAgentsError] | None = None
    kind: RequestKind | None = None
    burst: int = 0
    retry_after: float | None = None
    usage_lost: int | None = None
    echoed: bool = True


# What the script's last turn says, and its three tool results, in call order.
ANSWER = "The total is 30."
TOOL_RESULTS = ["3", "12", "30"]
_Turn = TypeVar("_Turn")


def script(turn: Callable[..., _Turn]) -> list[_Turn]:
    """The script every runtime plays, in its emulator's turn type: two tool calls, one more,
    then the answer."""
    return [
        turn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
        turn(tool_calls=[call("mul", a=5, b=6)]),
        turn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
    ]


def _own_provider(emulator: Any) -> Any:
    """The provider every emulator builds aimed at itself."""
    return emulator.provider(timeout=5, max_retries=RETRIES)


@dataclass(frozen=True)
class Runtime(Generic[_E]):
    """One provider in the fault matrix: what differs from the others, as data.

    ``start(echoed)``: a fresh emulator playing :func:`script`; ``echoed`` says whether it
    streams the answers it receives back (one of ``ways``: ``(True,)`` where the service has
    no such choice). ``connect(emulator)``: the run's connect options, naming what the
    emulator made for it (agent, environment, harness...). ``scenarios``: every fault and
    its verdict. ``log(echoed)``: the undisturbed run's log, position by position - the
    positions the stream faults name - as ``read_log(emulator, result, tools)`` reads it
    after that run. ``check_events``: what ``handle_event`` must have seen, whatever the
    fault. ``backoffs``: the ``RetryPolicy`` instances (module, name) the library waits out
    on its own, shrunk for the matrix. ``provider(emulator)``: the provider aimed at the
    emulator, as a user builds it (by default the emulator's own ``provider()``).
    ``needs``: modules of an optional extra; without them the runtime's scenarios are
    skipped.
    """

    name: str
    start: Callable[[bool], _E]
    connect: Callable[[_E], Mapping[str, Any]]
    scenarios: Sequence[Scenario]
    log: Callable[[bool], Sequence[Any]]
    read_log: Callable[[_E, SessionResult, MatrixTools], Sequence[Any]]
    check_events: Callable[[Checks, _E, MatrixTools, SessionResult | None], None]
    backoffs: Sequence[tuple[ModuleType, str]]
    # Any: ``run_to_completion``'s overloads name each provider type.
    provider: Callable[[_E], Any] = _own_provider
    ways: tuple[bool, ...] = (True, False)
    needs: tuple[str, ...] = ()


def shape(result: SessionResult) -> dict[str, Any]:
    """What must not change when the transport misbehaves (ids are per attempt)."""
    return {
        "terminal": result.terminal,
        "text": result.text,
        "turns": result.turns,
        "usage": result.usage,
        "turn_usage": result.turn_usage,
        "stop_reason": result.stop_reason,
        "tool_uses": [(use.name, dict(use.input)) for use in result.tool_uses],
        "tool_results": [(r.content, r.is_error) for r in result.tool_results],
    }


def without_usage(reference: dict[str, Any], turn: int) -> dict[str, Any]:
    """The reference with one turn's usage unknown, as when its metadata never arrived."""
    turn_usage = list(reference["turn_usage"])
    turn_usage[turn] = Usage()
    return {**reference, "turn_usage": tuple(turn_usage), "usage": sum(turn_usage, Usage())}


@dataclass
class Checks:
    """Problems found in one scenario; all of them are reported together."""

    problems: list[str] = field(default_factory=list)

    def expect(self, condition: object, problem: str) -> None:
        if not condition:
            self.problems.append(problem)

    def delivered_once(self, delivered: Sequence[str]) -> None:
        """No event id reached ``handle_event`` twice."""
        duplicates = sorted({i for i in delivered if delivered.count(i) > 1})
        self.expect(not duplicates, f"events delivered more than once: {duplicates}")

    def saw_the_log(
        self, missed: Sequence[str], delivered: Sequence[str], logged: Sequence[str], what: str
    ) -> None:
        """``handle_event`` missed nothing it should have seen (``missed``), and the logged
        ids among ``delivered`` (the ids it saw) came in log order."""
        self.expect(not missed, f"handle_event never saw {missed}")
        known = set(logged)
        seen = [i for i in delivered if i in known]
        self.expect(
            seen == [i for i in logged if i in seen],
            f"handle_event saw the {what} out of log order",
        )

    def outcome(
        self,
        scenario: Scenario,
        result: SessionResult | None,
        error: BaseException | None,
        reference: dict[str, Any],
    ) -> None:
        if scenario.error is not None:
            self.expect(
                isinstance(error, scenario.error),
                f"expected {scenario.error.__name__}, got "
                + (f"{type(error).__name__}: {error}" if error else "a result"),
            )
            return
        if error is not None:
            self.problems.append(f"did not recover: {type(error).__name__}: {error}")
            return
        assert result is not None
        expected = reference
        if scenario.usage_lost is not None:
            expected = without_usage(reference, scenario.usage_lost)
        actual = shape(result)
        for key, value in expected.items():
            self.expect(actual[key] == value, f"{key}: {actual[key]!r} != expected {value!r}")

    def tools_ran_once(self, result: SessionResult | None, tools: MatrixTools) -> None:
        repeated = {use_id: n for use_id, n in tools.calls.items() if n != 1}
        self.expect(not repeated, f"tool calls ran more than once: {repeated}")
        if result is not None:
            ran = set(tools.calls)
            reported = {use.id for use in result.tool_uses}
            self.expect(ran == reported, f"tools ran for {ran}, the result reports {reported}")

    def fault_met(self, scenario: Scenario, emulator: Emulator, shots: int, hook: Any) -> None:
        pending = emulator.pending_faults()
        if hook is not None:
            self.expect(hook(), "the moment the fault was meant for never came")
        if scenario.error is None:
            self.expect(pending == 0, f"{pending} fault shot(s) never fired")
        else:
            self.expect(hook is not None or pending < shots, "the fault never fired")

    def retry_after_honoured(self, scenario: Scenario, emulator: Emulator) -> None:
        """After each answer that said ``retry-after``, the next request of its kind came no
        sooner than it asked."""
        if scenario.kind is None or scenario.retry_after is None:
            return
        sent = scenario.kind.of(emulator.requests)
        gaps = [b.received_at - a.received_at for a, b in zip(sent, sent[1 : scenario.burst + 1])]
        early = [f"{gap:.3f}" for gap in gaps if gap < scenario.retry_after * 0.9]
        self.expect(
            not early,
            f"retried sooner than retry-after {scenario.retry_after:g} s: gaps {early} s",
        )

    def no_open_streams(self, emulator: Emulator) -> None:
        closed = emulator.wait_until(lambda: emulator.open_stream_count() == 0, GRACE)
        self.expect(closed, f"{emulator.open_stream_count()} stream(s) left open")

    def nothing_left_behind(
        self, sockets_before: set[str], threads_before: set[threading.Thread]
    ) -> None:
        """Nothing this scenario started is still there (an earlier test in the same worker
        process may have left a deliberately abandoned tool running: not ours to count)."""
        gc.collect()  # an exception's traceback may hold a closed response's socket object
        threads = _wait_for(
            lambda: [t.name for t in _library_threads() if t not in threads_before] or None
        )
        self.expect(not threads, f"library threads left behind: {threads}")
        sockets = _wait_for(lambda: (socket_fds() - sockets_before) or None)
        self.expect(not sockets, f"{len(sockets or ())} socket(s) left open")

    def verdict(self) -> None:
        assert not self.problems, "\n".join(self.problems)


def _library_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rma-") and t.is_alive()]


def _wait_for(leftover: Callable[[], Any]) -> Any:
    """``leftover()`` until it is None or the grace period ends; its last value."""
    deadline = time.monotonic() + GRACE
    while True:
        found = leftover()
        if found is None or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def socket_fds() -> set[str]:
    """This process's open sockets, as ``fd:socket:[inode]``."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile, or the directory's own fd
            continue
        if target.startswith("socket:"):
            found.add(f"{fd}:{target}")
    return found


def drive(runtime: Runtime[Any], emulator: Emulator, tools: MatrixTools) -> SessionResult:
    """One run of the script, as a user makes it, through the provider aimed at ``emulator``."""
    with runtime.provider(emulator) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            **runtime.connect(emulator),
        )


def reference_of(runtime: Runtime[Any]) -> dict[str, Any]:
    """The undisturbed run's result, which every scenario must reproduce, whichever way the
    service goes (the answers echoed or not); its log is the one ``runtime.log`` names."""
    shapes = []
    for echoed in runtime.ways:
        with runtime.start(echoed) as emulator:
            tools = MatrixTools()
            result = drive(runtime, emulator, tools)
            log = runtime.read_log(emulator, result, tools)
        assert log == runtime.log(echoed), f"the undisturbed log (echoed={echoed}): {log}"
        assert result.terminal == "end_turn"
        assert result.text == ANSWER
        assert [r.content for r in result.tool_results] == TOOL_RESULTS
        shapes.append(shape(result))
    assert all(s == shapes[0] for s in shapes), shapes
    return shapes[0]


def run_checked(runtime: Runtime[Any], scenario: Scenario, reference: dict[str, Any]) -> None:
    """Run one scenario on a fresh emulator and report every problem found."""
    sockets_before = socket_fds()
    threads_before = set(_library_threads())
    checks = Checks()
    tools = MatrixTools()
    result: SessionResult | None = None
    error: BaseException | None = None
    with runtime.start(scenario.echoed) as emulator:
        hook = scenario.inject(emulator)
        shots = emulator.pending_faults()
        try:
            result = drive(runtime, emulator, tools)
        except ManagedAgentsError as raised:
            error = raised
        checks.outcome(scenario, result, error, reference)
        del error  # its traceback may reach a socket: let it go before counting them
        checks.tools_ran_once(result, tools)
        runtime.check_events(checks, emulator, tools, result)
        checks.fault_met(scenario, emulator, shots, hook)
        checks.retry_after_honoured(scenario, emulator)
        checks.no_open_streams(emulator)
    checks.nothing_left_behind(sockets_before, threads_before)
    checks.verdict()
