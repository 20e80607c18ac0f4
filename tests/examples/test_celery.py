"""The README's Celery task on real workers and a real Redis, killed after the refund went
through: once only the pool process running it (the worker gives the task back at once), once
the whole worker (the task waits, unacknowledged, for the block's visibility timeout, and a new
worker takes it then). Either way the task continues the same session: one refund, the
agent's answer returned.

The task module is the README's block as written, with three values changed: the Redis
address (a private ``redis-server``) and the block's two durations (seconds, not minutes, so
the visibility timeout they make passes while the test waits). ``payments`` is the user's own
module the block imports: here it appends each refund, with the process that made it, to a
file the test reads. The agent's answer waits for the test, so a kill always lands while the
task waits for it.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.readme import python_blocks
from tests.support.redis import RedisServer

pytest.importorskip("celery")

EXAMPLE_REDIS = "redis://redis.internal:6379"
ANSWER = "Refunded 5 on order 7."
# The block's durations, shortened: its visibility timeout comes out at 21 s.
DURATIONS = {"RUN_TIMEOUT = 600": "RUN_TIMEOUT = 10", "BACKOFF_MAX = 60": "BACKOFF_MAX = 1"}
# The test's one addition to the block: the workers look for tasks whose visibility timeout
# passed every second, not every 100 s (kombu's default), so the test waits for the timeout
# and not for the sweep; a worker killed while it held the sweep's lock holds it for 5 s,
# not 5 minutes.
FAST_SWEEP = """
app.conf.broker_transport_options.update(
    unacked_restore_interval=1, unacked_restore_throttle=1, unacked_mutex_expire=5
)
"""
PAYMENTS = """
import os

def refund(order_id, amount):
    with open(os.environ["PAYMENTS_LOG"], "a") as log:
        log.write(f"{order_id} {amount} {os.getpid()}\\n")
    return f"refunded {amount} on {order_id}"
"""


def ticket_id() -> str:
    """A ticket no other test used: its keyed run is bound in the shared Redis server."""
    return f"T-{uuid.uuid4().hex[:8]}"


def celery_block() -> str:
    (block,) = [b for b in python_blocks() if "from celery import Celery" in b.code]
    return block.code


class Gate:
    """The agent's answer, given only once the test opens the gate: the task is then surely
    still waiting for it when the kill lands."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.opened = threading.Event()

    def answer(self, inputs: list[str]) -> str:
        self.asked.set()
        self.opened.wait(120)
        return ANSWER


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    yield gate
    gate.opened.set()  # never leave the emulator's turn waiting


@pytest.fixture
def emulator(gate: Gate) -> Iterator[ClaudeEmulator]:
    script = [Turn(tool_calls=[call("refund", order_id="7", amount=5)]), Turn(text=gate.answer)]
    with ClaudeEmulator(script) as emulator:
        yield emulator


