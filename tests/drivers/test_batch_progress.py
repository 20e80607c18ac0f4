"""``run_batch(..., progress=)``: how the batch stands is reported on the calling thread -
before any prompt is done (what runs), as prompts finish, and at the end; a callback that
raises stops the batch as Ctrl-C does."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from req_managed_agents import run_batch
from req_managed_agents.model import Progress
from req_managed_agents.testing import ClaudeEmulator, Turn
from tests.support.tools import CountingTools


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator([Turn(text="done")]) as emulator:
        yield emulator


def test_the_batch_reports_what_runs_before_its_first_result_and_each_finish(
    emulator: ClaudeEmulator,
) -> None:
    release = threading.Event()
    emulator.before_requests(
        "POST",
        r"/v1/sessions/[^/]+/events",
        lambda: release.wait(30),
        times=3,
        where=lambda request: b"user.message" in request.raw_body,
    )
    heard: list[tuple[Progress, threading.Thread]] = []

    def progress(report: Progress) -> None:
        heard.append((report, threading.current_thread()))
        if report.what == "batch: 2 running":  # both workers wait on a held prompt
            release.set()

    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider() as provider:
        outcomes = run_batch(
            provider,
            ["a", "b", "c"],
            handler=CountingTools(),
            max_workers=2,
            progress=progress,
            timeout=30,
            **ids,
        )
    assert [o.error for o in outcomes] == [None] * 3
    reports = [report for report, _ in heard]
    assert {thread for _, thread in heard} == {threading.current_thread()}
    assert {(r.total, r.unit) for r in reports} == {(3, "prompt done")}
    running = next(r for r in reports if r.what == "batch: 2 running")
    assert running.done == 0  # seen before the first result
    assert [r.done for r in reports] == sorted(r.done or 0 for r in reports)
    assert (reports[-1].done, reports[-1].what) == (3, "batch: 0 running")


def test_a_progress_callback_that_raises_stops_the_batch(emulator: ClaudeEmulator) -> None:
    class Enough(Exception):
        pass

    def impatient(report: Progress) -> None:
        raise Enough

    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider() as provider, pytest.raises(Enough):
        run_batch(provider, ["a"], handler=CountingTools(), progress=impatient, **ids)
