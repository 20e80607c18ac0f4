"""The OpenAI Agents emulator over real loopback sockets with ``requests``: authentication,
refusals, idempotency, the stream's snapshot and liveness, queued turns, deletion."""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, ToolCall, call
from tests.support.openai_api import (
    EventReader,
    OpenAIApi,
    accepted,
    error_of,
    message,
    ok,
    tool_result,
)

ONE_CALL = [
    OpenAITurn(text="Adding.", tool_calls=[call("add", a=1, b=2)]),
    OpenAITurn(text="Done."),
]


@pytest.fixture
def harness() -> Iterator[Callable[..., tuple[OpenAIAgentsEmulator, OpenAIApi]]]:
    """Start emulators (with quick keep-alives) and their API clients; close them afterwards."""
    started: list[tuple[OpenAIAgentsEmulator, OpenAIApi]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[OpenAIAgentsEmulator, OpenAIApi]:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = OpenAIAgentsEmulator(*args, **kwargs)
        started.append((emulator, OpenAIApi(emulator)))
        return started[-1]

    yield start
    for emulator, api in started:
        api.close()
        emulator.close()


@pytest.fixture
def readers() -> Iterator[Callable[..., EventReader]]:
    opened: list[EventReader] = []

    def open_reader(emulator: OpenAIAgentsEmulator, session_id: str, **params: str) -> EventReader:
        opened.append(EventReader(emulator, session_id, **params))
        return opened[-1]

    yield open_reader
    for reader in opened:
        reader.close()


def wait_for(emulator: OpenAIAgentsEmulator, session_id: str, status: str) -> None:
    def reached() -> bool:
        return emulator.session(session_id)["status"] == status

    assert emulator.wait_until(reached), [e["type"] for e in emulator.events(session_id)]


def types(emulator: OpenAIAgentsEmulator, session_id: str) -> list[str]:
    return [event["type"].removeprefix("agent.session.") for event in emulator.events(session_id)]


# --- authentication and routing -------------------------------------------------------------


def test_requests_need_the_bearer_key_and_the_beta_header(harness: Any) -> None:
    emulator, api = harness()
    url = emulator.base_url + "/agents"
    assert emulator.base_url.endswith("/v1")

    def get(**headers: str) -> Any:
        return api.http.get(url, headers=headers, timeout=5)

    assert error_of(get(authorization=""), 401)["code"] == "missing_api_key"
    wrong = error_of(get(authorization="Bearer sk-wrong"), 401)
    assert (wrong["type"], wrong["code"]) == ("invalid_request_error", "invalid_api_key")
    assert "sk-wrong" not in wrong["message"]
    no_beta = error_of(get(**{"openai-beta": ""}), 400)
    assert "OpenAI-Beta: agents=v1" in no_beta["message"]
    assert error_of(get(**{"openai-beta": "agents=v2"}), 400)["type"] == "invalid_request_error"
    assert ok(get(**{"openai-beta": "assistants=v2, agents=v1"})) == {"data": [], "has_more": False}
    missing = error_of(api.get("/agents/sessions/sess_missing"), 404)
    assert missing["message"] == "No session found with id 'sess_missing'."
    assert error_of(api.get("/nothing"), 404)["message"] == "Invalid URL (GET /v1/nothing)"


def test_the_api_key_is_random_unless_given(harness: Any) -> None:
    first, _ = harness()
    second, _ = harness()
    chosen, _ = harness(api_key="sk-chosen")
    assert first.api_key != second.api_key
    assert chosen.api_key == "sk-chosen"
    assert first.api_key not in repr(first)


# --- refusals -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "missing_required_parameter", "model"),
        ({"model": "m", "colour": "red"}, "unknown_parameter", "colour"),
        ({"model": 5}, "invalid_type", "model"),
        (
            {"model": "m", "metadata": {f"k{i}": "v" for i in range(17)}},
            "invalid_value",
            "metadata",
        ),
        ({"model": "m", "service_tier": "cheap"}, "invalid_value", "service_tier"),
        (
            {"model": "m", "tools": [{"type": "function", "name": "f"}]},
            "missing_required_parameter",
            "tools[0].description",
        ),
        (
            {
                "model": "m",
                "tools": [{"type": "function", "name": "f", "description": "", "parameters": {}}]
                * 2,
            },
            "invalid_value",
            "tools[1]",
        ),
        (
            {"model": "m", "multi_agent": {"enabled": True, "max_concurrent_subagents": 0}},
            "invalid_value",
            "multi_agent.max_concurrent_subagents",
        ),
        ({"model": "m", "reasoning": {"effort": True}}, "invalid_value", "reasoning.effort"),
    ],
)
def test_bad_agent_bodies_are_refused(harness: Any, body: Any, code: str, param: str) -> None:
    _, api = harness()
    error = error_of(api.post("/agents", body), 400)
    assert (error["code"], error["param"]) == (code, param)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (
            {"environment": {"type": "self_hosted", "workspace_directory": "/w"}},
            400,
            "missing_required_parameter",
        ),
        ({"agent": {"model": "m"}}, 400, "missing_required_parameter"),
        (
            {"agent_id": "agent_missing", "environment": {"type": "none"}, "input": "x"},
            404,
            "not_found",
        ),
        (
            {"agent": {"model": "m"}, "environment": {"type": "none"}},
            400,
            "missing_required_parameter",
        ),
        (
            {"agent": {"model": "m"}, "environment": {"type": "openai_hosted"}, "stream": True},
            400,
            "missing_required_parameter",
        ),
        (
            {"agent": {"model": "m"}, "environment": {"type": "none"}, "input": ""},
            400,
            "invalid_value",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {"type": "none"},
                "input": "x",
                "stream_options": {},
            },
            400,
            "invalid_value",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {"type": "self_hosted", "workspace_directory": "w"},
            },
            400,
            "invalid_value",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {"type": "openai_hosted", "environment_id": "env_1"},
            },
            400,
            "unsupported_parameter",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {
                    "type": "openai_hosted",
                    "network": {"access": "enabled", "blocked_domains": ["x.com"]},
                },
            },
            400,
            "invalid_value",
        ),
        ({"agent": {"model": "m"}, "environment": {"type": "cloud"}}, 400, "invalid_value"),
        (
            {"agent": {"model": "m", "name": "n"}, "environment": {"type": "none"}, "input": "x"},
            400,
            "unknown_parameter",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {"type": "none"},
                "input": "x",
                "vault_ids": ["vlt_1"],
            },
            404,
            "not_found",
        ),
        (
            {
                "agent": {"model": "m"},
                "environment": {"type": "none"},
                "input": "x",
                "spend_control": {"limit": 0},
            },
            400,
            "invalid_value",
        ),
    ],
)
def test_bad_session_bodies_are_refused(harness: Any, body: Any, status: int, code: str) -> None:
    emulator, api = harness()
    assert error_of(api.post("/agents/sessions", body), status)["code"] == code
    assert emulator.session_ids() == []


