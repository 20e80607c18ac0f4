"""A worker serving sessions end to end, over real sockets against the emulator: several at
once through faults on every work-queue call, each tool call run exactly once (counted in
files of the session's folder), every item stopped, none left in ``starting``."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.providers._delivery import INPUT_SENDS
from req_managed_agents.testing import ToolCall, Turn, call
from tests.worker.conftest import WORK, FileTools, Hosted, Running, lines, tool_results

pytestmark = pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")

SCRIPT = [
    Turn(
        text="one",
        server_tool_calls=[call("bash", command="echo bash-1 >> bash.log")],
        tool_calls=[call("count", label="a")],
    ),
    Turn(
        text="two",
        server_tool_calls=[
            call("bash", command="echo bash-2 >> bash.log"),
            call("write", file_path="notes.txt", content="hello"),
        ],
        tool_calls=[call("count", label="b")],
    ),
    Turn(text=lambda results: " | ".join(results)),
]


def test_three_sessions_at_once_through_faults_run_every_call_once(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted(lease_ttl=3)
    emulator = world.emulator
    agent = world.agent(SCRIPT)
    sessions = [world.session(agent) for _ in range(3)]
    first, second, third = (item["id"] for item in emulator.work_items())
    # Polls reset and refused; an acknowledgement refused, one answered into the void;
    # heartbeats refused, and answered into the void (the lost-answer case); streams cut.
    emulator.reset_requests("GET", rf"{WORK}/poll", after_acting=False, times=1)
    emulator.fail_requests("GET", rf"{WORK}/poll", 503, times=2)
    emulator.fail_requests("POST", rf"{WORK}/{first}/ack", 503)
    emulator.reset_requests("POST", rf"{WORK}/{second}/ack", after_acting=True)
    emulator.fail_requests("POST", rf"{WORK}/{first}/heartbeat", 502, times=2)
    emulator.reset_requests("POST", rf"{WORK}/{second}/heartbeat", after_acting=True)
    emulator.reset_requests("POST", rf"{WORK}/{third}/heartbeat", after_acting=True, times=2)
    emulator.drop_stream(at_event=14, session_id=sessions[0])  # mid-turn
    emulator.drop_stream(at_event=19, session_id=sessions[1])  # the idle itself
    worker = running(world, tmp_path, handler=FileTools(tmp_path), max_sessions=3)
    assert emulator.wait_until(lambda: all(world.finished(s, 1) for s in sessions), 30)
    assert emulator.wait_until(lambda: set(world.states()) == {"stopped"}, 15), world.states()
    assert emulator.pending_faults() == 0, "every injected fault was met"
    worker.halt()
    assert not worker.error
    for session_id in sessions:
        folder = tmp_path / session_id
        assert lines(folder / "bash.log") == ["bash-1", "bash-2"]
        assert lines(folder / "custom.log") == ["count a", "count b"]
        assert (folder / "notes.txt").read_text() == "hello"
        assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
        events = emulator.events(session_id)
        results = tool_results(events)
        assert len(results) == 5  # each call answered once
        assert not any(r.get("is_error") for r in results)
        assert events[-1]["type"] == "session.status_idle"
        assert worker.outcomes(session_id) == ["stopped"]
    assert {r.outcome for r in worker.reports} == {"stopped"}
    assert sum(r.tool_calls for r in worker.reports) == 15


def test_a_session_prompted_after_its_item_was_claimed_is_served(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    session_id = world.session(world.agent(SCRIPT), prompt=None)
    worker = running(world, tmp_path, handler=FileTools(tmp_path), idle_grace=10)
    assert world.emulator.wait_until(lambda: world.states() == ["active"])
    assert [e["type"] for e in world.emulator.events(session_id)] == []  # never prompted
    world.send(session_id, "go")
    assert world.emulator.wait_until(lambda: world.finished(session_id, 1), 15)
    assert lines(tmp_path / session_id / "bash.log") == ["bash-1", "bash-2"]
    worker.halt()
    assert world.states() == ["stopped"]  # idle with nothing pending: stopped on the way out


def test_new_input_after_the_item_stopped_is_served_from_a_new_item(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    script = [
        Turn(server_tool_calls=[call("bash", command="echo first >> bash.log")]),
        Turn(text="first done"),
        Turn(server_tool_calls=[call("bash", command="echo second >> bash.log")]),
        Turn(text="second done"),
    ]
    world = hosted()
    session_id = world.session(world.agent(script))
    worker = running(world, tmp_path, idle_grace=0.2)
    assert world.emulator.wait_until(lambda: world.states() == ["stopped"], 15)
    world.send(session_id, "again")
    assert world.emulator.wait_until(lambda: world.states() == ["stopped", "stopped"], 15)
    assert world.finished(session_id, 2)
    assert lines(tmp_path / session_id / "bash.log") == ["first", "second"]
    assert world.emulator.wait_until(lambda: len(worker.outcomes(session_id)) == 2)
    assert worker.outcomes(session_id) == ["stopped", "stopped"]


def test_a_terminated_sessions_item_is_stopped_without_serving(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    session_id = world.session(world.agent(SCRIPT), prompt=None)
    world.emulator.terminate_session(session_id)
    worker = running(world, tmp_path)
    assert world.emulator.wait_until(lambda: world.states() == ["stopped"], 10)
    assert world.emulator.wait_until(lambda: worker.reports)
    assert worker.outcomes(session_id) == ["skipped"]
    assert not (tmp_path / session_id).exists()


def test_custom_calls_without_a_handler_get_an_unknown_tool_error(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    session_id = world.session(world.agent(SCRIPT))
    running(world, tmp_path)
    assert world.emulator.wait_until(lambda: world.finished(session_id, 1), 15)
    results = tool_results(world.emulator.events(session_id))
    custom = [r for r in results if r["type"] == "user.custom_tool_result"]
    assert len(custom) == 2
    assert all(r["is_error"] for r in custom)
    assert "unknown tool 'count'" in json.dumps(custom[0]["content"])
    assert lines(tmp_path / session_id / "bash.log") == ["bash-1", "bash-2"]


def test_a_lost_lease_detaches_the_session_and_leaves_the_item_alone(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted([Turn(tool_calls=[call("hold")]), Turn(text="never")], lease_ttl=2)
    session_id = world.session(world.agent([Turn(tool_calls=[call("hold")])]))
    tools = FileTools(tmp_path)
    lost: list[Any] = []
    worker = running(world, tmp_path, handler=tools, on_item=lost.append)
    log = tmp_path / session_id / "custom.log"
    assert world.emulator.wait_until(lambda: lines(log) == ["start"], 10)
    # Another holder heartbeats the item: our next heartbeat's expectation is stale (412).
    (item,) = world.emulator.work_items(world.environment_id)
    world.queue.heartbeat_work(
        world.environment_id, item["id"], expected_last_heartbeat=item["latest_heartbeat_at"]
    )
    assert world.emulator.wait_until(lambda: lost, 10)
    assert lost[0].outcome == "lease_lost"
    assert "412" in lost[0].detail
    assert tools.cancelled.is_set(), "the running tool was told to stop"
    assert lines(log) == ["start", "cancelled"]
    assert world.states() == ["active"], "the item is the other holder's: not stopped"
    events = [e["type"] for e in world.emulator.events(session_id)]
    assert "user.interrupt" not in events
    assert "user.custom_tool_result" not in events
    assert not worker.error
    assert worker.thread.is_alive(), "the worker goes on"


def test_a_file_ledger_shared_by_two_workers_runs_each_call_once(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    from req_managed_agents.stores import FileStore

    world = hosted(lease_ttl=2)
    agent = world.agent(SCRIPT)
    sessions = [world.session(agent) for _ in range(4)]
    workdir = tmp_path / "work"
    ledger_path = tmp_path / "ledger.json"
    for _ in range(2):
        running(
            world,
            workdir,
            handler=FileTools(workdir),
            ledger=ToolLedger(FileStore(ledger_path)),
            max_sessions=2,
        )
    assert world.emulator.wait_until(lambda: all(world.finished(s, 1) for s in sessions), 30)
    for session_id in sessions:
        assert lines(workdir / session_id / "bash.log") == ["bash-1", "bash-2"]
        assert lines(workdir / session_id / "custom.log") == ["count a", "count b"]


def test_results_that_could_not_be_posted_are_posted_by_the_next_run_not_rerun(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    session_id = world.session(world.agent(SCRIPT[:1] + SCRIPT[2:]))
    # Every post of the results is turned away until the run gives up: it sends them
    # INPUT_SENDS times in all, HTTP retries included.
    world.emulator.fail_requests(
        "POST",
        rf"/v1/sessions/{session_id}/events",
        503,
        retry_after=0,
        times=INPUT_SENDS,
        where=lambda request: "user.tool_result" in str(request.body),
    )
    worker = running(world, tmp_path, handler=FileTools(tmp_path))
    assert world.emulator.wait_until(lambda: world.finished(session_id, 1), 20)
    assert world.emulator.pending_faults() == 0
    assert lines(tmp_path / session_id / "bash.log") == ["bash-1"]
    assert lines(tmp_path / session_id / "custom.log") == ["count a"]
    assert world.emulator.wait_until(lambda: worker.reports)
    assert worker.reports[0].runs == 2  # the first failed; the second posted the ledger's


def test_a_subagents_built_in_calls_are_served_on_its_thread(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    script = [
        Turn(thread="coder", server_tool_calls=[call("bash", command="echo sub >> bash.log")]),
        Turn(thread="coder", text=lambda results: f"said {results[0]}"),
    ]
    world = hosted()
    session_id = world.session(world.agent(script))
    running(world, tmp_path)
    assert world.emulator.wait_until(lambda: world.states() == ["stopped"], 15)
    assert lines(tmp_path / session_id / "bash.log") == ["sub"]
    (answer,) = [e for e in world.emulator.events(session_id) if e["type"] == "user.tool_result"]
    use = next(e for e in world.emulator.events(session_id) if e["type"] == "agent.tool_use")
    assert answer["tool_use_id"] == use["id"]
    assert answer["session_thread_id"] == use["session_thread_id"]


@pytest.mark.parametrize("confirm", ["allow", "raise"])
def test_a_call_asking_permission_follows_the_confirm_policy_and_is_not_retried_in_a_loop(
    hosted: Callable[..., Hosted],
    running: Callable[..., Running],
    tmp_path: Path,
    confirm: str,
) -> None:
    script = [
        Turn(
            server_tool_calls=[
                ToolCall("bash", {"command": "echo asked >> bash.log"}, permission="ask")
            ]
        ),
        Turn(text="done"),
    ]
    world = hosted()
    session_id = world.session(world.agent(script))
    worker = running(world, tmp_path, confirm=confirm, idle_grace=0.5)
    assert world.emulator.wait_until(lambda: worker.reports, 15)
    (report,) = worker.reports
    assert report.outcome == "stopped"
    answers = [
        e["result"]
        for e in world.emulator.events(session_id)
        if e["type"] == "user.tool_confirmation"
    ]
    if confirm == "allow":
        assert answers == ["allow"]
        assert world.finished(session_id, 1)
    else:  # nothing may answer: one run, then the item is let go when the grace is over
        assert answers == []
        assert report.runs == 1


def test_telemetry_tells_each_item_and_no_log_line_shows_a_credential(
    hosted: Callable[..., Hosted],
    running: Callable[..., Running],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from req_managed_agents import telemetry

    caplog.set_level(logging.DEBUG, logger="req_managed_agents")
    seen: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    world = hosted()
    session_id = world.session(world.agent(SCRIPT))
    with telemetry.attach(lambda *event: seen.append(event), prefix="req_managed_agents.worker"):
        worker = running(world, tmp_path, handler=FileTools(tmp_path))
        assert world.emulator.wait_until(lambda: worker.reports, 15)
    names = [name for name, _, _ in seen]
    assert names == ["req_managed_agents.worker.item.start", "req_managed_agents.worker.item.stop"]
    measured, tags = seen[1][1], seen[1][2]
    assert tags["session_id"] == session_id
    assert tags["outcome"] == "stopped"
    assert measured["tool_calls"] == 5
    secrets = [world.key, world.emulator.api_key, "sesstok_"]
    shown = caplog.text + repr(seen)
    assert not [secret for secret in secrets if secret in shown]


def test_no_more_than_max_sessions_items_are_taken_at_once(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted()
    agent = world.agent([Turn(tool_calls=[call("hold")]), Turn(text="done")])
    first, second = world.session(agent), world.session(agent)
    running(world, tmp_path, handler=FileTools(tmp_path), max_sessions=1)
    assert world.emulator.wait_until(lambda: sorted(world.states()) == ["active", "queued"])
    (held,) = [i["data"]["id"] for i in world.emulator.work_items() if i["state"] == "active"]
    other = second if held == first else first
    assert world.emulator.wait_until(lambda: lines(tmp_path / held / "custom.log") == ["start"])
    (tmp_path / other).mkdir(mode=0o700)
    (tmp_path / other / "release").touch()  # its hold returns at once, when it runs
    time.sleep(1.5)  # the worker polls no more while its one slot is taken
    assert [i["state"] for i in world.items_of(other)] == ["queued"]
    assert not (tmp_path / other / "custom.log").exists()
    (tmp_path / held / "release").touch()
    assert world.emulator.wait_until(lambda: world.finished(other, 1), 15)
    assert world.finished(held, 1)
