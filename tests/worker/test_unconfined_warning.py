"""A worker whose ``bash`` runs unconfined says so once - one log record, for the whole
worker, not once more per session it serves - and says why: ``sandbox="none"`` was asked
for, bwrap is not installed, or bwrap is there but may not create its user namespaces."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from req_managed_agents.toolset import _sandbox
from req_managed_agents.worker import EnvironmentWorker

SELF_HOSTED = {"type": "self_hosted"}


def _fake_bwrap(directory: Path, script: str) -> None:
    directory.mkdir()
    fake = directory / "bwrap"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    (directory / "bash").symlink_to(_sandbox.shell_path())


@pytest.fixture(params=["asked", "missing", "refused"])
def unconfined_because(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """The sandbox a worker asks for, and the words that must say why bash is unconfined."""
    if request.param == "asked":
        return "none", "sandbox='none' was asked for"
    system = tmp_path / "system"
    if request.param == "missing":
        system.mkdir()
        (system / "bash").symlink_to(_sandbox.shell_path())
        monkeypatch.setattr(_sandbox, "SYSTEM_PATH", str(system))
        return "auto", "bwrap is not installed"
    said = "bwrap: setting up uid map: Permission denied"
    _fake_bwrap(system, f"echo '{said}' >&2; exit 1")
    monkeypatch.setattr(_sandbox, "SYSTEM_PATH", f"{system}:/usr/bin:/bin")
    return "auto", "user namespaces"


def test_an_unconfined_worker_says_so_once_and_why(
    unconfined_because: tuple[str, str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    sandbox, why = unconfined_because
    provider = ClaudeManagedAgents("sk-test", base_url="http://127.0.0.1:9")
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING, logger="req_managed_agents"):
            worker = EnvironmentWorker(
                provider,
                "env_1",
                environment_key="envkey-test",
                workdir=tmp_path / "work",
                sandbox=sandbox,  # type: ignore[arg-type]
            )
            for number in range(3):  # three sessions served
                folder = tmp_path / "work" / f"sesn_{number}"
                folder.mkdir()
                assert getattr(worker.settings.toolset(folder), "sandbox", None) == "none"
    said = [r.getMessage() for r in caplog.records if "UNCONFINED" in r.getMessage()]
    assert len(said) == 1, said
    assert why in said[0]
    if sandbox == "auto":
        assert "was asked for" not in said[0]
    assert [str(w.message) for w in warned] == []  # the log record is the one channel
    assert worker.settings.sandbox == "none"


def test_rma_worker_prints_the_warning_once_however_many_sessions_it_serves(
    tmp_path: Path,
) -> None:
    script = [Turn(server_tool_calls=[call("bash", command="echo hi")]), "done"]
    with ClaudeEmulator(script, ping_interval=0.2) as emulator:
        environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
        with emulator.provider() as provider:
            agent_id = emulator.add_agent()
            for _ in range(2):
                session = provider.client.create_session(agent_id, environment_id)
                prompt = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
                provider.client.send_events(session["id"], [prompt])
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": emulator.base_url,
            "ANTHROPIC_ENVIRONMENT_KEY": emulator.environment_key(environment_id),
        }
        command = [sys.executable, "-m", "req_managed_agents", "worker", "--sandbox", "none"]
        command += ["--environment-id", environment_id, "--workdir", str(tmp_path / "work")]
        command += ["--idle-grace", "0.2"]
        worker = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            emulator.wait_until(
                lambda: [i["state"] for i in emulator.work_items()] == ["stopped"] * 2, 60
            )
        finally:
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert out.count(": stopped") == 2, out
    warned = [line for line in err.splitlines() if "UNCONFINED" in line]
    assert len(warned) == 1, err
    assert "sandbox='none' was asked for" in warned[0]
    assert "UnsandboxedWarning" not in err  # no second copy through warnings.warn
    assert "_sandbox.py" not in err  # nor the library's source line


def test_a_toolset_built_alone_warns_once_through_warnings_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from req_managed_agents.toolset import AgentToolset, UnsandboxedWarning

    with pytest.warns(UnsandboxedWarning, match="sandbox='none' was asked for") as warned:
        toolset = AgentToolset(tmp_path, sandbox="none")
    assert len(warned) == 1
    assert warned[0].filename == __file__  # it points at the caller's line
    assert toolset.unconfined_because == "sandbox='none' was asked for"
    assert "UNCONFINED" not in caplog.text
