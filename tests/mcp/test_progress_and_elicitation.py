"""A local MCP tool's progress and questions reach the run: the server's progress
notifications become the run's ``ToolCallProgress`` items, and its elicitation requests
go to the handler's ``handle_elicitation``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from req_managed_agents import McpServer, Session, ToolCallFinished, ToolCallProgress, Tools
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.mcp.conftest import npm_server

RUN_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def everything() -> Iterator[McpServer]:
    node, entry = npm_server("server-everything")
    with McpServer(node, [entry, "stdio"], name="everything") as server:
        server.start()  # here, so that its reader thread belongs to the module, not a test
        yield server


def test_a_servers_progress_reaches_the_runs_stream(everything: McpServer) -> None:
    tools = Tools()
    tools.include(everything, allow=["trigger-long-running-operation"])
    long = call("trigger-long-running-operation", duration=0.3, steps=3)
    script = [Turn(tool_calls=[long]), Turn(text="done")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        with Session(provider, handler=tools, **ids) as session:
            items = list(session.stream("Run it.", timeout=RUN_TIMEOUT))

    reports = [item for item in items if isinstance(item, ToolCallProgress)]
    assert [(r.progress, r.total) for r in reports] == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]
    assert all(r.tool_use.name == "trigger-long-running-operation" for r in reports)
    # Each report comes while its call runs: before the call's result.
    finished = next(i for i, item in enumerate(items) if isinstance(item, ToolCallFinished))
    assert max(items.index(r) for r in reports) < finished
    assert items[-1].terminal == "end_turn"
