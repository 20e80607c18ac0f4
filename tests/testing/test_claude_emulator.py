"""The Claude Managed Agents emulator, exercised over real loopback sockets with ``requests``."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any, Callable

import pytest
import requests

from req_managed_agents.testing import ClaudeEmulator, RecordedRequest, ToolCall, Turn, call
from req_managed_agents.testing.claude._wire import BETA
from tests.support.api import api_headers, error_of, ok, tool_result, user_message

# --- authentication and headers -------------------------------------------------------------


def test_requests_need_the_key_the_version_and_the_beta(harness: Any) -> None:
    emulator, _ = harness()
    url = emulator.base_url + "/v1/agents"
    good = api_headers(emulator)

    def get(**changes: str | None) -> requests.Response:
        headers = {k: v for k, v in {**good, **changes}.items() if v is not None}
        return requests.get(url, headers=headers, timeout=5)

    assert error_of(get(**{"x-api-key": None}), 401)["type"] == "authentication_error"
    assert error_of(get(**{"x-api-key": "sk-wrong"}), 401)["type"] == "authentication_error"
    assert error_of(get(**{"anthropic-version": None}), 400)["type"] == "invalid_request_error"
    assert error_of(get(**{"anthropic-beta": None}), 404)["type"] == "not_found_error"
    assert error_of(get(**{"anthropic-beta": "files-api-2025-04-14"}), 404)
    ok(get(**{"anthropic-beta": f"files-api-2025-04-14,{BETA}"}))
    ok(get(**{"x-api-key": None, "authorization": f"Bearer {emulator.api_key}"}))
    assert ok(get()) == {"data": [], "next_page": None}


def test_the_api_key_is_random_unless_given(harness: Any) -> None:
    first, _ = harness()
    second, _ = harness()
    chosen, _ = harness(api_key="sk-chosen")
    assert first.api_key.startswith("sk-ant-emu-")
    assert first.api_key != second.api_key
    assert chosen.api_key == "sk-chosen"
    assert "sk-" not in repr(first)


def test_unknown_paths_are_not_found(harness: Any) -> None:
    _, api = harness()
    assert error_of(api.get("/v1/nothing"), 404)["type"] == "not_found_error"
    assert error_of(api.delete("/v1/agents/agent_1"), 404)["type"] == "not_found_error"


# --- agents and environments ----------------------------------------------------------------


def test_agents_are_created_read_updated_listed_and_archived(harness: Any) -> None:
    _, api = harness()
    agents = [ok(api.post("/v1/agents", {"name": f"a{i}", "model": "claude-x"})) for i in range(5)]
    first = agents[0]
    assert first["id"].startswith("agent_")
    assert first["type"] == "agent"
    assert first["version"] == 1
    assert first["model"] == {"id": "claude-x", "speed": "standard"}
    assert first["archived_at"] is None
    assert ok(api.get(f"/v1/agents/{first['id']}")) == first

    path = f"/v1/agents/{first['id']}"
    updated = ok(api.post(path, {"system": "Be brief.", "metadata": {"team": "qa"}}))
    assert (updated["version"], updated["system"], updated["metadata"]) == (
        2,
        "Be brief.",
        {"team": "qa"},
    )
    assert ok(api.post(path, {"system": "Be brief."}))["version"] == 2  # a no-op update
    assert error_of(api.post(path, {"version": 1, "system": "x"}), 409)["type"] == "conflict_error"

    archived = ok(api.post(f"/v1/agents/{agents[1]['id']}/archive", {}))
    assert archived["archived_at"] is not None
    assert error_of(api.post(f"/v1/agents/{agents[1]['id']}", {"system": "x"}), 400)

    listed, pages = api.list_all("/v1/agents", limit=2)
    assert [a["name"] for a in listed] == ["a0", "a2", "a3", "a4"]
    assert pages == 2
    listed, pages = api.list_all("/v1/agents", limit=2, include_archived="true")
    assert len(listed) == 5
    assert pages == 3


def test_agent_requests_are_validated(harness: Any) -> None:
    _, api = harness()
    assert "name" in error_of(api.post("/v1/agents", {"model": "m"}), 400)["message"]
    assert "model" in error_of(api.post("/v1/agents", {"name": "n"}), 400)["message"]
    assert error_of(api.post("/v1/agents", {"name": "n", "model": "m", "bogus": 1}), 400)
    assert error_of(api.post("/v1/agents", [1]), 400)
    assert error_of(api.get("/v1/agents/agent_missing"), 404)["type"] == "not_found_error"
    assert error_of(api.get("/v1/agents", limit=101), 400)
    assert error_of(api.get("/v1/agents", page="page_forged"), 400)
    ok(api.post("/v1/agents", {"name": "twin", "model": "m"}))
    ok(api.post("/v1/agents", {"name": "twin", "model": "m"}))  # names need not be unique


def test_environments_are_created_updated_archived_and_deleted(harness: Any) -> None:
    emulator, api = harness()
    environment = ok(api.post("/v1/environments", {"name": "e1"}))
    assert environment["id"].startswith("env_")
    assert environment["type"] == "environment"
    packages = {"type": "packages", **{m: [] for m in ("apt", "cargo", "gem", "go", "npm", "pip")}}
    assert environment["config"] == {
        "type": "cloud",
        "networking": {"type": "unrestricted"},
        "packages": packages,
    }
    path = f"/v1/environments/{environment['id']}"
    updated = ok(api.post(path, {"description": "d", "metadata": {"k": "v", "gone": ""}}))
    assert (updated["description"], updated["metadata"]) == ("d", {"k": "v"})
    ok(api.post("/v1/environments", {"name": "e2"}))
    listed, pages = api.list_all("/v1/environments", limit=1)
    assert ([e["name"] for e in listed], pages) == (["e1", "e2"], 2)
    assert ok(api.post(f"{path}/archive"))["archived_at"] is not None
    assert len(api.list_all("/v1/environments")[0]) == 1

    in_use = emulator.add_environment("in-use")
    session = ok(
        api.post("/v1/sessions", {"agent": emulator.add_agent(), "environment_id": in_use})
    )
    assert error_of(api.delete(f"/v1/environments/{in_use}"), 400)
    ok(api.delete(f"/v1/sessions/{session['id']}"))
    deleted = ok(api.delete(f"/v1/environments/{in_use}"))
    assert deleted == {"id": in_use, "type": "environment_deleted"}
    assert error_of(api.get(f"/v1/environments/{in_use}"), 404)


def test_unique_names_make_a_taken_name_a_conflict(harness: Any) -> None:
    emulator, api = harness(unique_names=True)
    agent = ok(api.post("/v1/agents", {"name": "dup", "model": "m"}))
    assert error_of(api.post("/v1/agents", {"name": "dup", "model": "m"}), 409)["type"] == (
        "conflict_error"
    )
    ok(api.post(f"/v1/agents/{agent['id']}/archive"))
    assert error_of(api.post("/v1/agents", {"name": "dup", "model": "m"}), 409)
    environment = ok(api.post("/v1/environments", {"name": "dup"}))
    assert error_of(api.post("/v1/environments", {"name": "dup"}), 409)
    ok(api.post(f"/v1/environments/{environment['id']}/archive"))
    assert error_of(api.post("/v1/environments", {"name": "dup"}), 409)
    ok(api.delete(f"/v1/environments/{environment['id']}"))
    ok(api.post("/v1/environments", {"name": "dup"}))  # a deleted one frees its name
    with pytest.raises(ValueError, match="dup"):
        emulator.add_agent(name="dup")


# --- sessions -------------------------------------------------------------------------------


def test_sessions_are_created_bare(harness: Any) -> None:
    emulator, api = harness()
    agent, environment = emulator.add_agent(), emulator.add_environment()
    bare = {"agent": agent, "environment_id": environment}
    assert error_of(api.post("/v1/sessions", {**bare, "events": [user_message("hi")]}), 400)
    assert error_of(api.post("/v1/sessions", {**bare, "initial_events": {}}), 400)
    assert "environment_id" in error_of(api.post("/v1/sessions", {"agent": agent}), 400)["message"]
    assert error_of(api.post("/v1/sessions", {"environment_id": environment}), 400)
    unknown_agent = {**bare, "agent": "agent_missing"}
    assert error_of(api.post("/v1/sessions", unknown_agent), 404)["type"] == "not_found_error"
    unknown_environment = {**bare, "environment_id": "env_missing"}
    assert error_of(api.post("/v1/sessions", unknown_environment), 404)

    session = ok(api.post("/v1/sessions", bare))
    assert session["id"].startswith("sesn_")
    assert (session["type"], session["status"]) == ("session", "idle")
    assert session["agent"]["id"] == agent
    assert session["environment_id"] == environment
    assert ok(api.get(f"/v1/sessions/{session['id']}")) == session
    pinned = {**bare, "agent": {"type": "agent", "id": agent, "version": 1}}
    newer = ok(api.post("/v1/sessions", pinned))
    listed, _ = api.list_all("/v1/sessions")
    assert [s["id"] for s in listed] == [newer["id"], session["id"]]  # newest first
    assert emulator.session_ids() == [session["id"], newer["id"]]

    ok(api.post(f"/v1/agents/{agent}/archive"))
    assert error_of(api.post("/v1/sessions", bare), 400)


def test_archiving_a_session_terminates_it_and_hides_it_from_the_list(harness: Any) -> None:
    _, api = harness()
    session_id = api.new_session()
    archived = ok(api.post(f"/v1/sessions/{session_id}/archive", {}))
    assert archived["archived_at"] is not None
    assert archived["status"] == "terminated"
    assert api.list_all("/v1/sessions")[0] == []
    assert len(api.list_all("/v1/sessions", include_archived="true")[0]) == 1
    assert "archived" in error_of(api.send(session_id, user_message("hi")), 400)["message"]


# --- playing a script -------------------------------------------------------------------------


def test_a_two_tool_turn_plays_on_the_stream_and_in_paged_history(
    harness: Any, streams: Any
) -> None:
    script = [
        Turn(
            text="Let me check.",
            tool_calls=[call("get_weather", city="Paris"), call("get_time", zone="CET")],
            usage=(12, 7),
        ),
        Turn(text=lambda results: "Done: " + " / ".join(results)),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    stream = streams(emulator, session_id)  # attach first: the stream does not replay

    echoes = ok(api.send(session_id, user_message("Weather?")))["data"]
    assert [e["type"] for e in echoes] == ["user.message"]
    assert echoes[0]["id"].startswith("sevt_")
    stream.read_until_count("session.status_idle")
    assert stream.types == [
        "user.message",
        "session.status_running",
        "span.model_request_start",
        "agent.message",
        "span.model_request_end",
        "agent.custom_tool_use",
        "agent.custom_tool_use",
        "session.usage",
        "session.status_idle",
    ]
    events = stream.events
    assert events[0] == echoes[0]
    assert events[3]["content"] == [{"type": "text", "text": "Let me check."}]
    assert events[4]["model_request_start_id"] == events[2]["id"]
    assert events[4]["is_error"] is False
    assert events[4]["model_usage"] == {
        "input_tokens": 12,
        "output_tokens": 7,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    weather, clock = events[5], events[6]
    assert (weather["name"], weather["input"]) == ("get_weather", {"city": "Paris"})
    assert (clock["name"], clock["input"]) == ("get_time", {"zone": "CET"})
    assert events[8]["stop_reason"] == {
        "type": "requires_action",
        "event_ids": [weather["id"], clock["id"]],
    }
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "idle"

    # Results in any order; the scripted text receives them in call order.
    ok(api.send(session_id, tool_result(clock["id"], "14:00"), tool_result(weather["id"], "18C")))
    stream.read_until_count("session.status_idle", 2)
    messages = [e for e in stream.events if e["type"] == "agent.message"]
    assert messages[-1]["content"][0]["text"] == "Done: 18C / 14:00"
    assert stream.events[-1]["stop_reason"] == {"type": "end_turn"}

    history, pages = api.list_all(f"/v1/sessions/{session_id}/events", limit=4)
    assert pages >= 4
    assert history == stream.events == emulator.events(session_id)
    for event in history:
        assert event["id"].startswith("sevt_")
        assert event["processed_at"].endswith("Z")
        datetime.fromisoformat(event["processed_at"].replace("Z", "+00:00"))
    assert len({e["id"] for e in history}) == len(history)
    session = ok(api.get(f"/v1/sessions/{session_id}"))
    assert (session["usage"]["input_tokens"], session["usage"]["output_tokens"]) == (22, 12)

    ok(api.send(session_id, user_message("More?")))
    stream.read_until_count("session.status_idle", 3)
    assert stream.events[-4]["content"][0]["text"] == "(script finished)"


def test_answers_not_echoed_stay_off_the_stream_but_in_the_history(
    harness: Any, streams: Any
) -> None:
    script = [Turn(tool_calls=[call("get_weather", city="Paris")]), Turn(text="Sunny.")]
    emulator, api = harness(script, echo_answers=False)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("Weather?")))
    stream.read_until_count("session.status_idle")
    use = next(e for e in stream.events if e["type"] == "agent.custom_tool_use")
    (echo,) = ok(api.send(session_id, tool_result(use["id"], "18C")))["data"]
    assert echo["type"] == "user.custom_tool_result"
    stream.read_until_count("session.status_idle", 2)
    assert "user.message" in stream.types, "only answers are kept off the stream"
    assert "user.custom_tool_result" not in stream.types
    history, _ = api.list_all(f"/v1/sessions/{session_id}/events", limit=100)
    assert echo in history
    assert [e for e in history if e != echo] == stream.events


def test_server_tools_and_a_scripted_error(harness: Any, streams: Any) -> None:
    search = ToolCall("web_search", {"query": "news"}, result="found it")
    emulator, api = harness([Turn("Searching.", server_tool_calls=[search]), Turn(end="error")])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle")
    use, result = (e for e in stream.events if e["type"] in ("agent.tool_use", "agent.tool_result"))
    assert (use["name"], use["input"]) == ("web_search", {"query": "news"})
    assert result["tool_use_id"] == use["id"]
    assert result["content"] == [{"type": "text", "text": "found it"}]

    ok(api.send(session_id, user_message("again")))
    stream.read_until_count("session.status_terminated")
    error = next(e for e in stream.events if e["type"] == "session.error")["error"]
    assert error["retry_status"] == {"type": "terminal"}
    assert stream.types[-3:] == ["session.usage", "session.error", "session.status_terminated"]
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "terminated"


def test_a_raising_script_text_fails_the_session(harness: Any, caplog: Any) -> None:
    def broken(results: list[str]) -> str:
        raise RuntimeError("script bug")

    emulator, api = harness([Turn(text=broken)])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("go")))
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_terminated"
    )
    error = next(e for e in emulator.events(session_id) if e["type"] == "session.error")
    assert "script bug" in error["error"]["message"]


def test_sent_events_are_checked(harness: Any) -> None:
    emulator, api = harness([Turn(tool_calls=[call("a"), call("b")])])
    session_id = api.new_session()
    path = f"/v1/sessions/{session_id}/events"
    empty = error_of(api.post(path, {"events": []}), 400)
    assert empty == {
        "type": "invalid_request_error",
        "message": "events: value must contain at least 1 item",
    }
    assert error_of(api.post(path, user_message("bare")), 400)
    assert error_of(api.send(session_id, {"type": "user.unknown"}), 400)
    assert error_of(api.send(session_id, tool_result("sevt_nope", "x")), 400)
    assert error_of(api.get(path, limit=1001), 400)
    assert error_of(api.send("sesn_missing", user_message("hi")), 404)

    ok(api.send(session_id, user_message("go")))
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_idle"
    )
    first, second = (e["id"] for e in emulator.events(session_id) if "custom_tool_use" in e["type"])
    confirmation = {"type": "user.tool_confirmation", "tool_use_id": first, "result": "allow"}
    assert "does not match" in error_of(api.send(session_id, confirmation), 400)["message"]

    # A partial answer idles again, naming what is still missing.
    ok(api.send(session_id, tool_result(first, "1")))
    last = emulator.events(session_id)[-1]
    assert last["stop_reason"] == {"type": "requires_action", "event_ids": [second]}
    twice = error_of(api.send(session_id, tool_result(first, "1")), 400)
    assert "already answered" in twice["message"]
    ok(api.send(session_id, tool_result(second, "2")))
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1].get("stop_reason") == {"type": "end_turn"}
    )
    assert error_of(api.send(session_id, tool_result(second, "2")), 400)


def test_an_interrupt_ends_a_running_turn(harness: Any, streams: Any) -> None:
    emulator, api = harness([Turn("never said", delay=30)])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("slow")))
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "running"
    assert error_of(api.post(f"/v1/sessions/{session_id}/archive"), 400)
    assert error_of(api.delete(f"/v1/sessions/{session_id}"), 400)

    started = time.monotonic()
    ok(api.send(session_id, {"type": "user.interrupt"}))
    stream.read_until_count("session.status_idle")
    assert time.monotonic() - started < 2
    assert "agent.message" not in stream.types
    assert stream.events[-1]["stop_reason"] == {"type": "end_turn"}


def test_input_sent_during_a_turn_is_queued(harness: Any, streams: Any) -> None:
    emulator, api = harness([Turn("one", delay=0.2), Turn(lambda texts: f"two: {texts[0]}")])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("first")))
    ok(api.send(session_id, user_message("second")))
    stream.read_until_count("session.status_idle", 2)
    texts = [e["content"][0]["text"] for e in stream.events if e["type"] == "agent.message"]
    assert texts == ["one", "two: second"]
    assert stream.count("session.status_running") == 2


def test_deleting_a_session_ends_its_stream(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hi"])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    assert ok(api.delete(f"/v1/sessions/{session_id}")) == {
        "id": session_id,
        "type": "session_deleted",
    }
    stream.read_to_end()
    assert stream.error is None  # a proper end of the body
    assert stream.types == ["session.deleted"]
    assert error_of(api.get(f"/v1/sessions/{session_id}"), 404)
    assert emulator.events(session_id)[-1]["type"] == "session.deleted"
    assert emulator.stream_connections(session_id)[0].end == "session_deleted"


def test_terminate_session_logs_the_terminal_event(harness: Any, streams: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    emulator.terminate_session(session_id)
    stream.read_until_count("session.status_terminated")
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "terminated"
    assert error_of(api.send(session_id, user_message("hi")), 400)


# --- the stream -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heartbeat", "expected"),
    [("comment", b": ping\n\n"), ("event", b'event: ping\ndata: {"type":"ping"}\n\n')],
)
def test_a_quiet_stream_sends_heartbeats(
    harness: Any, streams: Any, heartbeat: str, expected: bytes
) -> None:
    emulator, api = harness(ping_interval=0.05, heartbeat=heartbeat)
    stream = streams(emulator, api.new_session())
    assert stream.read_until(lambda: stream.raw.count(expected) >= 2, timeout=2)
    assert stream.raw.replace(expected, b"") == b""
    assert stream.events == []


def test_the_stream_does_not_replay(harness: Any, streams: Any) -> None:
    emulator, api = harness(["first", "second"])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("one")))
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_idle"
    )
    before = {e["id"] for e in emulator.events(session_id)}
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("two")))
    stream.read_until_count("session.status_idle")
    assert stream.events[0]["content"] == [{"type": "text", "text": "two"}]
    assert not before & {e["id"] for e in stream.events}


def test_sse_ids_adds_id_lines(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hi"], sse_ids=True)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle")
    frames = [f for f in stream.frames if f.event != "ping"]
    assert all(f.id == f.json()["id"] and f.event == f.json()["type"] for f in frames)


def test_a_dropped_stream_ends_before_the_event_which_stays_in_history(
    harness: Any, streams: Any
) -> None:
    emulator, api = harness(["hello", "again"])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    emulator.drop_stream(at_event=3, session_id=session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_to_end()
    assert isinstance(stream.error, requests.exceptions.ChunkedEncodingError)
    history = emulator.events(session_id)
    assert stream.events == history[:3]
    assert history[3]["type"] == "agent.message"
    assert history[-1]["type"] == "session.status_idle"
    assert emulator.stream_connections(session_id)[0].end == "dropped"

    # The fault was used up: a reconnected stream carries on.
    again = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go on")))
    again.read_until_count("session.status_idle")
    assert again.count("agent.message") == 1


def test_duplicated_stream_events_are_written_twice(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hi"])
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    emulator.duplicate_stream_events()
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle", 2)
    ids = [e["id"] for e in stream.events]
    assert ids[0::2] == ids[1::2] == [e["id"] for e in emulator.events(session_id)]
    assert emulator.stream_connections(session_id)[0].events_sent == len(ids)


def test_a_stalled_stream_goes_silent_then_closes(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hi"], ping_interval=0.05)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    assert stream.read_until(lambda: b": ping" in stream.raw)
    emulator.stall_stream(at_event=1, seconds=0.5, session_id=session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_to_end()
    assert stream.types == ["user.message"]
    assert stream.ended_at is not None
    assert stream.ended_at - stream.last_bytes_at >= 0.45  # not even a ping meanwhile
    assert isinstance(stream.error, requests.exceptions.ChunkedEncodingError)
    assert emulator.stream_connections(session_id)[0].end == "stalled"


def test_a_client_that_closes_its_stream_is_noticed(harness: Any, streams: Any) -> None:
    emulator, api = harness(ping_interval=0.2)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    assert emulator.open_stream_count(session_id) == 1
    closed = time.monotonic()
    stream.close()
    assert emulator.wait_until(lambda: emulator.open_stream_count(session_id) == 0, timeout=0.4)
    (connection,) = emulator.stream_connections(session_id)
    assert connection.end == "client_closed"
    assert connection.closed_at is not None
    assert connection.closed_at - closed < 0.4


def test_close_is_prompt_with_open_streams_and_running_turns(harness: Any, streams: Any) -> None:
    emulator, api = harness([Turn("slow", delay=30)], ping_interval=5)
    opened = []
    for _ in range(2):
        session_id = api.new_session()
        opened.append(streams(emulator, session_id))
        ok(api.send(session_id, user_message("go")))
    for stream in opened:
        stream.read_until_count("session.status_running")
    started = time.monotonic()
    emulator.close()
    assert time.monotonic() - started < 1
    for stream in opened:
        stream.read_to_end(timeout=1)
    assert {c.end for c in emulator.stream_connections()} == {"emulator_closed"}
    emulator.close()  # idempotent
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(emulator.base_url, timeout=1)


# --- faults and observation -------------------------------------------------------------------


def test_fail_requests_answers_errors_with_retry_after(harness: Any) -> None:
    emulator, api = harness()
    emulator.fail_requests("POST", r"/v1/agents", 429, times=2, retry_after=3)
    for _ in range(2):
        response = api.post("/v1/agents", {"name": "a", "model": "m"})
        assert error_of(response, 429)["type"] == "rate_limit_error"
        assert response.headers["retry-after"] == "3"
    ok(api.post("/v1/agents", {"name": "a", "model": "m"}))
    ok(api.get("/v1/agents"))  # another method is untouched

    emulator.fail_requests("*", r"/v1/environments", 529)
    response = api.get("/v1/environments")
    assert error_of(response, 529)["type"] == "overloaded_error"
    assert "retry-after" not in response.headers

    session_id = api.new_session()
    emulator.fail_requests("GET", r"/v1/sessions/[^/]+/events/stream", 503, error_type="api_error")
    stream_url = f"{emulator.base_url}/v1/sessions/{session_id}/events/stream"
    response = requests.get(stream_url, headers=api_headers(emulator), timeout=5)
    assert error_of(response, 503)["type"] == "api_error"
    ok(api.get(f"/v1/sessions/{session_id}/events"))  # the whole path must match


def test_a_corrupted_event_is_not_json_and_the_stream_carries_on(
    harness: Any, streams: Any
) -> None:
    emulator, api = harness(["hello"])
    session_id, other = api.new_session(), api.new_session()
    emulator.corrupt_stream(at_event=3, session_id=session_id)
    stream, untouched = streams(emulator, session_id), streams(emulator, other)
    ok(api.send(session_id, user_message("go")))
    ok(api.send(other, user_message("go")))
    assert stream.read_until(lambda: any(f.event == "session.status_idle" for f in stream.frames))
    history = emulator.events(session_id)
    assert history[3]["type"] == "agent.message"  # the event stays in the history
    frames = [f for f in stream.frames if f.event != "ping"]
    assert [f.event for f in frames] == [e["type"] for e in history]
    with pytest.raises(json.JSONDecodeError):
        frames[3].json()
    assert history[3]["id"] in frames[3].data  # the first half of the event's JSON
    assert [f.json() for i, f in enumerate(frames) if i != 3] == history[:3] + history[4:]
    assert emulator.stream_connections(session_id)[0].events_sent == len(history)
    untouched.read_until_count("session.status_idle")  # another session's stream is intact
    assert untouched.events == emulator.events(other)
    assert emulator.pending_faults() == 0


def test_one_event_is_duplicated_on_the_next_streams_that_send_it(
    harness: Any, streams: Any
) -> None:
    emulator, api = harness(["one", "two"])
    first, second = api.new_session(), api.new_session()
    emulator.duplicate_stream(at_event=2, times=2)
    for session_id in (first, second):
        stream = streams(emulator, session_id)
        ok(api.send(session_id, user_message("go")))
        stream.read_until_count("session.status_idle")
        ids = [e["id"] for e in emulator.events(session_id)]
        assert [e["id"] for e in stream.events] == ids[:3] + ids[2:]
        assert emulator.stream_connections(session_id)[0].events_sent == len(ids) + 1
    assert emulator.pending_faults() == 0


def test_stream_faults_apply_one_per_event_and_are_counted_until_met(
    harness: Any, streams: Any
) -> None:
    emulator, api = harness(["hello"])
    session_id = api.new_session()
    emulator.duplicate_stream(at_event=1, session_id=session_id)
    emulator.corrupt_stream(at_event=1, session_id=session_id)
    emulator.drop_stream(at_event=1, session_id="sesn_other")
    assert emulator.pending_faults() == 3
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go")))
    assert stream.read_until(lambda: any(f.event == "session.status_idle" for f in stream.frames))
    events = [f for f in stream.frames if f.event != "ping"]
    assert len(events) == len(emulator.events(session_id))  # corrupted, not also duplicated
    with pytest.raises(json.JSONDecodeError):
        events[1].json()
    assert emulator.pending_faults() == 2  # the duplicate and the other session's drop remain
    with pytest.raises(ValueError, match="times"):
        emulator.corrupt_stream(at_event=1, times=0)


def test_a_reset_before_acting_leaves_no_trace_but_the_request(harness: Any) -> None:
    emulator, api = harness()
    emulator.reset_requests("POST", "/v1/agents", after_acting=False, times=2)
    for _ in range(2):
        with pytest.raises(requests.ConnectionError):
            api.post("/v1/agents", {"name": "a", "model": "m"})
    assert ok(api.get("/v1/agents"))["data"] == []
    assert [r.method for r in emulator.requests] == ["POST", "POST", "GET"]
    created = ok(api.post("/v1/agents", {"name": "a", "model": "m"}))  # used up
    assert [a["id"] for a in ok(api.get("/v1/agents"))["data"]] == [created["id"]]


def test_a_reset_after_acting_swallows_the_answer_of_a_request_that_landed(
    harness: Any, streams: Any
) -> None:
    emulator, api = harness(["hello"])
    emulator.reset_requests("POST", "/v1/agents", after_acting=True)
    with pytest.raises(requests.ConnectionError):
        api.post("/v1/agents", {"name": "a", "model": "m"})
    assert [a["name"] for a in ok(api.get("/v1/agents"))["data"]] == ["a"]

    session_id = api.new_session()
    stream = streams(emulator, session_id)
    emulator.reset_requests(
        "POST", r"/v1/sessions/[^/]+/events", after_acting=True, where=_posts("user.message")
    )
    with pytest.raises(requests.ConnectionError):
        api.send(session_id, user_message("go"))
    stream.read_until_count("session.status_idle")  # the message landed and played
    assert stream.events == emulator.events(session_id)
    assert emulator.pending_faults() == 0


def test_a_stream_reset_after_acting_was_attached_but_sends_nothing(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    emulator.reset_requests("GET", r"/v1/sessions/[^/]+/events/stream", after_acting=True)
    url = f"{emulator.base_url}/v1/sessions/{session_id}/events/stream"
    with pytest.raises(requests.ConnectionError):
        requests.get(url, headers=api_headers(emulator), stream=True, timeout=3)
    assert emulator.wait_until(lambda: emulator.open_stream_count(session_id) == 0, timeout=1)
    (connection,) = emulator.stream_connections(session_id)
    assert (connection.end, connection.events_sent) == ("reset", 0)


def _posts(kind: str) -> Callable[[RecordedRequest], bool]:
    """A ``where=`` filter: posted events whose first one is of type ``kind``."""
    return lambda request: request.body["events"][0]["type"] == kind


def test_request_rules_can_tell_requests_apart_by_their_body(harness: Any) -> None:
    emulator, api = harness([Turn(tool_calls=[call("add", a=1)]), "done"])
    session_id = api.new_session()
    path = r"/v1/sessions/[^/]+/events"
    emulator.fail_requests("POST", path, 429, where=_posts("user.custom_tool_result"))
    hooked: list[str] = []
    emulator.before_requests(
        "POST", path, lambda: hooked.append("results"), where=_posts("user.custom_tool_result")
    )
    ok(api.send(session_id, user_message("go")))  # not the events the rules are for
    assert emulator.wait_until(
        lambda: emulator.events(session_id)[-1]["type"] == "session.status_idle"
    )
    assert emulator.pending_faults() == 1
    assert hooked == []
    (use,) = [e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use"]
    assert error_of(api.send(session_id, tool_result(use["id"], "3")), 429)
    assert hooked == ["results"]
    assert emulator.pending_faults() == 0
    ok(api.send(session_id, tool_result(use["id"], "3")))


def test_requests_are_recorded(harness: Any) -> None:
    emulator, api = harness()
    ok(api.post("/v1/agents?beta=true", {"name": "a", "model": "m"}))
    api.get("/v1/agents", limit=5)
    post, get = emulator.requests
    assert isinstance(post, RecordedRequest)
    assert (post.method, post.path, post.query) == ("POST", "/v1/agents", {"beta": ["true"]})
    assert post.headers["x-api-key"] == emulator.api_key
    assert post.headers["anthropic-beta"] == BETA
    assert post.body == {"name": "a", "model": "m"}
    assert (get.method, get.query, get.body) == ("GET", {"limit": ["5"]}, None)
    assert post.received_at <= get.received_at

    response = api.http.post(emulator.base_url + "/v1/agents", data=b"\xffnot json", timeout=5)
    assert error_of(response, 400)["type"] == "invalid_request_error"
    assert emulator.requests[-1].body == b"\xffnot json"


def test_wait_until_gives_up_after_the_timeout(harness: Any) -> None:
    emulator, _ = harness()
    started = time.monotonic()
    assert not emulator.wait_until(lambda: False, timeout=0.1)
    assert 0.1 <= time.monotonic() - started < 0.5


def test_turns_are_validated() -> None:
    with pytest.raises(ValueError, match="end"):
        Turn(end="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delay"):
        Turn(delay=-1)
    assert call("f", x=1) == ToolCall("f", {"x": 1})


def test_the_pytest_fixture_yields_a_running_emulator(claude_emulator: ClaudeEmulator) -> None:
    response = requests.get(
        claude_emulator.base_url + "/v1/agents", headers=api_headers(claude_emulator), timeout=5
    )
    assert ok(response) == {"data": [], "next_page": None}


def test_the_bedrock_fixture_serves_signed_claude_sessions(
    claude_bedrock_emulator: ClaudeEmulator,
) -> None:
    pytest.importorskip("botocore")
    from req_managed_agents import ClaudeManagedAgentsBedrock, Tools, run_to_completion

    emulator = claude_bedrock_emulator
    assert emulator.flavor == "bedrock"
    unsigned = requests.get(emulator.base_url + "/v1/agents", timeout=5)
    assert unsigned.status_code == 403, "an unsigned request is refused"
    with emulator.provider(timeout=5) as provider:
        assert isinstance(provider, ClaudeManagedAgentsBedrock)
        result = run_to_completion(
            provider,
            "Hi",
            handler=Tools(),
            agent_id=emulator.add_agent([Turn(text="Signed.")]),
            environment_id="arn:aws:bedrock-agentcore:us-east-1:123456789012:sandbox/s-01",
            timeout=20,
        )
    assert result.text == "Signed."
    signed = emulator.requests[1:]  # after the unsigned one
    assert signed
    assert all("/us-east-1/bedrock/" in r.headers["authorization"] for r in signed)
