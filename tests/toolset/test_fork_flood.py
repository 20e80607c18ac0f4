"""A fork flood in one session's bash fails inside its call, while the worker - and,
inside the sandbox, the other sessions - go on. Run in a worker process of its own,
capped from outside (see flood_worker.py), so a defect cannot flood the machine."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from req_managed_agents.toolset._sandbox import SYSTEM_PATH
from tests.toolset import flood_worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest, bwrap_problem: str | None) -> str:
    if request.param == "bwrap" and bwrap_problem is not None:
        pytest.skip(f"bwrap cannot run here: {bwrap_problem}")
    return str(request.param)


def test_a_fork_flood_fails_inside_its_call_and_the_rest_goes_on(sandbox: str) -> None:
    python = shutil.which("python3", path=SYSTEM_PATH)
    if python is None or not python.startswith("/usr/"):
        pytest.skip("the flood needs a python3 under /usr, where the sandbox shows it")
    done = subprocess.run(
        [sys.executable, "-m", "tests.toolset.flood_worker", sandbox, python],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=4 * flood_worker.WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if "skip" in outcome:
        pytest.skip(outcome["skip"])
    assert "error" not in outcome, outcome
    flood_text, flood_failed = outcome["flood"]
    forked = re.match(r"forked (\d+), then: Resource temporarily unavailable", flood_text)
    assert forked is not None, flood_text
    assert int(forked.group(1)) < outcome["limit"]
    assert flood_failed
    assert outcome["full"]
    assert outcome["worker_spawned"]
    if sandbox == "bwrap":
        assert outcome["other"] == ["one\ntwo", False]
    assert outcome["after"] == ["again", False]
