"""Events the library has no use for reach the user and break nothing.

The service sends more than a run needs: workflow runs, reschedules, context compactions,
environment lifecycles, reasoning summaries, and types that do not exist yet. A run through
them completes as if they were not there, and the user sees each one, in order, in
``handle_event``, in the ``TurnResult.events`` of its turn (``Session.stream``'s
``TurnEnded``) and in ``SessionResult.events``. The emulators emit them from a script
(``Turn(events=...)``, ``OpenAITurn(events=...)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from req_managed_agents import Session, SessionResult, TurnEnded
from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator, OpenAITurn, Turn, call
from tests.support.tools import CountingTools

UNKNOWN = {"type": "session.kind_from_the_future", "detail": {"level": 3}}
OPENAI_UNKNOWN = {"type": "agent.session.kind_from_the_future", "detail": {"level": 3}}


def _types(events: Any) -> list[str]:
    return [str(event.get("type")) for event in events]


def _subsequence(wanted: list[str], seen: list[str]) -> bool:
    """Whether ``wanted`` appears in ``seen`` in this order (others in between)."""
    remaining = iter(seen)
    return all(kind in remaining for kind in wanted)


def _run(provider: Any, connect: Mapping[str, Any]) -> tuple[list[Any], CountingTools]:
    tools = CountingTools()
    with Session(provider, handler=tools, **connect) as session:
        items = list(session.stream("Add, please.", timeout=30))
    return items, tools


@pytest.mark.parametrize("flavor", ["claude", "openai"])
def test_a_run_through_events_it_does_not_know_completes_and_shows_them(flavor: str) -> None:
    emulator: Any
    if flavor == "claude":
        named = sorted(Turn.named_events)
        scripted = [*named, dict(UNKNOWN)]
        script: list[Any] = [
            Turn("Adding.", tool_calls=[call("add", a=1, b=2)], events=scripted),
            Turn(lambda results: f"The sum is {results[0]}.", events=[dict(UNKNOWN)]),
        ]
        emulator = ClaudeEmulator(script, ping_interval=0.2)
        connect: dict[str, Any] = {
            "agent_id": emulator.add_agent(),
            "environment_id": emulator.add_environment(),
        }
        unknown = UNKNOWN["type"]
    else:
        named = sorted(OpenAITurn.named_events)
        scripted = [*named, dict(OPENAI_UNKNOWN)]
        script = [
            OpenAITurn("Adding.", tool_calls=[call("add", a=1, b=2)], events=scripted),
            OpenAITurn(lambda results: f"The sum is {results[0]}.", events=[dict(OPENAI_UNKNOWN)]),
        ]
        emulator = OpenAIAgentsEmulator(script, ping_interval=0.2)
        connect = {"agent_id": emulator.add_agent()}
        unknown = OPENAI_UNKNOWN["type"]
    assert named, "the emulator names the types it can script"
    with emulator, emulator.provider(timeout=5) as provider:
        items, tools = _run(provider, connect)
    result = items[-1]
    assert isinstance(result, SessionResult)
    assert (result.terminal, result.text) == ("end_turn", "The sum is 3.")
    assert sorted(tools.calls.values()) == [1]
    wanted = [*named, unknown]
    assert _subsequence(wanted, _types(tools.events)), _types(tools.events)
    assert _subsequence([*wanted, unknown], _types(result.events)), _types(result.events)
    turns = [item.turn for item in items if isinstance(item, TurnEnded)]
    assert len(turns) == 2
    assert _subsequence(wanted, _types(turns[0].events)), _types(turns[0].events)
    assert unknown in _types(turns[1].events)
    given = next(e for e in tools.events if e.get("type") == unknown)
    assert given["detail"] == {"level": 3}  # as the service sent it
