"""Long waits show progress where a person waits: real ``rma`` processes on a
pseudo-terminal draw one live line - what they wait for, the counts, the time so far -
redrawn in place; the same commands writing to pipes print plain lines instead, without a
carriage return or an escape sequence."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn
from tests.support.terminal import Terminal, plain_process

REDRAW = "\r\x1b[K"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # what a log file must not hold
HARNESS_WAIT = re.compile(r"waiting for harness \S+ to be READY \(CREATING\), (\d+) polls?, \d+ s")
ENDPOINT_WAIT = re.compile(r"waiting for endpoint DEFAULT of harness \S+ to be READY")


def _drawn(screen: str) -> list[str]:
    """Each state of the live line, in the order drawn."""
    return [part.split("\r")[0] for part in screen.split(REDRAW)[1:]]


def _lines(screen: str) -> list[str]:
    """The screen's lines as they read once drawn: what follows the last erase of each."""
    return [line.split(REDRAW)[-1] for line in screen.split("\r\n")]


# -- rma provision: an AgentCore harness coming up -----------------------------------------


@pytest.fixture
def harness_spec(agentcore_env: Any, tmp_path: Path) -> list[str]:
    """``rma provision`` arguments for a harness that is CREATING for four polls, then READY
    with its endpoint a poll or so later."""
    agentcore_env.harness_statuses(["CREATING"] * 4 + ["READY"])
    agentcore_env.delay_default_endpoints(0.5)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"agent": {"name": "ops", "model": "anthropic.claude-v1"}}))
    role = f"arn:aws:iam::{agentcore_env.account_id}:role/Harness"
    return [
        *("provision", str(spec), "--provider", "agentcore"),
        *("--execution-role-arn", role, "--store", str(tmp_path / "store.json")),
    ]


def test_provisioning_a_harness_draws_a_live_line_on_a_terminal(harness_spec: list[str]) -> None:
    with Terminal(*harness_spec) as terminal:
        assert terminal.wait() == 0, terminal.screen
        screen = terminal.screen
    drawn = _drawn(screen)
    polls = [int(m.group(1)) for line in drawn if (m := HARNESS_WAIT.search(line))]
    assert len(polls) >= 3, drawn
    assert polls == sorted(set(polls)), drawn  # each poll counted once, in order
    assert any(ENDPOINT_WAIT.search(line) for line in drawn), drawn
    handle = json.loads(screen[screen.index("{") :].replace("\r\n", "\n"))
    assert handle["kind"] == "agentcore"
    assert "waiting for" not in screen[screen.index("{") :]  # the line is gone by then


