"""The hostile answers issue 30 reported, each pinned: an empty ``200`` to Claude's session
create, an OpenAI session whose first frame has a ``type`` that is not a string, and a
60 MB id, which once took 631 MB of memory to be accepted."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from req_managed_agents import ManagedAgentsError, Tools, run_to_completion
from req_managed_agents.errors import MalformedResponseError
from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator, OpenAITurn, Turn, call
from tests.faults._matrix import MatrixTools

SESSIONS = r"/v1/sessions"


def _claude_run(emulator: ClaudeEmulator, tools: Tools) -> object:
    with emulator.provider(timeout=5, max_retries=1) as provider:
        return run_to_completion(
            provider,
            "Compute.",
            handler=tools,
            timeout=10,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )


def test_an_empty_answer_to_claudes_session_create_is_an_error_naming_it() -> None:
    with ClaudeEmulator([Turn(text="done")]) as emulator:
        emulator.answer_requests("POST", SESSIONS, b"", after_acting=False)
        with pytest.raises(MalformedResponseError) as caught:
            _claude_run(emulator, Tools())
        assert emulator.session_ids() == []
    assert "POST /v1/sessions" in str(caught.value)
    assert "empty" in str(caught.value)


def test_a_claude_session_made_under_an_unusable_answer_is_found_and_used() -> None:
    """The service made the session and answered what cannot be read: the session is looked
    up by the token its create carried and the run goes on with it - none is left behind."""
    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text="3")]
    with ClaudeEmulator(script) as emulator:
        emulator.answer_requests("POST", SESSIONS, b"")
        tools = MatrixTools()
        result = _claude_run(emulator, tools)
        assert emulator.session_ids() == [result.session_id]  # type: ignore[attr-defined]
    assert result.text == "3"  # type: ignore[attr-defined]
    assert list(tools.calls.values()) == [1]


def test_an_openai_first_frame_whose_type_is_not_a_string_resumes_the_session_it_made() -> None:
    """The frame naming the new session is unreadable: the session the create made (its turn
    under way) is looked up and caught up, not left behind while the caller gets a
    ``TypeError``."""
    script = [OpenAITurn(tool_calls=[call("add", a=1, b=2)]), OpenAITurn(text="3")]
    hostile = json.dumps({"type": ["agent.session.created"], "event_id": "evt_1"})
    with OpenAIAgentsEmulator(script) as emulator:
        emulator.corrupt_stream(0, data=hostile)
        tools = MatrixTools()
        with emulator.provider(timeout=5, max_retries=1) as provider:
            result = run_to_completion(
                provider, "Compute.", handler=tools, timeout=10, agent_id=emulator.add_agent()
            )
        assert emulator.pending_faults() == 0
        assert emulator.session_ids() == [result.session_id]
    assert result.text == "3"
    assert list(tools.calls.values()) == [1]


def test_a_60_mb_id_is_refused_before_it_is_copied_around() -> None:
    """Refused as the answer is read, before any other request uses it, in memory bounded
    by what parsing the body takes - the body, its text and the id, three copies - where it
    once took 631 MB (the id went on into URLs, thread names, telemetry and logs)."""
    body = json.dumps({"id": "sesn_" + "x" * 60_000_000, "type": "session"}).encode()
    with ClaudeEmulator() as emulator:
        emulator.answer_requests("POST", SESSIONS, body, after_acting=False)
        tracemalloc.start()
        try:
            with pytest.raises(ManagedAgentsError) as caught:
                _claude_run(emulator, Tools())
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert emulator.session_ids() == []
        # The create, then the lookup of a session it may have made: nothing else.
        assert {(r.method, r.path) for r in emulator.requests} == {
            ("POST", SESSIONS),
            ("GET", SESSIONS),
        }
    assert isinstance(caught.value, MalformedResponseError)
    assert "id must be a string of 1 to 4096 characters" in str(caught.value)
    assert len(str(caught.value)) < 1000  # the message quotes no more than a bounded excerpt
    ratio = peak / len(body)
    assert ratio < 3.5, f"peak {peak / 1e6:.0f} MB for a {len(body) / 1e6:.0f} MB body"
