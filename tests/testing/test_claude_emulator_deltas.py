"""Live previews on the Claude emulator's stream (``event_deltas[]``), over real sockets."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests

from req_managed_agents.testing import Turn
from tests.support.api import api_headers, error_of, ok, stream_url, user_message

MESSAGE = "The weather in Paris is sunny."


def preview_text(events: list[dict[str, Any]], event_id: str) -> str:
    return "".join(
        e["delta"]["content"]["text"]
        for e in events
        if e["type"] == "event_delta" and e["event_id"] == event_id
    )


def test_a_message_is_previewed_by_its_deltas_right_before_it(harness: Any, streams: Any) -> None:
    emulator, api = harness([MESSAGE])
    session_id = api.new_session()
    previewing = streams(emulator, session_id, deltas=("agent.message",))
    plain = streams(emulator, session_id)
    ok(api.send(session_id, user_message("Weather?")))
    previewing.read_until_count("session.status_idle")
    plain.read_until_count("session.status_idle")

    history = emulator.events(session_id)
    message = next(e for e in history if e["type"] == "agent.message")
    assert previewing.types == [
        "user.message",
        "session.status_running",
        "span.model_request_start",
        "event_start",
        "event_delta",
        "event_delta",
        "event_delta",
        "agent.message",
        "span.model_request_end",
        "session.usage",
        "session.status_idle",
    ]
    start, *deltas = previewing.events[3:7]
    assert start == {"type": "event_start", "event": {"type": "agent.message", "id": message["id"]}}
    for delta in deltas:
        assert set(delta) == {"type", "event_id", "delta"}  # no id, no processed_at
        assert delta["event_id"] == message["id"]
        assert delta["delta"]["type"] == "content_delta"
        assert delta["delta"]["index"] == 0
        assert delta["delta"]["content"]["type"] == "text"
        assert delta["delta"]["content"]["text"]
    assert preview_text(previewing.events, message["id"]) == MESSAGE
    assert [f.event for f in previewing.frames if f.event != "ping"] == previewing.types

    # Live only: not in the history, not on a connection that did not ask for them.
    assert previewing.logged == history == plain.events
    paged, _ = api.list_all(f"/v1/sessions/{session_id}/events")
    assert paged == history
    assert emulator.stream_connections(session_id)[0].events_sent == len(history)


def test_previews_are_per_connection_and_never_replayed(harness: Any, streams: Any) -> None:
    emulator, api = harness(["one", "two"])
    session_id = api.new_session()
    first = streams(emulator, session_id, deltas=("agent.message",))
    ok(api.send(session_id, user_message("go")))
    first.read_until_count("session.status_idle")
    first.close()
    again = streams(emulator, session_id, deltas=("agent.message", "agent.message"))
    ok(api.send(session_id, user_message("go on")))
    again.read_until_count("session.status_idle")
    (start,) = [e for e in again.events if e["type"] == "event_start"]
    second = [e for e in emulator.events(session_id) if e["type"] == "agent.message"][-1]
    assert start["event"]["id"] == second["id"]
    assert preview_text(again.events, second["id"]) == "two"


def test_thinking_is_previewed_by_a_start_only(harness: Any, streams: Any) -> None:
    emulator, api = harness([Turn("Done.", thinking=True), Turn("Again.", thinking=True)])
    session_id = api.new_session()
    both = streams(emulator, session_id, deltas=("agent.thinking", "agent.message"))
    thinking_only = streams(emulator, session_id, deltas=("agent.thinking",))
    ok(api.send(session_id, user_message("go")))
    both.read_until_count("session.status_idle")
    thinking_only.read_until_count("session.status_idle")
    thinking = next(e for e in emulator.events(session_id) if e["type"] == "agent.thinking")
    assert set(thinking) == {"type", "id", "processed_at"}
    assert both.types[2:6] == [
        "span.model_request_start",
        "event_start",
        "agent.thinking",
        "event_start",
    ]
    assert both.events[3] == {
        "type": "event_start",
        "event": {"type": "agent.thinking", "id": thinking["id"]},
    }
    assert thinking_only.types[2:6] == [
        "span.model_request_start",
        "event_start",
        "agent.thinking",
        "agent.message",
    ]
    assert "event_delta" not in thinking_only.types


def test_preview_frames_carry_no_sse_id(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hi there"], sse_ids=True)
    session_id = api.new_session()
    stream = streams(emulator, session_id, deltas=("agent.message",))
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle")
    # The raw frames: a decoder carries the last id over to frames that have none.
    blocks = [b.decode() for b in bytes(stream.raw).split(b"\n\n") if b.startswith(b"event:")]
    previews = [b for b in blocks if b.startswith(("event: event_start", "event: event_delta"))]
    assert len(previews) == 1 + 3
    assert not any("\nid:" in b for b in previews)
    logged = [b for b in blocks if b not in previews]
    assert len(logged) == len(emulator.events(session_id))
    assert all("\nid: sevt_" in b for b in logged)


@pytest.mark.parametrize(
    "values",
    [["user.message"], ["agent.message", "agent.tool_use"], [""], ["agent.message"] * 101],
)
def test_unknown_or_too_many_delta_types_are_refused(harness: Any, values: list[str]) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    response = requests.get(
        stream_url(emulator, session_id),
        params={"event_deltas[]": values},
        headers=api_headers(emulator),
        timeout=5,
    )
    assert error_of(response, 400)["type"] == "invalid_request_error"
    assert "event_deltas" in response.json()["error"]["message"]
    assert emulator.stream_connections(session_id) == []


def test_a_hundred_delta_values_are_accepted(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    response = requests.get(
        stream_url(emulator, session_id),
        params={"event_deltas[]": ["agent.message"] * 100},
        headers=api_headers(emulator),
        stream=True,
        timeout=5,
    )
    assert response.status_code == 200
    response.close()


# --- stream faults meet the event before its previews --------------------------------------------

MESSAGE_AT = 3  # user.message, session.status_running, span.model_request_start, agent.message


def test_a_drop_at_a_message_cuts_before_its_preview(harness: Any, streams: Any) -> None:
    emulator, api = harness([MESSAGE])
    session_id = api.new_session()
    stream = streams(emulator, session_id, deltas=("agent.message",))
    emulator.drop_stream(MESSAGE_AT, session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_to_end()
    assert isinstance(stream.error, requests.exceptions.ChunkedEncodingError)
    assert stream.types == ["user.message", "session.status_running", "span.model_request_start"]


@pytest.mark.parametrize("after_deltas", [0, 1, 2, 3, 10])
def test_a_drop_after_deltas_cuts_in_the_middle_of_a_preview(
    harness: Any, streams: Any, after_deltas: int
) -> None:
    emulator, api = harness([MESSAGE])
    session_id = api.new_session()
    stream = streams(emulator, session_id, deltas=("agent.message",))
    plain = streams(emulator, session_id)
    emulator.drop_stream(MESSAGE_AT, session_id, times=2, after_deltas=after_deltas)
    ok(api.send(session_id, user_message("go")))
    stream.read_to_end()
    plain.read_to_end()
    assert isinstance(stream.error, requests.exceptions.ChunkedEncodingError)
    sent = min(after_deltas, 3)
    assert stream.types[3:] == ["event_start"] + ["event_delta"] * sent
    assert plain.types == stream.types[:3]  # no previews asked for: cut before the event
    assert emulator.pending_faults() == 0
    with pytest.raises(ValueError, match="after_deltas"):
        emulator.drop_stream(MESSAGE_AT, after_deltas=-1)


def test_a_corrupted_message_is_previewed_then_unreadable(harness: Any, streams: Any) -> None:
    emulator, api = harness([MESSAGE])
    session_id = api.new_session()
    stream = streams(emulator, session_id, deltas=("agent.message",))
    emulator.corrupt_stream(MESSAGE_AT, session_id)
    ok(api.send(session_id, user_message("go")))
    assert stream.read_until(lambda: any(f.event == "session.status_idle" for f in stream.frames))
    frames = [f for f in stream.frames if f.event != "ping"]
    assert [f.event for f in frames[3:8]] == ["event_start"] + ["event_delta"] * 3 + [
        "agent.message"
    ]
    with pytest.raises(json.JSONDecodeError):
        frames[7].json()


def test_a_duplicated_message_is_previewed_once(harness: Any, streams: Any) -> None:
    emulator, api = harness([MESSAGE])
    session_id = api.new_session()
    stream = streams(emulator, session_id, deltas=("agent.message",))
    emulator.duplicate_stream(MESSAGE_AT, session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle")
    assert stream.types[3:9] == ["event_start"] + ["event_delta"] * 3 + ["agent.message"] * 2


# --- the official SDK reads the previews --------------------------------------------------------


def test_the_anthropic_sdk_folds_the_deltas_into_the_message(harness: Any) -> None:
    anthropic = pytest.importorskip("anthropic")
    from anthropic.lib.sessions import accumulate_managed_agents_event

    emulator, api = harness([Turn(MESSAGE, thinking=True)])
    session_id = api.new_session()
    client = anthropic.Anthropic(api_key=emulator.api_key, base_url=emulator.base_url)
    previews: list[str] = []
    types: list[str] = []
    final: list[Any] = []

    def read() -> None:
        deltas = ["agent.message", "agent.thinking"]
        with client.beta.sessions.events.stream(session_id, event_deltas=deltas) as stream:
            snapshot = None
            for event in stream:
                types.append(event.type)
                snapshot = accumulate_managed_agents_event(snapshot, event)
                if event.type == "event_delta":
                    previews.append(snapshot.content[0].text)
                if event.type == "session.status_idle":
                    final.append(snapshot)
                    return

    reader = threading.Thread(target=read)
    reader.start()
    assert emulator.wait_until(lambda: emulator.open_stream_count(session_id) == 1)
    ok(api.send(session_id, user_message("go")))
    reader.join(5)
    client.close()
    assert previews[-1] == MESSAGE
    assert all(MESSAGE.startswith(p) for p in previews)
    assert len(previews) == 3
    assert "agent.thinking" in types
    message = next(e for e in emulator.events(session_id) if e["type"] == "agent.message")
    assert final[0].id == message["id"]
    assert final[0].content[0].text == MESSAGE