def test_provisioning_a_harness_logs_plain_lines_without_a_terminal(
    harness_spec: list[str],
) -> None:
    done = plain_process(*harness_spec)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kind"] == "agentcore"
    assert HARNESS_WAIT.search(done.stderr), done.stderr
    assert ENDPOINT_WAIT.search(done.stderr), done.stderr
    assert not CONTROL.search(done.stderr), repr(done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == len(set(lines))  # a line is written when there is news, once


# -- rma batch: before the first result --------------------------------------------------


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator([Turn(text="done")], ping_interval=0.2) as emulator:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.delenv("ANTHROPIC_ENVIRONMENT_KEY", raising=False)
        yield emulator


def _batch_args(emulator: ClaudeEmulator, tmp_path: Path) -> list[str]:
    prompts = tmp_path / "prompts.jsonl"
    lines = [json.dumps({"prompt": f"p{n}", "id": str(n)}) for n in (1, 2, 3)]
    prompts.write_text("\n".join(lines) + "\n")
    return [
        *("batch", str(prompts), "-o", str(tmp_path / "out.jsonl"), "--workers", "2"),
        *("--agent-id", emulator.add_agent(), "--environment-id", emulator.add_environment()),
    ]


def _hold_prompts(emulator: ClaudeEmulator) -> threading.Event:
    """Hold every posted prompt until the returned event is set: the batch waits with two
    prompts running and none done for as long as the test looks."""
    release = threading.Event()
    emulator.before_requests(
        "POST",
        r"/v1/sessions/[^/]+/events",
        lambda: release.wait(60),
        times=3,
        where=lambda request: b"user.message" in request.raw_body,
    )
    return release


def test_a_batch_shows_what_runs_before_its_first_result(
    claude: ClaudeEmulator, tmp_path: Path
) -> None:
    release = _hold_prompts(claude)
    with Terminal(*_batch_args(claude, tmp_path)) as terminal:
        try:
            terminal.read_until(
                lambda s: bool(re.search(r"batch: 2 running, 0/3 prompts done, \d+ s", s))
            )
        finally:
            release.set()
        assert terminal.wait() == 0, terminal.screen
        screen = terminal.screen
    assert REDRAW in screen
    assert "3 of 3 prompts succeeded" in screen
    assert re.search(r"3/3 prompts done", screen), _drawn(screen)


def test_a_batch_logs_plain_lines_without_a_terminal(
    claude: ClaudeEmulator, tmp_path: Path
) -> None:
    done = plain_process(*_batch_args(claude, tmp_path))
    assert done.returncode == 0, done.stderr
    assert "3 of 3 prompts succeeded" in done.stdout
    assert re.search(r"batch: \d running, 0/3 prompts done, \d+ s", done.stderr), done.stderr
    assert "3/3 prompts done" in done.stderr
    assert not CONTROL.search(done.stderr), repr(done.stderr)


# -- rma worker: between items -----------------------------------------------------------


def _worker_args(emulator: ClaudeEmulator, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    environment_id = emulator.add_environment("sandbox", config={"type": "self_hosted"})
    env = {**os.environ, "ANTHROPIC_ENVIRONMENT_KEY": emulator.environment_key(environment_id)}
    env.pop("ANTHROPIC_API_KEY")
    argv = ["worker", "--environment-id", environment_id, "--workdir", str(tmp_path / "work")]
    return [*argv, "--idle-grace", "0.2", "--max-sessions", "3"], env


def _queue_a_session(emulator: ClaudeEmulator, environment_id: str) -> None:
    with emulator.provider() as provider:
        session = provider.client.create_session(emulator.add_agent(), environment_id)
        prompt = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
        provider.client.send_events(session["id"], [prompt])


def test_a_worker_shows_it_waits_for_work_and_counts_what_it_served(
    claude: ClaudeEmulator, tmp_path: Path
) -> None:
    argv, env = _worker_args(claude, tmp_path)
    idle = re.compile(r"0 of 3 sessions, waiting for work, (\d) items? done, \d+ s")
    with Terminal(*argv, env=env) as terminal:
        terminal.read_until(lambda s: bool(idle.search(s)))
        _queue_a_session(claude, argv[argv.index("--environment-id") + 1])
        terminal.read_until(lambda s: [m.group(1) for m in idle.finditer(s)][-1:] == ["1"])
        terminal.signal(signal.SIGINT)
        assert terminal.wait() == 130, terminal.screen
        screen = terminal.screen
    assert REDRAW in screen
    served = [line for line in _lines(screen) if ": stopped (" in line]
    assert len(served) == 1, screen
    assert served[0].startswith("work_"), screen  # a line of its own


def test_a_worker_logs_plain_lines_without_a_terminal(
    claude: ClaudeEmulator, tmp_path: Path
) -> None:
    import subprocess
    import sys

    argv, env = _worker_args(claude, tmp_path)
    worker = subprocess.Popen(
        [sys.executable, "-m", "req_managed_agents", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _queue_a_session(claude, argv[argv.index("--environment-id") + 1])
        claude.wait_until(lambda: [i["state"] for i in claude.work_items()] == ["stopped"], 60)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert ": stopped (" in out
    assert re.search(r"0 of 3 sessions, waiting for work, 0 items done, \d+ s", err), err
    assert not CONTROL.search(err), repr(err)
