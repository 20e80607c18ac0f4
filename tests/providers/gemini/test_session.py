"""``GeminiManagedAgents`` through the drivers, over real sockets against the emulator: a
run as a chain of interactions, text as it is written, a session's second prompt, resuming
a dropped stream, an interaction not readable right after its create, a stream that cannot
resume, stopping, continuation, and keyed runs.

The emulator offers no ``provider()`` of its own (it was built alongside this provider):
the tests build the provider aimed at it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import (
    MemoryStore,
    Session,
    TextDelta,
    ToolContext,
    ToolLedger,
    Tools,
    run_to_completion,
)
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers import GeminiManagedAgents
from req_managed_agents.testing import call
from req_managed_agents.testing.gemini import GeminiEmulator, GeminiTurn
from tests.faults._matrix import MatrixTools

TWO_TOOLS = [
    GeminiTurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    GeminiTurn(tool_calls=[call("mul", a=5, b=6)]),
    GeminiTurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]


@pytest.fixture
def emulator() -> Iterator[GeminiEmulator]:
    with GeminiEmulator(TWO_TOOLS, ping_interval=0.1) as emulator:
        yield emulator


def provider_of(emulator: GeminiEmulator, **options: Any) -> GeminiManagedAgents:
    return GeminiManagedAgents(
        emulator.api_key, base_url=emulator.base_url, **{"timeout": 5, **options}
    )


@pytest.fixture
def provider(emulator: GeminiEmulator) -> Iterator[GeminiManagedAgents]:
    with provider_of(emulator) as provider:
        yield provider


def _creates(emulator: GeminiEmulator) -> list[dict[str, Any]]:
    bodies = []
    for request in emulator.requests:
        if request.method == "POST" and request.path.endswith("/interactions"):
            assert isinstance(request.body, dict)
            bodies.append(request.body)
    return bodies


def _chain(emulator: GeminiEmulator, head: str) -> list[str]:
    """The interactions from the first to ``head``, by ``previous_interaction_id``."""
    chain = [head]
    while True:
        previous = emulator.interaction(chain[-1]).get("previous_interaction_id")
        if not previous:
            return chain[::-1]
        chain.append(previous)


def test_a_three_turn_two_tool_run_is_one_chain_of_interactions(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Compute.", handler=tools, agent=emulator.add_agent(), timeout=10
    )
    assert (result.terminal, result.text, result.turns) == ("end_turn", "The total is 30.", 3)
    assert [(use.name, dict(use.input)) for use in result.tool_uses] == [
        ("add", {"a": 1, "b": 2}),
        ("mul", {"a": 3, "b": 4}),
        ("mul", {"a": 5, "b": 6}),
    ]
    assert sorted(tools.calls.values()) == [1, 1, 1]
    # The session id is the chain's newest interaction; every interaction is in the chain.
    assert result.session_id == emulator.interaction_ids()[-1]
    assert _chain(emulator, str(result.session_id)) == emulator.interaction_ids()
    creates = _creates(emulator)
    assert len(creates) == 3
    assert all(body["stream"] is True for body in creates)
    assert creates[0]["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "Compute."}]}
    ]
    assert [f["name"] for f in creates[0]["tools"]] == ["add", "mul"]
    answers = [step for body in creates[1:] for step in body["input"]]
    assert [(s["type"], s["call_id"], s["result"]) for s in answers] == [
        ("function_result", use.id, value)
        for use, value in zip(result.tool_uses, ["3", "12", "30"])
    ]
    assert result.usage.output_tokens > 0


def test_the_text_reaches_on_text_as_it_is_written(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    with Session(provider, handler=MatrixTools(), agent=emulator.add_agent()) as session:
        items = list(session.stream("Compute."))
    deltas = "".join(item.text for item in items if isinstance(item, TextDelta))
    assert deltas == "Let me compute.The total is 30."


def test_a_sessions_second_prompt_continues_the_chain(emulator: GeminiEmulator) -> None:
    agent = emulator.add_agent(["Hello.", GeminiTurn(text=lambda said: f"You said {said[0]}")])
    with provider_of(emulator) as provider, Session(provider, handler=Tools(), agent=agent) as s:
        first = s.run("Hi.", timeout=10)
        second = s.run("Again.", timeout=10)
    assert (first.text, second.text) == ("Hello.", "You said Again.")
    assert _chain(emulator, str(second.session_id)) == emulator.interaction_ids()


@pytest.mark.parametrize("at", [2, 5, 9, 14])
def test_a_dropped_stream_is_resumed_from_its_last_event(
    emulator: GeminiEmulator, provider: GeminiManagedAgents, at: int
) -> None:
    emulator.drop_stream(at)
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Compute.", handler=tools, agent=emulator.add_agent(), timeout=10
    )
    assert (result.terminal, result.text) == ("end_turn", "The total is 30.")
    assert sorted(tools.calls.values()) == [1, 1, 1]
    resumes = [
        r for r in emulator.requests if r.method == "GET" and r.query.get("stream") == ["true"]
    ]
    assert resumes
    assert all(r.query.get("last_event_id") for r in resumes)
    logged = [e["event_id"] for e in emulator.conversation_events(str(result.session_id))]
    seen = [e.get("event_id") for e in tools.events]
    assert seen == logged  # each once, in order


def test_an_interaction_not_readable_right_after_its_create_is_waited_on(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    emulator.not_found_after_create(reads=2)
    emulator.drop_stream(3)  # the resume reads it at once, and meets the 404s
    result = run_to_completion(
        provider, "Compute.", handler=MatrixTools(), agent=emulator.add_agent(), timeout=10
    )
    assert result.text == "The total is 30."
    assert emulator.pending_faults() == 0


@pytest.mark.parametrize("status", [400, 404, 410])
def test_a_stream_that_cannot_resume_is_caught_up_from_the_interaction(
    emulator: GeminiEmulator, provider: GeminiManagedAgents, status: int
) -> None:
    emulator.refuse_resumes(status=status)
    emulator.drop_stream(4)
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Compute.", handler=tools, agent=emulator.add_agent(), timeout=10
    )
    assert (result.text, result.turns) == ("The total is 30.", 3)
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert emulator.pending_faults() == 0


def test_cancel_stops_the_running_interaction(emulator: GeminiEmulator) -> None:
    agent = emulator.add_agent([GeminiTurn(text="slow", delay=30.0)])
    with provider_of(emulator) as provider:
        session = Session(provider, handler=Tools(), agent=agent)
        session.start("Think long.")
        # Wait until the interaction is running, then stop the run.
        for _ in range(200):
            if emulator.running():
                break
            threading.Event().wait(0.05)
        running = emulator.running()
        assert running
        session.cancel()
        result = session.wait(timeout=10)
        session.close()
    assert result.stop_reason == {"type": "cancelled"}
    assert emulator.interaction(running[0])["status"] == "cancelled"
    assert emulator.running() == []


def test_requires_continuation_is_continued_without_input(emulator: GeminiEmulator) -> None:
    agent = emulator.add_agent(
        [GeminiTurn(text="Part one.", end="requires_continuation"), "Part two."]
    )
    with provider_of(emulator) as provider:
        result = run_to_completion(provider, "Go.", handler=Tools(), agent=agent, timeout=10)
    assert (result.terminal, result.turns) == ("end_turn", 1)
    assert result.text == "Part one.\nPart two."
    continued = _creates(emulator)[1]
    assert "input" not in continued
    assert continued["continuation_token"]


def test_a_keyed_run_run_again_continues_from_the_chains_newest_interaction(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    """The key's binding follows the chain's head: run again, the run reads where the chain
    ended - it neither creates the prompt again nor answers the first calls again (a
    branch)."""
    ledger = ToolLedger(MemoryStore())
    agent = emulator.add_agent()
    tools = MatrixTools()
    options: dict[str, Any] = {"agent": agent, "idempotency_key": "job-1", "ledger": ledger}
    first = run_to_completion(provider, "Compute.", handler=tools, timeout=10, **options)
    made = emulator.interaction_ids()
    again = run_to_completion(provider, "Compute.", handler=tools, timeout=10, **options)
    assert emulator.interaction_ids() == made
    assert (again.session_id, again.text) == (first.session_id, "The total is 30.")
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert emulator.interaction(made[0])["labels"]["rma_create"]


def test_a_keyed_run_stopped_between_turns_goes_on_from_where_the_chain_stands(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    """Let go of while its second turn's tool runs (a worker that shuts down), a keyed run
    run again answers that turn - the chain's newest interaction - and never the first
    turn's calls again (which would branch the chain)."""
    ledger = ToolLedger(MemoryStore())
    entered, release = threading.Event(), threading.Event()
    counts: dict[str, int] = {}

    def tools(block: bool) -> Tools:
        registry = Tools()

        @registry.tool
        def add(a: int, b: int, context: ToolContext) -> int:
            """Add two integers."""
            counts[context.tool_use_id] = counts.get(context.tool_use_id, 0) + 1
            return a + b

        @registry.tool
        def mul(a: int, b: int, context: ToolContext) -> int:
            """Multiply two integers."""
            if block and a == 5:
                entered.set()
                release.wait(10)
            counts[context.tool_use_id] = counts.get(context.tool_use_id, 0) + 1
            return a * b

        return registry

    agent = emulator.add_agent()
    keyed: dict[str, Any] = {"agent": agent, "idempotency_key": "job-2", "ledger": ledger}
    session = Session(provider, handler=tools(True), **keyed)
    session.start("Compute.")
    assert entered.wait(10)
    session.detach()
    release.set()
    result = run_to_completion(provider, "Compute.", handler=tools(False), timeout=10, **keyed)
    assert result.text == "The total is 30."
    ids = emulator.interaction_ids()
    assert len(ids) == 3
    assert _chain(emulator, ids[-1]) == ids  # one chain: nothing branched
    assert sorted(counts.values()) == [1, 1, 1]


def test_a_conversation_is_continued_by_its_newest_interaction(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    agent = emulator.add_agent(["One.", "Two."])
    first = run_to_completion(provider, "Hi.", handler=Tools(), agent=agent, timeout=10)
    second = run_to_completion(
        provider,
        "More.",
        handler=Tools(),
        agent=agent,
        interaction_id=str(first.session_id),
        timeout=10,
    )
    assert second.text == "Two."
    assert _chain(emulator, str(second.session_id)) == emulator.interaction_ids()


def test_options_are_checked_before_anything_is_sent(emulator: GeminiEmulator) -> None:
    with provider_of(emulator) as provider:
        with pytest.raises(ConfigurationError, match="agent="):
            run_to_completion(provider, "Hi.", handler=Tools(), timeout=10)
        with pytest.raises(ConfigurationError, match="label"):
            run_to_completion(
                provider, "Hi.", handler=Tools(), agent="a", labels={"Bad": "x"}, timeout=10
            )
    assert _creates(emulator) == []
