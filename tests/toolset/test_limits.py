"""The limits of bash, unconfined and (where bwrap works) sandboxed: set soft and hard
before the command runs, felt by what it starts, and refused when they make no sense.
(The fork flood, which needs a process of its own, is in test_fork_flood.py.)"""

from __future__ import annotations

import logging
import os
import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.toolset import (
    DEFAULT_SHELL_LIMITS,
    AgentToolset,
    ShellLimits,
    _limits,
    _toolset,
)
from tests.toolset.conftest import call, unconfined

MakeShell = Callable[..., AgentToolset]
MIB = 1024 * 1024
SMALL = ShellLimits(
    processes=200, address_space=512 * MIB, file_size=8 * MIB, open_files=64, cpu_seconds=30
)


def _in_force(toolset: AgentToolset) -> list[str]:
    """Each limit a command sees, as ``soft hard``, in ShellLimits' order."""
    command = "for flag in u v f n t; do echo $(ulimit -S$flag) $(ulimit -H$flag); done"
    result = call(toolset, "bash", {"command": command})
    assert not result.is_error, result.content
    return result.content.splitlines()


def _inherited(name: str, wanted: int, unit: int = 1) -> str:
    hard = resource.getrlimit(getattr(resource, name))[1]
    value = wanted if hard == resource.RLIM_INFINITY or hard < 0 else min(wanted, hard)
    return f"{value // unit} {value // unit}"


def test_the_limits_are_set_soft_and_hard_before_the_command_runs(
    make_shell: MakeShell,
) -> None:
    assert _in_force(make_shell(limits=SMALL)) == [
        "200 200",
        "524288 524288",
        "8192 8192",
        "64 64",
        "30 30",
    ]


def test_the_defaults_apply_unless_told_and_none_leaves_the_limits_alone(
    make_shell: MakeShell,
) -> None:
    assert make_shell().handle_tool_call  # the default toolset...
    assert _in_force(make_shell()) == [  # ...under the default limits
        _inherited("RLIMIT_NPROC", 1024),
        _inherited("RLIMIT_AS", 8 * 1024 * MIB, 1024),
        _inherited("RLIMIT_FSIZE", 4 * 1024 * MIB, 1024),
        _inherited("RLIMIT_NOFILE", 4096),
        _inherited("RLIMIT_CPU", 3600),
    ]
    assert ShellLimits() == DEFAULT_SHELL_LIMITS
    unlimited = _in_force(make_shell(limits=None))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert unlimited[3] == f"{soft} {hard}"
    partial = _in_force(make_shell(limits=ShellLimits(processes=None, open_files=50)))
    assert partial[3] == "50 50"
    assert partial[0] == _in_force(make_shell(limits=None))[0]


def test_a_command_cannot_raise_its_limits(make_shell: MakeShell) -> None:
    toolset = make_shell(limits=SMALL)
    if toolset.sandbox == "none" and os.getuid() == 0:
        pytest.skip("root outside the sandbox may raise any limit")
    result = call(toolset, "bash", {"command": "ulimit -n 65 && ulimit -Hn"})
    assert result.is_error
    assert "cannot modify limit" in result.content


def test_an_oversized_allocation_fails_inside_the_call(make_shell: MakeShell) -> None:
    toolset = make_shell(limits=ShellLimits(address_space=256 * MIB))
    command = "x=$(head -c 600M /dev/zero | tr '\\0' a); echo ${#x}"
    result = call(toolset, "bash", {"command": command, "timeout_ms": 120_000})
    assert result.is_error
    assert "cannot allocate" in result.content
    assert "timed out" not in result.content
    assert call(toolset, "bash", {"command": "echo still here"}).content == "still here"


def test_a_file_past_file_size_is_stopped_at_it(make_shell: MakeShell, workdir: Path) -> None:
    toolset = make_shell(limits=ShellLimits(file_size=MIB))
    result = call(toolset, "bash", {"command": "head -c 3M /dev/zero > big.bin"})
    assert result.is_error
    assert "File size limit exceeded" in result.content
    assert (workdir / "big.bin").stat().st_size == MIB


def test_open_files_past_the_limit_fail(make_shell: MakeShell) -> None:
    toolset = make_shell(limits=ShellLimits(open_files=16))
    command = "for n in $(seq 40); do exec {fd}</dev/null || { echo at $n; exit 7; }; done"
    result = call(toolset, "bash", {"command": command})
    assert result.is_error
    assert "[exit code 7]" in result.content


def test_cpu_seconds_stop_a_spinning_process(make_shell: MakeShell) -> None:
    toolset = make_shell(limits=ShellLimits(cpu_seconds=1))
    result = call(toolset, "bash", {"command": "while :; do :; done", "timeout_ms": 120_000})
    assert result.is_error
    assert "timed out" not in result.content
    # unconfined the shell dies of SIGKILL at the hard limit; bwrap reports it as 128 + 9
    assert result.content.endswith(("[killed by signal 9]", "[exit code 137]")), result.content


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("processes", 0, "ShellLimits.processes must be None or a whole number of at least 1,"),
        ("processes", True, "ShellLimits.processes"),
        ("address_space", 4096, "at least 1048576 bytes, not 4096"),
        ("file_size", "1G", "ShellLimits.file_size"),
        ("open_files", -1, "ShellLimits.open_files"),
        ("cpu_seconds", 1.5, "ShellLimits.cpu_seconds"),
    ],
)
def test_bad_limits_are_refused_by_name(field: str, value: object, said: str) -> None:
    with pytest.raises(ConfigurationError, match=said):
        ShellLimits(**{field: value})  # type: ignore[arg-type]


def test_limits_that_are_not_shell_limits_are_refused(workdir: Path) -> None:
    with pytest.raises(ConfigurationError, match="limits must be a ShellLimits or None"):
        AgentToolset(workdir, sandbox="none", limits={"processes": 10})  # type: ignore[arg-type]


def test_limits_need_bash(workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other_shell = tmp_path / "sh"
    other_shell.write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    other_shell.chmod(0o755)
    monkeypatch.setattr(_toolset, "shell_path", lambda: str(other_shell))
    with pytest.raises(ConfigurationError, match="the shell limits need bash"):
        AgentToolset(workdir, sandbox="none")
    toolset = unconfined(workdir, limits=None)
    assert call(toolset, "bash", {"command": "echo plain sh"}).content == "plain sh"


@pytest.mark.parametrize("uid", [0, 1000])
def test_root_is_told_that_processes_are_not_bounded(
    workdir: Path, uid: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_limits.os, "getuid", lambda: uid)
    _limits._warn_root_processes.cache_clear()
    with caplog.at_level(logging.WARNING, logger=_limits.logger.name):
        unconfined(workdir)
        unconfined(workdir)
    said = [r.getMessage() for r in caplog.records if "processes" in r.getMessage()]
    assert len(said) == (1 if uid == 0 else 0), said
    _limits._warn_root_processes.cache_clear()
