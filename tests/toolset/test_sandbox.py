"""What the bwrap sandbox keeps bash from: the host outside the workdir, the network,
the system's files. Run for real where bwrap works; skipped, with why, where it does not.
How the mode is chosen is tested everywhere, with a bwrap that is missing or failing."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.toolset import AgentToolset, UnsandboxedWarning, _sandbox
from tests.toolset.conftest import call

pytestmark_bwrap = pytest.mark.usefixtures("needs_bwrap")


@pytestmark_bwrap
@pytest.mark.parametrize("sandbox", ["auto", "bwrap"])
def test_bwrap_is_used_when_it_works(workdir: Path, sandbox: str) -> None:
    toolset = AgentToolset(workdir, sandbox=sandbox)
    assert toolset.sandbox == "bwrap"


@pytestmark_bwrap
def test_tmp_is_private_to_the_sandbox(workdir: Path) -> None:
    toolset = AgentToolset(workdir, sandbox="bwrap")
    host_path = Path("/tmp") / f"rma-outside-{uuid.uuid4().hex}"
    result = call(toolset, "bash", {"command": f"touch {host_path} && ls {host_path}"})
    assert (result.content, result.is_error) == (str(host_path), False)
    assert not host_path.exists()


@pytestmark_bwrap
def test_host_directories_outside_the_workdir_cannot_be_written(
    workdir: Path, outside: Path
) -> None:
    toolset = AgentToolset(workdir, sandbox="bwrap")
    for command in (
        f"echo pwned > {outside}/secret.txt",
        f"echo pwned > {outside}/new.txt",
        f"cat {outside}/secret.txt",
        "touch /usr/rma-pwned",
        "touch /etc/rma-pwned",
    ):
        result = call(toolset, "bash", {"command": command})
        assert result.is_error, command
        assert "SENTINEL" not in result.content
    assert not Path("/usr/rma-pwned").exists()
    assert not Path("/etc/rma-pwned").exists()
    # the outside fixture checks the sentinel directory is unchanged


@pytestmark_bwrap
def test_secrets_of_the_system_are_not_shown(workdir: Path) -> None:
    toolset = AgentToolset(workdir, sandbox="bwrap")
    for path in ("/etc/shadow", "/root", "/home"):
        assert call(toolset, "bash", {"command": f"ls {path}"}).is_error, path


@pytestmark_bwrap
def test_capabilities_are_dropped(workdir: Path) -> None:
    toolset = AgentToolset(workdir, sandbox="bwrap")
    result = call(toolset, "bash", {"command": "grep CapEff /proc/self/status"})
    assert result.content.split() == ["CapEff:", "0000000000000000"]


def _connects(toolset: AgentToolset) -> bool:
    """Whether bash reaches a listener this test opens on the loopback interface."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(2)
        port = listener.getsockname()[1]
        command = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        result = call(toolset, "bash", {"command": command})
        if result.is_error:
            return False
        connection, _ = listener.accept()
        connection.close()
        return result.content == "connected"


@pytestmark_bwrap
def test_there_is_no_network_unless_asked_for(workdir: Path) -> None:
    confined = AgentToolset(workdir, sandbox="bwrap")
    assert not confined.network
    assert not _connects(confined)
    networked = AgentToolset(workdir, sandbox="bwrap", network=True)
    assert networked.network
    assert _connects(networked)


def test_unconfined_bash_reaches_the_network_and_says_so_once(workdir: Path) -> None:
    with pytest.warns(UnsandboxedWarning) as warned:
        toolset = AgentToolset(workdir, sandbox="none")
    assert len(warned) == 1
    assert toolset.sandbox == "none"
    assert _connects(toolset)  # no further warning: the filter turns one into an error


def _fake_bwrap(directory: Path, script: str) -> None:
    fake = directory / "bwrap"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)


def test_a_missing_bwrap_is_named(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_bwrap = tmp_path / "no-bwrap"
    no_bwrap.mkdir()
    (no_bwrap / "bash").symlink_to(_sandbox.shell_path())
    monkeypatch.setattr(_sandbox, "SYSTEM_PATH", str(no_bwrap))
    with pytest.raises(ConfigurationError, match="bwrap is not installed"):
        AgentToolset(workdir, sandbox="bwrap")
    with pytest.warns(UnsandboxedWarning, match="bwrap is not installed"):
        assert AgentToolset(workdir, sandbox="auto").sandbox == "none"


def test_a_bwrap_that_cannot_run_here_is_named(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    _fake_bwrap(bin_dir, "echo 'bwrap: No permissions to create a new namespace' >&2; exit 1")
    monkeypatch.setattr(_sandbox, "SYSTEM_PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(ConfigurationError, match="No permissions to create a new namespace"):
        AgentToolset(workdir, sandbox="bwrap")
    with pytest.warns(UnsandboxedWarning, match="No permissions"):
        assert AgentToolset(workdir, sandbox="auto").sandbox == "none"


def test_a_bwrap_that_hangs_is_given_up_on(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    _fake_bwrap(bin_dir, "exec sleep 30")
    monkeypatch.setattr(_sandbox, "SYSTEM_PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setattr(_sandbox, "PROBE_TIMEOUT", 0.3)
    with pytest.raises(ConfigurationError, match=r"did not finish within 0\.3s"):
        AgentToolset(workdir, sandbox="bwrap")
