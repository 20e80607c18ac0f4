"""The run's hooks over MCP tools: a tool its server marks destructive asks the run's
``handle_confirmation`` before it is called, and a denied call never reaches the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import Allow, Deny, McpServer, Tools, run_to_completion
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model import Decision, ToolUse
from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator, OpenAITurn, Turn, call
from req_managed_agents.tools import ToolContext
from tests.mcp.conftest import HERE, ROOT, eventually, npm_server, python_server

RUN_TIMEOUT = 60.0
INTERRUPTED_RUN = HERE / "servers" / "interrupted_run.py"
RUNTIMES = {
    "claude": (
        ClaudeEmulator,
        Turn,
        lambda e: {"agent_id": e.add_agent(), "environment_id": e.add_environment()},
    ),
    "openai": (OpenAIAgentsEmulator, OpenAITurn, lambda e: {"agent_id": e.add_agent()}),
}


class _Asking(Tools):
    """Tools whose confirmation hook answers ``decision`` and remembers what it was asked."""

    def __init__(self, decision: Decision) -> None:
        super().__init__()
        self.decision = decision
        self.asked: list[ToolUse] = []

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
        self.asked.append(tool_use)
        return self.decision


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[tuple[McpServer, Path]]:
    command, *args = npm_server("server-filesystem")
    with McpServer(command, [*args, str(tmp_path)], name="files") as server:
        yield server, tmp_path


def _run(runtime: str, tools: Tools, turns: list[dict[str, Any]], **options: Any) -> Any:
    emulator_type, turn_type, connect = RUNTIMES[runtime]
    script = [turn_type(**turn) for turn in turns]
    with emulator_type(script) as emulator, emulator.provider(timeout=10) as provider:
        return run_to_completion(
            provider,
            "Write the file.",
            handler=tools,
            timeout=RUN_TIMEOUT,
            **connect(emulator),
            **options,
        )


def _write_then_read(path: Path) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [call("fs_write_file", path=str(path), content="one")]},
        {"tool_calls": [call("fs_read_text_file", path=str(path))]},
        {"text": " | ".join},
    ]


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_a_denied_destructive_tool_is_not_called(
    runtime: str, folder: tuple[McpServer, Path]
) -> None:
    server, root = folder
    tools = _Asking(Deny("not in this folder"))
    tools.include(server, prefix="fs_", allow=["write_file", "read_text_file"])
    path = root / "a.txt"

    result = _run(runtime, tools, _write_then_read(path))

    assert result.terminal == "end_turn"
    assert not path.exists()
    wrote, read = result.tool_results
    assert wrote.is_error
    assert "denied" in wrote.content
    assert "not in this folder" in wrote.content
    assert read.is_error  # nothing was written
    # Asked once, about the server's tool (read_text_file is read-only: never asked).
    [asked] = tools.asked
    assert (asked.name, asked.mcp_server) == ("write_file", "files")
    assert asked.input == {"path": str(path), "content": "one"}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_an_allowed_destructive_tool_is_called_once(
    runtime: str, folder: tuple[McpServer, Path]
) -> None:
    server, root = folder
    tools = _Asking(Allow())
    tools.include(server, prefix="fs_", allow=["write_file", "read_text_file"])
    path = root / "a.txt"

    result = _run(runtime, tools, _write_then_read(path))

    assert result.terminal == "end_turn"
    assert path.read_text() == "one"
    wrote, read = result.tool_results
    assert not wrote.is_error
    assert (read.content, read.is_error) == ("one", False)
    assert [use.name for use in tools.asked] == ["write_file"]


class _Failing(Tools):
    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
        raise RuntimeError("no one to ask")


def test_a_failing_hook_denies(folder: tuple[McpServer, Path]) -> None:
    server, root = folder
    tools = _Failing()
    tools.include(server, prefix="fs_", allow=["write_file", "read_text_file"])
    path = root / "a.txt"

    result = _run("claude", tools, _write_then_read(path))

    assert not path.exists()
    assert result.tool_results[0].is_error
    assert "RuntimeError: no one to ask" in result.tool_results[0].content


def test_without_a_hook_the_sessions_confirm_policy_answers(
    folder: tuple[McpServer, Path],
) -> None:
    server, root = folder
    tools = Tools()
    tools.include(server, prefix="fs_", allow=["write_file", "read_text_file"])
    denied, allowed = root / "denied.txt", root / "allowed.txt"

    by_default = _run("claude", tools, _write_then_read(denied))
    by_policy = _run("claude", tools, _write_then_read(allowed), confirm="allow")

    assert not denied.exists()
    assert by_default.tool_results[0].is_error
    assert "handle_confirmation" in by_default.tool_results[0].content
    assert allowed.read_text() == "one"
    assert not by_policy.tool_results[0].is_error


@pytest.mark.parametrize(
    ("confirm", "asked"),
    [("never", []), ("always", ["write_file", "read_text_file"])],
)
def test_include_confirm_chooses_which_tools_ask(
    folder: tuple[McpServer, Path], confirm: str, asked: list[str]
) -> None:
    server, root = folder
    tools = _Asking(Allow())
    tools.include(server, prefix="fs_", allow=["write_file", "read_text_file"], confirm=confirm)  # type: ignore[arg-type]
    path = root / "a.txt"

    result = _run("openai", tools, _write_then_read(path))

    assert path.read_text() == "one"
    assert result.tool_results[1].content == "one"
    assert [use.name for use in tools.asked] == asked


def test_include_refuses_an_unknown_confirm(folder: tuple[McpServer, Path]) -> None:
    server, _ = folder
    with pytest.raises(ConfigurationError, match="confirm"):
        Tools().include(server, confirm="sometimes")  # type: ignore[arg-type]


def test_a_changed_tool_list_is_declared_by_the_next_session() -> None:
    # Claude and OpenAI declare tools on the agent, AgentCore (here) once per session: the
    # bridge lists again on the next schemas() read, which the next session declares.
    with python_server("handshake") as server:
        tools = Tools()
        tools.include(server, confirm="never")
        assert "sprout" not in {schema["name"] for schema in tools.schemas()}

        grow = [{"tool_calls": [call("grow", name="sprout")]}, {"text": "-"}]
        first = _run("claude", tools, grow)
        assert first.tool_results[0].content == "added sprout"
        assert eventually(lambda: server.tools_changed == 1)

        assert "sprout" in {schema["name"] for schema in tools.schemas()}
        second = _run("claude", tools, [{"tool_calls": [call("sprout")]}, {"text": "-"}])
        assert (second.tool_results[0].content, second.tool_results[0].is_error) == (
            "sprout",
            False,
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True  # a zombie (gone, not reaped) counts as alive


def test_ctrl_c_during_a_long_mcp_call_tells_the_server_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    marker, pid_file = tmp_path / "marker", tmp_path / "pid"
    told = tmp_path / "marker.told"
    child = subprocess.Popen(
        [sys.executable, str(INTERRUPTED_RUN), str(marker), str(pid_file)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert eventually(lambda: marker.exists() and marker.read_text() == "started", 60)
        server = int(pid_file.read_text())

        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)

        assert child.returncode != 0
        assert b"KeyboardInterrupt" in stderr  # the user's Ctrl-C reached the program
        assert eventually(told.exists)  # notifications/cancelled named the call
        assert marker.read_text() == "cancelled"
        assert eventually(lambda: not _alive(server))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
