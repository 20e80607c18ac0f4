"""Options of a new Claude session, from the drivers down to the wire, over loopback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ConfigurationError, run_to_completion
from req_managed_agents.provisioner import AgentSpec, MemoryStore, provision
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.sdk import without_create_token
from tests.support.tools import CountingTools


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(["done"]) as emulator:
        yield emulator


def created(emulator: ClaudeEmulator) -> dict[str, Any]:
    (request,) = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/sessions"]
    return dict(without_create_token(request.body))


def test_session_options_reach_the_session(emulator: ClaudeEmulator) -> None:
    agent_id, environment_id = emulator.add_agent(), emulator.add_environment()
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "hi",
            handler=CountingTools(),
            agent_id=agent_id,
            environment_id=environment_id,
            session_metadata={"ticket": "T-1"},
            title="Support ticket T-1",
            metadata={"tenant": "acme"},  # the driver's own tags, not the session's
            timeout=10,
        )
        session = provider.client.get_session(str(result.session_id))
    body = created(emulator)
    assert body == {
        "agent": agent_id,
        "environment_id": environment_id,
        "metadata": {"ticket": "T-1"},
        "title": "Support ticket T-1",
    }
    shown = without_create_token(session)
    assert (shown["title"], shown["metadata"]) == ("Support ticket T-1", {"ticket": "T-1"})


def test_agent_version_pins_the_agent(emulator: ClaudeEmulator) -> None:
    agent_id, environment_id = emulator.add_agent(), emulator.add_environment()
    with emulator.provider() as provider:
        run_to_completion(
            provider,
            "hi",
            handler=CountingTools(),
            agent_id=agent_id,
            agent_version=1,
            environment_id=environment_id,
            timeout=10,
        )
    assert created(emulator)["agent"] == {"type": "agent", "id": agent_id, "version": 1}


def test_an_agent_reference_goes_as_given(emulator: ClaudeEmulator) -> None:
    agent_id, environment_id = emulator.add_agent(), emulator.add_environment()
    reference = {"type": "agent", "id": agent_id, "version": 1}
    with emulator.provider() as provider:
        run_to_completion(
            provider, "hi", handler=CountingTools(), agent=reference, environment_id=environment_id
        )
    assert created(emulator)["agent"] == reference


def test_a_provisioned_handle_carries_and_pins_its_version(emulator: ClaudeEmulator) -> None:
    spec = AgentSpec(name="support", system_prompt="Be brief.", model="claude-sonnet-4-6")
    with emulator.provider() as provider:
        handle = provision(provider, spec, store=MemoryStore())
        assert handle.version == 1  # type: ignore[union-attr]
        run_to_completion(provider, "hi", handler=CountingTools(), agent=handle, timeout=10)
    assert created(emulator)["agent"] == {"type": "agent", "id": handle.agent_id, "version": 1}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("vault_ids", "vlt_1", "vault_ids"),
        ("resources", [{"type": "floppy"}], "resources[0]"),
        ("session_metadata", {"k": 1}, "metadata"),
        ("title", 7, "title"),
        ("agent_version", "latest", "version"),
    ],
)
def test_a_bad_session_option_is_refused_before_any_session_exists(
    emulator: ClaudeEmulator, option: str, value: Any, named: str
) -> None:
    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider() as provider, pytest.raises(ConfigurationError, match=re.escape(named)):
        run_to_completion(provider, "hi", handler=CountingTools(), **{option: value}, **ids)
    assert emulator.session_ids() == []


def test_bearer_auth_sends_an_authorization_header(emulator: ClaudeEmulator) -> None:
    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider(auth="bearer") as provider:
        result = run_to_completion(provider, "hi", handler=CountingTools(), timeout=10, **ids)
    assert result.text == "done"
    headers = emulator.requests[-1].headers
    assert headers["authorization"] == f"Bearer {emulator.api_key}"
    assert "x-api-key" not in headers


def test_initial_events_start_the_work_and_the_run_follows_it(emulator: ClaudeEmulator) -> None:
    ids = {
        "agent_id": emulator.add_agent(["first", "second"]),
        "environment_id": emulator.add_environment(),
    }
    opening = [{"type": "user.message", "content": [{"type": "text", "text": "hello"}]}]
    with emulator.provider() as provider:
        result = run_to_completion(
            provider, "and then", handler=CountingTools(), initial_events=opening, timeout=10, **ids
        )
    assert result.text == "second", "the prompt came after the initial events' turn"
    body = created(emulator)
    assert body["initial_events"] == opening
    messages = [e for e in emulator.events(str(result.session_id)) if e["type"] == "user.message"]
    assert [m["content"][0]["text"] for m in messages] == ["hello", "and then"]


def test_a_session_whose_create_answer_was_lost_is_found_not_created_twice(
    emulator: ClaudeEmulator,
) -> None:
    # The session is made, its initial event starts work, and the answer never arrives.
    emulator.reset_requests("POST", "/v1/sessions", after_acting=True)
    opening = [{"type": "user.message", "content": [{"type": "text", "text": "hello"}]}]
    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider() as provider:
        result = run_to_completion(
            provider, handler=CountingTools(), initial_events=opening, timeout=10, **ids
        )
    assert result.terminal == "end_turn"
    (session_id,) = emulator.session_ids()
    messages = [e for e in emulator.events(session_id) if e["type"] == "user.message"]
    assert len(messages) == 1


def test_a_subagents_tool_call_is_answered_on_its_thread(emulator: ClaudeEmulator) -> None:
    script = [
        Turn(thread="researcher", tool_calls=[call("add", a=2, b=3)]),
        Turn(text=lambda results: f"the researcher found {results[0]}"),
    ]
    tools = CountingTools()
    ids = {"agent_id": emulator.add_agent(script), "environment_id": emulator.add_environment()}
    with emulator.provider() as provider:
        result = run_to_completion(provider, "research", handler=tools, timeout=10, **ids)
    (use,) = result.tool_uses
    assert use.session_thread_id is not None
    sent = [
        event
        for request in emulator.requests
        if request.method == "POST" and request.path.endswith("/events")
        for event in request.body["events"]
        if event["type"] == "user.custom_tool_result"
    ]
    assert [sorted(event) for event in sent] == [
        ["content", "custom_tool_use_id", "is_error", "type"]
    ], "only the fields the SDK's params declare: the tool use id alone routes the result"
    posted = [
        e for e in emulator.events(str(result.session_id)) if e["type"] == "user.custom_tool_result"
    ]
    assert [p.get("session_thread_id") for p in posted] == [use.session_thread_id]
    assert result.text == "the researcher found 5"
    assert sum(tools.calls.values()) == 1