@pytest.fixture
def project(
    tmp_path: Path,
    redis_server: RedisServer,
    emulator: ClaudeEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str]:
    """A folder holding the README's task module and a payments module, with the
    environment both the workers and this test import it under."""
    code = celery_block().replace(EXAMPLE_REDIS, redis_server.url.rsplit("/", 1)[0])
    for duration, shorter in DURATIONS.items():
        code = code.replace(duration, shorter)
    (tmp_path / "tasks.py").write_text(code + FAST_SWEEP)
    (tmp_path / "payments.py").write_text(PAYMENTS)
    env = {
        "ANTHROPIC_API_KEY": emulator.api_key,
        "ANTHROPIC_BASE_URL": emulator.base_url,
        "PAYMENTS_LOG": str(tmp_path / "payments.log"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("tasks", "payments"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    return env


def start_worker(folder: Path, env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    """A ``celery worker`` with one pool process, leading a process group of its own."""
    command = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool=prefork"]
    command += ["--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle"]
    command += ["--hostname", f"{name}@%h"]
    with (folder / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=folder,
            env={**os.environ, **env, "PYTHONPATH": str(folder)},
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)


def sweep_interval() -> float:
    """How often the workers look for tasks whose visibility timeout passed: every second as
    the test asks, or every 100 s, whatever it asks, with a kombu older than 5.7."""
    from kombu.transport.redis import Channel

    return 1.0 if hasattr(Channel, "unacked_restore_throttle") else 100.0


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def refund_recorded(tasks: ModuleType, emulator: ClaudeEmulator, log: Path) -> tuple[str, str]:
    """Wait until the refund went through and its result is in the ledger; return the line
    it wrote and the session's id."""
    line: str = wait_for(lambda: log.exists() and log.read_text(), 60, "the refund")
    (session_id,) = emulator.session_ids()
    (use,) = [e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use"]
    wait_for(lambda: tasks.ledger.entry(session_id, use["id"]).finished, 30, "the record")
    return line, session_id


def assert_one_refund(emulator: ClaudeEmulator, session_id: str, log: Path, line: str) -> None:
    assert log.read_text().splitlines() == [line.strip()]  # one refund, by the killed process
    assert emulator.session_ids() == [session_id]  # the redelivered task continued it
    answers = [e for e in emulator.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert len(answers) == 1
    assert "refunded 5 on 7" in str(answers[0]["content"])


def test_a_task_whose_pool_process_is_killed_after_its_refund_refunds_once_and_answers(
    project: dict[str, str], emulator: ClaudeEmulator, gate: Gate, tmp_path: Path
) -> None:
    log = Path(project["PAYMENTS_LOG"])
    worker = start_worker(tmp_path, project, "first")
    try:
        tasks = importlib.import_module("tasks")
        pending = tasks.answer.delay(ticket_id(), "Refund 5 on order 7, please.")
        line, session_id = refund_recorded(tasks, emulator, log)
        child = int(line.split()[2])
        assert child != worker.pid  # the pool process ran the task, not the worker's main one
        os.kill(child, signal.SIGKILL)
        gate.opened.set()
        # The worker gives the task back to the broker, and a fresh pool process runs it.
        assert pending.get(timeout=90, propagate=True) == ANSWER
    finally:
        stop(worker)
    assert_one_refund(emulator, session_id, log, line)


def test_a_task_whose_whole_worker_is_killed_after_its_refund_is_finished_by_a_new_worker(
    project: dict[str, str], emulator: ClaudeEmulator, gate: Gate, tmp_path: Path
) -> None:
    log = Path(project["PAYMENTS_LOG"])
    tasks = importlib.import_module("tasks")
    visibility = tasks.app.conf.broker_transport_options.get("visibility_timeout", 3600)
    run_timeout = int(DURATIONS["RUN_TIMEOUT = 600"].rsplit(" ", 1)[1])
    # Longer than a run, or a second worker would start the task while the first still runs
    # it; short here, as the block's shortened durations make it.
    assert run_timeout < visibility <= 60, f"the visibility timeout is {visibility} s"
    first = start_worker(tmp_path, project, "first")
    second = None
    try:
        pending = tasks.answer.delay(ticket_id(), "Refund 5 on order 7, please.")
        line, session_id = refund_recorded(tasks, emulator, log)
        assert int(line.split()[2]) != first.pid  # the pool process ran the task
        os.killpg(first.pid, signal.SIGKILL)  # the worker, its pool: nothing gives it back
        first.wait(30)
        gate.opened.set()
        second = start_worker(tmp_path, project, "second")
        # The task comes back once its visibility timeout has passed (it was delivered before
        # the kill), at the new worker's next sweep, and runs within its own deadline.
        waited = visibility + sweep_interval() + run_timeout
        assert pending.get(timeout=waited, propagate=True) == ANSWER
    finally:
        stop(first)
        if second is not None:
            stop(second)
    assert_one_refund(emulator, session_id, log, line)
