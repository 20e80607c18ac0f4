"""Concurrent tool execution: ordering, bounded concurrency, per-tool timeouts, cancellation."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from req_managed_agents import ToolContext, ToolResult, telemetry
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, run_tools
from req_managed_agents.model import SessionInfo, ToolUse

INFO = SessionInfo("sesn_1", "test")


class Recorder:
    """A handler whose tools sleep, raise or hang on demand, recording concurrency."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.contexts: dict[str, ToolContext] = {}
        self.release = threading.Event()

    def handle_tool_call(self, name: str, input: Any, context: ToolContext) -> str:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.contexts[context.tool_use_id] = context
        try:
            if name == "sleep":
                time.sleep(input["seconds"])
            elif name == "raise":
                raise ValueError("bad input")
            elif name == "hang":
                self.release.wait(10)
            return f"{name}:{context.tool_use_id}"
        finally:
            with self.lock:
                self.running -= 1


def uses(*names: str, seconds: float = 0.0) -> list[ToolUse]:
    return [ToolUse(f"tu_{i}", name, {"seconds": seconds}) for i, name in enumerate(names)]


def run(
    handler: Recorder,
    tool_uses: list[ToolUse],
    *,
    max_concurrency: int = 8,
    tool_timeout: float | None = None,
    cancelled: threading.Event | None = None,
    telemetry_metadata: dict[str, Any] | None = None,
) -> list[ToolResult]:
    return run_tools(
        handler,
        tool_uses,
        INFO,
        max_concurrency=max_concurrency,
        tool_timeout=tool_timeout,
        cancelled=cancelled or threading.Event(),
        telemetry_metadata=telemetry_metadata or {},
    )


def test_results_come_back_in_call_order() -> None:
    handler = Recorder()
    tool_uses = [ToolUse("a", "sleep", {"seconds": 0.2}), ToolUse("b", "sleep", {"seconds": 0})]
    results = run(handler, tool_uses)
    assert [r.tool_use_id for r in results] == ["a", "b"]
    assert [r.content for r in results] == ["sleep:a", "sleep:b"]


def test_tools_of_one_turn_run_concurrently_up_to_the_limit() -> None:
    handler = Recorder()
    run(handler, uses(*["sleep"] * 6, seconds=0.2), max_concurrency=3)
    assert handler.peak == 3


def test_a_raising_tool_is_an_error_result_and_others_still_run() -> None:
    results = run(Recorder(), uses("raise", "sleep"))
    assert results[0] == ToolResult("tu_0", "ValueError: bad input", is_error=True)
    assert results[1] == ToolResult("tu_1", "sleep:tu_1")


def test_a_hung_tool_times_out_without_blocking_the_rest() -> None:
    handler = Recorder()
    begun = time.monotonic()
    results = run(handler, uses("hang", "sleep", "sleep"), max_concurrency=1, tool_timeout=0.3)
    elapsed = time.monotonic() - begun
    handler.release.set()
    assert results[0].is_error
    assert "timed out after 0.3 s" in results[0].content
    assert handler.contexts["tu_0"].cancelled.is_set(), "the hung tool is told to stop"
    assert [r.is_error for r in results[1:]] == [False, False], "its slot was given back"
    assert elapsed < 2


def test_the_late_result_of_an_abandoned_call_is_dropped() -> None:
    handler = Recorder()
    results = run(handler, uses("hang"), tool_timeout=0.1)
    handler.release.set()
    time.sleep(0.1)
    assert results[0].is_error
    assert "timed out" in results[0].content


def test_cancellation_stops_waiting_and_flags_running_tools() -> None:
    handler = Recorder()
    cancelled = threading.Event()
    threading.Timer(0.2, cancelled.set).start()
    with pytest.raises(ToolRunCancelled):
        run(handler, uses("hang"), cancelled=cancelled)
    handler.release.set()
    assert handler.contexts["tu_0"].cancelled.is_set()


def test_tool_telemetry_reports_start_stop_and_exception() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    # Tagged, because tools abandoned by earlier tests may still finish and report now.
    with telemetry.attach(lambda name, m, md: seen.append((name, md))):
        run(Recorder(), uses("raise", "sleep"), max_concurrency=1, telemetry_metadata={"run": "t"})
    mine = [(name, md) for name, md in seen if md.get("run") == "t"]
    names = sorted(name.rsplit(".", 1)[-1] for name, _ in mine)
    assert names == ["exception", "start", "start", "stop"]
    stop = next(md for name, md in mine if name.endswith("tool.stop"))
    assert (stop["tool"], stop["is_error"]) == ("sleep", False)


def test_a_tool_raising_system_exit_answers_with_an_error() -> None:
    import argparse

    class Cli(Recorder):
        def handle_tool_call(self, name: str, input: Any, context: ToolContext) -> str:
            parser = argparse.ArgumentParser(prog="cli", exit_on_error=True)
            parser.add_argument("--n", type=int, required=True)
            parser.parse_args(["--n", "not-a-number"])  # argparse calls sys.exit(2)
            return "unreachable"

    results = run(Cli(), uses("cli"), tool_timeout=None)
    assert results[0].is_error
    assert results[0].content == "SystemExit: 2"
