"""The server's life as a caller sees it, with real processes: started on first use, a
crash mid-call named as such and the next call served by a new process, stderr in the
log, and no child left behind by ``close()`` or by a parent killed with SIGKILL."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from req_managed_agents.errors import ManagedAgentsError
from req_managed_agents.mcp import McpConnectionLost, McpServer, McpServerError
from tests.mcp.conftest import PYTHON_SERVER, ROOT, eventually, python_server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _pid(server: McpServer) -> int:
    return int(server.call_tool("pid").text)


def test_a_server_killed_mid_call_raises_connection_lost_and_the_next_call_restarts_it(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "marker"
    with python_server("stateless") as server:
        first = _pid(server)
        outcome: list[BaseException] = []

        def call() -> None:
            try:
                server.call_tool("wait", {"marker": str(marker)})
            except BaseException as error:
                outcome.append(error)

        caller = threading.Thread(target=call)
        caller.start()
        assert eventually(marker.exists)
        os.kill(first, signal.SIGKILL)
        caller.join(30)

        assert len(outcome) == 1
        assert isinstance(outcome[0], McpConnectionLost)
        assert isinstance(outcome[0], ManagedAgentsError)
        assert outcome[0].server == server.name
        assert "exited" in str(outcome[0])
        second = _pid(server)
        assert second != first
        assert server.call_tool("echo", {"text": "back"}).text == "back"


def test_a_server_that_cannot_start_says_why() -> None:
    dying = McpServer("sh", ["-c", "echo 'no config file' >&2; exit 3"], name="dying")
    with dying, pytest.raises(McpConnectionLost, match="no config file") as lost:
        dying.list_tools()
    assert "status 3" in str(lost.value)

    missing = McpServer("/nonexistent/mcp-server", name="missing")
    with missing, pytest.raises(McpServerError, match="could not start"):
        missing.list_tools()


def test_the_servers_stderr_goes_to_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="req_managed_agents.mcp")
    with python_server("stateless") as server:
        assert server.call_tool("shout", {"text": "hey"}).text == "HEY"

        assert eventually(lambda: "shouting hey" in caplog.text)
    shouted = [r for r in caplog.records if "shouting hey" in r.getMessage()]
    assert shouted[0].name == "req_managed_agents.mcp"


def test_close_stops_the_child_and_later_calls_raise() -> None:
    server = python_server("handshake")
    pid = _pid(server)

    server.close()

    assert not _alive(pid)
    with pytest.raises(McpServerError, match="closed"):
        server.list_tools()


PARENT = textwrap.dedent(
    """
    import sys, threading, time
    sys.path.insert(0, {root!r})
    from req_managed_agents.mcp import McpServer

    server = McpServer(sys.executable, [{server!r}, "--linger"])
    # Started from a thread that then ends: the child must outlive that thread.
    starter = threading.Thread(target=server.start)
    starter.start()
    starter.join()
    print(server.call_tool("pid").text, flush=True)
    time.sleep(600)
    """
)


def test_no_child_survives_its_parent_killed_with_sigkill(tmp_path: Path) -> None:
    # The server lingers after its stdin closes, so only PR_SET_PDEATHSIG can end it; and
    # it was started from a thread that ended long before (the signal follows the thread
    # that forked the child, which is why the reader thread starts it).
    pytest.importorskip("mcp")
    if not sys.platform.startswith("linux"):
        pytest.skip("the child dies with its parent through PR_SET_PDEATHSIG on Linux only")
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(root=str(ROOT), server=PYTHON_SERVER))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)

        parent.send_signal(signal.SIGKILL)
        parent.wait(30)

        assert eventually(lambda: not _alive(child))
    finally:
        parent.kill()
        parent.wait(30)
        if parent.stdout is not None:
            parent.stdout.close()
