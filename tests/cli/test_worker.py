"""``rma worker``: the environment key from the environment or a file (never a flag's
value), one line per served item, a clean exit on SIGTERM, and one ``rma:`` line with the
project's exit status for everything that stops it from starting."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.cli._worker import _BASH_LIMITS, _bash_limit
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from req_managed_agents.toolset import ShellLimits
from req_managed_agents.toolset._sandbox import _bwrap_prefix
from tests.support.cli import fails, one_error_line, rma

SELF_HOSTED = {"type": "self_hosted"}

pytestmark = pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")


@pytest.fixture
def hosted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ClaudeEmulator, str]]:
    """An emulator with a self-hosted environment that ``ANTHROPIC_BASE_URL`` points at."""
    with ClaudeEmulator(ping_interval=0.2) as emulator:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_ENVIRONMENT_KEY", raising=False)
        yield emulator, emulator.add_environment("sandbox", config=SELF_HOSTED)


def test_it_serves_with_a_key_from_a_file_and_stops_cleanly_on_sigterm(
    hosted: tuple[ClaudeEmulator, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator, environment_id = hosted
    key_file = tmp_path / "key"
    key_file.write_text(emulator.environment_key(environment_id) + "\n")
    command = "echo hi > hi.txt; ulimit -Hn >> hi.txt"
    script = [Turn(server_tool_calls=[call("bash", command=command)]), "done"]
    with emulator.provider() as provider:
        session = provider.client.create_session(emulator.add_agent(script), environment_id)
        message = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
        provider.client.send_events(session["id"], [message])

    returned = threading.Event()

    def stop_when_served() -> None:
        # The signal goes to the main thread, where rma's handler is installed meanwhile.
        emulator.wait_until(lambda: _stopped(emulator) or returned.is_set(), 20)
        if not returned.is_set():
            os.kill(os.getpid(), signal.SIGTERM)

    stopper = threading.Thread(target=stop_when_served)
    stopper.start()
    try:
        code, out = rma(
            capsys,
            "worker",
            *("--environment-id", environment_id, "--workdir", str(tmp_path / "work")),
            *("--environment-key-file", str(key_file), "--idle-grace", "0.2"),
            *("--bash-limit", "open_files=77", "--bash-limit", "cpu_seconds=none"),
        )
    finally:
        returned.set()
        stopper.join(5)
    assert code == 0
    assert out.startswith("work_")
    assert f"session {session['id']}: stopped" in out
    assert (tmp_path / "work" / session["id"] / "hi.txt").read_text() == "hi\n77\n"
    assert "envkey_" not in out + capsys.readouterr().err


def _stopped(emulator: ClaudeEmulator) -> bool:
    return any(item["state"] == "stopped" for item in emulator.work_items())


def test_no_environment_key_is_a_configuration_error(
    hosted: tuple[ClaudeEmulator, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, environment_id = hosted
    line = fails(
        capsys, 3, "worker", "--environment-id", environment_id, "--workdir", str(tmp_path)
    )
    assert "no environment key: set ANTHROPIC_ENVIRONMENT_KEY" in line


def test_a_key_file_that_cannot_be_read_is_a_usage_error(
    hosted: tuple[ClaudeEmulator, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, environment_id = hosted
    (tmp_path / "empty").write_text("\n")
    for name, said in (("missing", "No such file"), ("empty", "is empty")):
        line = fails(
            capsys,
            2,
            *("worker", "--environment-id", environment_id, "--workdir", str(tmp_path)),
            *("--environment-key-file", str(tmp_path / name)),
        )
        assert said in line


def test_a_refused_environment_key_says_which_key_to_check(
    hosted: tuple[ClaudeEmulator, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, environment_id = hosted
    monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", "envkey_wrong")
    code = _cli.main(["worker", "--environment-id", environment_id, "--workdir", str(tmp_path)])
    err = capsys.readouterr().err
    # it said what it serves, where it stood when it polled, then why it stopped
    started, polling, line = err.splitlines()
    assert started.startswith(f"rma worker: serving {environment_id}")
    assert "0 of 4 sessions, waiting for work, 0 items done" in polling
    one_error_line(code, 4, line)
    assert "check ANTHROPIC_ENVIRONMENT_KEY" in line
    assert "envkey_wrong" not in err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--workdir", "w"], "--environment-id"),
        (["--environment-id", "env_1"], "--workdir"),
        (["--environment-id", "env_1", "--workdir", "w", "--max-sessions", "0"], "at least 1"),
        (["--environment-id", "env_1", "--workdir", "w", "--sandbox", "docker"], "docker"),
        (["--environment-id", "env_1", "--workdir", "w", "--idle-grace", "-1"], "negative"),
        (["--environment-id", "env_1", "--workdir", "w", "--environment-key", "k"], "unrecognized"),
        (["--environment-id", "env_1", "--workdir", "w", "--tools", "nomodule"], "MODULE:ATTR"),
        (["--environment-id", "env_1", "--workdir", "w", "--bash-limit", "memory=1G"], "memory"),
        (["--environment-id", "env_1", "--workdir", "w", "--bash-limit", "processes=1.5"], "1.5"),
    ],
)
def test_bad_flags_are_usage_errors(
    hosted: tuple[ClaudeEmulator, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    said: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", "envkey_x")
    monkeypatch.chdir(tmp_path)
    assert said in fails(capsys, 2, "worker", *flags)


def test_a_sandbox_that_cannot_work_is_a_configuration_error(
    hosted: tuple[ClaudeEmulator, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if _bwrap_prefix(str(tmp_path), network=False)[1] is None:
        pytest.skip("bwrap works here: --sandbox bwrap is taken")
    emulator, environment_id = hosted
    monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", emulator.environment_key(environment_id))
    line = fails(
        capsys,
        3,
        *("worker", "--environment-id", environment_id, "--workdir", str(tmp_path)),
        *("--sandbox", "bwrap"),
    )
    assert "bwrap" in line


def test_a_bash_limit_out_of_range_is_a_configuration_error(
    hosted: tuple[ClaudeEmulator, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emulator, environment_id = hosted
    monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", emulator.environment_key(environment_id))
    line = fails(
        capsys,
        3,
        *("worker", "--environment-id", environment_id, "--workdir", str(tmp_path)),
        *("--bash-limit", "processes=0"),
    )
    assert "ShellLimits.processes" in line


def test_every_field_of_shell_limits_has_its_bash_limit() -> None:
    assert tuple(field.name for field in fields(ShellLimits)) == _BASH_LIMITS
    assert _bash_limit("address_space=4G") == ("address_space", 4 * 1024**3)
    assert _bash_limit("file_size=10M") == ("file_size", 10 * 1024**2)
    assert _bash_limit("open_files=none") == ("open_files", None)
