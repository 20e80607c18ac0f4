from __future__ import annotations

import dataclasses

import pytest

from req_managed_agents import SessionResult, ToolResult
from req_managed_agents.model import ToolUse, TurnResult, Usage


def test_usage_adds_field_by_field() -> None:
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40)
    assert total == Usage(11, 22, 33, 44)


def test_usage_total_counts_cache_reads_and_writes() -> None:
    assert Usage(1, 2, 3, 4).total_tokens == 10


def test_usage_sum_starts_from_empty_usage() -> None:
    assert sum([Usage(1, 1), Usage(2, 2)], Usage()) == Usage(3, 3)


def test_usage_refuses_to_add_other_types() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]


def test_vocabulary_is_frozen() -> None:
    result = ToolResult("t1", "ok")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = "changed"  # type: ignore[misc]


def test_turn_result_defaults_describe_an_empty_turn() -> None:
    turn = TurnResult("end_turn")
    assert (turn.text, turn.tool_uses, turn.usage, turn.events) == ("", (), Usage(), ())


def test_session_result_keeps_provider_values_verbatim() -> None:
    stop_reason = {"type": "end_turn", "extra": [1]}
    result = SessionResult(
        terminal="end_turn",
        text="done",
        usage=Usage(1, 1),
        turns=1,
        turn_usage=(Usage(1, 1),),
        session_id="s",
        stop_reason=stop_reason,
        events=({"type": "x"},),
        tool_uses=(ToolUse("t", "n", {"a": 1}),),
    )
    assert result.stop_reason is stop_reason
    assert result.tool_uses[0].input == {"a": 1}