def test_lists_refuse_bad_paging(harness: Any) -> None:
    _, api = harness()
    too_many = {f"metadata[k{i}]": "v" for i in range(17)}
    assert error_of(api.get("/agents/sessions", **too_many), 400)["param"] == "metadata"
    for params in (
        {"limit": 0},
        {"limit": 101},
        {"limit": "x"},
        {"order": "up"},
        {"after": "agent_x"},
    ):
        assert error_of(api.get("/agents", **params), 400)["code"] == "invalid_value"
    assert error_of(api.get("/agents", colour="red"), 400)["code"] == "unknown_parameter"


def test_inputs_are_checked_as_a_batch(harness: Any) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    assert error_of(api.send(session_id), 400)["code"] == "empty_array"
    assert (
        error_of(api.send(session_id, {"type": "agent.session.input.steer"}), 400)["code"]
        == "invalid_value"
    )
    assert (
        error_of(api.send(session_id, {"type": "agent.session.input.cancel"}), 400)["code"]
        == "no_active_turn"
    )
    stray = {
        "type": "agent.session.input.tool_result",
        "turn_id": "turn_1",
        "call_id": "call_1",
        "success": True,
    }
    refused = error_of(api.send(session_id, message("Go."), stray), 400)
    assert (refused["code"], refused["param"]) == ("unknown_tool_call", "events[1].call_id")
    assert types(emulator, session_id) == ["created"]  # the message was not taken either

    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    result = tool_result(action, "3")
    assert (
        error_of(api.send(session_id, {**result, "turn_id": "turn_other"}), 400)["param"]
        == "events[0].turn_id"
    )
    assert (
        error_of(api.send(session_id, {**result, "error": "no"}), 400)["param"] == "events[0].error"
    )
    twice = error_of(api.send(session_id, result, result), 400)
    assert twice["code"] == "tool_result_already_submitted"
    approval = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": "mcpr_1",
        "response": {"type": "mcp_tool_call", "decision": "approve"},
    }
    assert error_of(api.send(session_id, approval), 400)["code"] == "unknown_approval_request"
    accepted(api.send(session_id, result))
    again = error_of(api.send(session_id, result), 400)
    assert again["code"] == "tool_result_already_submitted"
    assert not again["message"].startswith("Unknown pending tool call")
    wait_for(emulator, session_id, "idle")


