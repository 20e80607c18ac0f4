"""The catch-up's own promises, with a session that moves while it is being read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import run_to_completion
from req_managed_agents.providers.openai._catch_up import Tracker, catch_up
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call
from tests.faults._matrix import MatrixTools


class TurnEndsWhileRead:
    """A session whose one turn completes between whatever two reads come first: the first
    read sees it running, every later one sees it done."""

    def __init__(self) -> None:
        self.reads = 0

    def _done(self) -> bool:
        self.reads += 1
        return self.reads > 1

    def get_session(self, session_id: str, **_: Any) -> dict[str, Any]:
        done = self._done()
        return {"id": session_id, "status": "idle" if done else "in_progress"}

    def iter_turns(self, session_id: str, **_: Any) -> Iterator[dict[str, Any]]:
        done = self._done()
        yield {
            "id": "turn_1",
            "subagent_id": None,
            "status": "completed" if done else "in_progress",
            "usage": {"input_tokens": 5, "output_tokens": 2} if done else None,
        }

    def list_turn_items(self, session_id: str, turn_id: str, **_: Any) -> list[dict[str, Any]]:
        return []


def test_a_status_never_arrives_without_the_turn_end_it_implies() -> None:
    rebuilt = catch_up(TurnEndsWhileRead(), "sess_1", Tracker(), {})  # type: ignore[arg-type]
    kinds = [event["type"] for event in rebuilt]
    if "agent.session.idle" in kinds:
        assert "agent.session.turn.completed" in kinds, kinds
        assert kinds.index("agent.session.turn.completed") < kinds.index("agent.session.idle")
    assert "agent.session.turn.created" in kinds


def test_facts_already_delivered_are_not_rebuilt_and_a_repeated_status_is_dropped() -> None:
    tracker = Tracker()
    first = catch_up(TurnEndsWhileRead(), "sess_1", tracker, {})  # type: ignore[arg-type]
    for event in first:
        assert tracker.note(event)
    again = catch_up(TurnEndsWhileRead(), "sess_1", tracker, {})  # type: ignore[arg-type]
    assert [e["type"] for e in again if tracker.note(e)] == []


def test_the_final_text_survives_a_drop_before_the_turn_ends_with_answers_unstreamed() -> None:
    """The service keeps the answers it received off the stream; the stream drops after
    the final message, before the turn's end. The catch-up then rebuilds the answers after
    that message arrived, yet they come before it in the turn: its text is the run's."""
    script = [
        OpenAITurn(text="Let me add.", tool_calls=[call("add", a=1, b=2)]),
        OpenAITurn(text=lambda results: f"The sum is {results[0]}."),
    ]
    with OpenAIAgentsEmulator(script, echo_answers=False) as emulator:
        with emulator.provider() as provider:
            undisturbed = run_to_completion(
                provider, "Add.", handler=MatrixTools(), agent_id=emulator.add_agent()
            )
        assert undisturbed.text == "The sum is 3."
        log = [event["type"] for event in emulator.events(str(undisturbed.session_id))]
        emulator.drop_stream(len(log) - 1 - log[::-1].index("agent.session.turn.completed"))
        tools = MatrixTools()
        with emulator.provider(timeout=5) as provider:
            result = run_to_completion(
                provider,
                "Add.",
                handler=tools,
                agent_id=emulator.add_agent(),
                timeout=10,
                idle_timeout=1,
            )
        assert emulator.pending_faults() == 0, "the stream was dropped"
    assert result.terminal == "end_turn"
    assert result.text == "The sum is 3."
    assert list(tools.calls.values()) == [1]


@pytest.mark.parametrize(
    "script",
    [
        None,
        [
            OpenAITurn(text="Asking.", tool_calls=[call("add", a=2, b=2)], subagent="helper"),
            OpenAITurn(text=lambda results: f"Helper got {results[0]}.", subagent="helper"),
        ],
    ],
    ids=["root", "subagent"],
)
def test_rebuilt_items_carry_the_output_index_the_stream_gave_them(
    script: list[OpenAITurn] | None,
) -> None:
    """``output_index`` counts a turn's agent output only: the user's message, the function
    outputs and a subagent's report have none, live or rebuilt, and are never done."""
    with OpenAIAgentsEmulator() as emulator, emulator.provider() as provider:
        result = run_to_completion(
            provider, "Compute.", handler=MatrixTools(), agent_id=emulator.add_agent(script)
        )
        session_id = str(result.session_id)
        root = {t["id"] for t in emulator.turns(session_id) if t["subagent_id"] is None}
        live = {  # the catch-up reads the root agent's items (a subagent's are its own)
            (event["type"], event["item"]["id"]): event["output_index"]
            for event in emulator.events(session_id)
            if "item" in event and event["turn_id"] in root
        }
        rebuilt = {
            (event["type"], event["item"]["id"]): event["output_index"]
            for event in catch_up(provider.client, session_id, Tracker(), {})
            if "item" in event
        }
    assert rebuilt == live
