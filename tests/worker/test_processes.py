"""The promises that span processes, with ``rma worker`` run as a real process against an
emulator in this one: killed with SIGKILL in the middle of a tool, a restarted worker
finishes the session and no finished call runs twice (the file ledger), the interrupted one
following ``on_unfinished``; stopped with SIGTERM or Ctrl-C, it exits at once after
releasing - idle items stopped, a mid-turn item left for the next worker, which resumes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest

from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.stores import FileStore
from req_managed_agents.testing import Turn, call
from tests.worker.conftest import Hosted, lines, tool_results

TOOLS_MODULE = textwrap.dedent(
    '''
    import os
    from pathlib import Path

    from req_managed_agents import ToolContext, Tools

    WORKDIR = Path(os.environ["WORKER_TEST_WORKDIR"])
    tools = Tools()


    def note(context: ToolContext, line: str) -> None:
        with open(WORKDIR / context.session.session_id / "custom.log", "a") as log:
            log.write(line + "\\n")


    @tools.tool
    def count(label: str, context: ToolContext) -> str:
        """Count one call."""
        note(context, f"count {label}")
        return f"counted {label}"


    @tools.tool
    def hold(context: ToolContext) -> str:
        """Wait for the release file, or until told to stop."""
        note(context, "start")
        release = WORKDIR / context.session.session_id / "release"
        while not release.exists():
            if context.cancelled.wait(0.05):
                note(context, "cancelled")
                return "cancelled"
        note(context, "end")
        return "held"
    '''
)


class Workers:
    """Starts ``rma worker`` processes for one emulator, with a shared workdir and ledger."""

    def __init__(self, world: Hosted, root: Path) -> None:
        self.world = world
        self.root = root
        self.workdir = root / "work"
        self.ledger = root / "ledger.json"
        (root / "tools_mod.py").write_text(TOOLS_MODULE)
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *flags: str) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": self.world.emulator.base_url,
            "ANTHROPIC_ENVIRONMENT_KEY": self.world.key,
            "WORKER_TEST_WORKDIR": str(self.workdir),
        }
        env.pop("ANTHROPIC_API_KEY", None)  # a worker host needs none
        command = [
            *(sys.executable, "-m", "req_managed_agents", "worker"),
            *("--environment-id", self.world.environment_id),
            *("--workdir", str(self.workdir), "--tools", "tools_mod:tools"),
            *("--ledger", str(self.ledger), "--idle-grace", "0.5", *flags),
        ]
        process = subprocess.Popen(
            command,
            cwd=self.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    def finish(self, process: subprocess.Popen[str], sig: int) -> tuple[int, str, str, float]:
        """Send ``sig``; the exit status, output and how long the exit took."""
        started = time.monotonic()
        process.send_signal(sig)
        out, err = process.communicate(timeout=20)
        return process.returncode, out, err, time.monotonic() - started


@pytest.fixture
def workers(hosted: Callable[..., Hosted], tmp_path: Path) -> Iterator[Callable[..., Workers]]:
    made: list[Workers] = []

    def make(script: list[Turn | str] | None = None, **options: object) -> Workers:
        made.append(Workers(hosted(script, **options), tmp_path))
        return made[-1]

    yield make
    for each in made:
        for process in each.started:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=10)


def call_ids(world: Hosted, session_id: str, kind: str) -> list[str]:
    return [str(e["id"]) for e in world.emulator.events(session_id) if e["type"] == kind]


def test_a_worker_killed_mid_tool_is_replaced_and_no_finished_call_runs_twice(
    workers: Callable[..., Workers],
) -> None:
    script = [
        Turn(
            server_tool_calls=[call("bash", command="echo bash-1 >> bash.log")],
            tool_calls=[call("hold")],
        ),
        Turn(tool_calls=[call("count", label="after")]),
        Turn(text=lambda results: " | ".join(results)),
    ]
    pool = workers(lease_ttl=2)
    world = pool.world
    session_id = world.session(world.agent(script))
    folder = pool.workdir / session_id
    first = pool.start()
    assert world.emulator.wait_until(lambda: lines(folder / "custom.log") == ["start"], 20)
    (bash_id,) = call_ids(world, session_id, "agent.tool_use")
    (hold_id,) = call_ids(world, session_id, "agent.custom_tool_use")
    ledger = ToolLedger(FileStore(pool.ledger))
    assert world.emulator.wait_until(
        lambda: (entry := ledger.entry(session_id, bash_id)) is not None and entry.finished, 10
    )
    first.kill()  # SIGKILL: no release, no stop, the hold call never finishes
    first.communicate(timeout=10)
    assert lines(folder / "bash.log") == ["bash-1"]
    (item,) = world.items_of(session_id)
    assert item["state"] == "active"  # until its lease runs out (2 s): then queued again

    second = pool.start()
    assert world.emulator.wait_until(lambda: world.finished(session_id, 1), 30)
    assert lines(folder / "bash.log") == ["bash-1"], "the finished bash call was not run again"
    assert lines(folder / "custom.log") == ["start", "count after"], "hold was not run again"
    answers = {
        r.get("tool_use_id") or r.get("custom_tool_use_id"): r
        for r in tool_results(world.emulator.events(session_id))
    }
    assert "interrupted" in str(answers[hold_id]["content"])
    assert answers[hold_id]["is_error"] is True
    assert answers[bash_id]["is_error"] is False
    assert world.emulator.wait_until(lambda: world.states() == ["stopped"], 10)
    code, out, _, _ = pool.finish(second, signal.SIGTERM)
    assert code == 0
    assert f"session {session_id}: stopped" in out


def test_sigterm_releases_at_once_and_the_next_worker_resumes_the_mid_turn_session(
    workers: Callable[..., Workers],
) -> None:
    pool = workers(lease_ttl=30)
    world = pool.world
    idle_id = world.session(world.agent(["hello"]))
    busy_script = [Turn(tool_calls=[call("hold")]), Turn(text=lambda results: results[0])]
    busy_id = world.session(world.agent(busy_script))
    first = pool.start("--idle-grace", "60")
    busy_log = pool.workdir / busy_id / "custom.log"
    assert world.emulator.wait_until(
        lambda: world.finished(idle_id, 1) and lines(busy_log) == ["start"], 20
    )
    code, out, err, took = pool.finish(first, signal.SIGTERM)
    assert code == 0, err
    assert took < 8
    assert lines(busy_log) == ["start", "cancelled"], "the running tool was told to stop"
    (idle_item,) = world.items_of(idle_id)
    (busy_item,) = world.items_of(busy_id)
    assert idle_item["state"] == "stopped"
    assert busy_item["state"] == "active", "left to its lease for the next worker"
    assert "starting" not in world.states()
    assert f"session {busy_id}: left" in out
    assert f"session {idle_id}: stopped" in out
    assert "user.interrupt" not in [e["type"] for e in world.emulator.events(busy_id)]

    world.emulator.expire_lease(busy_item["id"])  # what 30 s without a heartbeat does
    second = pool.start()
    assert world.emulator.wait_until(lambda: world.finished(busy_id, 1), 20)
    assert lines(busy_log) == ["start", "cancelled"], "the tool was not run again"
    # The tool's late answer reaches the ledger if its thread records it before the process
    # exits: then it is posted; else the call is answered as interrupted. Never run twice.
    messages = [e for e in world.emulator.events(busy_id) if e["type"] == "agent.message"]
    (answer,) = messages[-1]["content"]
    assert answer["text"] == "cancelled" or answer["text"].startswith(
        "this tool call was interrupted earlier"
    ), answer
    assert world.emulator.wait_until(lambda: set(world.states()) == {"stopped"}, 10)
    code, _, err, _ = pool.finish(second, signal.SIGINT)
    assert code == 130, err
    assert err.strip().splitlines()[-1].startswith("rma worker: stopped")
