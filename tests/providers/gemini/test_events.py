"""The Gemini event normalizer and the inputs the provider creates with: what a turn reads
from an interaction's stream (text, function calls pieced from argument deltas, statuses,
usage), what a catch-up's record replaces, and that every create field is one the SDK's
request types declare."""

from __future__ import annotations

from typing import Any

import pytest

from req_managed_agents.model import Image, ToolResult, ToolUse, Usage
from req_managed_agents.providers.gemini._events import (
    RECORDED,
    InteractionFold,
    function_result,
    turn_of,
    usage_of,
    user_input,
)
from req_managed_agents.providers.gemini.api._interactions import (
    AGENT_CREATE_FIELDS,
    checked_labels,
    create_body,
)


def _fold(events: list[dict[str, Any]], interaction_id: str = "int_1") -> InteractionFold:
    fold = InteractionFold(interaction_id)
    for event in events:
        fold.add(event)
    return fold


def _created(status: str = "in_progress") -> dict[str, Any]:
    return {"event_type": "interaction.created", "interaction": {"id": "int_1", "status": status}}


def _completed(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "event_type": "interaction.completed",
        "interaction": {"id": "int_1", "status": status, **extra},
    }


def _text_step(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {
            "event_type": "step.start",
            "index": index,
            "step": {"type": "model_output", "content": []},
        },
        *(
            {"event_type": "step.delta", "index": index, "delta": {"type": "text", "text": piece}}
            for piece in pieces
        ),
        {"event_type": "step.stop", "index": index},
    ]


def _call_step(index: int, call_id: str, name: str, *fragments: str) -> list[dict[str, Any]]:
    start = {"type": "function_call", "id": call_id, "name": name, "arguments": {}}
    return [
        {"event_type": "step.start", "index": index, "step": start},
        *(
            {
                "event_type": "step.delta",
                "index": index,
                "delta": {"type": "arguments_delta", "arguments": fragment},
            }
            for fragment in fragments
        ),
        {"event_type": "step.stop", "index": index},
    ]


def test_a_stream_that_stops_for_function_calls_is_a_requires_action_turn_with_their_arguments():
    events = [
        _created(),
        *_text_step(0, "Let me ", "compute."),
        *_call_step(1, "call_1", "add", '{"a": 1,', ' "b": 2}'),
        *_call_step(2, "call_2", "mul", '{"a": 3, "b": 4}'),
        _completed("requires_action", usage={"total_input_tokens": 10, "total_output_tokens": 4}),
    ]
    fold = _fold(events)
    assert fold.completed
    turn = turn_of([fold], events)
    assert turn.terminal == "requires_action"
    assert turn.text == "Let me compute."
    assert [(u.id, u.name, dict(u.input)) for u in turn.tool_uses] == [
        ("call_1", "add", {"a": 1, "b": 2}),
        ("call_2", "mul", {"a": 3, "b": 4}),
    ]
    assert turn.usage == Usage(input_tokens=10, output_tokens=4)
    assert len(turn.events) == len(events)


def test_the_previews_of_a_stream_are_keyed_like_the_recorded_messages():
    fold = InteractionFold("int_1")
    pieces = [fold.add(event) for event in [_created(), *_text_step(3, "Hel", "lo")]]
    assert [p for p in pieces if p is not None] == [("int_1:0", "Hel"), ("int_1:0", "lo")]
    fold.add(_completed("completed"))
    assert fold.texts() == [("int_1:0", "Hello")]


@pytest.mark.parametrize(
    ("status", "terminal"),
    [
        ("completed", "end_turn"),
        ("failed", "terminated"),
        ("cancelled", "terminated"),
        ("incomplete", "terminated"),
        ("budget_exceeded", "terminated"),
    ],
)
def test_each_ending_status_ends_the_turn_as_the_vocabulary_says(status: str, terminal: str):
    events = [_created(), *_text_step(0, "done"), _completed(status)]
    turn = turn_of([_fold(events)], events)
    assert turn.terminal == terminal
    assert turn.stop_reason["type"] == ("end_turn" if status == "completed" else status)


def test_an_interaction_that_requires_action_without_a_function_call_stops_as_unsupported():
    events = [_created(), _completed("requires_action")]
    turn = turn_of([_fold(events)], events)
    assert (turn.terminal, turn.stop_reason) == ("terminated", {"type": "unsupported_action"})


