"""When the ledger claims a call, and what it records: on the call's own thread, right before
it runs, by compare-and-set, never behind the store-wide lock; late results kept; a failing
ledger never runs a call unrecorded nor leaves tools running unwarned."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import (
    FileStore,
    MemoryStore,
    Session,
    SessionTimeoutError,
    ToolContext,
    ToolLedger,
    ToolResult,
    Tools,
    run_to_completion,
)
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, run_tools
from req_managed_agents.model import SessionInfo, ToolUse
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.ledger import claim_and_die


def _rerun_claim(path: str, session_id: str, call_id: str, read: Any, wins: Any) -> None:
    ledger = ToolLedger(FileStore(path))
    entry = ledger.entry(session_id, call_id)
    read.wait(60)  # every worker has read the unfinished entry before any takes it over
    if ledger.claim(session_id, call_id, over=entry) is None:
        wins.put(os.getpid())


def test_of_two_workers_rerunning_an_unfinished_call_only_one_runs_it(tmp_path: Path) -> None:
    path = str(tmp_path / "store.json")
    claim_and_die(tmp_path / "store.json", "sesn_1", "call_1")  # a worker that died mid-call
    spawn = multiprocessing.get_context("spawn")
    read, wins = spawn.Barrier(6), spawn.Queue()
    workers = [
        spawn.Process(target=_rerun_claim, args=(path, "sesn_1", "call_1", read, wins))
        for _ in range(6)
    ]
    for worker in workers:
        worker.start()
    # Six spawned interpreters on a loaded 2-core machine can take a minute to start; the
    # bound only keeps a wedged one from hanging the suite.
    for worker in workers:
        worker.join(180)
    assert not any(worker.is_alive() for worker in workers), "a worker never finished"
    winners = []
    while not wins.empty():
        winners.append(wins.get())
    assert len(winners) == 1


TWO_CALLS = [
    Turn(tool_calls=[call("slow", n=1), call("slow", n=2)]),
    Turn(text=lambda results: "results: " + ", ".join(results)),
]


def test_a_call_that_never_started_is_not_claimed_and_a_late_result_is_kept(
    tmp_path: Path,
) -> None:
    ledger = ToolLedger(FileStore(tmp_path / "ledger.json"))
    running, release = threading.Event(), threading.Event()
    ran: list[int] = []
    tools = Tools()

    @tools.tool
    def slow(n: int) -> str:
        """Finishes only when released (the first call), or at once."""
        ran.append(n)
        if n == 1:
            running.set()
            release.wait(10)
        return f"done {n}"

    with ClaudeEmulator(TWO_CALLS) as emulator, emulator.provider() as provider:
        ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        session = Session(provider, handler=tools, ledger=ledger, max_concurrency=1, **ids)
        # A timeout stops the run here and leaves the remote turn waiting for its answers;
        # the second call is still queued behind the first when it strikes.
        with pytest.raises(SessionTimeoutError):
            session.run("go", timeout=3)
        assert running.is_set()
        session_id = str(session.session_id)
        use_1, use_2 = (
            e["id"] for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use"
        )
        assert ledger.entry(session_id, use_2) is None, "a call that never started is free"
        release.set()  # the first call finishes after the stop: its result is still recorded
        deadline = time.monotonic() + 5
        while ledger.entry(session_id, use_1).result is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ledger.entry(session_id, use_1).result.content == "done 1"
        # Resumed, the recorded result is posted and the never-started call runs, once each.
        result = run_to_completion(
            provider, handler=tools, session_id=session_id, ledger=ledger, timeout=10
        )
    assert result.text == "results: done 1, done 2"
    assert ran == [1, 2]


class _BrokenRecords(MemoryStore):
    """A store whose records cannot be written (a full disk, a Redis that is down)."""

    def add_record(self, key: str, value: Any, *, ttl: float | None = None) -> bool:
        raise OSError("no space left on device")


def test_a_call_the_ledger_cannot_claim_is_not_run_and_answers_why() -> None:
    ran: list[str] = []
    tools = Tools()

    @tools.tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        ran.append("charge")
        return "charged"

    script = [Turn(tool_calls=[call("charge", amount=5)]), Turn(text=lambda r: r[0])]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "go",
            handler=tools,
            ledger=ToolLedger(_BrokenRecords()),
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=10,
        )
    assert ran == []
    assert result.tool_results[0].is_error
    assert "could not record this tool call" in result.text
    assert "no space left on device" in result.text


def test_a_failing_report_tells_the_running_tools_to_stop() -> None:
    seen: dict[str, ToolContext] = {}
    started = threading.Event()

    class Handler:
        def handle_tool_call(self, name: str, input: Any, context: ToolContext) -> str:
            seen[name] = context
            if name == "fast":
                return "fast"
            started.set()
            context.cancelled.wait(10)
            return "stopped"

    def finished(use: ToolUse, result: ToolResult) -> None:
        started.wait(5)
        raise RuntimeError("the ledger's disk is gone")

    uses = [ToolUse("t1", "fast"), ToolUse("t2", "slow")]
    with pytest.raises(RuntimeError):
        run_tools(
            Handler(),
            uses,
            SessionInfo("sesn_1", "test"),
            max_concurrency=2,
            tool_timeout=None,
            cancelled=threading.Event(),
            telemetry_metadata={},
            on_finish=finished,
        )
    assert seen["slow"].cancelled.is_set()
    stop = threading.Event()
    stop.set()
    with pytest.raises(ToolRunCancelled):
        run_tools(
            Handler(),
            uses,
            SessionInfo("sesn_1", "test"),
            max_concurrency=1,
            tool_timeout=None,
            cancelled=stop,
            telemetry_metadata={},
        )


def test_a_tool_call_never_waits_for_a_provision_holding_the_store(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "shared.json", lock_timeout=30)
    holding, done = threading.Event(), threading.Event()

    def provisioning() -> None:  # a provision waiting minutes for a harness, say
        with store.lock():
            holding.set()
            done.wait(30)

    holder = threading.Thread(target=provisioning, daemon=True)
    holder.start()
    assert holding.wait(5)
    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text=lambda r: r[0])]
    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    try:
        with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
            started = time.monotonic()
            result = run_to_completion(
                provider,
                "go",
                handler=tools,
                ledger=ToolLedger(store),
                agent_id=emulator.add_agent(),
                environment_id=emulator.add_environment(),
                timeout=10,
            )
            assert time.monotonic() - started < 8
    finally:
        done.set()
        holder.join(5)
    assert result.text == "3"


def test_a_ledger_write_on_a_file_store_costs_the_same_after_three_thousand_calls(
    tmp_path: Path,
) -> None:
    """Each claim and result touches only its session's own record files: the store file
    and every other session's records are left as they were, however many there are."""
    ledger = ToolLedger(FileStore(tmp_path / "ledger.json"))
    for n in range(3000):
        session = f"sesn_{n % 30}"
        assert ledger.claim(session, f"call_{n}") is None
        ledger.finish(session, f"call_{n}", ToolResult(f"call_{n}", "ok"))

    def snapshot() -> dict[str, tuple[int, int, int]]:
        return {
            str(path): (path.stat().st_ino, path.stat().st_mtime_ns, path.stat().st_size)
            for path in tmp_path.rglob("*")
            if path.is_file()
        }

    before = snapshot()
    assert ledger.claim("sesn_new", "call_x") is None
    ledger.finish("sesn_new", "call_x", ToolResult("call_x", "ok"))
    after = snapshot()
    changed = {path for path in after if before.get(path) != after[path]}
    assert changed, "the new entry was written"
    assert all("records" in path and path not in before for path in changed)
    assert len(changed) <= 3  # the record, its group's lock and name files
