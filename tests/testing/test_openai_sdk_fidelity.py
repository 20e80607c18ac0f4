"""The OpenAI Agents emulator driven by the official ``openai`` SDK, which must accept every
answer and every streamed event strictly (``tests.support.openai_api.StrictOpenAI``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

openai = pytest.importorskip("openai")

from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, ToolCall, call  # noqa: E402
from tests.support.openai_api import StrictOpenAI, strict_client  # noqa: E402

FUNCTION = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
}
HANDLERS = {
    "add": lambda arguments: str(arguments["a"] + arguments["b"]),
    "mul": lambda arguments: str(arguments["a"] * arguments["b"]),
}
TWO_TOOLS = [
    OpenAITurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    OpenAITurn(text=lambda outputs: f"The results are {' and '.join(outputs)}.", usage=(7, 3)),
]
SELF_HOSTED = {"type": "self_hosted", "workspace_directory": "/work"}


@pytest.fixture
def sdk() -> Iterator[Callable[..., tuple[OpenAIAgentsEmulator, StrictOpenAI]]]:
    """Start emulators and strict SDK clients aimed at them; close them all afterwards."""
    started: list[tuple[OpenAIAgentsEmulator, StrictOpenAI]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[OpenAIAgentsEmulator, StrictOpenAI]:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = OpenAIAgentsEmulator(*args, **kwargs)
        started.append((emulator, strict_client(emulator)))
        return started[-1]

    yield start
    for emulator, client in started:
        client.close()
        emulator.close()


def wait_for(emulator: OpenAIAgentsEmulator, session_id: str, status: str) -> None:
    def reached() -> bool:
        return emulator.session(session_id)["status"] == status

    assert emulator.wait_until(reached), [e["type"] for e in emulator.events(session_id)]


# --- agents ---------------------------------------------------------------------------------


def test_agents_round_trip_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    agents = client.beta.agents
    agent = agents.create(
        model="gpt-5.1",
        name="calc",
        instructions="Be brief.",
        metadata={"team": "qa"},
        reasoning={"effort": "high"},
        text={"format": {"type": "json_schema", "schema": {"type": "object"}}},
        multi_agent={"enabled": True},
        compaction={"async": True},
        experimental={"time_awareness": True},
        tools=[
            {**FUNCTION, "defer_loading": True, "async": False},
            {"type": "tool_search"},
            {"type": "programmatic_tool_calling"},
            {
                "type": "mcp",
                "server_label": "docs",
                "transport": {"type": "http", "server_url": "https://mcp.example", "headers": {}},
            },
            {"type": "mcp", "server_label": "local", "transport": _stdio()},
            {"type": "web_search", "location": {"city": "Paris"}},
            {"type": "computer_use"},
            {"type": "automations"},
        ],
    )
    assert agent.id.startswith("agent_")
    assert (agent.reasoning.effort, agent.reasoning.summary) == ("high", None)
    assert agent.multi_agent.max_concurrent_subagents == 6
    assert agent.text.format.type == "json_schema"
    assert agent.compaction is not None
    assert agent.compaction.async_ is True
    assert [tool.type for tool in agent.tools][:3] == [
        "function",
        "tool_search",
        "programmatic_tool_calling",
    ]
    web_search = agent.tools[5]
    assert web_search.type == "web_search"
    assert (web_search.mode, web_search.context_size) == ("live", "medium")
    assert agents.retrieve(agent.id) == agent

    updated = agents.update(
        agent.id, instructions=None, metadata=None, experimental={}, tools=None, service_tier=None
    )
    assert (updated.instructions, updated.metadata, updated.tools) == (None, {}, [])
    assert updated.experimental is not None
    assert updated.experimental.time_awareness is True
    assert updated.service_tier == "auto"

    more = [agents.create(model="gpt-5.1", name=f"a{i}") for i in range(3)]
    newest_first = [a.id for a in agents.list(limit=2)]
    assert newest_first == [a.id for a in reversed([agent, *more])]
    assert [a.id for a in agents.list(limit=1, order="asc")] == [agent.id, *(a.id for a in more)]

    deleted = agents.delete(agent.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (agent.id, True, "agent.deleted")
    with pytest.raises(openai.NotFoundError):
        agents.retrieve(agent.id)


def _stdio() -> dict[str, Any]:
    return {"type": "stdio", "command": "docs-mcp", "cwd": "/srv", "args": ["--quiet"]}


# --- sessions -------------------------------------------------------------------------------


def test_sessions_round_trip_through_the_sdk(sdk: Any) -> None:
    emulator, client = sdk()
    sessions = client.beta.agents.sessions
    agent_id = emulator.add_agent(tools=[FUNCTION])
    hosted = sessions.create(
        agent_id=agent_id,
        agent={"model": "gpt-5.2", "tools": [{**FUNCTION, "name": "mul"}]},
        environment={
            "type": "openai_hosted",
            "network": {"access": "restricted", "allowed_domains": ["example.com"]},
            "packages": {"python": ["numpy"]},
        },
        metadata={"run": "1"},
        spend_control={"limit": 1000},
        prompt_cache_options={"ttl": "12h"},
        review="auto_review",
    )
    assert hosted.status == "idle"
    assert (hosted.agent.id, hosted.agent.name, hosted.agent.model) == (
        agent_id,
        "agent",
        "gpt-5.2",
    )
    assert [tool.name for tool in hosted.agent.tools] == ["mul"]  # type: ignore[union-attr]
    assert hosted.environment.type == "openai_hosted"
    assert hosted.environment.packages.python == ["numpy"]  # type: ignore[union-attr]
    assert (hosted.spend_control.limit, hosted.spend_control.consumed) == (1000, 0)
    assert hosted.review == "auto_review"
    assert sessions.retrieve(hosted.id) == hosted

    inline = sessions.create(agent={"model": "gpt-5.1"}, environment=SELF_HOSTED)
    assert inline.environment.type == "self_hosted"
    assert inline.environment.remote_url.startswith("ws://127.0.0.1:")  # type: ignore[union-attr]

    http = {"type": "http", "server_url": "https://mcp.example", "headers": {"x-team": "qa"}}
    mcp = {"type": "mcp", "server_label": "docs", "transport": http}
    saved = client.beta.agents.create(model="m", tools=[mcp, {"type": "tool_search"}])
    assert saved.tools[0].transport.headers == {"x-team": "qa"}  # type: ignore[union-attr]
    inherited = sessions.create(agent_id=saved.id, environment={"type": "none"}, input="Hi.")
    [tool] = inherited.agent.tools  # a session has no tool_search, and shows no headers
    assert tool.type == "mcp"
    assert tool.transport.model_dump() == {"server_url": "https://mcp.example", "type": "http"}

    updated = sessions.update(
        hosted.id,
        agent={"model": "gpt-5.1", "reasoning": {"effort": "low"}, "tools": None},
        metadata={"run": "2"},
        prompt_cache_options=None,
        spend_control=None,
    )
    assert (updated.agent.model, updated.agent.reasoning.effort) == ("gpt-5.1", "low")
    assert (updated.agent.tools, updated.metadata, updated.prompt_cache_options) == (
        [],
        {"run": "2"},
        None,
    )
    assert updated.spend_control.limit is None

    assert [s.id for s in sessions.list(limit=1)] == [inherited.id, inline.id, hosted.id]
    assert [s.id for s in sessions.list(agent_id=agent_id)] == [hosted.id]
    assert [s.id for s in sessions.list(metadata={"run": "2"})] == [hosted.id]

    deleted = sessions.delete(inline.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (
        inline.id,
        True,
        "agent.session.deleted",
    )
    with pytest.raises(openai.NotFoundError):
        sessions.retrieve(inline.id)


def test_the_sdk_surfaces_refusals_with_their_codes(sdk: Any) -> None:
    emulator, client = sdk()
    sessions = client.beta.agents.sessions
    with pytest.raises(openai.BadRequestError) as missing:
        sessions.create(agent_id=emulator.add_agent(), environment={"type": "none"})
    assert (missing.value.code, missing.value.param) == ("missing_required_parameter", "input")
    with pytest.raises(openai.BadRequestError) as unknown:
        client.beta.agents.create(model="m", extra_body={"colour": "red"})
    assert (unknown.value.code, unknown.value.param) == ("unknown_parameter", "colour")
    with pytest.raises(openai.BadRequestError) as typed:
        client.beta.agents.create(model="m", metadata={"k": 1})  # type: ignore[dict-item]
    assert typed.value.code == "invalid_type"
    session = sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    with pytest.raises(openai.BadRequestError) as no_turn:
        sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
    assert no_turn.value.code == "no_active_turn"
    bare = openai.OpenAI(base_url=emulator.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as wrong_key:
        bare.beta.agents.list()
    assert wrong_key.value.code == "invalid_api_key"
    bare.close()


# --- the session loop -----------------------------------------------------------------------


def test_the_sdk_session_stream_runs_two_tools(sdk: Any) -> None:
    emulator, client = sdk(TWO_TOOLS)
    agent_id = emulator.add_agent(tools=[FUNCTION])
    session = client.beta.agents.sessions.create(agent_id=agent_id, environment=SELF_HOSTED)
    stream = client.beta.agents.sessions.stream(
        session.id, input="Compute.", tool_handlers=HANDLERS
    )
    with stream:
        result = stream.get_final_result()
    assert result.output_text == "The results are 3 and 12."
    assert result.turn.status == "completed"
    assert result.turn.usage is not None
    assert result.turn.usage.total_tokens == 25
    outputs = [i for i in emulator.items(session.id) if i["type"] == "function_call_output"]
    assert [(o["output"], o["status"]) for o in outputs] == [
        ("3", "completed"),
        ("12", "completed"),
    ]
    after = client.beta.agents.sessions.retrieve(session.id)
    assert (after.status, after.required_actions) == ("idle", [])
    assert after.usage is not None
    assert after.usage.total_tokens == 25


def test_a_streamed_create_runs_its_tools(sdk: Any) -> None:
    emulator, client = sdk(TWO_TOOLS)
    stream = client.beta.agents.sessions.create(
        agent_id=emulator.add_agent(),
        environment={"type": "openai_hosted"},
        input="Compute.",
        stream=True,
        tool_handlers=HANDLERS,
    )
    with stream:
        result = stream.get_final_result()
    assert result.output_text == "The results are 3 and 12."
    assert emulator.events(result.session_id)[0]["type"] == "agent.session.created"


def test_the_raw_stream_carries_every_event_of_a_turn(sdk: Any) -> None:
    emulator, client = sdk(TWO_TOOLS)
    session = client.beta.agents.sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    events = client.beta.agents.sessions.events
    with events.stream(session.id, timeout=5) as stream:
        seen = [next(stream)]
        assert seen[0].type == "agent.session.idle"  # the status snapshot
        events.create(session.id, events=[_message("Compute.")], idempotency_key="k-1")
        for event in stream:
            seen.append(event)
            if event.type == "agent.session.requires_action":
                break
        calls = event.session.required_actions
        assert [(c.type, c.name) for c in calls] == [
            ("function_call", "add"),
            ("function_call", "mul"),
        ]
        results = [_result(c, str(n)) for c, n in zip(calls, (3, 12))]
        events.create(session.id, events=results)
        for event in stream:
            seen.append(event)
            if event.type == "agent.session.idle":
                break
    assert len({e.event_id for e in seen}) == len(seen)
    logged = [e["event_id"] for e in emulator.events(session.id)]
    assert [e.event_id for e in seen[1:]] == logged[1:]  # all but agent.session.created
    assert all(e.obfuscation for e in seen)


def test_items_and_turns_page_through_the_sdk(sdk: Any) -> None:
    emulator, client = sdk(["one", "two", "three"])
    sessions = client.beta.agents.sessions
    session = sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    for count, text in enumerate(("a", "b", "c"), start=1):
        sessions.events.create(session.id, events=[_message(text)])
        wait_for(emulator, session.id, "idle")
        assert len(emulator.turns(session.id)) == count
    items = list(sessions.items.list(session.id, limit=2, order="asc"))
    assert [(i.role, i.output_text) for i in items] == [  # type: ignore[union-attr]
        ("user", ""),
        ("assistant", "one"),
        ("user", ""),
        ("assistant", "two"),
        ("user", ""),
        ("assistant", "three"),
    ]
    turns = list(sessions.turns.list(session.id, limit=1))
    assert [t.status for t in turns] == ["completed"] * 3
    assert sessions.turns.retrieve(turns[0].id, session_id=session.id) == turns[0]
    first_items = list(sessions.turns.items.list(turns[-1].id, session_id=session.id, limit=1))
    assert [i.id for i in first_items] == [items[1].id, items[0].id]


def test_subagents_show_through_the_sdk(sdk: Any) -> None:
    script = [
        OpenAITurn(text="Researching.", tool_calls=[call("add", a=1, b=2)], subagent="researcher"),
        OpenAITurn(text=lambda outputs: f"Sum {outputs[0]}."),
    ]
    _emulator, client = sdk(script)
    sessions = client.beta.agents.sessions
    session = sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    with sessions.stream(session.id, input="Go.", tool_handlers=HANDLERS) as stream:
        result = stream.get_final_result()
    assert result.output_text == "Sum 3."
    [subagent] = list(sessions.subagents.list(session.id))
    assert (subagent.name, subagent.status) == ("researcher", "active")
    assert sessions.subagents.retrieve(subagent.id, session_id=session.id) == subagent
    [turn] = list(sessions.subagents.turns.list(subagent.id, session_id=session.id))
    assert (turn.subagent_id, turn.status) == (subagent.id, "completed")
    retrieved = sessions.subagents.turns.retrieve(
        turn.id, session_id=session.id, subagent_id=subagent.id
    )
    assert retrieved == turn
    own = list(sessions.subagents.items.list(subagent.id, session_id=session.id, order="asc"))
    assert [i.type for i in own] == ["message", "function_call", "function_call_output"]
    in_turn = sessions.subagents.turns.items.list(
        turn.id, session_id=session.id, subagent_id=subagent.id
    )
    assert [i.id for i in in_turn] == [i.id for i in reversed(own)]
    root_types = [i.type for i in sessions.items.list(session.id, order="asc")]
    assert root_types == ["message", "create_subagent_call", "agent_message", "message"]


def test_mcp_approvals_through_the_sdk(sdk: Any) -> None:
    asking = ToolCall("search", {"q": "x"}, result="found", permission="ask", mcp_server="docs")
    script = [OpenAITurn(mcp_calls=[asking]), OpenAITurn(text=lambda answers: answers[0])]
    emulator, client = sdk(script)
    sessions = client.beta.agents.sessions
    session = sessions.create(agent={"model": "m"}, environment={"type": "none"}, input="Search.")
    wait_for(emulator, session.id, "requires_action")
    [action] = sessions.retrieve(session.id).required_actions
    assert action.type == "mcp_approval_request"
    assert (action.request.server_label, action.request.name) == ("docs", "search")  # type: ignore[union-attr]
    approval = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": action.request_id,  # type: ignore[union-attr]
        "response": {"type": "mcp_tool_call", "decision": "approve"},
    }
    sessions.events.create(session.id, events=[approval])
    wait_for(emulator, session.id, "idle")
    types = [(i.type, i.status) for i in sessions.items.list(session.id, order="asc")]  # type: ignore[union-attr]
    assert types == [("message", "completed"), ("mcp_call", "completed"), ("message", "completed")]
    assert emulator.items(session.id)[-1]["content"][0]["text"] == "approved"


def test_the_spend_limit_pauses_a_session(sdk: Any) -> None:
    emulator, client = sdk(["first", "second"])
    sessions = client.beta.agents.sessions
    session = sessions.create(
        agent={"model": "m"}, environment=SELF_HOSTED, spend_control={"limit": 15}
    )
    events = follow_after(client, session.id, "Go.", "agent.session.budget_reached")
    assert events[-2].type == "agent.session.turn.completed"
    paused = sessions.retrieve(session.id)
    assert (paused.status, paused.spend_control.consumed) == ("budget_reached", 15)
    with pytest.raises(openai.BadRequestError) as refused:
        sessions.events.create(session.id, events=[_message("More.")])
    assert refused.value.code == "session_budget_exceeded"
    assert sessions.update(session.id, spend_control={"limit": 100}).status == "idle"
    sessions.events.create(session.id, events=[_message("More.")])
    wait_for(emulator, session.id, "idle")


def follow_after(client: StrictOpenAI, session_id: str, text: str, last: str) -> list[Any]:
    """Send a message on an open stream and read until an event of type ``last`` (the
    stream's opening status snapshot left out)."""
    seen = []
    with client.beta.agents.sessions.events.stream(session_id, timeout=5) as stream:
        next(stream)
        client.beta.agents.sessions.events.create(session_id, events=[_message(text)])
        for event in stream:
            seen.append(event)
            if event.type == last:
                return seen
    raise AssertionError([e.type for e in seen])


def test_cancelled_and_failed_turns_through_the_sdk(sdk: Any) -> None:
    script = [
        OpenAITurn(tool_calls=[call("add", a=1, b=2)]),
        "after the cancel",
        OpenAITurn(text="broken", end="session_failed"),
    ]
    emulator, client = sdk(script)
    sessions = client.beta.agents.sessions
    session = sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    sessions.events.create(session.id, events=[_message("Go.")])
    wait_for(emulator, session.id, "requires_action")
    with sessions.events.stream(session.id, timeout=5) as stream:
        assert next(stream).type == "agent.session.requires_action"
        sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
        cancelled, idle = next(stream), next(stream)
    assert cancelled.type == "agent.session.turn.cancelled"
    assert cancelled.turn.status == "cancelled"
    assert (idle.type, idle.session.required_actions) == ("agent.session.idle", [])

    events = follow_after(client, session.id, "Again.", "agent.session.idle")
    assert events[-2].type == "agent.session.turn.completed"
    events = follow_after(client, session.id, "Break.", "agent.session.failed")
    assert [e.type for e in events[-3:]] == [
        "error",
        "agent.session.turn.failed",
        "agent.session.failed",
    ]
    assert events[-2].turn.error.code == "server_error"
    assert events[-1].session.error == "The scripted turn failed."


def test_the_sdk_retries_the_pending_call_race(sdk: Any) -> None:
    emulator, client = sdk(TWO_TOOLS)
    session = client.beta.agents.sessions.create(agent={"model": "m"}, environment=SELF_HOSTED)
    emulator.refuse_unregistered_results(times=2)
    with client.beta.agents.sessions.stream(
        session.id, input="Go.", tool_handlers=HANDLERS
    ) as stream:
        assert stream.get_final_result().output_text == "The results are 3 and 12."
    assert emulator.pending_faults() == 0
    posts = [
        r
        for r in emulator.requests
        if r.method == "POST" and r.path.endswith("/events") and "tool_result" in str(r.body)
    ]
    keys = [r.headers["idempotency-key"] for r in posts]
    assert len(posts) == 4  # the first call's result was refused twice
    assert keys[0] == keys[1] == keys[2] != keys[3]


def _message(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return {"type": "agent.session.input.message", "input": [{"role": "user", "content": content}]}


def _result(action: Any, output: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.tool_result",
        "turn_id": action.turn_id,
        "call_id": action.call_id,
        "success": True,
        "output": output,
    }


def test_every_logged_event_and_snapshot_fits_the_sdk(sdk: Any) -> None:
    from openai.types.beta.agent_session_event import AgentSessionEvent

    from tests.support.sdk import check_strictly

    mcp = [
        ToolCall("lookup", {"q": "a"}, result="ok", mcp_server="docs"),
        ToolCall("erase", {}, permission="deny", mcp_server="docs"),
        ToolCall("fetch", {"url": "x"}, permission="ask", mcp_server="docs"),
    ]
    script = [
        OpenAITurn(text="Checking.", mcp_calls=mcp, tool_calls=[call("add", a=1, b=2)]),
        OpenAITurn(text="Delegating.", tool_calls=[call("mul", a=2, b=3)], subagent="helper"),
        OpenAITurn(text=lambda outputs: f"Got {outputs}.", end="turn_failed"),
        OpenAITurn(text="again", tool_calls=[call("add", a=0, b=0)]),
    ]
    emulator, client = sdk(script)
    sessions = client.beta.agents.sessions
    session = sessions.create(
        agent={"model": "m"}, environment=SELF_HOSTED, spend_control={"limit": 1000}
    )
    sessions.events.create(session.id, events=[_message("Go.")])
    wait_for(emulator, session.id, "requires_action")
    actions = sessions.retrieve(session.id).required_actions
    assert [a.type for a in actions] == ["mcp_approval_request", "function_call"]
    decision = {"type": "mcp_tool_call", "decision": "deny"}
    sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": actions[0].request_id,  # type: ignore[union-attr]
                "response": decision,  # type: ignore[typeddict-item]
            },
            _result(actions[1], "3"),
        ],
    )
    wait_for(emulator, session.id, "requires_action")
    [delegated] = sessions.retrieve(session.id).required_actions
    sessions.events.create(session.id, events=[_result(delegated, "6")])
    wait_for(emulator, session.id, "idle")
    sessions.events.create(session.id, events=[_message("Again.")])
    wait_for(emulator, session.id, "requires_action")
    sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
    sessions.update(session.id, spend_control={"limit": 1})
    snapshots = [_snapshot(client, session.id)]  # budget_reached
    sessions.update(session.id, spend_control={"limit": 1000})
    emulator.terminate_session(session.id)
    snapshots.append(_snapshot(client, session.id))  # failed

    assert [s.type for s in snapshots] == ["agent.session.budget_reached", "agent.session.failed"]
    logged = emulator.events(session.id)
    kinds = {event["type"] for event in logged}
    assert {"error", "agent.session.subagent.created", "agent.session.turn.cancelled"} <= kinds
    assert {"agent.session.turn.failed", "agent.session.failed"} <= kinds
    for event in logged:
        check_strictly(AgentSessionEvent, event, event["type"])
    turn_types = [(t["subagent_id"] is not None, t["status"]) for t in emulator.turns(session.id)]
    assert turn_types == [(False, "failed"), (True, "completed"), (False, "cancelled")]


def _snapshot(client: StrictOpenAI, session_id: str) -> Any:
    with client.beta.agents.sessions.events.stream(session_id, timeout=5) as stream:
        return next(stream)
