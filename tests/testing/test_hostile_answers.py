"""The emulators' hostile answers, over real sockets with ``requests``: ``answer_requests``
sends a body of the test's choosing in place of an answer (the request acted on first, or
not at all), and ``corrupt_stream(data=)`` writes a frame carrying chosen data in place of
an event."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from req_managed_agents.testing import ClaudeEmulator
from tests.support.api import api_headers, ok, user_message

SESSIONS = "/v1/sessions"


def _create(emulator: ClaudeEmulator, api: Any) -> requests.Response:
    body = {"agent": emulator.add_agent(), "environment_id": emulator.add_environment()}
    return api.http.post(
        emulator.base_url + SESSIONS, json=body, headers=api_headers(emulator), timeout=5
    )


def test_an_answer_replaced_after_acting_leaves_what_the_request_did(harness: Any) -> None:
    emulator, api = harness()
    emulator.answer_requests("POST", SESSIONS, b"[not json", status=201, content_type="text/x")
    assert emulator.pending_faults() == 1
    response = _create(emulator, api)
    assert (response.status_code, response.content) == (201, b"[not json")
    assert response.headers["content-type"] == "text/x"
    assert len(emulator.session_ids()) == 1  # made, then answered with the test's body
    assert emulator.pending_faults() == 0
    assert ok(_create(emulator, api))["type"] == "session"  # one shot: the next is served
    assert len(emulator.session_ids()) == 2


def test_an_answer_replaced_before_acting_leaves_nothing(harness: Any) -> None:
    emulator, api = harness()
    emulator.answer_requests("POST", SESSIONS, "", after_acting=False, content_type=None)
    response = _create(emulator, api)
    assert (response.status_code, response.content) == (200, b"")
    assert "content-type" not in response.headers
    assert emulator.session_ids() == []
    assert [r.path for r in emulator.requests] == [SESSIONS]  # recorded all the same


def test_a_stream_answered_otherwise_is_attached_and_never_written(harness: Any) -> None:
    emulator, api = harness(["hello"])
    session_id = api.new_session()
    emulator.answer_requests("GET", r"/v1/sessions/[^/]+/events/stream", b'{"id": 5}')
    url = f"{emulator.base_url}/v1/sessions/{session_id}/events/stream"
    response = requests.get(url, headers=api_headers(emulator), timeout=5)
    assert (response.status_code, response.content) == (200, b'{"id": 5}')
    (connection,) = emulator.stream_connections(session_id)
    assert (connection.end, connection.events_sent) == ("replaced", 0)
    assert emulator.open_stream_count() == 0


def test_an_injected_error_comes_before_a_replacement(harness: Any) -> None:
    emulator, api = harness()
    emulator.fail_requests("POST", SESSIONS, 503)
    emulator.answer_requests("POST", SESSIONS, b"{}")
    assert _create(emulator, api).status_code == 503
    assert _create(emulator, api).content == b"{}"
    assert emulator.pending_faults() == 0


def test_answer_requests_refuses_what_is_no_answer(harness: Any) -> None:
    emulator, _ = harness()
    with pytest.raises(ValueError, match="HTTP status"):
        emulator.answer_requests("GET", ".*", b"", status=42)
    with pytest.raises(TypeError, match="bytes or a str"):
        emulator.answer_requests("GET", ".*", {"id": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="times"):
        emulator.answer_requests("GET", ".*", b"", times=0)
    assert emulator.pending_faults() == 0


def test_a_frame_of_chosen_data_takes_an_events_place(harness: Any, streams: Any) -> None:
    emulator, api = harness(["hello"])
    session_id = api.new_session()
    hostile = json.dumps({"type": ["agent.message"], "id": "sevt_x"}) + "\nsecond line"
    emulator.corrupt_stream(at_event=3, session_id=session_id, data=hostile)
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go")))
    assert stream.read_until(lambda: any(f.event == "session.status_idle" for f in stream.frames))
    frames = [f for f in stream.frames if f.event != "ping"]
    assert (frames[3].event, frames[3].data) == ("message", hostile)  # no name; both lines
    history = emulator.events(session_id)
    assert history[3]["type"] == "agent.message"  # the event stays in the history
    assert [f.json() for i, f in enumerate(frames) if i != 3] == history[:3] + history[4:]
    assert emulator.pending_faults() == 0
