"""``OpenAIAgents`` through the drivers, over real sockets against the emulator: a run and
what it reports, text as it is written, subagents, MCP approvals, the registration race,
stopping, resuming, keyed runs, and the ways a session ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from req_managed_agents import (
    Allow,
    Deny,
    SessionResult,
    TextDelta,
    ToolContext,
    ToolLedger,
    Tools,
    run_to_completion,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import BadRequestError, ConfigurationError
from req_managed_agents.model import ToolUse
from req_managed_agents.providers import OpenAIAgents
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call
from tests.faults._matrix import MatrixTools

TWO_TOOLS = [
    OpenAITurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    OpenAITurn(tool_calls=[call("mul", a=5, b=6)]),
    OpenAITurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]


@pytest.fixture
def emulator() -> Iterator[OpenAIAgentsEmulator]:
    with OpenAIAgentsEmulator(TWO_TOOLS, ping_interval=0.1) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: OpenAIAgentsEmulator) -> Iterator[OpenAIAgents]:
    with emulator.provider(timeout=5) as provider:
        yield provider


def _posted(emulator: OpenAIAgentsEmulator) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for request in emulator.requests:
        if request.method == "POST" and request.path.endswith("/events"):
            assert isinstance(request.body, dict)
            events += request.body["events"]
    return events


def test_a_three_turn_two_tool_run(emulator: OpenAIAgentsEmulator, provider: OpenAIAgents) -> None:
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Compute.", handler=tools, agent_id=emulator.add_agent(), timeout=10
    )
    assert (result.terminal, result.text, result.turns) == ("end_turn", "The total is 30.", 3)
    assert [(use.name, dict(use.input)) for use in result.tool_uses] == [
        ("add", {"a": 1, "b": 2}),
        ("mul", {"a": 3, "b": 4}),
        ("mul", {"a": 5, "b": 6}),
    ]
    assert all(use.turn_id for use in result.tool_uses)
    assert sorted(tools.calls.values()) == [1, 1, 1]
    # The session was created with the prompt; the results went out in one post per turn,
    # each naming its call's turn, under a key derived from what it answers.
    session = emulator.session(str(result.session_id))
    assert session["status"] == "idle"
    posts = [r for r in emulator.requests if r.method == "POST" and r.path.endswith("/events")]
    assert len(posts) == 2
    assert all(r.headers.get("idempotency-key", "").startswith("rma-") for r in posts)
    results = _posted(emulator)
    assert [(e["call_id"], e["output"]) for e in results] == [
        (use.id, answer) for use, answer in zip(result.tool_uses, ["3", "12", "30"])
    ]
    assert {e["turn_id"] for e in results} == {use.turn_id for use in result.tool_uses}
    # Usage: the service's per-turn usage, cached input kept apart.
    assert result.usage.output_tokens == sum(u.output_tokens for u in result.turn_usage)


def test_text_streams_as_it_is_written_and_ends_once(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    with Session(provider, handler=MatrixTools(), agent_id=emulator.add_agent()) as session:
        items = list(session.stream("Compute.", timeout=10))
    deltas = "".join(item.text for item in items if isinstance(item, TextDelta))
    assert deltas == "Let me compute.The total is 30."
    final = items[-1]
    assert isinstance(final, SessionResult)
    assert final.text == "The total is 30."


def test_the_final_text_comes_once_through_a_stream_drop(emulator: OpenAIAgentsEmulator) -> None:
    """Issue 22: a three-turn run streamed with ``Session.stream`` yields the final text
    exactly once through a stream drop (here, in the middle of the last message)."""
    log_position_of_second_delta = 31
    emulator.drop_stream(log_position_of_second_delta)
    with (
        emulator.provider(timeout=5) as provider,
        Session(
            provider, handler=MatrixTools(), agent_id=emulator.add_agent(), idle_timeout=1
        ) as session,
    ):
        items = list(session.stream("Compute.", timeout=10))
    texts = "".join(item.text for item in items if isinstance(item, TextDelta))
    assert texts.count("The total is 30.") == 1, texts
    assert texts.endswith("The total is 30.")
    assert len(emulator.stream_connections()) == 2, "the drop forced a reconnect"
    final = items[-1]
    assert isinstance(final, SessionResult)
    assert final.text == "The total is 30."


def test_a_subagents_calls_run_here_and_are_answered_on_its_turn(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    script = [
        OpenAITurn(text="Delegating.", tool_calls=[call("add", a=2, b=2)], subagent="helper"),
        OpenAITurn(text=lambda results: f"Helper got {results[0]}.", subagent="helper"),
        OpenAITurn(text="Done."),
    ]
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Go.", handler=tools, agent_id=emulator.add_agent(script), timeout=10
    )
    assert result.terminal == "end_turn"
    (use,) = result.tool_uses
    assert use.session_thread_id is not None, "the call names the subagent that made it"
    turns = {t["id"]: t for t in emulator.turns(str(result.session_id))}
    assert turns[str(use.turn_id)]["subagent_id"] == use.session_thread_id
    (posted,) = _posted(emulator)
    assert posted["turn_id"] == use.turn_id
    client, sid = provider.client, str(result.session_id)
    (subagent,) = client.list_subagents(sid)
    assert client.get_subagent(sid, subagent["id"])["id"] == use.session_thread_id
    assert str(use.turn_id) in [t["id"] for t in client.list_subagent_turns(sid, subagent["id"])]
    turn = client.get_subagent_turn(sid, subagent["id"], str(use.turn_id))
    assert turn["subagent_id"] == use.session_thread_id
    items = client.list_subagent_turn_items(sid, subagent["id"], str(use.turn_id))
    assert [i["type"] for i in items].count("function_call") == 1
    assert client.list_subagent_items(sid, subagent["id"])


def test_mcp_approvals_go_through_the_confirmation_policy(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    script = [
        OpenAITurn(
            mcp_calls=[
                call_of("search", "docs", "ask"),
                call_of("delete", "docs", "ask"),
            ]
        ),
        OpenAITurn(text=lambda decisions: ", ".join(decisions)),
    ]

    class Confirming(Tools):
        def handle_confirmation(self, tool_use: ToolUse, info: Any) -> Allow | Deny:
            return Allow() if tool_use.name == "search" else Deny("no deleting")

    result = run_to_completion(
        provider, "Tidy.", handler=Confirming(), agent_id=emulator.add_agent(script), timeout=10
    )
    assert result.text == "approved, denied"
    decisions = [e["response"]["decision"] for e in _posted(emulator)]
    assert decisions == ["approve", "deny"]


def call_of(name: str, server: str, permission: str) -> Any:
    from req_managed_agents.testing import ToolCall

    return ToolCall(name, {}, result="ok", permission=permission, mcp_server=server)  # type: ignore[arg-type]


def test_a_result_posted_before_its_call_is_registered_is_posted_again(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    emulator.refuse_unregistered_results(times=2)
    tools = MatrixTools()
    result = run_to_completion(
        provider, "Compute.", handler=tools, agent_id=emulator.add_agent(), timeout=10
    )
    assert result.text == "The total is 30."
    assert emulator.pending_faults() == 0
    assert sorted(tools.calls.values()) == [1, 1, 1]


def test_a_result_the_service_refuses_for_good_is_not_posted_again(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    emulator.fail_requests("POST", r"/v1/agents/sessions/[^/]+/events", 400, times=1)
    with pytest.raises(BadRequestError, match="injected"):
        run_to_completion(
            provider, "Compute.", handler=MatrixTools(), agent_id=emulator.add_agent(), timeout=10
        )
    posts = [r for r in emulator.requests if r.method == "POST" and r.path.endswith("/events")]
    assert len(posts) == 1


def test_cancel_stops_the_tools_and_cancels_the_remote_turn(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    started = threading.Event()
    stopped = threading.Event()
    tools = Tools()

    @tools.tool
    def add(a: int, b: int, context: ToolContext) -> int:
        """Add slowly."""
        started.set()
        context.cancelled.wait(10)
        stopped.set()
        return a + b

    session = Session(provider, handler=tools, agent_id=emulator.add_agent())
    session.start("Compute.")
    assert started.wait(5)
    session.cancel()
    result = session.wait(5)
    assert result.stop_reason == {"type": "cancelled"}
    assert stopped.wait(5), "the running tool was told to stop"
    sid = str(result.session_id)
    assert emulator.wait_until(
        lambda: any(e["type"] == "agent.session.turn.cancelled" for e in emulator.events(sid))
    )
    assert {"type": "agent.session.input.cancel"} in _posted(emulator)


def test_closing_a_session_as_it_opens_still_stops_the_turn_its_prompt_started(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    """The session is created with the prompt, so its turn runs before the driver follows
    it: a close in that moment must cancel it too, and a resumed run then reports it."""
    gate = threading.Event()
    first = Tools()

    @first.tool
    def add(a: int, b: int) -> int:
        """Never answers in time."""
        gate.wait(10)
        return a + b

    session = Session(provider, handler=first, agent_id=emulator.add_agent(), tool_timeout=60)
    session.start("Compute.")
    assert emulator.wait_until(lambda: bool(emulator.session_ids()))
    sid = emulator.session_ids()[0]
    assert emulator.wait_until(lambda: emulator.session(sid)["status"] == "requires_action")
    session.close()
    gate.set()
    tools = MatrixTools()
    result = run_to_completion(provider, None, handler=tools, session_id=sid, timeout=10)
    assert result.session_id == sid
    assert result.terminal == "terminated"
    assert result.stop_reason == {"type": "turn_cancelled"}


def test_a_reattached_run_answers_the_calls_the_session_waits_for(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    created = provider.client.create_session(
        "none", agent_id=emulator.add_agent(), input="Compute."
    )
    sid = str(created["id"])
    assert emulator.wait_until(lambda: emulator.session(sid)["status"] == "requires_action")
    tools = MatrixTools()
    result = run_to_completion(provider, None, handler=tools, session_id=sid, timeout=10)
    assert (result.terminal, result.text) == ("end_turn", "The total is 30.")
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert [e.get("output") for e in _posted(emulator)] == ["3", "12", "30"]


def test_a_keyed_run_continues_its_session_and_never_reruns_a_finished_tool(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    ledger = ToolLedger()
    agent = emulator.add_agent()
    first = run_to_completion(
        provider,
        "Compute.",
        handler=MatrixTools(),
        agent_id=agent,
        ledger=ledger,
        idempotency_key="job-1",
        timeout=10,
    )
    tools = MatrixTools()
    again = run_to_completion(
        provider,
        "Compute.",
        handler=tools,
        agent_id=agent,
        ledger=ledger,
        idempotency_key="job-1",
        timeout=10,
    )
    assert again.session_id == first.session_id
    assert again.text == "The total is 30."
    assert not tools.calls, "nothing ran again"
    assert len(emulator.session_ids()) == 1


@pytest.mark.parametrize(
    ("end", "stop_reason"),
    [("turn_failed", "turn_failed"), ("session_failed", "session_failed")],
)
def test_a_failed_turn_or_session_ends_the_run_terminated(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents, end: str, stop_reason: str
) -> None:
    script = [OpenAITurn(text="Trying.", end=end)]  # type: ignore[arg-type]
    result = run_to_completion(
        provider, "Go.", handler=MatrixTools(), agent_id=emulator.add_agent(script), timeout=10
    )
    assert result.terminal == "terminated"
    assert isinstance(result.stop_reason, Mapping)
    assert result.stop_reason["type"] == stop_reason


def test_a_spend_limit_reached_ends_the_run_terminated(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    script = [OpenAITurn(text="Expensive.", tool_calls=[call("add", a=1, b=1)], usage=(80, 40))]
    result = run_to_completion(
        provider,
        "Go.",
        handler=MatrixTools(),
        agent_id=emulator.add_agent(script),
        spend_control=100,
        timeout=10,
    )
    assert result.terminal == "terminated"
    assert isinstance(result.stop_reason, Mapping)
    assert result.stop_reason["type"] in ("budget_reached", "turn_failed")


def test_outcomes_and_unknown_options_are_refused_before_anything_is_sent(
    emulator: OpenAIAgentsEmulator, provider: OpenAIAgents
) -> None:
    with pytest.raises(ConfigurationError, match="agent_id"):
        run_to_completion(provider, "Hi", handler=MatrixTools(), agnt_id="x")  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="environment"):
        run_to_completion(
            provider, "Hi", handler=MatrixTools(), agent_id="a", environment={"type": "moon"}
        )
    with pytest.raises(ConfigurationError, match="needs agent_id"):
        run_to_completion(provider, "Hi", handler=MatrixTools())
    assert not emulator.session_ids()
