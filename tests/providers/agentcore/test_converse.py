"""Folding AgentCore Converse events into turns, and the messages that resume them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from req_managed_agents import ToolResult
from req_managed_agents.errors import ProviderStreamError
from req_managed_agents.eventstream import EventStreamDecoder, encode_message
from req_managed_agents.model import ToolUse, Usage
from req_managed_agents.providers.agentcore._converse import (
    ConverseFold,
    envelope,
    inline_function,
    resume_messages,
    terminal_of,
)


def fold(*events: dict[str, Any]) -> Any:
    folded = ConverseFold()
    for event in events:
        folded.add(event)
    return folded.result(events)


def frame(headers: dict[str, Any], payload: Any) -> Any:
    raw = encode_message(headers, json.dumps(payload).encode())
    return EventStreamDecoder().feed(raw)[0]


def start(index: int, tool_use_id: str, name: str, **extra: Any) -> dict[str, Any]:
    tool = {"toolUseId": tool_use_id, "name": name, **extra}
    return {"contentBlockStart": {"contentBlockIndex": index, "start": {"toolUse": tool}}}


def tool_input(index: int, fragment: str) -> dict[str, Any]:
    return {
        "contentBlockDelta": {"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}
    }


def text(fragment: str) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": fragment}}}


def stop(reason: str) -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


def test_text_is_concatenated_and_usage_read_from_metadata() -> None:
    turn = fold(
        text("Hello, "),
        text("world!"),
        {
            "metadata": {
                "usage": {
                    "inputTokens": 10,
                    "outputTokens": 5,
                    "cacheReadInputTokens": 2,
                    "cacheWriteInputTokens": 1,
                    "totalTokens": 18,
                }
            }
        },
        stop("end_turn"),
    )
    assert (turn.terminal, turn.text, turn.stop_reason) == ("end_turn", "Hello, world!", "end_turn")
    assert turn.usage == Usage(10, 5, 1, 2)


def test_tool_input_is_assembled_from_fragments() -> None:
    turn = fold(
        start(0, "tooluse_abc123", "get_weather"),
        tool_input(0, '{"loc'),
        tool_input(0, 'ation":"NYC"}'),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        stop("tool_use"),
    )
    assert turn.terminal == "requires_action"
    assert turn.tool_uses == (ToolUse("tooluse_abc123", "get_weather", {"location": "NYC"}),)


def test_a_reused_block_index_yields_distinct_tools() -> None:
    turn = fold(
        start(0, "A", "first"),
        tool_input(0, '{"n": 1}'),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        start(0, "B", "second"),
        tool_input(0, '{"n": 2}'),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        start(1, "C", "third"),
        tool_input(1, "{}"),
        stop("tool_use"),
    )
    assert [(u.id, u.name, dict(u.input)) for u in turn.tool_uses] == [
        ("A", "first", {"n": 1}),
        ("B", "second", {"n": 2}),
        ("C", "third", {}),
    ]


@pytest.mark.parametrize(
    ("reason", "terminal"),
    [
        ("end_turn", "end_turn"),
        ("stop_sequence", "end_turn"),
        ("tool_use", "requires_action"),
        ("max_tokens", "terminated"),
        ("timeout_exceeded", "terminated"),
        ("something_new", "terminated"),
        (None, "terminated"),
    ],
)
def test_stop_reason_mapping_keeps_the_raw_reason(reason: str | None, terminal: str) -> None:
    assert terminal_of(reason) == terminal


def test_a_terminated_turn_reports_no_tool_uses() -> None:
    turn = fold(start(0, "A", "x"), tool_input(0, "{}"), text("cut"), stop("max_tokens"))
    assert (turn.terminal, turn.stop_reason, turn.tool_uses) == ("terminated", "max_tokens", ())


def test_server_tools_are_observed_not_returned() -> None:
    turn = fold(
        start(0, "S", "web_search", type="server_tool_use"),
        start(1, "C", "mine"),
        stop("tool_use"),
    )
    assert [u.id for u in turn.tool_uses] == ["C"]
    assert [u.id for u in turn.server_tool_uses] == ["S"]


def test_unparseable_tool_input_becomes_empty() -> None:
    turn = fold(start(0, "A", "x"), tool_input(0, '{"broken'), stop("tool_use"))
    assert turn.tool_uses[0].input == {}


def test_frames_become_envelopes_named_by_their_event_type() -> None:
    message = frame(
        {
            ":event-type": "contentBlockDelta",
            ":message-type": "event",
            ":content-type": "application/json",
        },
        {"contentBlockIndex": 0, "delta": {"text": "Hi"}},
    )
    assert envelope(message) == {
        "contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}
    }


def test_exception_frames_raise_with_type_and_message() -> None:
    message = frame(
        {":message-type": "exception", ":exception-type": "runtimeClientError", ":event-type": "x"},
        {"message": "ValidationException: duplicate Ids at messages.1.content"},
    )
    with pytest.raises(ProviderStreamError) as caught:
        envelope(message)
    assert caught.value.exception_type == "runtimeClientError"
    assert "duplicate Ids" in caught.value.message


def test_error_frames_raise_from_their_headers() -> None:
    message = frame({":message-type": "error", ":error-code": "Boom", ":error-message": "bad"}, {})
    with pytest.raises(ProviderStreamError, match="Boom: bad"):
        envelope(message)


def test_resume_carries_the_tool_uses_and_their_results() -> None:
    uses = [ToolUse("A", "add", {"a": 1}), ToolUse("B", "fail", {})]
    results = [ToolResult("B", "boom", is_error=True), ToolResult("A", "")]
    assistant, user = resume_messages(uses, results)
    assert assistant == {
        "role": "assistant",
        "content": [
            {"toolUse": {"toolUseId": "A", "name": "add", "input": {"a": 1}}},
            {"toolUse": {"toolUseId": "B", "name": "fail", "input": {}}},
        ],
    }
    assert user["role"] == "user"
    assert [block["toolResult"] for block in user["content"]] == [
        {"toolUseId": "A", "content": [{"text": "(no output)"}], "status": "success"},
        {"toolUseId": "B", "content": [{"text": "boom"}], "status": "error"},
    ]


def test_inline_function_shape() -> None:
    declaration = {"name": "add", "description": "Add.", "input_schema": {"type": "object"}}
    assert inline_function(declaration) == {
        "type": "inline_function",
        "name": "add",
        "config": {"inlineFunction": {"description": "Add.", "inputSchema": {"type": "object"}}},
    }
