"""The reference servers from npm (``@modelcontextprotocol/server-everything`` and
``server-filesystem``, run by Debian's node): handshake-era servers, reached after the
stateless probe falls back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents.mcp import McpProgress, McpServer
from tests.mcp.conftest import npm_server


@pytest.fixture(scope="module")
def everything() -> Iterator[McpServer]:
    node, entry = npm_server("server-everything")
    with McpServer(node, [entry, "stdio"], name="everything") as server:
        server.start()  # here, so that its reader thread belongs to the module, not a test
        yield server


def test_the_probe_falls_back_to_the_handshake(everything: McpServer) -> None:
    everything.start()

    assert everything.protocol_version == "2025-11-25"
    assert everything.server_info["name"] == "mcp-servers/everything"


def test_images_structured_content_and_annotations_arrive(everything: McpServer) -> None:
    tools = {tool.name: tool for tool in everything.list_tools()}
    assert tools["echo"].annotations["readOnlyHint"] is True

    (image,) = everything.call_tool("get-tiny-image").content[1:2]
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert image["data"]

    weather = everything.call_tool("get-structured-content", {"location": "New York"})
    assert isinstance(weather.structured_content, dict)
    assert "temperature" in weather.structured_content


def test_progress_of_a_long_running_operation(everything: McpServer) -> None:
    seen: list[McpProgress] = []

    result = everything.call_tool(
        "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, on_progress=seen.append
    )

    assert not result.is_error
    assert [p.progress for p in seen] == [1.0, 2.0, 3.0]
    assert seen[-1].total == 3.0


def test_an_unknown_tool_is_the_tools_error_not_a_refusal(everything: McpServer) -> None:
    unknown = everything.call_tool("no-such-tool")

    assert unknown.is_error
    assert "no-such-tool" in unknown.text


def test_credentials_in_the_environment_are_not_handed_to_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node, entry = npm_server("server-everything")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-inherited")
    with McpServer(node, [entry, "stdio"], env={"CHOSEN": "yes"}) as server:
        shown = server.call_tool("get-env").text

    assert "CHOSEN" in shown
    assert "sk-ant-test-not-inherited" not in shown


def test_the_filesystem_server_writes_and_reads_a_file(tmp_path: Path) -> None:
    node, entry = npm_server("server-filesystem")
    root = tmp_path.resolve()
    with McpServer(node, [entry, str(root)], name="files") as files:
        tools = {tool.name: tool for tool in files.list_tools()}
        assert tools["write_file"].annotations["destructiveHint"] is True

        written = files.call_tool("write_file", {"path": str(root / "a.txt"), "content": "one"})
        assert not written.is_error
        assert (root / "a.txt").read_text() == "one"
        read = files.call_tool("read_text_file", {"path": str(root / "a.txt")})
        assert read.text == "one"
        outside = files.call_tool("read_text_file", {"path": "/etc/hostname"})
        assert outside.is_error
