"""The OpenAI Agents emulator's faults, each met over real sockets: stream faults at log
positions, request faults (errors with ``retry-after``, resets before and after acting)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from req_managed_agents.testing import OpenAIAgentsEmulator
from tests.support.openai_api import EventReader, OpenAIApi, accepted, error_of, message

# Where the events of a one-step text turn sit in the log of a fresh session.
CREATED, TURN_CREATED, IN_PROGRESS, TURN_IN_PROGRESS, USER_ITEM, MESSAGE_ADDED = range(6)
IDLE = 14  # ... three deltas, the message done, turn.completed, then idle


@pytest.fixture
def harness() -> Iterator[Callable[..., tuple[OpenAIAgentsEmulator, OpenAIApi]]]:
    started: list[tuple[OpenAIAgentsEmulator, OpenAIApi]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[OpenAIAgentsEmulator, OpenAIApi]:
        kwargs.setdefault("ping_interval", 0.05)
        emulator = OpenAIAgentsEmulator(*args, **kwargs)
        started.append((emulator, OpenAIApi(emulator)))
        return started[-1]

    yield start
    for emulator, api in started:
        api.close()
        emulator.close()


@pytest.fixture
def run() -> Iterator[Callable[..., tuple[str, EventReader]]]:
    """Open a stream on a new session, send it a message and read until the stream ends or
    the session idles; return the session id and the reader."""
    readers: list[EventReader] = []

    def start(emulator: OpenAIAgentsEmulator, api: OpenAIApi) -> tuple[str, EventReader]:
        session_id = api.new_session()
        reader = EventReader(emulator, session_id)
        readers.append(reader)
        reader.read_until(lambda: len(reader.frames) >= 1)  # the snapshot: attached
        accepted(api.send(session_id, message("Hi.")))
        reader.read_until(
            lambda: _data(reader)[-1:] == ["agent.session.idle"] and len(reader.frames) > 1
        )
        return session_id, reader

    yield start
    for reader in readers:
        reader.close()


def _data(reader: EventReader) -> list[str]:
    """The type of each frame, or ``"<corrupt>"`` for a frame that is not JSON."""
    found = []
    for frame in reader.frames:
        try:
            found.append(json.loads(frame.data)["type"])
        except ValueError:
            found.append("<corrupt>")
    return found


def _ids(reader: EventReader) -> list[str]:
    return [json.loads(f.data)["event_id"] for f in reader.frames[1:] if f.data.endswith("}")]


def test_the_log_positions_the_faults_count_in(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    session_id, reader = run(emulator, api)
    log = [e["type"] for e in emulator.events(session_id)]
    assert log[CREATED] == "agent.session.created"
    assert log[MESSAGE_ADDED] == "agent.session.turn.item.added"
    assert (len(log) - 1, log[IDLE]) == (IDLE, "agent.session.idle")
    assert _ids(reader) == [e["event_id"] for e in emulator.events(session_id)[1:]]


def test_a_dropped_stream_ends_before_the_event(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    emulator.drop_stream(MESSAGE_ADDED)
    session_id, reader = run(emulator, api)
    assert reader.ended_at is not None
    assert reader.error is not None
    log = emulator.events(session_id)
    assert _ids(reader) == [e["event_id"] for e in log[1:MESSAGE_ADDED]]
    [connection] = emulator.stream_connections(session_id)
    assert connection.end == "dropped"
    assert emulator.pending_faults() == 0
    assert log[MESSAGE_ADDED]["type"] == "agent.session.turn.item.added"  # still logged


def test_a_stalled_stream_goes_silent_then_closes(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    emulator.stall_stream(TURN_IN_PROGRESS, 0.4)
    started = time.monotonic()
    session_id, reader = run(emulator, api)
    assert reader.ended_at is not None
    assert reader.ended_at - started >= 0.4
    # Silent from the stalled event on, keep-alives included (the idle session before the
    # message may have been kept alive: that is no stall).
    stalled = reader.raw[reader.raw.rindex(b"agent.session.in_progress") :]
    assert b"keep-alive" not in stalled
    assert _data(reader)[-1] == "agent.session.in_progress"
    assert emulator.stream_connections(session_id)[0].end == "stalled"


def test_a_corrupted_event_is_not_json_and_the_stream_goes_on(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    emulator.corrupt_stream(MESSAGE_ADDED)
    _session_id, reader = run(emulator, api)
    types = _data(reader)
    assert types[MESSAGE_ADDED] == "<corrupt>"  # the snapshot stands in for position 0
    assert types[-1] == "agent.session.idle"
    assert reader.frames[MESSAGE_ADDED].event == "agent.session.turn.item.added"


def test_duplicated_events_repeat_their_event_id(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    emulator.duplicate_stream(MESSAGE_ADDED)
    session_id, reader = run(emulator, api)
    ids = _ids(reader)
    log_ids = [e["event_id"] for e in emulator.events(session_id)[1:]]
    assert len(ids) == len(log_ids) + 1
    assert ids[MESSAGE_ADDED - 1] == ids[MESSAGE_ADDED] == log_ids[MESSAGE_ADDED - 1]

    emulator.duplicate_stream_events()
    _, every = run(emulator, api)
    assert every.read_until(lambda: _data(every).count("agent.session.idle") == 3)  # a snapshot
    ids = _ids(every)
    assert ids[::2] == ids[1::2]


def test_a_stream_fault_targets_one_session(harness: Any, run: Any) -> None:
    emulator, api = harness(["Hello there."])
    emulator.drop_stream(MESSAGE_ADDED, session_id="sess_other")
    _, reader = run(emulator, api)
    assert _data(reader)[-1] == "agent.session.idle"
    assert emulator.pending_faults() == 1


def test_failed_requests_answer_the_error_with_retry_after(harness: Any) -> None:
    emulator, api = harness()
    emulator.fail_requests("POST", r"/v1/agents", 429, retry_after=2)
    emulator.fail_requests("GET", r"/v1/agents", 503, error_type="overloaded")
    response = api.post("/agents", {"model": "m"})
    error = error_of(response, 429)
    assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
    assert response.headers["retry-after"] == "2"
    assert error_of(api.get("/agents"), 503)["type"] == "overloaded"
    assert api.post("/agents", {"model": "m"}).status_code == 200
    assert emulator.pending_faults() == 0


def test_a_failed_request_names_the_code_it_is_given(harness: Any) -> None:
    emulator, api = harness()
    emulator.fail_requests("GET", r"/v1/agents", 429, code="insufficient_quota")
    error = error_of(api.get("/agents"), 429)
    assert (error["type"], error["code"]) == ("requests", "insufficient_quota")
    with pytest.raises(ValueError, match="empty"):
        emulator.fail_requests("GET", r"/v1/agents", 429, code="")
    assert emulator.pending_faults() == 0


def test_a_reset_before_acting_changes_nothing(harness: Any) -> None:
    emulator, api = harness(["Hello."])
    session_id = api.new_session()
    emulator.reset_requests("POST", r"/v1/agents/sessions/[^/]+/events", after_acting=False)
    with pytest.raises(Exception, match="Connection"):
        api.send(session_id, message("Hi."), key="k")
    assert emulator.turns(session_id) == []
    accepted(api.send(session_id, message("Hi."), key="k"))
    assert emulator.wait_until(lambda: emulator.session(session_id)["status"] == "idle")
    assert len(emulator.turns(session_id)) == 1


def test_a_reset_after_acting_lands_and_its_retry_is_a_no_op(harness: Any) -> None:
    emulator, api = harness(["Hello."])
    session_id = api.new_session()
    emulator.reset_requests("POST", r"/v1/agents/sessions/[^/]+/events", after_acting=True)
    with pytest.raises(Exception, match="Connection"):
        api.send(session_id, message("Hi."), key="k")
    assert len(emulator.turns(session_id)) == 1
    accepted(api.send(session_id, message("Hi."), key="k"))
    assert emulator.wait_until(lambda: emulator.session(session_id)["status"] == "idle")
    assert len(emulator.turns(session_id)) == 1


def test_a_reset_stream_is_attached_then_cut(harness: Any) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    emulator.reset_requests("GET", r"/v1/agents/sessions/[^/]+/events", after_acting=True)
    with pytest.raises(Exception, match="Connection"):
        EventReader(emulator, session_id)
    [connection] = emulator.stream_connections(session_id)
    assert connection.end == "reset"
