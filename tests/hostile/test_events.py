"""Hostile fields inside events the stream boundary lets through: each normalizer, given a
real run's events with one value anywhere in one of them (a nested one too) replaced by a
value of the wrong type, folds them without a ``KeyError``, ``TypeError`` or
``AttributeError`` - what it cannot use it leaves out, or it raises a
:class:`~req_managed_agents.ManagedAgentsError` saying so.

The boundary (``check_fields``, applied to every frame and history page) refuses an event
whose own ``type`` or ids cannot be used; what it lets through is what is fuzzed here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from req_managed_agents import ManagedAgentsError
from req_managed_agents.errors import StreamError
from req_managed_agents.providers.agentcore._converse import ConverseFold
from req_managed_agents.providers.claude import _events as claude
from req_managed_agents.providers.gemini import _events as gemini
from req_managed_agents.providers.openai import _events as openai
from req_managed_agents.providers.openai._catch_up import Tracker
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    GeminiEmulator,
    OpenAIAgentsEmulator,
)
from req_managed_agents.transport._json import check_fields
from tests.faults._matrix import MatrixTools
from tests.hostile import test_runs as runs

# Values of every JSON type (and a few nestings of them) put in place of each field.
WRONG = (None, 0, 2.5, True, "", "x", [], [["nested"]], {}, {"a": [{"b": None}]})
Event = dict[str, Any]


def _paths(value: Any, depth: int = 4) -> Iterator[tuple[Any, ...]]:
    """The path of every value inside ``value`` (keys and list indexes), outermost first."""
    if depth == 0 or not isinstance(value, (dict, list)):
        return
    for key, item in value.items() if isinstance(value, dict) else enumerate(value):
        yield (key,)
        for rest in _paths(item, depth - 1):
            yield (key, *rest)


def _mutants(events: Sequence[Event]) -> Iterator[tuple[str, list[Event]]]:
    """The events with one value replaced (or one key removed), each mutant the boundary
    lets through."""
    for index, event in enumerate(events):
        for path in _paths(event):
            for value in (*WRONG, KeyError):
                mutant = copy.deepcopy(list(events))
                parent = mutant[index]
                for key in path[:-1]:
                    parent = parent[key]
                if value is KeyError:
                    if not isinstance(parent, dict):
                        continue
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = value
                try:
                    for checked in mutant:
                        check_fields(checked, "the event")
                except ValueError:
                    continue  # refused where it comes in: never reaches a normalizer
                yield f"event {index} ({event.get('type')}) {list(path)} = {value!r}", mutant


def _fuzz(events: Sequence[Event], fold: Callable[[list[Event]], object]) -> None:
    problems = []
    tried = 0
    for where, mutant in _mutants(events):
        tried += 1
        try:
            fold(mutant)
        except ManagedAgentsError:
            pass  # said what it cannot use
        except Exception as error:
            problems.append(f"{where}: {type(error).__name__}: {error}")
    assert tried > 200, f"only {tried} mutants: the fuzz reached too little"
    assert not problems, f"{len(problems)} of {tried} mutants broke the fold:\n" + "\n".join(
        problems[:20]
    )


def _log(start: Callable[[], Any], run: Callable[..., Any], events: Callable[..., Any]) -> Any:
    with start() as emulator:
        result = run(emulator, MatrixTools())
        return events(emulator, result)


CLAUDE_EXTRA: list[Event] = [
    {
        "type": "agent.tool_use",
        "id": "sevt_ask",
        "name": "bash",
        "input": {"command": "ls"},
        "evaluated_permission": "ask",
        "session_thread_id": "sthr_1",
    },
    {
        "type": "agent.mcp_elicitation",
        "id": "sevt_elicit",
        "mcp_server_name": "docs",
        "mcp_tool_use_id": "sevt_mcp",
        "request": {"url": "https://example.com", "message": "sign in"},
    },
    {"type": "span.outcome_evaluation_end", "id": "sevt_eval", "result": "needs_revision"},
    {
        "type": "session.error",
        "id": "sevt_error",
        "error": {"type": "overloaded", "retry_status": {"type": "retrying"}},
    },
    {
        "type": "session.status_idle",
        "id": "sevt_idle",
        "stop_reason": {"type": "requires_action", "event_ids": ["sevt_ask", "sevt_elicit"]},
    },
]


def _claude_fold(batch: list[Event]) -> None:
    claude.normalize(batch, {}, {}, {}, {})
    claude.unanswered_tool_uses(batch)
    for event in batch:
        claude.is_boundary(event)
        claude.asks_permission(event)
        claude.tool_use_of(event)
        claude.elicitation_of(event)
        claude.text_of(event)
        _ = event.get("result") in claude.OUTCOME_SETTLED  # what the conversation asks


def test_claude_events_with_hostile_fields_fold_or_are_refused() -> None:
    log = _log(
        runs._claude_start,
        runs._claude_run,
        lambda emulator, result: emulator.events(result.session_id),
    )
    _fuzz([*log, *CLAUDE_EXTRA], _claude_fold)


def _openai_fold(batch: list[Event]) -> None:
    tracker = Tracker()
    threads: dict[str, str | None] = {}
    for index, event in enumerate(batch):
        tracker.note(event)
        session = event.get("session")
        openai.required_uses(session, threads)
        openai.usage_of(event.get("usage"))
        openai.assistant_text(event.get("item"))
        openai.user_text(event.get("item"))
        if event.get("type") in openai.BOUNDARIES:
            turn = event.get("turn_id")
            roots = {turn} if isinstance(turn, str) else set()
            openai.normalize(batch[: index + 1], roots | {"turn_1"}, threads)


def test_openai_events_with_hostile_fields_fold_or_are_refused() -> None:
    log = _log(
        runs._openai_start,
        runs._openai_run,
        lambda emulator, result: emulator.events(result.session_id),
    )
    _fuzz(log, _openai_fold)


def _agentcore_fold(frames: list[Event]) -> None:
    fold = ConverseFold()
    for frame in frames:
        fold.add(frame)
    fold.result(frames)


def test_agentcore_frames_with_hostile_fields_fold_or_are_refused() -> None:
    def frames(emulator: AgentCoreEmulator, result: Any) -> list[Event]:
        (invocation, *_) = emulator.invocations
        turns = emulator.turn_frames(invocation.harness_arn, invocation.runtime_session_id)
        return [frame for turn in turns for frame in turn]

    _fuzz(_log(runs._agentcore_start, runs._agentcore_run, frames), _agentcore_fold)


def _gemini_fold(events: list[Event]) -> None:
    """Each hop's events folded as the conversation does, then the hop as recorded (the
    catch-up's ``GET``: a ``completed`` event's interaction stands in for it)."""
    hops: list[gemini.InteractionFold] = []
    for event in events:
        if event.get("event_type") == gemini.CREATED or not hops:
            hops.append(gemini.InteractionFold("int_1"))
        hops[-1].add(event)
        interaction = event.get("interaction")
        if isinstance(interaction, dict):
            hops[-1].take(interaction)
        gemini.usage_of(event.get("usage"))
        gemini.turn_of(hops, events)
        for hop in hops:
            hop.texts()


def test_gemini_events_with_hostile_fields_fold_or_are_refused() -> None:
    from tests.hostile import test_gemini_runs as gemini_runs

    def log(emulator: GeminiEmulator, result: Any) -> list[Event]:
        events = emulator.conversation_events(str(result.session_id))
        # What a catch-up reads: each hop as recorded, steps and all.
        recorded = [
            {"event_type": gemini.RECORDED, "interaction": emulator.interaction(i)}
            for i in emulator.interaction_ids()
        ]
        return [*events, *recorded]

    _fuzz(_log(gemini_runs._start, gemini_runs._run, log), _gemini_fold)


def test_the_fuzz_starts_from_real_runs() -> None:
    """The logs fuzzed are a run's whole log, tool calls and their answers included."""
    with ClaudeEmulator(runs.CLAUDE_SCRIPT) as emulator:
        result = runs._claude_run(emulator, MatrixTools())
        types = {event["type"] for event in emulator.events(str(result.session_id))}
    assert {"agent.custom_tool_use", "user.custom_tool_result", "session.status_idle"} <= types
    with OpenAIAgentsEmulator(runs.OPENAI_SCRIPT) as emulator:
        result = runs._openai_run(emulator, MatrixTools())
        types = {event["type"] for event in emulator.events(str(result.session_id))}
    assert {"agent.session.requires_action", "agent.session.turn.item.done"} <= types


