"""An MCP server's tools in a ``Tools`` registry: declared with the server's own schemas
under names every runtime accepts, checked for collisions before anything is sent, called
under the server's own names, and answered in the library's result vocabulary."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents import ConfigurationError, McpServer, ToolContext, ToolResult, Tools
from req_managed_agents.model import Document, Image, SessionInfo
from tests.mcp.conftest import eventually, python_server

INFO = SessionInfo("sesn_1", "test")


def _context(tool_use_id: str = "tu_1") -> ToolContext:
    return ToolContext(tool_use_id, INFO)


def _result(tools: Tools, name: str, arguments: dict[str, object]) -> ToolResult:
    answer = tools.handle_tool_call(name, arguments, _context())
    if isinstance(answer, str):
        return ToolResult("tu_1", answer)
    assert isinstance(answer, ToolResult), answer
    return answer


@pytest.fixture(scope="module")
def server() -> Iterator[McpServer]:
    with python_server("stateless") as opened:
        opened.start()  # here, so that its reader thread belongs to the module, not a test
        yield opened


def test_the_server_starts_on_first_use_not_when_included() -> None:
    with python_server("handshake") as fresh:
        tools = Tools()
        tools.include(fresh)
        assert fresh.protocol_version is None

        declared = {d["name"]: d for d in tools.schemas()}

        assert fresh.protocol_version == "2025-11-25"
        listed = {t.name: t for t in fresh.list_tools()}
        assert declared["echo"] == {
            "name": "echo",
            "description": "Echo the text back.",
            "input_schema": dict(listed["echo"].input_schema),
        }
        assert _result(tools, "echo", {"text": "hi"}).content == "hi"


def test_prefix_and_allow_choose_and_rename_and_calls_go_to_the_servers_names(
    server: McpServer,
) -> None:
    @Tools().tool
    def unused() -> None:
        """Unused."""

    tools = Tools()

    @tools.tool
    def echo(text: str) -> str:
        """A local echo, named like the server's."""
        return f"local {text}"

    tools.include(server, prefix="py_", allow=["echo", "forecast"])

    assert [d["name"] for d in tools.schemas()] == ["echo", "py_echo", "py_forecast"]
    assert "py_echo" in tools
    assert _result(tools, "echo", {"text": "a"}).content == "local a"
    assert _result(tools, "py_echo", {"text": "a"}).content == "a"
    unknown = _result(tools, "py_pixel", {})
    assert unknown.is_error
    assert "unknown tool 'py_pixel'" in unknown.content


def test_an_allow_list_naming_a_tool_the_server_lacks_is_refused(server: McpServer) -> None:
    tools = Tools()
    tools.include(server, allow=["echo", "nope"])
    with pytest.raises(ConfigurationError, match="'nope'"):
        tools.schemas()


def test_collisions_with_functions_or_another_server_are_refused_before_any_call(
    server: McpServer,
) -> None:
    tools = Tools()

    @tools.tool
    def echo(text: str) -> str:
        """A local echo."""
        return text

    tools.include(server, allow=["echo"])
    with pytest.raises(ConfigurationError, match=r"'echo'.*function.*prefix="):
        tools.schemas()

    twice = Tools()
    twice.include(server, allow=["pid"])
    twice.include(server, allow=["pid"])
    with pytest.raises(ConfigurationError, match=r"'pid'.*two MCP servers|'pid'.*another"):
        twice.schemas()

    apart = Tools()
    apart.include(server, prefix="a_", allow=["pid"])
    apart.include(server, prefix="b_", allow=["pid"])
    assert [d["name"] for d in apart.schemas()] == ["a_pid", "b_pid"]


