"""bash, unconfined and (where bwrap works) sandboxed: output, exit status, bounds,
cancellation of everything the command started, and an environment with no secrets."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from req_managed_agents.toolset import AgentToolset
from tests.toolset.conftest import call

MakeShell = Callable[..., AgentToolset]


def test_output_is_stdout_then_stderr(make_shell: MakeShell) -> None:
    result = call(make_shell(), "bash", {"command": "echo out; echo err >&2"})
    assert (result.content, result.is_error) == ("out\nerr", False)


def test_a_failing_command_is_an_error_with_stderr_first_and_its_exit_code(
    make_shell: MakeShell,
) -> None:
    result = call(make_shell(), "bash", {"command": "echo out; echo why >&2; exit 3"})
    assert (result.content, result.is_error) == ("why\nout\n[exit code 3]", True)


def test_no_output_says_so(make_shell: MakeShell) -> None:
    assert call(make_shell(), "bash", {"command": "true"}).content == "(no output)"


def test_runs_in_the_workdir_and_keeps_no_state_between_calls(
    make_shell: MakeShell, workdir: Path
) -> None:
    toolset = make_shell()
    (workdir / "sub").mkdir()
    assert call(toolset, "bash", {"command": "cd sub && pwd"}).content == f"{workdir}/sub"
    assert call(toolset, "bash", {"command": "pwd"}).content == str(workdir)
    call(toolset, "bash", {"command": "echo made > made.txt"})
    assert (workdir / "made.txt").read_text() == "made\n"


def test_terminal_escapes_are_removed(make_shell: MakeShell) -> None:
    result = call(make_shell(), "bash", {"command": r"printf '\033[31mred\033[0m\n'"})
    assert result.content == "red"


def test_the_environment_is_built_not_inherited(
    make_shell: MakeShell, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RMA_TOOLSET_TEST_SECRET", "s3cr3t-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    toolset = make_shell(env={"EXTRA_SETTING": "given"})
    env = dict(
        line.split("=", 1)
        for line in call(toolset, "bash", {"command": "env"}).content.splitlines()
        if "=" in line
    )
    assert "s3cr3t-value" not in str(env)
    assert "sk-ant-test-key" not in str(env)
    assert env["HOME"] == str(workdir)
    assert env["EXTRA_SETTING"] == "given"
    assert env["TERM"] == "dumb"
    assert set(env) <= {
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "HOME",
        "TERM",
        "EXTRA_SETTING",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
    }


def test_a_command_past_its_timeout_is_stopped(make_shell: MakeShell) -> None:
    toolset = make_shell()
    started = time.monotonic()
    result = call(toolset, "bash", {"command": "echo started; sleep 30", "timeout_ms": 300})
    assert time.monotonic() - started < 5
    assert result.is_error
    assert result.content == "started\n[command timed out after 0.3s; it was stopped]"


def test_bash_timeout_caps_the_timeout_a_call_asks_for(make_shell: MakeShell) -> None:
    toolset = make_shell(bash_timeout=0.5)
    started = time.monotonic()
    result = call(toolset, "bash", {"command": "sleep 30", "timeout_ms": 60_000})
    assert time.monotonic() - started < 5
    assert "timed out after 0.5s" in result.content


def test_cancelling_a_call_kills_everything_it_started(
    make_shell: MakeShell, workdir: Path
) -> None:
    toolset = make_shell()
    cancelled = threading.Event()
    threading.Timer(0.5, cancelled.set).start()
    started = time.monotonic()
    result = call(
        toolset,
        "bash",
        {"command": "(sleep 1.5; echo late > late.txt) & sleep 30"},
        cancelled=cancelled,
    )
    assert time.monotonic() - started < 5
    assert result.is_error
    assert "[cancelled" in result.content
    time.sleep(2)
    assert not (workdir / "late.txt").exists(), "a background job survived the cancellation"


def test_background_jobs_do_not_outlive_the_call(make_shell: MakeShell, workdir: Path) -> None:
    result = call(make_shell(), "bash", {"command": "(sleep 1; echo late > late.txt) & echo ok"})
    assert result.content == "ok"
    time.sleep(1.5)
    assert not (workdir / "late.txt").exists()


def test_output_beyond_max_output_is_cut_with_a_note(make_shell: MakeShell) -> None:
    toolset = make_shell(max_output=1000)
    result = call(toolset, "bash", {"command": "head -c 5000000 /dev/zero | tr '\\0' a"})
    assert not result.is_error
    assert result.content.startswith("a" * 1000 + "\n\n... [output truncated at 1000")
    assert len(result.content) < 1200


def test_restart_has_nothing_to_restart_and_a_command_is_required(
    make_shell: MakeShell,
) -> None:
    toolset = make_shell()
    assert call(toolset, "bash", {"restart": True}).content == "bash session restarted"
    missing = call(toolset, "bash", {})
    assert (missing.content, missing.is_error) == ("bash: command is required", True)
    ran = call(toolset, "bash", {"restart": True, "command": "echo again"})
    assert ran.content == "again"


@pytest.mark.parametrize(
    ("input", "expected"),
    [
        ({"command": 5}, "command must be a string"),
        ({"command": "true", "timeout_ms": "100"}, "timeout_ms must be an integer"),
        ({"command": "true", "timeout_ms": True}, "timeout_ms must be an integer"),
        ({"command": "true", "restart": "no"}, "restart must be true or false"),
        ({"command": "echo a\x00b"}, "NUL"),
    ],
)
def test_bad_input_is_refused(
    make_shell: MakeShell, input: dict[str, object], expected: str
) -> None:
    result = call(make_shell(), "bash", input)
    assert result.is_error
    assert expected in result.content
