"""The README's Celery task on a real worker and a real Redis: the worker process running the
task is SIGKILLed after the refund went through, the broker delivers the task again, and the
redelivered task continues the same session - one refund, the agent's answer returned.

The task module is the README's block as written; only the Redis address changes, to a
private ``redis-server``. ``payments`` is the user's own module the block imports: here it
appends each refund, with the process that made it, to a file the test reads.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.readme import python_blocks
from tests.support.redis import RedisServer

pytest.importorskip("celery")

EXAMPLE_REDIS = "redis://redis.internal:6379"
ANSWER = "Refunded 5 on order 7."
PAYMENTS = """
import os

def refund(order_id, amount):
    with open(os.environ["PAYMENTS_LOG"], "a") as log:
        log.write(f"{order_id} {amount} {os.getpid()}\\n")
    return f"refunded {amount} on {order_id}"
"""


def celery_block() -> str:
    (block,) = [b for b in python_blocks() if "from celery import Celery" in b.code]
    return block.code


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    # The answer comes seconds after the refund: time for the kill to land in between.
    script = [
        Turn(tool_calls=[call("refund", order_id="7", amount=5)]),
        Turn(text=ANSWER, delay=4.0),
    ]
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
    environment both the worker and this test import it under."""
    redis = redis_server.url.rsplit("/", 1)[0]
    (tmp_path / "tasks.py").write_text(celery_block().replace(EXAMPLE_REDIS, redis))
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


def start_worker(folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool=prefork"]
    command += ["--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle"]
    with (folder / "worker.log").open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=folder,
            env={**os.environ, **env, "PYTHONPATH": str(folder)},
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_task_killed_after_its_refund_refunds_once_and_answers(
    project: dict[str, str], emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    log = Path(project["PAYMENTS_LOG"])
    worker = start_worker(tmp_path, project)
    try:
        tasks = importlib.import_module("tasks")
        pending = tasks.answer.delay("T-7", "Refund 5 on order 7, please.")
        line = wait_for(lambda: log.exists() and log.read_text(), 60, "the refund")
        (session_id,) = emulator.session_ids()
        (use,) = [e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use"]
        # The refund's result is in the ledger: the kill lands after the tool ran, while the
        # worker waits for the agent's answer (which takes seconds to come).
        wait_for(lambda: tasks.ledger.entry(session_id, use["id"]).finished, 10, "the record")
        child = int(line.split()[2])
        assert child != worker.pid  # the pool process ran the task, not the worker's main one
        os.kill(child, signal.SIGKILL)
        # The worker gives the task back to the broker, and a fresh pool process runs it.
        assert pending.get(timeout=90, propagate=True) == ANSWER
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
    assert log.read_text().splitlines() == [line.strip()]  # one refund, by the killed process
    assert emulator.session_ids() == [session_id]  # the redelivered task continued it
    answers = [e for e in emulator.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert len(answers) == 1
    assert "refunded 5 on 7" in str(answers[0]["content"])
