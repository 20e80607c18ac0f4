"""Folding Claude Managed Agents events into turns (pure functions, real wire shapes)."""

from __future__ import annotations

from typing import Any

from req_managed_agents import ToolResult
from req_managed_agents.model import ToolUse, Usage
from req_managed_agents.providers.claude._events import (
    custom_tool_result,
    is_boundary,
    normalize,
    unanswered_tool_uses,
    user_message,
)


def idle(stop_reason: dict[str, Any], event_id: str = "sevt_idle") -> dict[str, Any]:
    return {"type": "session.status_idle", "id": event_id, "stop_reason": stop_reason}


def tool_use(event_id: str, name: str = "get_weather", **tool_input: Any) -> dict[str, Any]:
    return {"type": "agent.custom_tool_use", "id": event_id, "name": name, "input": tool_input}


def message(text: str) -> dict[str, Any]:
    return {"type": "agent.message", "id": f"m_{text}", "content": [{"type": "text", "text": text}]}


def usage_event(input_tokens: int, output_tokens: int, **more: int) -> dict[str, Any]:
    return {
        "type": "span.model_request_end",
        "id": f"u_{input_tokens}",
        "model_usage": {"input_tokens": input_tokens, "output_tokens": output_tokens, **more},
    }


def test_end_turn_keeps_the_native_stop_reason_and_text() -> None:
    turn = normalize([message("Hello,"), message("world"), idle({"type": "end_turn"})], {})
    assert turn.terminal == "end_turn"
    assert turn.stop_reason == {"type": "end_turn"}
    assert turn.text == "Hello,\nworld"


def test_requires_action_resolves_tool_uses_in_event_ids_order() -> None:
    batch = [
        tool_use("e1", city="SF"),
        tool_use("e2", name="clock"),
        idle({"type": "requires_action", "event_ids": ["e2", "e1"]}),
    ]
    turn = normalize(batch, {})
    assert turn.terminal == "requires_action"
    assert turn.tool_uses == (
        ToolUse("e2", "clock", {}),
        ToolUse("e1", "get_weather", {"city": "SF"}),
    )


def test_requires_action_finds_tool_uses_from_earlier_batches() -> None:
    earlier = {"e1": ToolUse("e1", "get_weather", {"city": "SF"})}
    turn = normalize([idle({"type": "requires_action", "event_ids": ["e1", "unknown"]})], earlier)
    assert turn.tool_uses == (earlier["e1"],)


def test_usage_sums_model_request_end_including_cache_counts() -> None:
    batch = [
        usage_event(10, 5, cache_read_input_tokens=100),
        usage_event(20, 7, cache_creation_input_tokens=3),
        idle({"type": "end_turn"}),
    ]
    assert normalize(batch, {}).usage == Usage(30, 12, 3, 100)


def test_server_tool_uses_are_observed_not_run() -> None:
    batch = [
        {"type": "agent.tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
        {"type": "agent.mcp_tool_use", "id": "t2", "name": "search", "input": {}},
        idle({"type": "end_turn"}),
    ]
    turn = normalize(batch, {})
    assert [use.name for use in turn.server_tool_uses] == ["bash", "search"]
    assert turn.tool_uses == ()


def test_unknown_events_and_stop_reasons_pass_through_as_terminated() -> None:
    novel = {"type": "workflow_run.created", "id": "w1", "name": "x"}
    batch = [novel, idle({"type": "budget_reached"})]
    turn = normalize(batch, {})
    assert turn.terminal == "terminated"
    assert turn.stop_reason == {"type": "budget_reached"}
    assert turn.events[0] is novel


def test_terminated_and_error_boundaries() -> None:
    terminated = normalize([{"type": "session.status_terminated", "id": "x"}], {})
    assert terminated.terminal == "terminated"
    error = {"type": "unknown_error", "message": "boom", "retry_status": {"type": "terminal"}}
    errored = normalize([{"type": "session.error", "id": "y", "error": error}], {})
    assert (errored.terminal, errored.stop_reason) == ("terminated", error)


def test_a_retrying_session_error_does_not_end_the_turn() -> None:
    retrying = {"type": "session.error", "error": {"retry_status": {"type": "retrying"}}}
    exhausted = {"type": "session.error", "error": {"retry_status": {"type": "exhausted"}}}
    assert not is_boundary(retrying)
    assert is_boundary(exhausted)
    assert not is_boundary({"type": "session.thread_status_idle"})


def test_unanswered_tool_uses_skip_answered_ones() -> None:
    events = [
        tool_use("e1"),
        tool_use("e2"),
        {"type": "user.custom_tool_result", "custom_tool_use_id": "e1"},
    ]
    assert [use.id for use in unanswered_tool_uses(events)] == ["e2"]


def test_outgoing_event_shapes() -> None:
    assert user_message("hi") == {
        "type": "user.message",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert custom_tool_result(ToolResult("e1", "42", is_error=True)) == {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": "e1",
        "content": [{"type": "text", "text": "42"}],
        "is_error": True,
    }
    assert "content" not in custom_tool_result(ToolResult("e1", ""))


def test_non_object_tool_input_becomes_empty() -> None:
    batch = [
        {"type": "agent.custom_tool_use", "id": "e1", "name": "x", "input": [1, 2]},
        idle({"type": "requires_action", "event_ids": ["e1"]}),
    ]
    assert normalize(batch, {}).tool_uses[0].input == {}