def _waiting(call_id: object) -> dict[str, Any]:
    action = {"type": "function_call", "call_id": call_id, "name": "add", "turn_id": "turn_1"}
    return {"status": "requires_action", "required_actions": [action]}


def test_an_openai_call_whose_id_cannot_be_used_is_left_out_not_answered() -> None:
    """A call id of the wrong type or a megabyte long would be the id of a tool call (run,
    recorded, posted back): such a call is left out, and the turn ends as one this library
    cannot answer."""
    (usable,), _ = openai.required_uses(_waiting("call_1"), {})
    assert usable.id == "call_1"
    for hostile in (["call_1"], {"id": 1}, 5, "", "c" * 1_000_000):
        assert openai.required_uses(_waiting(hostile), {}) == ([], [])
    boundary = {"type": "agent.session.requires_action", "session": _waiting("c" * 1_000_000)}
    turn = openai.normalize([boundary], set(), {})
    assert turn.terminal == "requires_action"
    assert turn.tool_uses == ()


def test_an_agentcore_tool_use_whose_id_cannot_be_used_is_refused() -> None:
    fold = ConverseFold()
    start = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t_1", "name": "add"}}}
    fold.add({"contentBlockStart": start})
    for hostile in (["t_1"], 5, None, "", "t" * 1_000_000):
        start = {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": hostile}}}
        with pytest.raises(StreamError, match="toolUseId") as caught:
            ConverseFold().add({"contentBlockStart": start})
        assert len(str(caught.value)) < 500
    assert [use.id for use in fold.tool_uses()[0]] == ["t_1"]
