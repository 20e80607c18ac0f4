"""Every event type the vendor SDK knows, the emulators can emit, strictly as its models say.

A user's event handler must be testable against every event the service can send. The types
are enumerated from the SDK's own unions, so a type a new SDK adds fails here until the
emulator can emit it: by itself, in the course of a session, or from a script
(``Turn(events=...)``, ``OpenAITurn(events=...)``, for what no behaviour of the emulator
produces). Each session below goes through the flows that emit the rest; every event logged
is validated strictly against the SDK's union, and the live-only previews on a strict SDK
stream.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any, Callable

import pytest

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

from anthropic.types.beta.sessions import BetaManagedAgentsStreamSessionEvents  # noqa: E402
from openai.types.beta.agent_session_event import AgentSessionEvent  # noqa: E402

from req_managed_agents.testing import (  # noqa: E402
    ClaudeEmulator,
    OpenAIAgentsEmulator,
    OpenAITurn,
    ToolCall,
    Turn,
    call,
)
from tests.support.api import user_message  # noqa: E402
from tests.support.openai_api import strict_client as strict_openai  # noqa: E402
from tests.support.sdk import check_strictly, strict_bedrock_client, strict_client  # noqa: E402

WEATHER = {
    "type": "custom",
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
TOOLSET = {"type": "agent_toolset_20260401"}
SELF_HOSTED = {"type": "self_hosted", "workspace_directory": "/work"}


def union_types(union: Any) -> set[str]:
    """The ``type`` literal of each model in an SDK union of events."""
    members = typing.get_args(union)
    if members and typing.get_origin(members[0]) is typing.Union:  # Annotated[Union, ...]
        members = typing.get_args(members[0])
    return {typing.get_args(m.model_fields["type"].annotation)[0] for m in members}


@pytest.fixture
def closing() -> Iterator[Callable[[Any], Any]]:
    opened: list[Any] = []

    def register(thing: Any) -> Any:
        opened.append(thing)
        return thing

    yield register
    for thing in reversed(opened):
        thing.close()


def wait_for_idle(emulator: ClaudeEmulator, session_id: str, count: int) -> None:
    def idled() -> bool:
        events = emulator.events(session_id)
        return sum(e["type"] == "session.status_idle" for e in events) >= count

    assert emulator.wait_until(idled, 10), [e["type"] for e in emulator.events(session_id)]


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_the_claude_emulator_emits_every_event_type_of_the_sdk(closing: Any) -> None:
    known = union_types(BetaManagedAgentsStreamSessionEvents)
    assert len(known) >= 44
    ask = ToolCall("bash", {"command": "ls"}, result="a.txt", permission="ask")
    runs = [
        ToolCall("bash", {"command": "pwd"}, result="/work"),
        ToolCall("search", {"q": "x"}, result="found", mcp_server="docs"),
    ]
    script = [
        Turn("Checking.", tool_calls=[call("get_weather", city="Paris")], thinking=True),
        Turn(lambda results: f"It is {results[0]}.", server_tool_calls=[ask]),
        Turn("Done.", server_tool_calls=runs, events=sorted(Turn.named_events)),
        Turn("Graded.", evaluation="satisfied"),
        Turn("Slow.", delay=5),
    ]
    emulator = closing(ClaudeEmulator(script, ping_interval=0.2))
    client = closing(strict_client(emulator))
    agent = client.beta.agents.create(name="a", model="claude-opus-5", tools=[WEATHER, TOOLSET])
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)
    seen: set[str] = set()

    # Messages, thinking and a custom tool call, read live with their previews.
    with client.beta.sessions.events.stream(
        session.id, event_deltas=["agent.message", "agent.thinking"]
    ) as stream:
        client.beta.sessions.events.send(
            session.id,
            events=[
                user_message("Weather?"),
                {"type": "system.message", "content": [text("Be brief.")]},
            ],
        )
        for event in stream:  # validated strictly by the client
            seen.add(event.type)
            if event.type == "session.status_idle":
                break
    use = next(e for e in emulator.events(session.id) if e["type"] == "agent.custom_tool_use")
    result = {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": use["id"],
        "content": [text("sunny")],
    }
    client.beta.sessions.events.send(session.id, events=[result])  # type: ignore[list-item]
    wait_for_idle(emulator, session.id, 2)
    # A confirmation, then allowed built-in and MCP calls, and what the script names.
    bash = next(e for e in emulator.events(session.id) if e["type"] == "agent.tool_use")
    confirmation = {"type": "user.tool_confirmation", "tool_use_id": bash["id"], "result": "deny"}
    client.beta.sessions.events.send(session.id, events=[confirmation])  # type: ignore[list-item]
    wait_for_idle(emulator, session.id, 3)
    outcome = {
        "type": "user.define_outcome",
        "description": "A summary",
        "rubric": {"type": "text", "content": "One paragraph."},
    }
    client.beta.sessions.events.send(session.id, events=[outcome])  # type: ignore[list-item]
    wait_for_idle(emulator, session.id, 4)
    client.beta.sessions.events.send(session.id, events=[user_message("Slowly.")])
    client.beta.sessions.events.send(session.id, events=[{"type": "user.interrupt"}])
    wait_for_idle(emulator, session.id, 5)
    client.beta.sessions.update(session.id, title="Renamed")
    client.beta.sessions.delete(session.id)
    sessions = [session.id]

    # Subagent threads, an error the service gave up on, and termination.
    lead = emulator.add_agent([Turn(thread="helper", text="Hi."), Turn(delay=5)])
    threaded = client.beta.sessions.create(agent=lead, environment_id=environment.id)
    client.beta.sessions.events.send(threaded.id, events=[user_message("Go.")])
    wait_for_idle(emulator, threaded.id, 1)
    client.beta.sessions.events.send(threaded.id, events=[user_message("Slowly.")])
    emulator.fail_turn(threaded.id)
    wait_for_idle(emulator, threaded.id, 2)
    emulator.terminate_session(threaded.id)
    sessions.append(threaded.id)

    # A self-hosted environment's tool result, from the client.
    read = ToolCall("read", {"file_path": "/etc/hostname"})
    hosting = emulator.add_agent([Turn(server_tool_calls=[read]), Turn("Read.")])
    hosted = client.beta.environments.create(name="h", config={"type": "self_hosted"})
    sandboxed = client.beta.sessions.create(agent=hosting, environment_id=hosted.id)
    client.beta.sessions.events.send(sandboxed.id, events=[user_message("Host?")])
    wait_for_idle(emulator, sandboxed.id, 1)
    [asked] = [e for e in emulator.events(sandboxed.id) if e["type"] == "agent.tool_use"]
    answer = {"type": "user.tool_result", "tool_use_id": asked["id"], "content": [text("box")]}
    client.beta.sessions.events.send(sandboxed.id, events=[answer])  # type: ignore[list-item]
    wait_for_idle(emulator, sandboxed.id, 2)
    sessions.append(sandboxed.id)

    for session_id in sessions:
        logs = [emulator.events(session_id)]
        logs += [emulator.events(session_id, t["id"]) for t in emulator.threads(session_id)[1:]]
        for event in (event for log in logs for event in log):
            check_strictly(BetaManagedAgentsStreamSessionEvents, event, event["type"])
            seen.add(event["type"])
    assert known - seen == set()


def test_claude_on_bedrock_scripts_the_types_its_sdk_knows_and_refuses_the_others(
    closing: Any,
) -> None:
    from anthropic.types.beta.bedrock.sessions import (
        BetaManagedAgentsStreamBedrockSessionEvents as BedrockEvents,
    )

    known = union_types(BedrockEvents)
    named = sorted(Turn.named_events & known)
    unknown_there = sorted(Turn.named_events - known)
    assert unknown_there, "Bedrock's union leaves out the workflow runs"
    assert all(kind.startswith("workflow_run.") for kind in unknown_there)
    with pytest.raises(ValueError, match="Bedrock"):
        ClaudeEmulator([Turn(events=unknown_there[:1])], flavor="bedrock")
    emulator = closing(ClaudeEmulator([Turn("Hi.", events=named)], flavor="bedrock"))
    with pytest.raises(ValueError, match="Bedrock"):
        emulator.add_agent([Turn(events=unknown_there[-1:])])
    client = closing(strict_bedrock_client(emulator))
    session = client.beta.sessions.create(
        agent=emulator.add_agent(),
        environment_id="arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789",
    )
    client.beta.sessions.events.send(session.id, events=[user_message("Go.")])
    wait_for_idle(emulator, session.id, 1)
    listed = list(client.beta.sessions.events.list(session.id))  # strict, as the SDK reads
    assert set(named) <= {event.type for event in listed}
    for event in emulator.events(session.id):
        check_strictly(BedrockEvents, event, event["type"])


def test_the_openai_emulator_emits_every_event_type_of_the_sdk(closing: Any) -> None:
    known = union_types(AgentSessionEvent)
    assert len(known) >= 34
    mcp = [
        ToolCall("lookup", {"q": "a"}, result="ok", mcp_server="docs"),
        ToolCall("fetch", {"url": "x"}, permission="ask", mcp_server="docs"),
    ]
    script = [
        OpenAITurn(text="Checking.", mcp_calls=mcp, tool_calls=[call("add", a=1, b=2)]),
        OpenAITurn(text="Delegating.", subagent="helper", events=sorted(OpenAITurn.named_events)),
        OpenAITurn(text="Broken.", end="turn_failed"),
        OpenAITurn(text="Waiting.", tool_calls=[call("add", a=0, b=0)]),
        OpenAITurn(text="Spent.", usage=(2000, 0)),
    ]
    emulator = closing(OpenAIAgentsEmulator(script, ping_interval=0.2))
    client = closing(strict_openai(emulator))
    sessions = client.beta.agents.sessions
    session = sessions.create(
        agent={"model": "m"}, environment=SELF_HOSTED, spend_control={"limit": 1000}
    )

    def wait_for(status: str) -> None:
        reached = emulator.wait_until(lambda: emulator.session(session.id)["status"] == status, 10)
        assert reached, [e["type"] for e in emulator.events(session.id)]

    def message(value: str) -> dict[str, Any]:
        content = [{"type": "input_text", "text": value}]
        return {
            "type": "agent.session.input.message",
            "input": [{"role": "user", "content": content}],
        }

    sessions.events.create(session.id, events=[message("Go.")])  # type: ignore[list-item]
    wait_for("requires_action")
    approval, function = sessions.retrieve(session.id).required_actions
    answers = [
        {
            "type": "agent.session.input.mcp_approval_request_result",
            "request_id": approval.request_id,  # type: ignore[union-attr]
            "response": {"type": "mcp_tool_call", "decision": "approve"},
        },
        {
            "type": "agent.session.input.tool_result",
            "turn_id": function.turn_id,  # type: ignore[union-attr]
            "call_id": function.call_id,  # type: ignore[union-attr]
            "success": True,
            "output": "3",
        },
    ]
    sessions.events.create(session.id, events=answers)  # type: ignore[arg-type]
    wait_for("idle")
    sessions.events.create(session.id, events=[message("Again.")])  # type: ignore[list-item]
    assert emulator.wait_until(lambda: emulator.turns(session.id)[-1]["status"] == "failed", 10)
    wait_for("idle")
    sessions.events.create(session.id, events=[message("More.")])  # type: ignore[list-item]
    wait_for("requires_action")
    sessions.events.create(session.id, events=[{"type": "agent.session.input.cancel"}])
    wait_for("idle")
    sessions.events.create(session.id, events=[message("Spend.")])  # type: ignore[list-item]
    wait_for("budget_reached")
    sessions.update(session.id, spend_control={"limit": 100_000})
    emulator.terminate_session(session.id)

    seen: set[str] = set()
    for event in emulator.events(session.id):
        check_strictly(AgentSessionEvent, event, event["type"])
        seen.add(event["type"])
    assert known - seen == set()


def test_a_script_names_only_the_types_it_can_fill_in() -> None:
    for turn_type in (Turn, OpenAITurn):
        with pytest.raises(ValueError, match="kind_from_the_future"):
            turn_type(events=["session.kind_from_the_future"])
        with pytest.raises(ValueError, match="type"):
            turn_type(events=[{"detail": 1}])
        with pytest.raises(TypeError):
            turn_type(events="agent.thread_context_compacted")  # type: ignore[arg-type]
        given = {"type": "session.kind_from_the_future", "detail": {"n": 1}}
        turn = turn_type(events=[given])
        given["detail"]["n"] = 2  # the script keeps what it was given
        assert turn.events[0]["detail"] == {"n": 1}  # type: ignore[index]


def test_a_subagents_scripted_events_stay_on_its_thread_but_its_reschedule(closing: Any) -> None:
    named = ["session.thread_status_rescheduled", "agent.thread_context_compacted"]
    given = {"type": "workflow_run.status_running", "workflow_run_id": "wfrun_given"}
    script = [Turn(thread="helper", text="Hi.", events=[*named, given])]
    emulator = closing(ClaudeEmulator(script, ping_interval=0.2))
    client = closing(strict_client(emulator))
    session = client.beta.sessions.create(
        agent=emulator.add_agent(), environment_id=emulator.add_environment()
    )
    client.beta.sessions.events.send(session.id, events=[user_message("Go.")])
    wait_for_idle(emulator, session.id, 1)
    helper = emulator.threads(session.id)[1]
    kinds = [e["type"] for e in emulator.events(session.id, helper["id"])]
    assert kinds.index(named[0]) < kinds.index(named[1]) < kinds.index(given["type"])
    [rescheduled] = [e for e in emulator.events(session.id) if e["type"] == named[0]]
    assert rescheduled["session_thread_id"] == helper["id"]
    assert rescheduled["agent_name"] == "helper"
    primary = {e["type"] for e in emulator.events(session.id)}
    assert named[1] not in primary
    assert given["type"] not in primary
    own = emulator.events(session.id, helper["id"])
    [running] = [e for e in own if e["type"] == given["type"]]
    assert running["workflow_run_id"] == "wfrun_given"
