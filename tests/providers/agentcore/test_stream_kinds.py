"""What the harness's stream carries besides text and tool calls: hook events, reasoning,
tool results of tools the harness ran, and cache usage; over the emulator, and as botocore
parses it.

What a user relies on: reasoning and tool results are never shown as the agent's text; a
hook that ran is a typed :class:`HookEvent` (on the turn, and in the stream before the
turn's end); a hook that stopped the turn shows as ``hook_stopped``; cache tokens count.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import (
    HookEvent,
    SessionResult,
    TextDelta,
    Tools,
    TurnEnded,
    run_to_completion,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, ToolCall
from tests.support.tools import CountingTools

pytest.importorskip("botocore")

GUARD = {"name": "guard", "type": "before_invocation", "decision": "allow"}
DENY = {
    "name": "no_shell",
    "type": "before_tool_call",
    "decision": "deny",
    "reason": "shell is not allowed here",
}


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emulator:
        yield emulator


def test_reasoning_is_not_text_and_cache_tokens_count(emulator: AgentCoreEmulator) -> None:
    turn = ConverseTurn(
        text="The answer is 4.",
        reasoning="Two plus two makes four; say it plainly.",
        usage=(30, 6),
        cache_tokens=(1200, 80),
    )
    arn = emulator.add_harness([turn], name="thinker")
    texts: list[str] = []
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(
            provider, "2 + 2?", handler=Tools(), harness_arn=arn, on_text=texts.append
        )
    assert result.text == "The answer is 4."
    assert "".join(texts) == "The answer is 4.", "reasoning never reaches on_text"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 6)
    assert result.usage.cache_read_input_tokens == 1200
    assert result.usage.cache_creation_input_tokens == 80
    reasoning = [
        e["contentBlockDelta"]["delta"]["reasoningContent"]
        for e in result.events
        if "reasoningContent" in e.get("contentBlockDelta", {}).get("delta", {})
    ]
    assert "".join(r.get("text", "") for r in reasoning) == turn.reasoning, "kept in the events"


def test_hook_events_are_typed_stream_items_before_their_turn_ends(
    emulator: AgentCoreEmulator,
) -> None:
    arn = emulator.add_harness(
        [ConverseTurn(text="Hello.", hook_events=[GUARD])], name="hooked", tools=[]
    )
    with (
        emulator.provider(timeout=5) as provider,
        Session(provider, handler=Tools(), harness_arn=arn) as session,
    ):
        items = list(session.stream("hi", timeout=10))
    kinds = [type(item).__name__ for item in items]
    assert kinds[-3:] == ["HookEvent", "TurnEnded", "SessionResult"]
    (hook,) = [item for item in items if isinstance(item, HookEvent)]
    assert (hook.name, hook.type, hook.decision, hook.reason) == (
        "guard",
        "before_invocation",
        "allow",
        None,
    )
    assert hook.id.startswith("hook-")
    (ended,) = [item for item in items if isinstance(item, TurnEnded)]
    assert ended.turn.hook_events == (hook,)
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "Hello."


def test_a_hook_that_stops_the_turn_shows_on_the_result(emulator: AgentCoreEmulator) -> None:
    turn = ConverseTurn(text="I will run it.", hook_events=[DENY], stop_reason="hook_stopped")
    arn = emulator.add_harness([turn], name="stopped", tools=[])
    with (
        emulator.provider(timeout=5) as provider,
        Session(provider, handler=Tools(), harness_arn=arn) as session,
    ):
        items = list(session.stream("run ls", timeout=10))
    result = items[-1]
    assert isinstance(result, SessionResult)
    assert result.stop_reason == "hook_stopped"
    assert result.terminal == "terminated"
    (hook,) = [item for item in items if isinstance(item, HookEvent)]
    assert (hook.decision, hook.reason) == ("deny", "shell is not allowed here")


def test_tool_results_of_tools_the_harness_ran_are_not_text(emulator: AgentCoreEmulator) -> None:
    script = [
        ConverseTurn(
            text="Ran it.",
            tool_calls=[ToolCall("python", {"code": "print(42)"}, result="42\n")],
        )
    ]
    tools = [{"type": "agentcore_code_interpreter", "name": "python"}]
    arn = emulator.add_harness(script, name="interp", tools=tools)
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(provider, "run", handler=CountingTools(), harness_arn=arn)
    assert result.text == "Ran it."
    deltas = [e["contentBlockDelta"]["delta"] for e in result.events if "contentBlockDelta" in e]
    assert {"toolResult": [{"text": "42\n"}]} in deltas
    assert any("toolResultMetadata" in delta for delta in deltas)


def botocore_knows_hook_events() -> bool:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-agentcore")
    stream = model.operation_model("InvokeHarness").output_shape.members["stream"]
    return "hookEvent" in stream.members


def test_botocore_parses_hook_reasoning_and_cache_frames(emulator: AgentCoreEmulator) -> None:
    if not botocore_knows_hook_events():  # the [aws] floor predates them; our decoder does not
        pytest.skip("this botocore's model has no hookEvent (botocore 1.43.100 added it)")
    from tests.testing.test_agentcore_emulator import (
        SESSION_HEADER,
        Client,
        botocore_stream,
        new_session_id,
        user,
    )

    turn = ConverseTurn(
        text="Done.",
        reasoning="Think.",
        hook_events=[DENY],
        cache_tokens=(5, 7),
        tool_calls=[ToolCall("python", {}, result="ok")],
        stop_reason="hook_stopped",
    )
    arn = emulator.add_harness(
        [turn], name="parsed", tools=[{"type": "agentcore_code_interpreter", "name": "python"}]
    )
    client = Client(emulator)
    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={arn}"
    response = client.request(
        "POST",
        url,
        {"messages": [user("x")]},
        headers={SESSION_HEADER: new_session_id()},
        stream=True,
    )
    parsed: list[dict[str, Any]] = list(
        botocore_stream(response, "bedrock-agentcore", "InvokeHarness")["stream"]
    )
    hooks = [event["hookEvent"] for event in parsed if "hookEvent" in event]
    assert [(h["name"], h["decision"]) for h in hooks] == [("no_shell", "deny")]
    assert parsed[-2] == {"messageStop": {"stopReason": "hook_stopped"}}
    usage = parsed[-1]["metadata"]["usage"]
    assert (usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"]) == (5, 7)
    kinds = {
        next(iter(e["contentBlockDelta"]["delta"])) for e in parsed if "contentBlockDelta" in e
    }
    assert kinds == {"reasoningContent", "text", "toolUse", "toolResult", "toolResultMetadata"}


def test_a_malformed_scripted_hook_is_refused() -> None:
    with pytest.raises(ValueError, match="type"):
        ConverseTurn(hook_events=[{"name": "x", "type": "sometimes"}])
    with pytest.raises(ValueError, match="decision"):
        ConverseTurn(hook_events=[{"name": "x", "type": "after_invocation", "decision": "maybe"}])