def test_what_the_interaction_recorded_replaces_a_stream_that_lost_frames():
    """A catch-up's record (its GET) is the turn: its steps in the service's order, the
    input steps left out, whatever the stream delivered before."""
    recorded = {
        "id": "int_1",
        "status": "requires_action",
        "steps": [
            {"type": "user_input", "content": [{"type": "text", "text": "Compute."}]},
            {"type": "model_output", "content": [{"type": "text", "text": "Let me compute."}]},
            {"type": "function_call", "id": "call_1", "name": "add", "arguments": {"a": 1, "b": 2}},
        ],
    }
    events = [
        _created(),
        *_text_step(0, "Let me"),  # the rest was lost with a frame
        {"event_type": RECORDED, "interaction": recorded},
        _completed("requires_action"),
    ]
    fold = _fold(events)
    turn = turn_of([fold], events)
    assert turn.text == "Let me compute."
    assert [u.id for u in turn.tool_uses] == ["call_1"]
    assert fold.texts() == [("int_1:0", "Let me compute.")]


def test_the_hops_of_a_continued_turn_add_up_and_the_last_one_ends_it():
    first = [
        _created(),
        *_text_step(0, "Part one."),
        _completed(
            "requires_continuation", continuation_token="tok", usage={"total_output_tokens": 2}
        ),
    ]
    second = [
        *_text_step(0, "Part two."),
        _completed("completed", usage={"total_output_tokens": 3}),
    ]
    hops = [_fold(first), _fold(second, "int_2")]
    assert hops[0].continuation_token == "tok"
    turn = turn_of(hops, first + second)
    assert (turn.terminal, turn.text) == ("end_turn", "Part one.\nPart two.")
    assert turn.usage.output_tokens == 5


def test_tools_the_service_ran_are_observed_with_their_server():
    step = {
        "type": "mcp_server_tool_call",
        "id": "mcp_1",
        "name": "lookup",
        "server_name": "docs",
        "arguments": {"q": "x"},
    }
    events = [
        _created(),
        {"event_type": "step.start", "index": 0, "step": step},
        _completed("completed"),
    ]
    turn = turn_of([_fold(events)], events)
    assert [(u.id, u.name, u.mcp_server) for u in turn.server_tool_uses] == [
        ("mcp_1", "lookup", "docs")
    ]
    assert turn.tool_uses == ()


def test_usage_keeps_cached_input_apart_and_counts_thoughts_as_output():
    raw = {
        "total_input_tokens": 100,
        "total_cached_tokens": 30,
        "total_tool_use_tokens": 5,
        "total_output_tokens": 20,
        "total_thought_tokens": 7,
    }
    assert usage_of(raw) == Usage(input_tokens=75, output_tokens=27, cache_read_input_tokens=30)


def test_answers_are_function_result_steps_naming_the_call():
    use = ToolUse("call_1", "add", {"a": 1})
    assert function_result(use, ToolResult("call_1", "3")) == {
        "type": "function_result",
        "call_id": "call_1",
        "name": "add",
        "result": "3",
        "is_error": False,
    }
    failed = function_result(use, ToolResult("call_1", "boom", is_error=True))
    assert (failed["result"], failed["is_error"]) == ("boom", True)
    image = ToolResult.of_blocks("call_1", ["see", Image(b"\x89PNG", "image/png")])
    assert function_result(use, image)["result"] == [
        {"type": "text", "text": "see"},
        {"type": "image", "data": "iVBORw==", "mime_type": "image/png"},
    ]


def test_a_prompt_is_one_user_input_step():
    assert user_input("hi") == [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}]


def test_a_create_declares_only_the_fields_of_the_sdks_request_types():
    from google.genai._gaos.types.interactions.createagentinteraction import (
        CreateAgentInteraction,
    )

    assert set(CreateAgentInteraction.model_fields) == AGENT_CREATE_FIELDS
    with pytest.raises(ValueError, match="idempotency_key"):
        create_body({"agent": "a", "input": "x"}, {"idempotency_key": "k"})
    with pytest.raises(ValueError, match="not both"):
        create_body({"agent": "a", "model": "gemini"}, {})
    assert create_body({"agent": "a", "store": None}, {"stream": True}) == {
        "agent": "a",
        "stream": True,
    }


def test_labels_follow_the_apis_rules():
    assert checked_labels({"rma_create": "0af3"}) == {"rma_create": "0af3"}
    for bad in ({"Upper": "x"}, {"1st": "x"}, {"k": "UPPER"}, {"k": "x" * 64}):
        with pytest.raises(ValueError, match="must match"):
            checked_labels(bad)
