"""Per-call cost of calling a local MCP server's tool: ours against the ``mcp`` package's own
client, on the same stdio server in the same run.

The server is the npm reference server ``server-everything`` (its ``echo`` tool), installed by
``scripts/test`` into ``.venv/mcp-servers``; both clients start it once and then call it
``calls`` times in a row, so what is timed is the round trip and each client's own work (the
server's is the same for both). Three ways are measured: ``McpServer.call_tool`` (the client),
``Tools.handle_tool_call`` on a registry that included the server (the bridge a run uses:
argument check, name mapping, result as content) and the ``mcp`` package's async
``ClientSession.call_tool`` driven by ``anyio``, as its own examples do.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from _table import Row, ratio

from req_managed_agents import McpServer, ToolContext, Tools
from req_managed_agents.model import SessionInfo

_SERVER = (
    Path(__file__).resolve().parents[1]
    / ".venv/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)
_MESSAGE = {"message": "hello from the benchmark"}


def _ours(calls: int) -> tuple[float, float]:
    """Seconds per call through the client, and through a registry that included it."""
    with McpServer("node", [str(_SERVER), "stdio"], name="everything") as server:
        server.call_tool("echo", _MESSAGE)  # started and warm
        started = time.perf_counter()
        for _ in range(calls):
            server.call_tool("echo", _MESSAGE)
        client = (time.perf_counter() - started) / calls

        tools = Tools()
        tools.include(server, allow=["echo"])
        context = ToolContext("call", SessionInfo("bench", "benchmark"))
        tools.handle_tool_call("echo", _MESSAGE, context)
        started = time.perf_counter()
        for _ in range(calls):
            tools.handle_tool_call("echo", _MESSAGE, context)
        bridge = (time.perf_counter() - started) / calls
    return client, bridge


def _theirs(calls: int) -> float:
    """Seconds per call through the ``mcp`` package's client session."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command="node", args=[str(_SERVER), "stdio"])
    per_call = 0.0

    async def run() -> None:
        nonlocal per_call
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            await mcp.call_tool("echo", _MESSAGE)
            started = time.perf_counter()
            for _ in range(calls):
                await mcp.call_tool("echo", _MESSAGE)
            per_call = (time.perf_counter() - started) / calls

    anyio.run(run)
    return per_call


def call_rows(calls: int, repeat: int) -> list[Row]:
    """The MCP rows: the best of ``repeat`` alternating rounds for each client."""
    if shutil.which("node") is None or not _SERVER.exists():
        raise SystemExit(f"the MCP rows need node and {_SERVER} (scripts/test installs them)")
    client = bridge = theirs = float("inf")
    for _ in range(repeat):
        ours = _ours(calls)
        client, bridge = min(client, ours[0]), min(bridge, ours[1])
        theirs = min(theirs, _theirs(calls))
    peer = f"`mcp` ClientSession {theirs * 1e6:.0f} µs"
    return [
        Row(
            "MCP tool calls",
            f"`echo` on server-everything over stdio, {calls} calls: the client",
            f"{client * 1e6:.0f} µs per call",
            peer,
            ratio(theirs, client),
        ),
        Row(
            "MCP tool calls",
            "the same through `Tools.include` (the bridge a run uses)",
            f"{bridge * 1e6:.0f} µs per call",
            peer,
            ratio(theirs, bridge),
        ),
    ]