def test_names_are_mapped_to_the_rule_every_runtime_accepts_and_back() -> None:
    long_name = "very.long/" + "x" * 120
    with python_server("stateless") as grown:
        for name in ("files.read/all", long_name, "files_read_all"):
            grown.call_tool("grow", {"name": name})
        tools = Tools()
        tools.include(grown, allow=["files.read/all", long_name, "files_read_all"])
        with pytest.raises(ConfigurationError, match=r"'files\.read/all'.*'files_read_all'"):
            tools.schemas()

        tools = Tools()
        tools.include(grown, allow=["files.read/all", long_name])
        names = [d["name"] for d in tools.schemas()]
        assert names[0] == "files_read_all"
        assert len(names[1]) == 64
        assert names[1].startswith("very_long_xxx")
        for name in names:
            assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
        # Each declared name calls the server's own tool.
        assert _result(tools, names[0], {}).content == "files.read/all"
        assert _result(tools, names[1], {}).content == long_name

        grown.call_tool("grow", {"name": "read"})
        clash = Tools()
        clash.include(grown, allow=["read"])
        with pytest.raises(ConfigurationError, match=r"'read'.*built-in.*prefix="):
            clash.schemas()
        renamed = Tools()
        renamed.include(grown, prefix="srv-", allow=["read"])
        assert [d["name"] for d in renamed.schemas()] == ["srv-read"]


def test_a_bad_prefix_is_refused_at_include(server: McpServer) -> None:
    for prefix in ("a.b", "mcp__", "x" * 60):
        with pytest.raises(ConfigurationError):
            Tools().include(server, prefix=prefix)


def test_arguments_are_checked_against_the_servers_schema_before_the_call(
    server: McpServer,
) -> None:
    tools = Tools()
    tools.include(server, allow=["echo"])
    refused = _result(tools, "echo", {"text": 42})
    assert refused.is_error
    assert refused.content.startswith("invalid arguments for tool 'echo': text:")


def test_results_become_the_librarys_content_blocks(server: McpServer) -> None:
    tools = Tools()
    tools.include(server, confirm="never")  # `fail` is destructive: no run here to ask

    pixel = _result(tools, "pixel", {})
    assert not pixel.is_error
    assert [type(b) for b in pixel.blocks] == [Image]
    assert isinstance(pixel.blocks[0], Image)
    assert pixel.blocks[0].data.startswith(b"\x89PNG")

    forecast = _result(tools, "forecast", {"city": "Oslo"})
    assert json.loads(forecast.content) == {"city": "Oslo", "celsius": 21.5}

    assert json.loads(_result(tools, "totals", {}).content) == {"count": 3}

    failed = _result(tools, "fail", {"reason": "no way"})
    assert failed.is_error
    assert failed.content == "Error executing tool fail"

    media = _result(tools, "media", {})
    text, audio, link, header, document, blob_header, image = media.blocks
    assert text == "four blocks follow"
    assert isinstance(audio, str)
    assert "audio/wav" in audio
    assert "8 bytes" in audio
    assert isinstance(link, str)
    assert "file:///notes.md" in link
    assert "notes" in link
    assert isinstance(header, str)
    assert "file:///a.txt" in header
    assert document == Document(b"A", "text/plain", "file:///a.txt")
    assert isinstance(blob_header, str)
    assert "file:///pixel.png" in blob_header
    assert isinstance(image, Image)
    assert image.media_type == "image/png"


def test_cancelling_the_call_tells_the_server(server: McpServer, tmp_path: Path) -> None:
    tools = Tools()
    tools.include(server, allow=["wait"])
    marker = tmp_path / "marker"
    context = _context()
    answers: list[object] = []
    caller = threading.Thread(
        target=lambda: answers.append(
            tools.handle_tool_call("wait", {"marker": str(marker)}, context)
        )
    )
    caller.start()
    assert eventually(lambda: marker.exists() and marker.read_text() == "started")
    context.cancelled.set()
    caller.join(20)
    assert eventually(lambda: marker.read_text() == "cancelled")
    (answer,) = answers
    assert isinstance(answer, ToolResult)
    assert answer.is_error
    assert "cancelled" in answer.content
