"""The catch-up's own promises, with a session that moves while it is being read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from req_managed_agents.providers.openai._catch_up import Tracker, catch_up


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
