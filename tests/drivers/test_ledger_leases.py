"""Claims that outlive their owner, and only those: a live claim is waited on and its result
used; one whose owner died (or stopped renewing its lease) follows ``on_unfinished``; a ledger
record of another shape is refused by name."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import (
    FileStore,
    MemoryStore,
    ToolContext,
    ToolLedger,
    ToolResult,
    Tools,
    run_to_completion,
)
from req_managed_agents.errors import LedgerError
from req_managed_agents.stores._records import records_of
from req_managed_agents.testing import ClaudeEmulator, Turn, call

CHARGE = [Turn(tool_calls=[call("charge", amount=5)]), Turn(text=lambda r: f"charged: {r[0]}")]


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(CHARGE) as emulator:
        yield emulator


class WatchedStore(FileStore):
    """A FileStore that says when a ledger entry is first read (a resuming worker looks)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entry_read = threading.Event()

    def get_record(self, key: str) -> Any:
        found = super().get_record(key)
        if key.startswith("ledger:") and found is not None:
            self.entry_read.set()
        return found


def paused_session(emulator: ClaudeEmulator, provider: Any) -> str:
    """A session whose agent waits for the result of one ``charge`` call."""
    session = provider.client.create_session(emulator.add_agent(), emulator.add_environment())
    message = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
    provider.client.send_events(session["id"], [message])
    last = lambda: emulator.events(session["id"])[-1]["type"]  # noqa: E731 - one use
    assert emulator.wait_until(lambda: last() == "session.status_idle")
    return str(session["id"])


