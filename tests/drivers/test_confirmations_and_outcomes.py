"""Provider tools that ask permission, and outcomes graded by the provider (Claude).

Over loopback against the Claude emulator: what the hook or the ``confirm`` policy decides
is what the service receives, a turn waiting on custom tools and confirmations at once is
answered in one request, and an outcome's iterations end in the verdict on the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from req_managed_agents import (
    Allow,
    ConfigurationError,
    ConfirmationAnswered,
    Deny,
    Session,
    ToolContext,
    run_to_completion,
)
from req_managed_agents.errors import UnresolvedRequiresActionError
from req_managed_agents.model import Outcome, ToolUse
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator, Turn, call
from req_managed_agents.testing._script import ToolCall
from tests.support.tools import CountingTools

ASK_MCP = ToolCall(
    "create_issue", {"title": "bug"}, "issue #7", permission="ask", mcp_server="github"
)


class Deciding(CountingTools):
    """Counting tools whose confirmation hook returns what it was built with."""

    def __init__(self, decision: Any) -> None:
        super().__init__()
        self.decision = decision
        self.asked: list[ToolUse] = []

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Any:
        self.asked.append(tool_use)
        if isinstance(self.decision, Exception):
            raise self.decision
        return self.decision


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        yield emulator


def run(emulator: ClaudeEmulator, script: list[Turn], handler: Any, **options: Any) -> Any:
    with emulator.provider() as provider:
        return run_to_completion(
            provider,
            "File the bug.",
            handler=handler,
            timeout=20,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
            **options,
        )


def confirmations(emulator: ClaudeEmulator, session_id: str) -> list[dict[str, Any]]:
    return [e for e in emulator.events(session_id) if e["type"] == "user.tool_confirmation"]


def posts(emulator: ClaudeEmulator) -> list[list[str]]:
    return [
        [event["type"] for event in r.body["events"]]
        for r in emulator.requests
        if r.method == "POST" and r.path.endswith("/events")
    ]


def after_the_pause(results: list[str]) -> str:
    return "next turn saw: " + " | ".join(results)


def test_a_hook_that_allows_lets_the_mcp_tool_run(emulator: ClaudeEmulator) -> None:
    handler = Deciding(Allow())
    script = [Turn(server_tool_calls=[ASK_MCP]), Turn(text=after_the_pause)]
    result = run(emulator, script, handler)
    assert result.terminal == "end_turn"
    assert [(use.name, use.mcp_server, dict(use.input)) for use in handler.asked] == [
        ("create_issue", "github", {"title": "bug"})
    ]
    (confirmation,) = confirmations(emulator, str(result.session_id))
    assert confirmation["result"] == "allow"
    assert "deny_message" not in confirmation
    assert "allowed" in result.text
    results = [e for e in result.events if e["type"] == "agent.mcp_tool_result"]
    assert results[0].get("is_error") is not True


def test_a_hook_that_denies_sends_its_message(emulator: ClaudeEmulator) -> None:
    script = [Turn(server_tool_calls=[ASK_MCP]), Turn(text=after_the_pause)]
    result = run(emulator, script, Deciding(Deny("no new issues today")))
    (confirmation,) = confirmations(emulator, str(result.session_id))
    assert (confirmation["result"], confirmation["deny_message"]) == ("deny", "no new issues today")
    results = [e for e in result.events if e["type"] == "agent.mcp_tool_result"]
    assert results[0]["is_error"] is True
    assert result.terminal == "end_turn"


def test_a_mixed_pause_is_answered_in_one_request(emulator: ClaudeEmulator) -> None:
    handler = Deciding(Allow())
    script = [
        Turn(server_tool_calls=[ASK_MCP], tool_calls=[call("add", a=2, b=3)]),
        Turn(text=after_the_pause),
    ]
    with (
        emulator.provider() as provider,
        Session(
            provider,
            handler=handler,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        ) as session,
    ):
        items = list(session.stream("Go.", timeout=20))
    assert posts(emulator) == [
        ["user.message"],
        ["user.custom_tool_result", "user.tool_confirmation"],
    ]
    assert sum(handler.calls.values()) == 1
    answered = [item for item in items if isinstance(item, ConfirmationAnswered)]
    assert [(a.tool_use.name, a.decision) for a in answered] == [("create_issue", Allow())]
    assert items[-1].terminal == "end_turn"  # type: ignore[union-attr]


@pytest.mark.parametrize(("policy", "result_type"), [("allow", "allow"), ("deny", "deny")])
def test_without_a_hook_the_confirm_policy_decides(
    emulator: ClaudeEmulator, policy: str, result_type: str
) -> None:
    script = [Turn(server_tool_calls=[ASK_MCP]), Turn(text="done")]
    result = run(emulator, script, CountingTools(), confirm=policy)
    (confirmation,) = confirmations(emulator, str(result.session_id))
    assert confirmation["result"] == result_type


def test_by_default_a_permission_request_raises_with_a_hint(emulator: ClaudeEmulator) -> None:
    script = [Turn(server_tool_calls=[ASK_MCP]), Turn(text="done")]
    with pytest.raises(UnresolvedRequiresActionError, match="handle_confirmation"):
        run(emulator, script, CountingTools())


@pytest.mark.parametrize(
    "decision",
    [pytest.param(RuntimeError("hook bug"), id="raises"), pytest.param("yes", id="not-a-decision")],
)
def test_a_broken_hook_denies(emulator: ClaudeEmulator, decision: Any) -> None:
    script = [Turn(server_tool_calls=[ASK_MCP]), Turn(text="done")]
    result = run(emulator, script, Deciding(decision))
    (confirmation,) = confirmations(emulator, str(result.session_id))
    assert confirmation["result"] == "deny"


def test_a_bad_confirm_policy_is_refused(emulator: ClaudeEmulator) -> None:
    with emulator.provider() as provider, pytest.raises(ConfigurationError, match="confirm"):
        Session(
            provider, handler=CountingTools(), confirm="maybe", agent_id="a", environment_id="e"
        )  # type: ignore[arg-type]


# -- outcomes -------------------------------------------------------------------------------

RUBRIC = "The summary names every city and its weather."


def test_an_outcome_is_worked_toward_until_the_grader_is_satisfied(
    emulator: ClaudeEmulator,
) -> None:
    script = [
        Turn(
            text="Draft: Paris is sunny.",
            evaluation="needs_revision",
            explanation="Tokyo is missing.",
        ),
        Turn(text=lambda inputs: "Final: Paris is sunny, Tokyo is rainy.", evaluation="satisfied"),
    ]
    outcome = Outcome("Summarise the weather in Paris and Tokyo", RUBRIC, max_iterations=3)
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            handler=CountingTools(),
            outcome=outcome,
            timeout=20,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        )
    assert result.terminal == "end_turn"
    assert result.outcome is not None
    assert (result.outcome["result"], result.outcome["iteration"]) == ("satisfied", 1)
    assert result.text == "Final: Paris is sunny, Tokyo is rainy.", "the rejected draft is gone"
    sent = [e for e in emulator.events(str(result.session_id)) if e["type"].startswith("user.")]
    assert [e["type"] for e in sent] == ["user.define_outcome"]
    assert sent[0]["rubric"] == {"type": "text", "content": RUBRIC}
    assert sent[0]["max_iterations"] == 3


def test_an_outcome_as_a_mapping_and_a_failed_verdict(emulator: ClaudeEmulator) -> None:
    script = [Turn(text="I cannot do this.", evaluation="failed")]
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            handler=CountingTools(),
            outcome={"description": "Do the impossible", "rubric": RUBRIC},
            timeout=20,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        )
    assert result.outcome is not None
    assert result.outcome["result"] == "failed"


def test_an_outcome_with_a_prompt_is_refused(emulator: ClaudeEmulator) -> None:
    with (
        emulator.provider() as provider,
        Session(
            provider,
            handler=CountingTools(),
            outcome=Outcome("d", RUBRIC),
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        ) as session,
        pytest.raises(ConfigurationError, match="outcome"),
    ):
        session.run("and a prompt")


@pytest.mark.parametrize(
    "fields",
    [
        {"description": "", "rubric": RUBRIC},
        {"description": "d", "rubric": ""},
        {"description": "d", "rubric": {"type": "pdf"}},
        {"description": "d", "rubric": RUBRIC, "max_iterations": 21},
        {"description": "d", "rubric": RUBRIC, "max_iterations": True},
        {"description": "d", "rubric": RUBRIC, "stakes": "high"},
    ],
)
def test_a_bad_outcome_is_refused_before_any_request(
    emulator: ClaudeEmulator, fields: Mapping[str, Any]
) -> None:
    with emulator.provider() as provider, pytest.raises(ConfigurationError):
        Session(provider, handler=CountingTools(), outcome=fields, agent_id="a", environment_id="e")
    assert emulator.requests == []


def test_agentcore_refuses_an_outcome_clearly() -> None:
    pytest.importorskip("botocore")
    with (
        AgentCoreEmulator() as emulator,
        emulator.provider() as provider,
        pytest.raises(ConfigurationError, match="Claude Managed Agents feature"),
    ):
        Session(provider, handler=CountingTools(), outcome=Outcome("d", RUBRIC), harness_arn="x")
