"""A local MCP tool's progress and questions reach the run: the server's progress
notifications become the run's ``ToolCallProgress`` items, and its elicitation requests
go to the handler's ``handle_elicitation``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import (
    McpServer,
    Session,
    SessionResult,
    ToolCallFinished,
    ToolCallProgress,
    Tools,
    run_to_completion,
)
from req_managed_agents.model import (
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationDecline,
)
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from req_managed_agents.tools import ToolContext
from tests.mcp.conftest import npm_server, python_server

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


class _Answering(Tools):
    """Tools whose elicitation hook answers ``answer`` and remembers what it was asked."""

    def __init__(self, answer: ElicitationAnswer) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[tuple[Elicitation, str]] = []

    def handle_elicitation(
        self, elicitation: Elicitation, context: ToolContext
    ) -> ElicitationAnswer:
        self.asked.append((elicitation, context.tool_use_id))
        return self.answer


def _asking_everything() -> McpServer:
    node, entry = npm_server("server-everything")
    return McpServer(node, [entry, "stdio"], name="everything")


def _run_one(tools: Tools, tool_call: Any, **options: Any) -> SessionResult:
    script = [Turn(tool_calls=[tool_call]), Turn(text="done")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        return run_to_completion(
            provider,
            "Ask the person.",
            handler=tools,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=RUN_TIMEOUT,
            **options,
        )


def test_a_servers_form_goes_to_handle_elicitation_and_its_answers_back() -> None:
    tools = _Answering(ElicitationAccept({"name": "Ada Lovelace", "check": True}))
    with _asking_everything() as server:
        tools.include(server, allow=["trigger-elicitation-request"])
        result = _run_one(tools, call("trigger-elicitation-request"))

    [(asked, tool_use_id)] = tools.asked
    assert tool_use_id == result.tool_uses[0].id  # the call's own context
    assert (asked.server_name, asked.tool_use_id, asked.url) == ("everything", tool_use_id, None)
    assert asked.message == "Please provide inputs for the following fields:"
    assert asked.requested_schema is not None
    assert asked.requested_schema["required"] == ["name"]
    assert "name" in asked.requested_schema["properties"]
    [answered] = result.tool_results
    assert not answered.is_error
    assert "User provided the requested information" in answered.content
    assert "Ada Lovelace" in answered.content


def test_a_servers_link_reaches_the_hook_as_a_url() -> None:
    tools = _Answering(ElicitationAccept())
    link = "https://consent.example.test/grant?x=1"
    with _asking_everything() as server:
        tools.include(server, allow=["trigger-url-elicitation"])
        result = _run_one(
            tools,
            call("trigger-url-elicitation", url=link, message="Grant access", elicitationId="e1"),
        )

    [(asked, _)] = tools.asked
    assert (asked.id, asked.url, asked.message, asked.requested_schema) == (
        "e1",
        link,
        "Grant access",
        None,
    )
    assert "User completed the URL elicitation flow" in result.tool_results[0].content


@pytest.mark.parametrize(
    ("policy", "said"),
    [("decline", "User declined"), ("cancel", "User cancelled"), ("raise", "User declined")],
)
def test_without_a_hook_the_sessions_elicit_policy_answers(
    policy: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    tools = Tools()
    with _asking_everything() as server:
        tools.include(server, allow=["trigger-elicitation-request"])
        result = _run_one(tools, call("trigger-elicitation-request"), elicit=policy)

    assert result.terminal == "end_turn"  # a local call cannot pause the turn: "raise" declines
    assert said in result.tool_results[0].content
    warned = "define handle_elicitation" in caplog.text
    assert warned == (policy == "raise")


@pytest.mark.parametrize("era", ["stateless", "handshake"])
def test_both_eras_questions_reach_the_run(era: str) -> None:
    # The stateless era asks inside the call's own result (inputRequests), the handshake
    # era with a request of its own (elicitation/create) routed to the call in flight.
    tools = _Answering(ElicitationAccept({"name": "Grace"}))
    with python_server(era) as server:
        tools.include(server, allow=["greet"])
        result = _run_one(tools, call("greet"))

    [(asked, _)] = tools.asked
    assert asked.message == "What is your name?"
    assert result.tool_results[0].content == "hello Grace"


@pytest.mark.parametrize(("answer", "runs"), [(ElicitationAccept(), True), (None, False)])
def test_a_call_refused_until_a_link_is_opened_asks_then_runs_again(
    answer: ElicitationAnswer | None, runs: bool
) -> None:
    # 2025-11-25's error path: the first call is refused (-32042) listing a link to open;
    # once the person has, the same call is made again and goes ahead.
    tools = _Answering(answer or ElicitationDecline())
    link = "https://consent.example.test/grant"
    with _asking_everything() as server:
        tools.include(server, allow=["trigger-url-elicitation"])
        result = _run_one(
            tools, call("trigger-url-elicitation", url=link, elicitationId="e2", errorPath=True)
        )

    first = tools.asked[0][0]
    assert first.url == "https://modelcontextprotocol.io"  # the refusal's prerequisite
    assert "retry" in first.message
    [answered] = result.tool_results
    if runs:
        assert [asked.url for asked, _ in tools.asked] == [first.url, link]
        assert "User completed the URL elicitation flow" in answered.content
    else:
        assert len(tools.asked) == 1  # declined: not called again
        assert answered.is_error
        assert "browser-based authorization" in answered.content