def test_a_worker_resuming_a_call_another_worker_is_running_waits_and_uses_its_result(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    store = WatchedStore(tmp_path / "ledger.json")
    effects = tmp_path / "effects"
    started, release = threading.Event(), threading.Event()
    first_tools, second_tools = Tools(), Tools()
    reruns: list[str] = []

    @first_tools.tool
    def charge(amount: int, context: ToolContext) -> str:
        """Charge the customer (slowly: the other worker arrives meanwhile)."""
        started.set()
        assert release.wait(30)
        with effects.open("a") as out:
            out.write(f"{context.tool_use_id}\n")
        return f"{amount} EUR"

    @second_tools.tool(name="charge")
    def charge_again(amount: int, context: ToolContext) -> str:
        """The second worker's copy: it must never run."""
        reruns.append(context.tool_use_id)
        return "charged twice"

    results: dict[str, Any] = {}

    def resume(name: str, tools: Tools) -> None:
        with emulator.provider() as provider:
            results[name] = run_to_completion(
                provider,
                handler=tools,
                session_id=session_id,
                ledger=ToolLedger(store),
                on_unfinished="rerun",
                timeout=60,
            )

    with emulator.provider() as provider:
        session_id = paused_session(emulator, provider)
    first = threading.Thread(target=resume, args=("first", first_tools))
    first.start()
    assert started.wait(30), "the first worker runs the call"
    store.entry_read.clear()
    second = threading.Thread(target=resume, args=("second", second_tools))
    second.start()
    assert store.entry_read.wait(30), "the second worker found the call claimed"
    release.set()
    first.join(60)
    second.join(60)
    assert reruns == [], "the live claim was not taken over"
    assert effects.read_text().count("\n") == 1
    assert results["first"].text == results["second"].text == "charged: 5 EUR"
    posted = [e for e in emulator.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert len(posted) == 1


def _foreign_claim(store: Any, key: str, *, renewed_ago: float, lease: float) -> None:
    """A claim held by a process on another machine, last renewed ``renewed_ago`` s ago."""
    record = {
        "started_at": time.time() - renewed_ago,
        "owner": "elsewhere:1",
        "claim": "c0ffee",
        "lease": lease,
        "renewed_at": time.time() - renewed_ago,
        "process": "another-boot/4026531836/1/1",
    }
    assert records_of(store).add_record(key, record)


def test_a_claim_whose_owner_stopped_renewing_lapses_after_one_lease() -> None:
    store = MemoryStore()
    _foreign_claim(store, "ledger:s1:t1", renewed_ago=0.0, lease=0.6)
    ledger = ToolLedger(store, lease=0.6)
    found = ledger.entry("s1", "t1")
    assert found is not None
    before = time.monotonic()
    waited = ledger.await_finish("s1", found, stop=threading.Event())
    assert waited is not None
    assert not waited.live, "lapsed: nobody runs it any more"
    assert not waited.finished
    assert time.monotonic() - before >= 0.6, "judged on this machine's clock, a lease long"


def test_a_claim_renewed_long_ago_by_another_machine_lapsed_at_once() -> None:
    store = MemoryStore()
    _foreign_claim(store, "ledger:s1:t1", renewed_ago=3600.0, lease=30.0)
    ledger = ToolLedger(store)
    found = ledger.entry("s1", "t1")
    assert found is not None
    waited = ledger.await_finish("s1", found, stop=threading.Event())
    assert waited is not None
    assert not waited.live


def test_a_running_claim_is_renewed_and_stays_live_past_its_lease(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "ledger.json")
    owner, watcher = ToolLedger(store, lease=0.6), ToolLedger(store, lease=0.6)
    assert owner.claim("s1", "t1") is None
    found = watcher.entry("s1", "t1")
    assert found is not None
    deadline = time.monotonic() + 2.0  # over three leases
    waited = watcher.await_finish("s1", found, stop=threading.Event(), deadline=deadline)
    assert waited is not None
    assert waited.live, "renewed all along"
    assert waited.record["renewed_at"] > found.record["renewed_at"]
    owner.finish("s1", "t1", ToolResult("t1", "done"))
    settled = watcher.await_finish("s1", waited, stop=threading.Event())
    assert settled is not None
    assert settled.result == ToolResult("t1", "done")


def test_waiting_for_a_live_claim_ends_when_the_run_stops() -> None:
    store = MemoryStore()
    _foreign_claim(store, "ledger:s1:t1", renewed_ago=0.0, lease=600.0)
    ledger = ToolLedger(store)
    found = ledger.entry("s1", "t1")
    assert found is not None
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    waited = ledger.await_finish("s1", found, stop=stop)
    assert waited is not None
    assert waited.live


@pytest.mark.parametrize("value", ["a string", ["a", "list"], {"started_at": "yesterday"}, 7])
def test_a_ledger_record_of_another_shape_is_refused_by_name(value: Any) -> None:
    store = MemoryStore()
    assert records_of(store).add_record("ledger:s1:t1", value)
    ledger = ToolLedger(store)
    with pytest.raises(LedgerError) as caught:
        ledger.claim("s1", "t1")
    assert caught.value.key == "ledger:s1:t1"
    assert "ledger:s1:t1" in str(caught.value)


def test_a_binding_of_another_shape_is_refused_by_name() -> None:
    store = MemoryStore()
    assert records_of(store).add_record("ledger-runs:job-1", ["not", "a", "binding"])
    with pytest.raises(LedgerError) as caught:
        ToolLedger(store).bind("job-1", {"session_id": "s", "prompt": "p", "phase": "new"})
    assert caught.value.key == "ledger-runs:job-1"


def test_a_call_whose_ledger_record_is_damaged_is_not_run_and_the_run_says_why(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    store = MemoryStore()
    ran: list[int] = []
    tools = Tools()

    @tools.tool
    def charge(amount: int) -> str:
        """Charge the customer."""
        ran.append(amount)
        return f"{amount} EUR"

    with emulator.provider() as provider:
        session_id = paused_session(emulator, provider)
        (use,) = [e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use"]
        assert records_of(store).add_record(f"ledger:{session_id}:{use['id']}", "damaged")
        with pytest.raises(LedgerError):
            run_to_completion(
                provider, handler=tools, session_id=session_id, ledger=ToolLedger(store), timeout=20
            )
    assert ran == []
