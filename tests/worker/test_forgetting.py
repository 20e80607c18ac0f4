"""What a worker keeps of a session once it is over, and what it must keep until then.

A session that ended (terminated, archived, deleted) leaves nothing: its ledger entries are
forgotten and its folder removed. One whose item was stopped while it sat idle with nothing
asked of us has its ledger entries forgotten - every call it made was answered - but keeps its
folder, which its next turn (served from a new item) works in. A session left mid-turn to its
lease, one whose lease was lost, and one waiting on a call this worker could not answer keep
every entry: the next worker resuming it needs them to run no call twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.stores import FileStore
from req_managed_agents.testing import Turn, call
from tests.support.ledger import claim_and_die
from tests.worker.conftest import FileTools, Hosted, Running, lines

pytestmark = pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")

SCRIPT = [
    Turn(
        server_tool_calls=[call("write", file_path="notes.txt", content="kept")],
        tool_calls=[call("count", label="a")],
    ),
    Turn(text="done"),
]


def call_ids(world: Hosted, session_id: str) -> list[str]:
    """The ids of every tool call the session made (built-in and custom)."""
    kinds = ("agent.tool_use", "agent.custom_tool_use")
    return [str(e["id"]) for e in world.emulator.events(session_id) if e["type"] in kinds]


def record_files(ledger_path: Path) -> list[Path]:
    folder = ledger_path.with_name(ledger_path.name + ".records")
    return sorted(folder.rglob("*.json")) if folder.exists() else []


@pytest.mark.parametrize("ending", ["archive", "delete", "terminate"])
def test_a_session_that_ended_leaves_no_ledger_entry_and_no_folder(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path, ending: str
) -> None:
    world = hosted()
    workdir, ledger_path = tmp_path / "work", tmp_path / "ledger.json"
    ledger = ToolLedger(FileStore(ledger_path))
    session_id = world.session(world.agent(SCRIPT))
    worker = running(world, workdir, handler=FileTools(workdir), ledger=ledger, idle_grace=60)
    assert world.emulator.wait_until(lambda: world.finished(session_id, 1), 15)
    assert len(record_files(ledger_path)) == 2, "both calls are in the ledger meanwhile"
    assert lines(workdir / session_id / "custom.log") == ["count a"]
    end_session(world, session_id, ending)
    assert world.emulator.wait_until(lambda: worker.reports, 15)
    assert worker.outcomes(session_id) == ["stopped"]
    assert record_files(ledger_path) == []
    assert not (workdir / session_id).exists()
    assert list(workdir.iterdir()) == []


def end_session(world: Hosted, session_id: str, ending: str) -> None:
    client = world.provider.client
    if ending == "archive":
        client.archive_session(session_id)
    elif ending == "delete":
        client.delete_session(session_id)
    else:
        world.emulator.terminate_session(session_id)


def test_an_idle_sessions_entries_go_when_its_item_stops_and_its_folder_stays(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    ledger = ToolLedger()  # the worker's default: in memory, for the life of the process
    session_id = world.session(world.agent([*SCRIPT, *SCRIPT]))
    worker = running(world, tmp_path, handler=FileTools(tmp_path), ledger=ledger)
    assert world.emulator.wait_until(lambda: worker.reports, 15)
    assert worker.outcomes(session_id) == ["stopped"]
    first = call_ids(world, session_id)
    assert len(first) == 2
    assert [ledger.entry(session_id, call_id) for call_id in first] == [None, None]
    assert (tmp_path / session_id / "notes.txt").read_text() == "kept"
    # Its next turn is served from a new item, in the same folder, each call run once.
    world.send(session_id, "again")
    assert world.emulator.wait_until(lambda: len(worker.reports) == 2, 15)
    assert world.finished(session_id, 2)
    assert lines(tmp_path / session_id / "custom.log") == ["count a", "count a"]
    assert [ledger.entry(session_id, call_id) for call_id in call_ids(world, session_id)] == [
        None
    ] * 4


def test_a_session_left_to_its_lease_keeps_its_entries_for_the_next_worker(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    ledger = ToolLedger()
    session_id = world.session(world.agent([Turn(tool_calls=[call("hold")]), Turn(text="ok")]))
    worker = running(world, tmp_path, handler=FileTools(tmp_path), ledger=ledger)
    log = tmp_path / session_id / "custom.log"
    assert world.emulator.wait_until(lambda: lines(log) == ["start"], 15)
    worker.halt()
    assert worker.outcomes(session_id) == ["left"]
    (call_id,) = call_ids(world, session_id)
    kept = ledger.entry(session_id, call_id)
    assert kept is not None, "the next worker must find the call started here"
    assert (tmp_path / session_id).exists()


def test_a_lost_lease_keeps_the_entries(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted(lease_ttl=2)
    ledger = ToolLedger()
    session_id = world.session(world.agent([Turn(tool_calls=[call("hold")])]))
    reports: list[Any] = []
    running(world, tmp_path, handler=FileTools(tmp_path), ledger=ledger, on_item=reports.append)
    log = tmp_path / session_id / "custom.log"
    assert world.emulator.wait_until(lambda: lines(log) == ["start"], 15)
    (item,) = world.emulator.work_items(world.environment_id)
    world.queue.heartbeat_work(  # another holder: our next heartbeat is refused (412)
        world.environment_id, item["id"], expected_last_heartbeat=item["latest_heartbeat_at"]
    )
    assert world.emulator.wait_until(lambda: reports, 15)
    assert reports[0].outcome == "lease_lost"
    (call_id,) = call_ids(world, session_id)
    assert ledger.entry(session_id, call_id) is not None


def test_a_call_left_unfinished_elsewhere_keeps_its_entry_when_the_item_stops(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    """A worker that died mid-call left its claim; this one may not answer it
    (``on_unfinished="raise"``), so the session waits on it when the item is let go. The
    claim stays: forgetting it would let the next worker run the call a second time."""
    world = hosted()
    store = tmp_path / "ledger.json"
    ledger = ToolLedger(FileStore(store))
    session_id = world.session(world.agent([Turn(tool_calls=[call("count", label="x")])]))
    assert world.emulator.wait_until(lambda: bool(call_ids(world, session_id)), 15)
    (call_id,) = call_ids(world, session_id)
    claim_and_die(store, session_id, call_id)  # the dead worker's claim
    worker = running(
        world, tmp_path, handler=FileTools(tmp_path), ledger=ledger, on_unfinished="raise"
    )
    assert world.emulator.wait_until(lambda: worker.reports, 15)
    assert worker.outcomes(session_id) == ["stopped"]
    kept = ledger.entry(session_id, call_id)
    assert kept is not None
    assert not kept.finished
    assert not (tmp_path / session_id / "custom.log").exists(), "never run here"


def test_the_credentials_of_the_items_served_are_not_kept_for_the_life_of_the_process(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    """Each polled item's secret and sessions token are masked in every message while it is
    served; once it is done (its token stopped or left to run out), the redactor lets them
    go - else a long-running worker holds one set per session and scans them all for every
    message it writes."""
    from req_managed_agents import _redact

    world = hosted()
    agent = world.agent(SCRIPT)
    worker = running(world, tmp_path, handler=FileTools(tmp_path), max_sessions=1)
    first = world.session(agent)
    assert world.emulator.wait_until(lambda: len(worker.reports) == 1, 15)
    held = len(_redact._secrets)
    for _ in range(5):
        world.session(agent)
    assert world.emulator.wait_until(lambda: len(worker.reports) == 6, 30)
    assert worker.outcomes(first) == ["stopped"]
    assert len(_redact._secrets) == held
