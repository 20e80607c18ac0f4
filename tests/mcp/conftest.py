"""Real MCP servers for the client's tests: the ``mcp`` package's server (both eras, stdio
and streamable HTTP on loopback) and the reference servers from npm."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from req_managed_agents.mcp import McpServer

HERE = Path(__file__).parent
PYTHON_SERVER = str(HERE / "servers" / "python_server.py")
ROOT = HERE.parent.parent
# Where scripts/test installs the npm servers: into the venv it uses.
NPM_SERVERS = ROOT / os.environ.get("RMA_VENV", ".venv") / "mcp-servers"
ERAS = {"stateless": [], "handshake": ["--handshake-only"]}


def python_server(era: str, **options: object) -> McpServer:
    """The ``mcp`` package's server over stdio, in one era."""
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    return McpServer(sys.executable, [PYTHON_SERVER, *ERAS[era]], name=f"py-{era}", **options)  # type: ignore[arg-type]


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Whether ``check`` holds within ``timeout`` seconds (a condition another process
    makes true: a file written, a process gone)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_servers() -> Iterator[dict[str, str]]:
    """The ``mcp`` package's server over streamable HTTP, one per era: era -> URL."""
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    children, urls = [], {}
    try:
        for era, flags in ERAS.items():
            port = _free_port()
            children.append(
                subprocess.Popen(
                    [sys.executable, PYTHON_SERVER, "http", str(port), *flags],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls[era] = f"http://127.0.0.1:{port}/mcp"
        for era, url in urls.items():
            port = int(url.split(":")[2].split("/")[0])

            def listening(port: int = port) -> bool:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    return True
                except OSError:
                    return False

            assert eventually(listening), f"the HTTP server ({era}) did not start"
        yield urls
    finally:
        for child in children:
            child.terminate()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:  # a graceful stop waits for streams still open
                child.kill()
                child.wait(5)


def npm_server(package: str) -> list[str]:
    """``node`` and the entry point of an npm reference server, or skip with the reason."""
    entry = NPM_SERVERS / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
    if shutil.which("node") is None:
        pytest.skip("node is not installed (scripts/test installs Debian's nodejs)")
    if not entry.exists():
        pytest.skip(f"{package} is not installed in {NPM_SERVERS} (scripts/test installs it)")
    return ["node", str(entry)]
