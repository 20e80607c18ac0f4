"""Tools that answer with images and documents, on both providers."""

from __future__ import annotations

import base64
import uuid

import pytest

from req_managed_agents import ConfigurationError, Tools, run_to_completion
from req_managed_agents.model import Document, Image
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator, ConverseTurn, Turn, call

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4\n%%EOF\n"


def chart_tools() -> Tools:
    tools = Tools()

    @tools.tool
    def chart(city: str) -> list[object]:
        """A chart of the week's weather, with a caption and the raw report."""
        return [
            f"Weather chart for {city}",
            Image(PNG, "image/png"),
            Document(PDF, title="report"),
            Document(b"sunny all week", "text/plain"),
        ]

    return tools


def test_claude_receives_text_image_and_document_blocks() -> None:
    script = [Turn(tool_calls=[call("chart", city="Paris")]), Turn(text="Nice chart.")]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "Chart it",
            handler=chart_tools(),
            timeout=20,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )
        (posted,) = [
            e
            for e in emulator.events(str(result.session_id))
            if e["type"] == "user.custom_tool_result"
        ]
    assert result.terminal == "end_turn"
    assert posted["content"] == [
        {"type": "text", "text": "Weather chart for Paris"},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(PNG).decode(),
            },
        },
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": base64.b64encode(PDF).decode(),
            },
            "title": "report",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "sunny all week"},
        },
    ]
    assert result.tool_results[0].content == "Weather chart for Paris"


def test_agentcore_receives_the_text_and_a_note_for_what_it_cannot_carry() -> None:
    pytest.importorskip("botocore")
    script = [ConverseTurn(tool_calls=[call("chart", city="Paris")]), ConverseTurn(text="Nice.")]
    with AgentCoreEmulator(script) as emulator, emulator.provider() as provider:
        run_to_completion(
            provider,
            "Chart it",
            handler=chart_tools(),
            tools=chart_tools(),
            harness_arn=emulator.add_harness(name=f"h{uuid.uuid4().hex[:12]}"),
            timeout=20,
        )
        resume = emulator.invocations[-1].body["messages"][-1]["content"][0]["toolResult"]
    texts = [block["text"] for block in resume["content"]]
    assert texts[0] == "Weather chart for Paris"
    assert "image/png" in texts[1]
    assert "not sent" in texts[1]
    assert "application/pdf" in texts[2]
    assert texts[3] == "sunny all week"


@pytest.mark.parametrize(
    "build",
    [
        lambda: Image(b"", "image/png"),
        lambda: Image(PNG, "image/bmp"),
        lambda: Document(PDF, "application/msword"),
        lambda: Document(b"\xff\xfe", "text/plain"),
    ],
)
def test_bad_blocks_are_refused_when_made(build: object) -> None:
    with pytest.raises(ConfigurationError):
        build()  # type: ignore[operator]


def test_a_list_of_plain_strings_is_still_data() -> None:
    tools = Tools()

    @tools.tool
    def names() -> list[str]:
        """Some names."""
        return ["a", "b"]

    from req_managed_agents import ToolContext
    from req_managed_agents.model import SessionInfo

    answer = tools.handle_tool_call("names", {}, ToolContext("t1", SessionInfo("s", "p")))
    assert answer == '["a", "b"]'
