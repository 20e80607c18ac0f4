"""``EnvironmentWorker(progress=)``: between items the worker reports that it waits for
work, with the sessions it serves and the items it is done with, on its polling thread;
a full worker says every slot is busy."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.model import Progress
from tests.worker.conftest import Hosted, Running


def test_the_worker_reports_its_waits_and_counts_the_items_it_served(
    hosted: Callable[..., Hosted], running: Callable[..., Running], tmp_path: Path
) -> None:
    world = hosted(["done"])
    heard: list[tuple[Progress, str]] = []
    lock = threading.Lock()

    def progress(report: Progress) -> None:
        with lock:
            heard.append((report, threading.current_thread().name))

    def reports() -> list[Progress]:
        with lock:
            return [report for report, _ in heard]

    worker = running(world, tmp_path, sandbox="none", max_sessions=1, progress=progress)
    waiting = f"worker on {world.environment_id}: 0 of 1 sessions, waiting for work"
    assert world.emulator.wait_until(lambda: any(r.what == waiting for r in reports()), 20)
    session_id = world.session(world.agent(["done"]))
    assert world.emulator.wait_until(lambda: worker.outcomes(session_id) == ["stopped"], 30)
    assert world.emulator.wait_until(lambda: reports()[-1].done == 1, 20)
    worker.halt()
    seen = reports()
    assert {name for _, name in heard} == {"test-worker"}  # the thread that runs the worker
    assert {(r.total, r.unit) for r in seen} == {(None, "item done")}
    assert [r.done for r in seen] == sorted(r.done or 0 for r in seen)
    assert seen[-1].what == waiting
    busy = f"worker on {world.environment_id}: 1 of 1 sessions, every session slot busy"
    assert any(r.what == busy for r in seen)
    assert seen[0].elapsed <= seen[-1].elapsed


def test_progress_must_be_callable(hosted: Callable[..., Hosted], tmp_path: Path) -> None:
    world = hosted()
    with pytest.raises(ConfigurationError, match="progress must be a callable"):
        world.worker(tmp_path, sandbox="none", progress="yes")