def test_a_result_for_a_cancelled_call_is_refused(harness: Any) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    accepted(api.send(session_id, {"type": "agent.session.input.cancel"}))
    assert types(emulator, session_id)[-2:] == ["turn.cancelled", "idle"]
    error = error_of(api.send(session_id, tool_result(action, "3")), 400)
    assert error["code"] == "tool_call_not_pending"


def test_the_registration_race_has_the_body_the_sdk_retries(harness: Any) -> None:
    openai = pytest.importorskip("openai")
    # The SDK's own check (its package must be entered through lib.beta.agents: a cycle).
    importlib.import_module("openai.lib.beta.agents")
    from openai.lib.streaming.agents._tools import is_pending_call_race

    from tests.support.openai_api import strict_client

    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    emulator.refuse_unregistered_results(times=1)
    assert emulator.pending_faults() == 1
    client = strict_client(emulator)
    with pytest.raises(openai.BadRequestError) as race:
        client.beta.agents.sessions.events.create(session_id, events=[tool_result(action, "3")])
    assert race.value.body == {
        "message": f"Unknown pending tool call: {action['call_id']}",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
    assert is_pending_call_race(race.value, action["call_id"])
    assert emulator.pending_faults() == 0
    unknown = {**tool_result(action, "3"), "call_id": "call_never"}
    with pytest.raises(openai.BadRequestError) as refused:
        client.beta.agents.sessions.events.create(session_id, events=[unknown])
    assert not is_pending_call_race(refused.value, "call_never")
    client.beta.agents.sessions.events.create(session_id, events=[tool_result(action, "3")])
    wait_for(emulator, session_id, "idle")
    client.close()


def test_failed_and_paused_sessions_refuse_messages(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    emulator.terminate_session(session_id, "The host went away.")
    assert types(emulator, session_id)[-2:] == ["error", "failed"]
    assert emulator.session(session_id)["error"] == "The host went away."
    assert error_of(api.send(session_id, message("Hi.")), 400)["code"] == "session_failed"
    with pytest.raises(ValueError, match="already ended"):
        emulator.terminate_session(session_id)


# --- idempotency ----------------------------------------------------------------------------


def test_an_idempotency_key_makes_a_repeat_harmless(harness: Any) -> None:
    emulator, api = harness(["Hello."])
    session_id = api.new_session()
    accepted(api.send(session_id, message("Hi."), key="key-1"))
    wait_for(emulator, session_id, "idle")
    logged = len(emulator.events(session_id))
    accepted(api.send(session_id, message("Hi."), key="key-1"))
    reused = error_of(api.send(session_id, message("Other."), key="key-1"), 400)
    assert reused["code"] == "idempotency_key_reused"
    time.sleep(0.1)
    assert len(emulator.events(session_id)) == logged
    assert len(emulator.turns(session_id)) == 1


def test_a_refused_request_does_not_use_its_key_up(harness: Any) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    emulator.refuse_unregistered_results()
    error_of(api.send(session_id, tool_result(action, "3"), key="result-1"), 400)
    accepted(api.send(session_id, tool_result(action, "3"), key="result-1"))
    wait_for(emulator, session_id, "idle")
    accepted(api.send(session_id, tool_result(action, "3"), key="result-1"))  # landed: a no-op


# --- the stream -----------------------------------------------------------------------------


def test_a_stream_opens_with_a_status_snapshot_and_replays_nothing(
    harness: Any, readers: Any
) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    first = readers(emulator, session_id)
    first.read_until_type("agent.session.idle")
    accepted(api.send(session_id, message("Go.")))
    first.read_until_type("agent.session.requires_action")
    second = readers(emulator, session_id)
    second.read_until(lambda: len(second.events) >= 1)
    snapshot = second.events[0]
    assert snapshot["type"] == "agent.session.requires_action"
    assert (
        snapshot["session"]["required_actions"] == emulator.session(session_id)["required_actions"]
    )
    assert snapshot["event_id"] not in {e["event_id"] for e in emulator.events(session_id)}
    [action] = snapshot["session"]["required_actions"]
    accepted(api.send(session_id, tool_result(action, "3")))
    for reader in (first, second):
        reader.read_until_type("agent.session.idle", count=2 if reader is first else 1)
    log = emulator.events(session_id)
    assert [e["event_id"] for e in first.events[1:]] == [e["event_id"] for e in log[1:]]
    assert second.events[1]["type"] == "agent.session.turn.item.added"  # nothing replayed
    assert second.events[1]["item"]["type"] == "function_call_output"


def test_a_quiet_stream_keeps_alive_with_comments(harness: Any, readers: Any) -> None:
    emulator, api = harness(ping_interval=0.05)
    session_id = api.new_session()
    reader = readers(emulator, session_id, include_obfuscation="false")
    reader.read_until(lambda: reader.raw.count(b": keep-alive\n\n") >= 2, timeout=2)
    assert reader.raw.count(b": keep-alive\n\n") >= 2
    assert [f.event for f in reader.frames] == ["agent.session.idle"]
    assert "obfuscation" not in reader.events[0]
    assert b"\nid:" not in reader.raw
    assert not reader.raw.startswith(b"id:")
    bad = api.get(f"/agents/sessions/{session_id}/events", include_obfuscation="yes")
    assert error_of(bad, 400)["param"] == "include_obfuscation"


def test_events_of_a_turn_come_in_order_with_their_usage(harness: Any) -> None:
    script = [
        OpenAITurn(text="Let me add.", tool_calls=[call("add", a=1, b=2)], usage=(3, 4)),
        OpenAITurn(text=lambda outputs: f"It is {outputs[0]}.", usage=(5, 6)),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Add.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    assert action["arguments"] == '{"a":1,"b":2}'
    accepted(api.send(session_id, tool_result(action, "3")))
    wait_for(emulator, session_id, "idle")
    text = [
        "item.added",
        "content_part.added",
        *["output_text.delta"] * 3,
        "output_text.done",
        "content_part.done",
        "item.done",
    ]
    assert types(emulator, session_id) == [
        "created",
        "turn.created",
        "in_progress",
        "turn.in_progress",
        "turn.item.added",
        *(f"turn.{kind}" for kind in text),
        "turn.item.added",
        "turn.item.done",
        "requires_action",
        "turn.item.added",
        "in_progress",
        "turn.in_progress",
        *(f"turn.{kind}" for kind in text),
        "turn.completed",
        "idle",
    ]
    events = emulator.events(session_id)
    completed = events[-2]
    assert completed["usage"]["total_tokens"] == 18
    assert completed["turn"]["status"] == "completed"
    deltas = [e["delta"] for e in events if e["type"].endswith("output_text.delta")]
    assert "".join(deltas) == "Let me add.It is 3."
    phases = [i["phase"] for i in emulator.items(session_id) if i["type"] == "message"]
    assert phases == [None, "commentary", "final_answer"]


def test_answers_not_echoed_are_recorded_in_the_items_only(harness: Any) -> None:
    emulator, api = harness(ONE_CALL, echo_answers=False)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Add.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    accepted(api.send(session_id, tool_result(action, "3")))
    wait_for(emulator, session_id, "idle")
    resumed = types(emulator, session_id).index("requires_action") + 1
    assert types(emulator, session_id)[resumed : resumed + 2] == ["in_progress", "turn.in_progress"]
    logged = [e["item"]["type"] for e in emulator.events(session_id) if "item" in e]
    assert "function_call_output" not in logged
    (output,) = [i for i in emulator.items(session_id) if i["type"] == "function_call_output"]
    assert output["call_id"] == action["call_id"]
    listed = ok(api.get(f"/agents/sessions/{session_id}/items"))
    assert output["id"] in [item["id"] for item in listed["data"]]


def test_a_message_during_a_turn_queues_the_next(harness: Any) -> None:
    emulator, api = harness([*ONE_CALL, "Second."])
    session_id = api.new_session()
    accepted(api.send(session_id, message("One.")))
    wait_for(emulator, session_id, "requires_action")
    accepted(api.send(session_id, message("Two.")))
    first, second = emulator.turns(session_id)
    assert (first["status"], second["status"]) == ("waiting", "queued")
    [action] = emulator.session(session_id)["required_actions"]
    accepted(api.send(session_id, tool_result(action, "3")))
    assert emulator.wait_until(lambda: types(emulator, session_id).count("idle") == 1)
    tail = types(emulator, session_id)
    assert tail[tail.index("turn.completed") + 1] == "turn.in_progress"  # no idle between
    assert tail[-2:] == ["turn.completed", "idle"]
    assert [t["status"] for t in emulator.turns(session_id)] == ["completed", "completed"]


def test_deleting_a_session_cancels_what_waits_and_ends_its_streams(
    harness: Any, readers: Any
) -> None:
    emulator, api = harness([OpenAITurn(tool_calls=[call("add")]), OpenAITurn(text="x", delay=5)])
    session_id = api.new_session()
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    reader = readers(emulator, session_id)
    reader.read_until(lambda: len(reader.events) >= 1)
    ok(api.delete(f"/agents/sessions/{session_id}"))
    reader.read_to_end()
    assert reader.error is None  # a clean end
    assert reader.types[-1] == "agent.session.turn.cancelled"
    assert error_of(api.get(f"/agents/sessions/{session_id}"), 404)
    assert emulator.turns(session_id)[0]["status"] == "cancelled"

    running = api.new_session()
    accepted(api.send(running, message("Go.")))
    wait_for(emulator, running, "requires_action")
    [action] = emulator.session(running)["required_actions"]
    accepted(api.send(running, tool_result(action, "")))  # the next step thinks for 5 s
    assert error_of(api.delete(f"/agents/sessions/{running}"), 400)["code"] == "session_in_progress"
    accepted(api.send(running, {"type": "agent.session.input.cancel"}))
    ok(api.delete(f"/agents/sessions/{running}"))


# --- endings ---------------------------------------------------------------------------------


def test_a_failing_text_function_fails_the_turn_only(harness: Any) -> None:
    def broken(inputs: list[str]) -> str:
        raise RuntimeError("boom")

    emulator, api = harness([OpenAITurn(text=broken)])
    session_id = api.new_session()
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "idle")
    assert types(emulator, session_id)[-3:] == ["error", "turn.failed", "idle"]
    error = emulator.turns(session_id)[0]["error"]
    assert error["code"] == "internal_error"
    assert "boom" in error["message"]


def test_fail_turn_gives_up_on_the_open_turn(harness: Any) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session()
    with pytest.raises(ValueError, match="no open turn"):
        emulator.fail_turn(session_id)
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    emulator.fail_turn(session_id, code="server_overloaded")
    assert types(emulator, session_id)[-3:] == ["error", "turn.failed", "idle"]
    assert emulator.turns(session_id)[0]["error"]["code"] == "server_overloaded"
    assert emulator.session(session_id)["required_actions"] == []


def test_the_script_runs_out_politely(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    accepted(api.send(session_id, message("Hi.")))
    wait_for(emulator, session_id, "idle")
    assert emulator.items(session_id)[-1]["content"] == [
        {"type": "output_text", "text": "(script finished)"}
    ]


def test_the_pytest_fixture(openai_emulator: OpenAIAgentsEmulator) -> None:
    agent_id = openai_emulator.add_agent(["From the fixture."])
    api = OpenAIApi(openai_emulator)
    session_id = api.new_session(agent_id)
    accepted(api.send(session_id, message("Hi.")))
    wait_for(openai_emulator, session_id, "idle")
    assert openai_emulator.items(session_id)[-1]["content"][0]["text"] == "From the fixture."
    api.close()


def test_a_step_does_not_start_past_the_spend_limit(harness: Any) -> None:
    emulator, api = harness(ONE_CALL)
    session_id = api.new_session(spend_control={"limit": 15})  # the first step spends 15
    accepted(api.send(session_id, message("Go.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    accepted(api.send(session_id, tool_result(action, "3")))
    wait_for(emulator, session_id, "budget_reached")
    assert types(emulator, session_id)[-3:] == ["error", "turn.failed", "budget_reached"]
    assert emulator.turns(session_id)[0]["error"]["code"] == "session_budget_exceeded"
    assert emulator.session(session_id)["spend_control"] == {"consumed": 15, "limit": 15}


@pytest.mark.parametrize(
    ("decision", "status", "said"),
    [
        ("approve", "completed", "approved"),
        ("deny", "failed", "denied"),
        ("cancel", "incomplete", "cancelled"),
    ],
)
def test_an_mcp_approval_decides_the_call(
    harness: Any, decision: str, status: str, said: str
) -> None:
    asking = ToolCall("fetch", {"url": "u"}, result="page", permission="ask", mcp_server="web")
    script = [OpenAITurn(mcp_calls=[asking]), OpenAITurn(text=lambda answers: answers[0])]
    emulator, api = harness(script)
    session_id = api.new_session()
    accepted(api.send(session_id, message("Fetch.")))
    wait_for(emulator, session_id, "requires_action")
    [action] = emulator.session(session_id)["required_actions"]
    assert action["request"]["arguments"] == '{"url":"u"}'
    answer = {
        "type": "agent.session.input.mcp_approval_request_result",
        "request_id": action["request_id"],
        "response": {"type": "mcp_tool_call", "decision": decision},
    }
    accepted(api.send(session_id, answer))
    wait_for(emulator, session_id, "idle")
    mcp_call = emulator.items(session_id)[1]
    assert (mcp_call["type"], mcp_call["status"]) == ("mcp_call", status)
    assert (mcp_call["output"] == "page") is (decision == "approve")
    assert emulator.items(session_id)[-1]["content"][0]["text"] == said
    again = error_of(api.send(session_id, answer), 400)
    assert again["code"] == "approval_already_submitted"
