"""A harness's deployed tools and the local ones, over the emulator.

An invocation's ``tools`` replace the harness's, so a session with local tools sends the
harness's deployed tools along (read once with GetHarness): a code interpreter or an MCP
server keeps working, and the harness, not the handler, runs their calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from req_managed_agents import ConfigurationError, Tools, run_to_completion
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, ToolCall, call
from tests.support.tools import CountingTools

pytest.importorskip("botocore")

CODE_INTERPRETER = {"type": "agentcore_code_interpreter", "name": "python"}
DOCS_MCP = {
    "type": "remote_mcp",
    "name": "docs",
    "config": {"remoteMcp": {"url": "https://mcp.example.com/docs"}},
}
ADD_DEPLOYED = {
    "type": "inline_function",
    "name": "add",
    "config": {
        "inlineFunction": {
            "description": "Add two integers (as deployed).",
            "inputSchema": {"type": "object"},
        }
    },
}

# The agent runs code on the harness, then asks the client to add, then answers.
SCRIPT = [
    ConverseTurn(
        text="Computing.",
        tool_calls=[ToolCall("python", {"code": "6 * 7"}, result="42"), call("add", a=40, b=2)],
    ),
    ConverseTurn(text=lambda results: f"Both say {results[0]}."),
]


@pytest.fixture
def emulator() -> Any:
    with AgentCoreEmulator() as emulator:
        yield emulator


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in body.get("tools", [])]


def run_by_harness(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(name, toolUse type) of each tool call the stream shows the harness running."""
    starts = [e["contentBlockStart"]["start"] for e in events if "contentBlockStart" in e]
    return [
        (start["toolUse"]["name"], start["toolUse"]["type"])
        for start in starts
        if "toolUse" in start and start["toolUse"].get("type", "tool_use") != "tool_use"
    ]


def test_a_local_tool_is_sent_with_the_harness_tools_and_the_harness_runs_its_own(
    emulator: AgentCoreEmulator,
) -> None:
    arn = emulator.add_harness(SCRIPT, name="mixed", tools=[CODE_INTERPRETER, DOCS_MCP])
    handler = CountingTools()
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(provider, "What is 6 * 7?", handler=handler, harness_arn=arn)
    assert result.text == "Both say 42."
    invocations = emulator.invocations
    assert [tool_names(i.body) for i in invocations] == [["python", "docs", "add"]] * 2
    assert list(handler.calls.values()) == [1], "the handler ran add once, and only add"
    assert [use.name for use in result.tool_uses] == ["add"]
    assert run_by_harness(result.events) == [("python", "server_tool_use")]
    gets = [r for r in emulator.requests if r.method == "GET"]
    assert len(gets) == 1, "the harness is read once per client, not per invocation"


def test_a_deployed_inline_function_named_like_a_local_tool_is_that_tool(
    emulator: AgentCoreEmulator,
) -> None:
    arn = emulator.add_harness(SCRIPT, name="same_add", tools=[CODE_INTERPRETER, ADD_DEPLOYED])
    handler = CountingTools()
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(provider, "What is 6 * 7?", handler=handler, harness_arn=arn)
    assert result.text == "Both say 42."
    (sent, _) = emulator.invocations
    assert tool_names(sent.body) == ["python", "add"], "add is declared once"
    (add,) = [tool for tool in sent.body["tools"] if tool["name"] == "add"]
    description = add["config"]["inlineFunction"]["description"]
    assert description == "Add two integers.", "the local definition is the one sent"


def test_a_deployed_builtin_with_a_local_tools_name_is_refused_before_any_invocation(
    emulator: AgentCoreEmulator,
) -> None:
    clash = {"type": "agentcore_code_interpreter", "name": "add"}
    arn = emulator.add_harness(SCRIPT, name="clash", tools=[clash])
    with (
        emulator.provider(timeout=5) as provider,
        pytest.raises(ConfigurationError, match="harness_tools=False") as caught,
    ):
        run_to_completion(provider, "hi", handler=CountingTools(), harness_arn=arn)
    assert "agentcore_code_interpreter tool named 'add'" in str(caught.value)
    assert emulator.invocations == []


def test_harness_tools_false_sends_only_the_local_tools(emulator: AgentCoreEmulator) -> None:
    script = [ConverseTurn(tool_calls=[call("add", a=1, b=2)]), ConverseTurn(text="3.")]
    arn = emulator.add_harness(script, name="local_only", tools=[CODE_INTERPRETER, ADD_DEPLOYED])
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(
            provider, "1 + 2?", handler=CountingTools(), harness_arn=arn, harness_tools=False
        )
    assert result.text == "3."
    assert [tool_names(i.body) for i in emulator.invocations] == [["add"]] * 2
    assert [r.method for r in emulator.requests] == ["POST", "POST"], "no GetHarness"


def test_harness_tools_must_be_a_bool(emulator: AgentCoreEmulator) -> None:
    arn = emulator.add_harness(name="typed")
    with (
        emulator.provider(timeout=5) as provider,
        pytest.raises(ConfigurationError, match="harness_tools must be True or False"),
    ):
        run_to_completion(provider, "hi", handler=Tools(), harness_arn=arn, harness_tools="no")


def test_without_local_tools_nothing_is_sent_and_the_harness_keeps_its_own(
    emulator: AgentCoreEmulator,
) -> None:
    script = [ConverseTurn(tool_calls=[ToolCall("python", {}, result="ok")], text="Ran it.")]
    arn = emulator.add_harness(script, name="no_local", tools=[CODE_INTERPRETER])
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(provider, "run", handler=Tools(), harness_arn=arn)
    assert result.text == "Ran it."
    assert "tools" not in emulator.invocations[0].body
    assert run_by_harness(result.events) == [("python", "server_tool_use")]
    assert result.tool_uses == ()
