"""The Claude emulator driven by the official ``anthropic`` SDK, which must accept every answer.

Every call goes through :class:`tests.support.sdk.StrictAnthropic`: an answer, a page or a
streamed event that does not fit the SDK's models exactly fails the test. The last tests
compare the requests the SDK sends with those of the project's own ``ClaudeClient``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

anthropic = pytest.importorskip("anthropic")

import requests  # noqa: E402
from anthropic.types.shared import ErrorResponse  # noqa: E402

from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call  # noqa: E402
from tests.support.api import Api, error_of, ok, user_message  # noqa: E402
from tests.support.sdk import (  # noqa: E402
    ModelMismatch,
    StrictAnthropic,
    check_strictly,
    strict_client,
    wire_shape,
)

TOOLSET = {"type": "agent_toolset_20260401"}
WEATHER = {
    "type": "custom",
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


@pytest.fixture
def sdk() -> Iterator[Callable[..., tuple[ClaudeEmulator, StrictAnthropic]]]:
    """Start emulators and strict SDK clients aimed at them; close them all afterwards."""
    started: list[tuple[ClaudeEmulator, StrictAnthropic]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[ClaudeEmulator, StrictAnthropic]:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = ClaudeEmulator(*args, **kwargs)
        started.append((emulator, strict_client(emulator)))
        return started[-1]

    yield start
    for emulator, client in started:
        client.close()
        emulator.close()


def wait_for_idle(emulator: ClaudeEmulator, session_id: str, count: int = 1) -> None:
    def idled() -> bool:
        events = emulator.events(session_id)
        return sum(e["type"] == "session.status_idle" for e in events) >= count

    assert emulator.wait_until(idled), [e["type"] for e in emulator.events(session_id)]


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


# --- agents ---------------------------------------------------------------------------------


def test_agents_round_trip_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    helper = client.beta.agents.create(name="helper", model="claude-haiku-4-5")
    agent = client.beta.agents.create(
        name="lead",
        model={"id": "claude-opus-5", "effort": "high"},
        system="Be brief.",
        description="The lead.",
        tools=[
            {
                "type": "agent_toolset_20260401",
                "default_config": {"permission_policy": {"type": "always_ask"}},
                "configs": [
                    {"name": "bash", "enabled": False},
                    {"name": "web_fetch", "url_sources": {"user_input": "all"}},
                ],
            },
            {"type": "mcp_toolset", "mcp_server_name": "docs"},
            WEATHER,
        ],
        mcp_servers=[{"type": "url", "name": "docs", "url": "https://mcp.example.com/sse"}],
        skills=[{"type": "anthropic", "skill_id": "xlsx"}],
        multiagent={"type": "coordinator", "agents": [helper.id, {"type": "self"}]},
        metadata={"team": "qa"},
        execution_identity={"type": "aws_role", "role_arn": "arn:aws:iam::123456789012:role/r"},
    )
    assert agent.version == 1
    assert agent.model.effort is not None
    assert agent.model.effort.type == "high"
    toolset, mcp, custom = agent.tools
    assert toolset.type == "agent_toolset_20260401"
    assert toolset.default_config.permission_policy.type == "always_ask"
    configs = {c.name: c for c in toolset.configs}
    assert len(configs) == 8
    assert configs["bash"].enabled is False
    assert configs["read"].permission_policy.type == "always_ask"
    assert mcp.type == "mcp_toolset"
    assert mcp.default_config.permission_policy.type == "always_ask"
    assert custom.type == "custom"
    assert custom.input_schema.required == ["city"]
    assert agent.skills[0].version == "latest"
    assert agent.multiagent is not None
    assert agent.multiagent.type == "coordinator"
    assert [(a.id, a.version) for a in agent.multiagent.agents] == [  # type: ignore[union-attr]
        (helper.id, 1),
        (agent.id, 1),
    ]

    assert client.beta.agents.retrieve(agent.id) == agent
    updated = client.beta.agents.update(agent.id, version=1, system=None, metadata={"team": None})
    assert (updated.version, updated.system, updated.metadata) == (2, None, {})
    assert client.beta.agents.update(agent.id, description="The lead.").version == 2  # no-op
    with pytest.raises(anthropic.ConflictError):
        client.beta.agents.update(agent.id, version=1, name="stale")
    assert client.beta.agents.retrieve(agent.id, version=1).system == "Be brief."
    with pytest.raises(anthropic.NotFoundError):
        client.beta.agents.retrieve(agent.id, version=7)
    versions = list(client.beta.agents.versions.list(agent.id, limit=1))
    assert [v.version for v in versions] == [2, 1]

    listed = list(client.beta.agents.list(limit=1))
    assert [a.id for a in listed] == [helper.id, agent.id]
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    assert list(client.beta.agents.list(created_at_gte=later)) == []
    archived = client.beta.agents.archive(helper.id)
    assert archived.archived_at is not None
    assert [a.id for a in client.beta.agents.list()] == [agent.id]
    assert len(list(client.beta.agents.list(include_archived=True))) == 2
    with pytest.raises(anthropic.BadRequestError):
        client.beta.agents.update(helper.id, name="again")


def test_agent_configurations_the_service_refuses(sdk: Any) -> None:
    _, client = sdk()
    refused: list[dict[str, Any]] = [
        {"tools": [{**WEATHER, "name": "bash"}]},
        {"tools": [{**WEATHER, "name": "mcp__x"}]},
        {"tools": [{"type": "mcp_toolset", "mcp_server_name": "nowhere"}]},
        {"mcp_servers": [{"type": "url", "name": "unused", "url": "https://x.example"}]},
        {"tools": [{**TOOLSET, "configs": [{"name": "teleport"}]}]},
        {"model": {"id": "claude-opus-5", "effort": "extreme"}},
        {"multiagent": {"type": "coordinator", "agents": ["agent_missing"]}},
        {"metadata": {f"k{i}": "v" for i in range(17)}},
        {"execution_identity": {"type": "aws_role", "role_arn": "not-an-arn"}},
    ]
    for fields in refused:
        with pytest.raises((anthropic.BadRequestError, anthropic.NotFoundError)):
            client.beta.agents.create(**{"name": "bad", "model": "claude-sonnet-4-6", **fields})


# --- environments ---------------------------------------------------------------------------


def test_environments_round_trip_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    cloud = client.beta.environments.create(
        name="cloud",
        config={
            "type": "cloud",
            "networking": {
                "type": "limited",
                "allowed_hosts": ["api.example.com"],
                "allow_package_managers": True,
            },
            "packages": {"pip": ["pandas==2.2.0"]},
        },
        metadata={"k": "v"},
    )
    assert cloud.config.type == "cloud"
    assert cloud.config.packages.pip == ["pandas==2.2.0"]  # type: ignore[union-attr]
    assert cloud.config.packages.npm == []  # type: ignore[union-attr]
    assert cloud.config.networking.allow_mcp_servers is False  # type: ignore[union-attr]
    plain = client.beta.environments.create(name="plain")
    assert plain.config.networking.type == "unrestricted"  # type: ignore[union-attr]
    hosted = client.beta.environments.create(name="hosted", config={"type": "self_hosted"})
    assert hosted.config.type == "self_hosted"

    assert client.beta.environments.retrieve(cloud.id) == cloud
    updated = client.beta.environments.update(
        cloud.id, description="d", metadata={"k": None}, config={"type": "cloud"}
    )
    assert (updated.description, updated.metadata) == ("d", {})
    assert updated.config.networking.type == "unrestricted"  # type: ignore[union-attr]
    assert [e.name for e in client.beta.environments.list(limit=2)] == ["cloud", "plain", "hosted"]
    assert client.beta.environments.archive(plain.id).archived_at is not None
    assert len(list(client.beta.environments.list())) == 2
    assert len(list(client.beta.environments.list(include_archived=True))) == 3
    deleted = client.beta.environments.delete(hosted.id)
    assert (deleted.id, deleted.type) == (hosted.id, "environment_deleted")
    with pytest.raises(anthropic.NotFoundError):
        client.beta.environments.retrieve(hosted.id)
    with pytest.raises(anthropic.BadRequestError):  # packages need the package managers
        client.beta.environments.create(
            name="locked",
            config={
                "type": "cloud",
                "networking": {"type": "limited"},
                "packages": {"apt": ["graphviz"]},
            },
        )


# --- sessions -------------------------------------------------------------------------------


def test_sessions_take_every_creation_option(sdk: Any) -> None:
    emulator, client = sdk(["Hello.", "Again."])
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6", tools=[WEATHER])
    client.beta.agents.update(agent.id, system="v2")
    environment = client.beta.environments.create(name="e")
    vault = client.beta.vaults.create(display_name="secrets")
    store = client.beta.memory_stores.create(name="User Preferences", description="prefs")
    upload = client.beta.files.upload(file=("data.csv", b"a,b\n1,2\n", "text/csv"))
    session = client.beta.sessions.create(
        agent={"type": "agent", "id": agent.id, "version": 1},
        environment_id=environment.id,
        title="Quarterly numbers",
        metadata={"ticket": "T-1"},
        vault_ids=[vault.id],
        budget={"type": "limit", "max_list_cost": {"amount": "2500", "currency": "USD"}},
        resources=[
            {"type": "file", "file_id": upload.id, "mount_path": "/data.csv"},
            {
                "type": "github_repository",
                "url": "https://github.com/octo/widgets",
                "authorization_token": "ghp_secret",
                "checkout": {"type": "branch", "name": "main"},
            },
            {"type": "memory_store", "memory_store_id": store.id, "access": "read_only"},
        ],
        initial_events=[{"type": "user.message", "content": [text("Hi")]}],
    )
    assert (session.agent.version, session.agent.system) == (1, None)
    assert session.agent.execution_identity.type == "service_account"
    assert (session.title, session.metadata, session.vault_ids) == (
        "Quarterly numbers",
        {"ticket": "T-1"},
        [vault.id],
    )
    assert session.budget is not None
    assert session.budget.max_list_cost.amount == "2500"
    file, repository, memory = session.resources
    assert file.type == "file"
    assert file.mount_path == "/mnt/session/uploads/data.csv"
    assert repository.type == "github_repository"
    assert repository.mount_path == "/workspace/widgets"
    assert "ghp_secret" not in repository.model_dump_json()
    assert memory.type == "memory_store"
    assert memory.mount_path == "/mnt/memory/user-preferences"
    wait_for_idle(emulator, session.id)
    events = list(client.beta.sessions.events.list(session.id))
    assert events[0].type == "user.message"  # initial events are in the history
    assert client.beta.sessions.retrieve(session.id).stats.active_seconds is not None

    overridden = client.beta.sessions.create(
        agent={
            "type": "agent_with_overrides",
            "id": agent.id,
            "model": {"id": "claude-opus-5", "effort": "max"},
            "system": "Override.",
            "tools": [TOOLSET],
        },
        environment_id=environment.id,
    )
    assert (overridden.agent.model.id, overridden.agent.model.effort) == ("claude-opus-5", None)
    assert overridden.agent.system == "Override."
    assert [t.type for t in overridden.agent.tools] == ["agent_toolset_20260401"]
    assert client.beta.agents.retrieve(agent.id).system == "v2"  # the agent is unchanged

    for bad in (
        {"agent": {"type": "agent", "id": agent.id, "version": 9}},
        {"agent": "agent_missing"},
        {"vault_ids": ["vlt_missing"]},
    ):
        with pytest.raises(anthropic.NotFoundError):
            client.beta.sessions.create(
                **{"agent": agent.id, "environment_id": environment.id, **bad}
            )
    too_many = [{"type": "user.message", "content": [text("x")]}] * 51
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.create(
            agent=agent.id, environment_id=environment.id, initial_events=too_many
        )


def test_sessions_update_list_archive_and_delete(sdk: Any) -> None:
    _, client = sdk()
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    other = client.beta.agents.create(name="b", model="claude-sonnet-4-6")
    environment = client.beta.environments.create(name="e")
    budget = {"type": "limit", "max_list_cost": {"amount": "100", "currency": "USD"}}
    first = client.beta.sessions.create(
        agent=agent.id, environment_id=environment.id, budget=budget
    )
    second = client.beta.sessions.create(agent=other.id, environment_id=environment.id)
    client.beta.agents.update(agent.id, system="v2")
    third = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)

    updated = client.beta.sessions.update(
        first.id,
        title="Renamed",
        metadata={"a": "1"},
        agent={"tools": [WEATHER]},
        budget={"type": "limit", "max_list_cost": {"amount": "500", "currency": "USD"}},
    )
    assert updated.title == "Renamed"
    assert updated.metadata == {"a": "1"}
    assert [t.type for t in updated.agent.tools] == ["custom"]
    change = list(client.beta.sessions.events.list(first.id, types=["session.updated"]))
    assert len(change) == 1
    assert change[0].type == "session.updated"
    assert change[0].title == "Renamed"  # type: ignore[union-attr]
    assert client.beta.sessions.update(first.id, budget=None).budget is None
    with pytest.raises(anthropic.BadRequestError):  # a removed budget cannot come back
        client.beta.sessions.update(first.id, budget=budget)
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.update(second.id, budget=budget)
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.update(second.id, vault_ids=["vlt_1"])

    def ids(**query: Any) -> list[str]:
        return [s.id for s in client.beta.sessions.list(**query)]

    assert ids() == [third.id, second.id, first.id]
    assert ids(order="asc", limit=1) == [first.id, second.id, third.id]
    assert ids(agent_id=agent.id) == [third.id, first.id]
    assert ids(agent_id=agent.id, agent_version=2) == [third.id]
    assert ids(statuses=["running"]) == []
    assert ids(statuses=["idle", "terminated"]) == [third.id, second.id, first.id]
    assert ids(created_at_gt=third.created_at) == []
    assert ids(created_at_lte=first.created_at) == [first.id]
    assert ids(created_at_gte=first.created_at, created_at_lt=third.created_at) == [
        second.id,
        first.id,
    ]
    page = client.beta.sessions.list(limit=2)
    assert page.prev_page is None
    assert page.next_page is not None
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.list(agent_version=1)  # needs agent_id

    archived = client.beta.sessions.archive(second.id)
    assert (archived.status, archived.archived_at is not None) == ("terminated", True)
    assert ids() == [third.id, first.id]
    assert ids(include_archived=True) == [third.id, second.id, first.id]
    deleted = client.beta.sessions.delete(third.id)
    assert (deleted.id, deleted.type) == (third.id, "session_deleted")
    with pytest.raises(anthropic.NotFoundError):
        client.beta.sessions.retrieve(third.id)


def test_malformed_query_values_are_refused(sdk: Any) -> None:
    emulator, _ = sdk()
    api = Api(emulator)
    session_id = api.new_session()
    refused = [
        ("/v1/sessions", {"order": "sideways"}),
        ("/v1/sessions", {"statuses[]": "asleep"}),
        ("/v1/sessions", {"created_at[gt]": "yesterday"}),
        ("/v1/sessions", {"include_archived": "perhaps"}),
        ("/v1/sessions", {"agent_id": "agent_1", "agent_version": "one"}),
        (f"/v1/sessions/{session_id}/events", {"types[]": "agent.nap"}),
        (f"/v1/sessions/{session_id}/events", {"order": "newest"}),
        (f"/v1/sessions/{session_id}/events", {"limit": "0"}),
        ("/v1/agents", {"created_at[gt]": "2026-01-01T00:00:00Z"}),  # agents take gte/lte
        ("/v1/agents/agent_x", {"version": "latest"}),
    ]
    for path, query in refused:
        response = api.get(path, **query)
        error_of(response, 400)
        body = check_strictly(ErrorResponse, response.json(), f"{path} {query}")
        assert body.error.type == "invalid_request_error", (path, query)
    api.http.close()


# --- events ---------------------------------------------------------------------------------


def test_every_event_kind_and_the_history_filters(sdk: Any) -> None:
    ask = ToolCall("bash", {"command": "ls"}, result="a.txt", permission="ask")
    script = [
        Turn("Checking.", tool_calls=[call("get_weather", city="Paris")], thinking=True),
        Turn(lambda results: f"It is {results[0]}.", server_tool_calls=[ask]),
        Turn("Done."),
        Turn("Graded.", evaluation="satisfied"),
        Turn("Slow.", delay=0.5),
        Turn("Queued."),
    ]
    emulator, client = sdk(script)
    agent = client.beta.agents.create(name="a", model="claude-opus-5", tools=[WEATHER, TOOLSET])
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)

    with client.beta.sessions.events.stream(
        session.id, event_deltas=["agent.message", "agent.thinking"]
    ) as stream:
        sent = client.beta.sessions.events.send(
            session.id,
            events=[
                {"type": "user.message", "content": [text("Weather?")]},
                {"type": "system.message", "content": [text("Answer in one line.")]},
            ],
        )
        assert [e.type for e in sent.data or []] == ["user.message", "system.message"]
        seen: list[Any] = []
        for event in stream:
            seen.append(event)
            if event.type == "session.status_idle":
                break
    kinds = [e.type for e in seen]
    assert "event_start" in kinds
    assert "event_delta" in kinds
    use = next(e for e in seen if e.type == "agent.custom_tool_use")
    answer = client.beta.sessions.events.send(
        session.id,
        events=[
            {
                "type": "user.custom_tool_result",
                "custom_tool_use_id": use.id,
                "content": [text("sunny")],
            }
        ],
    )
    assert answer.data is not None
    assert answer.data[0].processed_at is not None
    wait_for_idle(emulator, session.id, 2)
    bash = next(e for e in emulator.events(session.id) if e["type"] == "agent.tool_use")
    client.beta.sessions.events.send(
        session.id,
        events=[
            {
                "type": "user.tool_confirmation",
                "tool_use_id": bash["id"],
                "result": "deny",
                "deny_message": "not now",
            }
        ],
    )
    wait_for_idle(emulator, session.id, 3)
    client.beta.sessions.events.send(
        session.id,
        events=[
            {
                "type": "user.define_outcome",
                "description": "A summary",
                "rubric": {"type": "text", "content": "One paragraph."},
                "max_iterations": 2,
            }
        ],
    )
    wait_for_idle(emulator, session.id, 4)
    outcome = client.beta.sessions.retrieve(session.id).outcome_evaluations[0]
    assert outcome.result == "satisfied"

    # A message sent while a turn plays is queued: unprocessed until its turn begins.
    client.beta.sessions.events.send(session.id, events=[user_message("slow")])
    queued = client.beta.sessions.events.send(session.id, events=[user_message("next")])
    assert queued.data is not None
    assert queued.data[0].processed_at is None
    listed = {e.id: e for e in client.beta.sessions.events.list(session.id, types=["user.message"])}
    assert listed[queued.data[0].id].processed_at is None
    client.beta.sessions.events.send(session.id, events=[{"type": "user.interrupt"}])
    wait_for_idle(emulator, session.id, 6)
    listed = {e.id: e for e in client.beta.sessions.events.list(session.id, types=["user.message"])}
    assert listed[queued.data[0].id].processed_at is not None

    history = list(client.beta.sessions.events.list(session.id, limit=7))
    assert [e.id for e in history] == [e["id"] for e in emulator.events(session.id)]
    newest_first = list(client.beta.sessions.events.list(session.id, order="desc", limit=50))
    assert [e.id for e in newest_first] == [e.id for e in reversed(history)]
    spans = list(
        client.beta.sessions.events.list(
            session.id, types=["span.model_request_start", "span.model_request_end"]
        )
    )
    assert {e.type for e in spans} == {"span.model_request_start", "span.model_request_end"}
    middle = history[len(history) // 2].processed_at
    assert all(
        e.processed_at > middle
        for e in client.beta.sessions.events.list(session.id, created_at_gt=middle)  # type: ignore[operator]
    )
    assert all(
        e.processed_at <= middle
        for e in client.beta.sessions.events.list(session.id, created_at_lte=middle)  # type: ignore[operator]
    )


def test_events_the_service_refuses(sdk: Any) -> None:
    emulator, client = sdk([Turn(server_tool_calls=[ToolCall("bash", {"command": "ls"})])])
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)
    refused: list[list[dict[str, Any]]] = [
        # A system message needs a model that takes one, and must follow its message.
        [user_message("hi"), {"type": "system.message", "content": [text("x")]}],
        [{"type": "system.message", "content": [text("x")]}],
        # Tool results from the client are for self-hosted environments only.
        [{"type": "user.tool_result", "tool_use_id": "sevt_1", "content": [text("x")]}],
        [{"type": "user.message", "content": [{"type": "redacted"}]}],
        [{"type": "user.interrupt", "session_thread_id": "sthr_missing"}],
    ]
    for events in refused:
        with pytest.raises(anthropic.BadRequestError):
            client.beta.sessions.events.send(session.id, events=events)  # type: ignore[arg-type]
    assert emulator.events(session.id) == []


def test_a_self_hosted_environment_waits_for_tool_results(sdk: Any) -> None:
    read = ToolCall("read", {"file_path": "/etc/hostname"})
    emulator, client = sdk([Turn(server_tool_calls=[read]), Turn(lambda r: f"Host: {r[0]}")])
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6", tools=[TOOLSET])
    environment = client.beta.environments.create(name="e", config={"type": "self_hosted"})
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)
    client.beta.sessions.events.send(session.id, events=[user_message("host?")])
    wait_for_idle(emulator, session.id)
    use = next(e for e in emulator.events(session.id) if e["type"] == "agent.tool_use")
    assert emulator.events(session.id)[-1]["stop_reason"]["event_ids"] == [use["id"]]
    echo = client.beta.sessions.events.send(
        session.id,
        events=[{"type": "user.tool_result", "tool_use_id": use["id"], "content": [text("box")]}],
    )
    assert echo.data is not None
    assert echo.data[0].type == "user.tool_result"
    wait_for_idle(emulator, session.id, 2)
    message = [e for e in emulator.events(session.id) if e["type"] == "agent.message"][-1]
    assert message["content"][0]["text"] == "Host: box"


def test_endings_and_multiagent_snapshots_validate(sdk: Any) -> None:
    emulator, client = sdk([Turn(thread="helper", text="Hi."), Turn(delay=5), Turn(end="error")])
    helper = client.beta.agents.create(name="helper", model="claude-sonnet-4-6")
    lead = client.beta.agents.create(
        name="lead",
        model="claude-sonnet-4-6",
        multiagent={
            "type": "multiagent_20261001",
            "advisor": {"type": "enabled", "model": "claude-opus-5"},
            "subagents": {"type": "enabled", "predefined_agents": [helper.id, {"type": "self"}]},
        },
    )
    assert lead.multiagent is not None
    assert lead.multiagent.type == "multiagent_20261001"
    merged = client.beta.agents.update(
        lead.id, multiagent={"type": "multiagent_20261001", "workflows": {"type": "disabled"}}
    )
    assert merged.multiagent.advisor.type == "enabled"  # type: ignore[union-attr]
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=lead.id, environment_id=environment.id)
    assert session.agent.multiagent is not None
    client.beta.sessions.events.send(session.id, events=[user_message("go")])
    wait_for_idle(emulator, session.id)
    client.beta.sessions.events.send(session.id, events=[user_message("slow")])
    emulator.fail_turn(session.id)
    wait_for_idle(emulator, session.id, 2)
    client.beta.sessions.events.send(session.id, events=[user_message("again")])
    assert emulator.wait_until(
        lambda: emulator.events(session.id)[-1]["type"] == ("session.status_terminated")
    )
    kinds = [e.type for e in client.beta.sessions.events.list(session.id)]
    assert "session.error" in kinds
    assert "session.thread_status_terminated" in kinds
    threads = list(client.beta.sessions.threads.list(session.id))
    assert [t.status for t in threads] == ["terminated", "terminated"]
    terminated = client.beta.sessions.retrieve(session.id)
    assert terminated.status == "terminated"
    emulator.terminate_session(session.id)


# --- threads --------------------------------------------------------------------------------


def test_a_subagent_thread_cross_posts_its_tool_calls(sdk: Any) -> None:
    script = [
        Turn("Delegating."),
        Turn(thread="researcher", text="Looking.", tool_calls=[call("get_weather", city="Oslo")]),
        Turn(thread="researcher", text=lambda results: f"Found: {results[0]}"),
    ]
    emulator, client = sdk(script)
    researcher = client.beta.agents.create(
        name="researcher", model="claude-sonnet-4-6", tools=[WEATHER]
    )
    lead = client.beta.agents.create(
        name="lead",
        model="claude-sonnet-4-6",
        multiagent={"type": "coordinator", "agents": [researcher.id]},
    )
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=lead.id, environment_id=environment.id)
    (primary,) = client.beta.sessions.threads.list(session.id)
    assert primary.parent_thread_id is None
    client.beta.sessions.events.send(session.id, events=[user_message("first")])
    wait_for_idle(emulator, session.id)

    with client.beta.sessions.events.stream(session.id) as stream:
        client.beta.sessions.events.send(session.id, events=[user_message("Oslo weather?")])
        seen = []
        for event in stream:
            seen.append(event)
            if event.type == "session.status_idle":
                break
    kinds = [e.type for e in seen]
    assert kinds.index("session.thread_created") < kinds.index("agent.thread_message_sent")
    use = next(e for e in seen if e.type == "agent.custom_tool_use")
    thread_id = use.session_thread_id
    assert thread_id is not None
    assert thread_id.startswith("sthr_")
    assert "agent.message" not in kinds  # the thread's own events stay on its stream

    thread = client.beta.sessions.threads.retrieve(thread_id, session_id=session.id)
    assert thread.agent.type == "agent"
    assert thread.agent.name == "researcher"
    assert thread.parent_thread_id == primary.id
    assert thread.status == "idle"
    assert [t.id for t in client.beta.sessions.threads.list(session.id, statuses=["idle"])] == [
        primary.id,
        thread_id,
    ]
    own = [
        e.type for e in client.beta.sessions.threads.events.list(thread_id, session_id=session.id)
    ]
    assert own[:3] == [
        "session.thread_status_running",
        "agent.thread_message_received",
        "span.model_request_start",
    ]
    assert "agent.custom_tool_use" in own

    with client.beta.sessions.threads.events.stream(
        thread_id, session_id=session.id, event_deltas=["agent.message"]
    ) as thread_stream:
        echo = client.beta.sessions.events.send(
            session.id,
            events=[
                {
                    "type": "user.custom_tool_result",
                    "custom_tool_use_id": use.id,
                    "content": [text("rain")],
                }
            ],
        )
        assert echo.data is not None
        assert echo.data[0].session_thread_id == thread_id
        thread_events = []
        for event in thread_stream:
            thread_events.append(event)
            if event.type == "session.thread_status_idle":
                break
    assert "event_delta" in [e.type for e in thread_events]
    wait_for_idle(emulator, session.id, 3)
    report = [
        e for e in emulator.events(session.id) if e["type"] == "agent.thread_message_received"
    ]
    assert report[-1]["content"] == [text("Found: rain")]
    assert report[-1]["from_session_thread_id"] == thread_id

    archived = client.beta.sessions.threads.archive(thread_id, session_id=session.id)
    assert archived.archived_at is not None
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.threads.archive(primary.id, session_id=session.id)


def test_a_result_naming_a_thread_is_refused_and_its_tool_use_routes_it(sdk: Any) -> None:
    """The params of a result declare no ``session_thread_id``: even the right thread is an
    undeclared field. The service routes the result by its tool use, and says where."""
    emulator, client = sdk([Turn(thread="helper", tool_calls=[call("get_weather", city="X")])])
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)
    client.beta.sessions.events.send(session.id, events=[user_message("go")])
    wait_for_idle(emulator, session.id)
    use = next(e for e in emulator.events(session.id) if e["type"] == "agent.custom_tool_use")
    assert use["session_thread_id"] != emulator.threads(session.id)[0]["id"]
    result = {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": use["id"],
        "session_thread_id": use["session_thread_id"],
    }
    with pytest.raises(anthropic.BadRequestError, match="session_thread_id"):
        client.beta.sessions.events.send(session.id, events=[result])  # type: ignore[list-item]
    del result["session_thread_id"]
    echo = client.beta.sessions.events.send(session.id, events=[result])  # type: ignore
    assert echo.data is not None
    assert echo.data[0].session_thread_id == use["session_thread_id"]


def test_an_interrupt_naming_a_thread_stops_only_that_thread(sdk: Any) -> None:
    emulator, client = sdk([Turn(thread="slow", delay=5), Turn("Next.")])
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(agent=agent.id, environment_id=environment.id)
    primary = emulator.threads(session.id)[0]["id"]
    client.beta.sessions.events.send(session.id, events=[user_message("go")])
    busy = {"type": "user.interrupt", "session_thread_id": primary}
    client.beta.sessions.events.send(session.id, events=[busy])  # the turn is not on it
    assert client.beta.sessions.retrieve(session.id).status == "running"
    client.beta.sessions.events.send(session.id, events=[{"type": "user.interrupt"}])
    wait_for_idle(emulator, session.id)
    assert emulator.events(session.id)[-1]["stop_reason"] == {"type": "end_turn"}


# --- files and session resources ------------------------------------------------------------


def test_files_and_session_resources_through_the_sdk(sdk: Any) -> None:
    emulator, client = sdk(
        [Turn("Wrote it.", outputs={"report.csv": b"x,y\n"})], downloadable_uploads=True
    )
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    environment = client.beta.environments.create(name="e")
    session = client.beta.sessions.create(
        agent=agent.id,
        environment_id=environment.id,
        resources=[
            {
                "type": "github_repository",
                "url": "https://github.com/octo/app",
                "authorization_token": "ghp_1",
            }
        ],
    )
    upload = client.files.upload(file=("notes.txt", b"hello", "text/plain"))
    beta_upload = client.beta.files.upload(file=("more.txt", b"more", "text/plain"))
    assert client.files.retrieve_metadata(upload.id).size_bytes == 5
    assert client.beta.files.download(beta_upload.id).read() == b"more"
    assert [f.id for f in client.beta.files.list(ids=[upload.id])] == [upload.id]

    added = client.beta.sessions.resources.add(session.id, type="file", file_id=upload.id)
    assert added.mount_path == f"/mnt/session/uploads/{upload.id}"
    listed = list(client.beta.sessions.resources.list(session.id))
    assert [r.type for r in listed] == ["github_repository", "file"]
    assert client.beta.sessions.resources.retrieve(added.id, session_id=session.id) == added
    rotated = client.beta.sessions.resources.update(
        listed[0].id, session_id=session.id, authorization_token="ghp_2"
    )
    assert rotated.type == "github_repository"
    with pytest.raises(anthropic.BadRequestError):
        client.beta.sessions.resources.update(
            added.id, session_id=session.id, authorization_token="x"
        )
    removed = client.beta.sessions.resources.delete(added.id, session_id=session.id)
    assert removed.type == "session_resource_deleted"

    client.beta.sessions.events.send(session.id, events=[user_message("write")])
    wait_for_idle(emulator, session.id)
    # Listing a session's files needs the managed-agents beta, which beta.files leaves out.
    with pytest.raises(anthropic.BadRequestError):
        client.beta.files.list(scope_id=session.id)
    (output,) = client.beta.files.list(scope_id=session.id, betas=["managed-agents-2026-04-01"])
    assert output.scope is not None
    assert output.scope.id == session.id
    assert client.files.delete(upload.id).id == upload.id
    assert client.beta.files.delete(output.id).type == "file_deleted"


# --- memory stores and vaults ---------------------------------------------------------------


def test_memory_stores_and_memories_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    store = client.beta.memory_stores.create(name="notes", metadata={"a": "1"})
    assert (store.description, store.metadata) == ("", {"a": "1"})
    memories = client.beta.memory_stores.memories
    todo = memories.create(store.id, path="/notes/todo.md", content="buy milk")
    assert todo.content is None
    assert todo.content_size_bytes == 8
    memories.create(store.id, path="/notes/deep/idea.md", content="")
    memories.create(store.id, path="/top.md", content="top")
    with pytest.raises(anthropic.ConflictError):
        memories.create(store.id, path="/top.md", content="again")
    assert memories.retrieve(todo.id, memory_store_id=store.id).content == "buy milk"
    renamed = memories.update(
        todo.id,
        memory_store_id=store.id,
        path="/notes/done.md",
        precondition={"type": "content_sha256", "content_sha256": todo.content_sha256},
        view="full",
    )
    assert (renamed.path, renamed.content) == ("/notes/done.md", "buy milk")
    assert renamed.memory_version_id != todo.memory_version_id
    with pytest.raises(anthropic.ConflictError):
        memories.update(
            todo.id,
            memory_store_id=store.id,
            content="x",
            precondition={"type": "content_sha256", "content_sha256": "0" * 64},
        )
    listed = list(memories.list(store.id, path_prefix="/notes/", depth=1))
    assert [(m.type, m.path) for m in listed] == [
        ("memory_prefix", "/notes/deep/"),
        ("memory", "/notes/done.md"),
    ]
    assert len(list(memories.list(store.id, view="full", limit=1))) == 3
    assert memories.delete(todo.id, memory_store_id=store.id).type == "memory_deleted"

    updated = client.beta.memory_stores.update(store.id, description="d", metadata={"a": None})
    assert (updated.description, updated.metadata) == ("d", {})
    assert [s.id for s in client.beta.memory_stores.list()] == [store.id]
    client.beta.memory_stores.archive(store.id)
    assert list(client.beta.memory_stores.list()) == []
    with pytest.raises(anthropic.BadRequestError):
        memories.create(store.id, path="/late.md", content="x")
    assert client.beta.memory_stores.delete(store.id).type == "memory_store_deleted"


def test_vaults_and_credentials_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    vault = client.beta.vaults.create(display_name="Team", metadata={"k": "v"})
    credentials = client.beta.vaults.credentials
    oauth = credentials.create(
        vault.id,
        display_name="GitHub MCP",
        auth={
            "type": "mcp_oauth",
            "mcp_server_url": "https://mcp.example.com",
            "access_token": "secret-access",
            "refresh": {
                "client_id": "c",
                "refresh_token": "secret-refresh",
                "token_endpoint": "https://auth.example.com/token",
                "token_endpoint_auth": {"type": "client_secret_post", "client_secret": "s"},
            },
        },
    )
    assert "secret-" not in oauth.model_dump_json()
    bearer = credentials.create(
        vault.id, auth={"type": "static_bearer", "mcp_server_url": "https://x", "token": "t"}
    )
    env_var = credentials.create(
        vault.id,
        auth={
            "type": "environment_variable",
            "secret_name": "API_KEY",
            "secret_value": "shh",
            "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]},
        },
    )
    assert env_var.auth.type == "environment_variable"
    refreshed = credentials.update(
        oauth.id,
        vault_id=vault.id,
        auth={"type": "mcp_oauth", "access_token": "new", "refresh": {"refresh_token": "r2"}},
    )
    assert refreshed.auth.type == "mcp_oauth"
    assert refreshed.auth.refresh is not None
    with pytest.raises(anthropic.BadRequestError):
        credentials.update(bearer.id, vault_id=vault.id, auth={"type": "mcp_oauth"})
    assert credentials.retrieve(bearer.id, vault_id=vault.id) == bearer
    assert len(list(credentials.list(vault.id, limit=1))) == 3
    assert credentials.archive(bearer.id, vault_id=vault.id).archived_at is not None
    assert len(list(credentials.list(vault.id))) == 2
    assert credentials.delete(env_var.id, vault_id=vault.id).type == "vault_credential_deleted"

    updated = client.beta.vaults.update(vault.id, display_name="Ops", metadata={"k": None})
    assert (updated.display_name, updated.metadata) == ("Ops", {})
    assert [v.id for v in client.beta.vaults.list()] == [vault.id]
    client.beta.vaults.archive(vault.id)
    assert list(client.beta.vaults.list()) == []
    with pytest.raises(anthropic.BadRequestError):
        credentials.create(
            vault.id, auth={"type": "static_bearer", "mcp_server_url": "u", "token": "t"}
        )
    assert client.beta.vaults.delete(vault.id).type == "vault_deleted"


def test_memory_versions_record_every_change_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    store = client.beta.memory_stores.create(name="notes")
    memories = client.beta.memory_stores.memories
    versions = client.beta.memory_stores.memory_versions
    todo = memories.create(store.id, path="/todo.md", content="buy milk")
    other = memories.create(store.id, path="/other.md", content="x")
    moved = memories.update(todo.id, memory_store_id=store.id, path="/done.md")
    unchanged = memories.update(todo.id, memory_store_id=store.id, content="buy milk")
    assert unchanged.memory_version_id == moved.memory_version_id  # a no-op adds no version
    memories.delete(todo.id, memory_store_id=store.id)

    history = list(versions.list(store.id, memory_id=todo.id, limit=1))
    assert [(v.operation, v.path) for v in history] == [
        ("deleted", "/done.md"),
        ("modified", "/done.md"),
        ("created", "/todo.md"),
    ]
    deleted, modified, created = history
    assert (created.id, modified.id) == (todo.memory_version_id, moved.memory_version_id)
    assert (created.memory_store_id, created.memory_id) == (store.id, todo.id)
    assert created.content is None  # view=basic is the list's default
    assert (created.content_sha256, created.content_size_bytes) == (todo.content_sha256, 8)
    assert (deleted.content_sha256, deleted.content_size_bytes) == (None, None)
    assert created.created_by is not None
    assert created.created_by.type == "api_actor"
    assert (created.redacted_at, created.redacted_by) == (None, None)
    assert versions.retrieve(created.id, memory_store_id=store.id).content == "buy milk"
    basic = versions.retrieve(created.id, memory_store_id=store.id, view="basic")
    assert (basic.content, basic.content_size_bytes) == (None, 8)
    assert versions.retrieve(deleted.id, memory_store_id=store.id).content is None

    # Each filter the SDK sends is applied.
    assert [v.memory_id for v in versions.list(store.id, operation="created")] == [
        other.id,
        todo.id,
    ]
    assert [v.id for v in versions.list(store.id, operation="deleted")] == [deleted.id]
    everything = list(versions.list(store.id, view="full", limit=2))
    assert len(everything) == 4
    assert [v.content for v in everything if v.operation == "created"] == ["x", "buy milk"]
    with pytest.raises(anthropic.BadRequestError):
        list(versions.list(store.id, view="full", limit=21))  # content comes 20 at a time
    key_id = created.created_by.api_key_id  # type: ignore[union-attr]
    assert len(list(versions.list(store.id, api_key_id=key_id))) == 4
    assert list(versions.list(store.id, api_key_id="apikey_someone_else")) == []
    assert list(versions.list(store.id, session_id="sesn_x")) == []
    assert list(versions.list(store.id, service_account_id="svac_x")) == []
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    assert list(versions.list(store.id, created_at_gte=later)) == []
    assert len(list(versions.list(store.id, created_at_lte=later))) == 4
    with pytest.raises(anthropic.BadRequestError):
        list(versions.list(store.id, operation="renamed"))  # type: ignore[arg-type]

    redacted = versions.redact(created.id, memory_store_id=store.id)
    assert redacted.redacted_at is not None
    assert redacted.redacted_by is not None
    assert redacted.redacted_by.type == "api_actor"
    cleared = (redacted.content, redacted.path, redacted.content_sha256)
    assert (*cleared, redacted.content_size_bytes) == (None, None, None, None)
    assert (redacted.operation, redacted.created_by) == ("created", created.created_by)
    assert versions.redact(created.id, memory_store_id=store.id) == redacted  # again: the same
    assert versions.retrieve(created.id, memory_store_id=store.id) == redacted

    for missing in (
        lambda: versions.retrieve("memver_missing", memory_store_id=store.id),
        lambda: versions.redact("memver_missing", memory_store_id=store.id),
        lambda: list(versions.list("memstore_missing")),
    ):
        with pytest.raises(anthropic.NotFoundError) as raised:
            missing()
        check_strictly(ErrorResponse, raised.value.body, "404")
        assert raised.value.body["error"]["type"] == "not_found_error"
    client.beta.memory_stores.archive(store.id)
    with pytest.raises(anthropic.BadRequestError):
        versions.redact(modified.id, memory_store_id=store.id)  # an archived store is read-only
    assert len(list(versions.list(store.id))) == 4
    client.beta.memory_stores.delete(store.id)
    with pytest.raises(anthropic.NotFoundError):
        versions.retrieve(modified.id, memory_store_id=store.id)


def test_mcp_oauth_credentials_validate_through_the_sdk(sdk: Any) -> None:
    _, client = sdk()
    vault = client.beta.vaults.create(display_name="Team")
    other_vault = client.beta.vaults.create(display_name="Other")
    credentials = client.beta.vaults.credentials
    oauth = {"type": "mcp_oauth", "mcp_server_url": "https://mcp.example", "access_token": "a"}
    plain = credentials.create(vault.id, auth=oauth)
    refreshing = credentials.create(
        vault.id,
        auth={
            **oauth,
            "refresh": {
                "client_id": "c",
                "refresh_token": "r",
                "token_endpoint": "https://auth.example/token",
                "token_endpoint_auth": {"type": "none"},
            },
        },
    )
    bearer = credentials.create(vault.id, auth=_CREDENTIAL)

    result = credentials.mcp_oauth_validate(plain.id, vault_id=vault.id)
    assert (result.type, result.status) == ("vault_credential_validation", "valid")
    assert (result.credential_id, result.vault_id) == (plain.id, vault.id)
    assert (result.has_refresh_token, result.mcp_probe, result.refresh) == (False, None, None)
    assert credentials.mcp_oauth_validate(refreshing.id, vault_id=vault.id).has_refresh_token

    with pytest.raises(anthropic.BadRequestError) as refused:
        credentials.mcp_oauth_validate(bearer.id, vault_id=vault.id)
    check_strictly(ErrorResponse, refused.value.body, "400")
    assert refused.value.body["error"]["type"] == "invalid_request_error"
    for credential_id, vault_id in (
        ("vcrd_missing", vault.id),
        (plain.id, "vlt_missing"),
        (plain.id, other_vault.id),
    ):
        with pytest.raises(anthropic.NotFoundError) as raised:
            credentials.mcp_oauth_validate(credential_id, vault_id=vault_id)
        check_strictly(ErrorResponse, raised.value.body, "404")


# --- errors and the listener ----------------------------------------------------------------


def test_error_objects_fit_the_sdk_model(sdk: Any) -> None:
    emulator, client = sdk()
    emulator.fail_requests("GET", "/v1/agents", 529)
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.beta.agents.list()
    assert raised.value.status_code == 529
    check_strictly(ErrorResponse, raised.value.body, "529")
    for call_it in (
        lambda: client.beta.agents.retrieve("agent_missing"),
        lambda: client.beta.sessions.create(agent="agent_x", environment_id="env_x"),
    ):
        with pytest.raises(anthropic.APIStatusError) as raised:
            call_it()
        check_strictly(ErrorResponse, raised.value.body, "error")
    bad_key = StrictAnthropic(base_url=emulator.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as denied:
        bad_key.beta.agents.list()
    check_strictly(ErrorResponse, denied.value.body, "401")
    bad_key.close()


def test_a_mismatch_is_caught() -> None:
    from anthropic.types.beta import BetaManagedAgentsVault

    vault = {
        "id": "vlt_1",
        "type": "vault",
        "display_name": "x",
        "metadata": {},
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    check_strictly(BetaManagedAgentsVault, vault, "vault")
    with pytest.raises(ModelMismatch, match="does not model"):
        check_strictly(BetaManagedAgentsVault, {**vault, "colour": "red"}, "vault")
    with pytest.raises(ModelMismatch):
        check_strictly(BetaManagedAgentsVault, {**vault, "metadata": {"n": 1}}, "vault")


def test_32_concurrent_clients_connect_without_stalls(sdk: Any) -> None:
    emulator, _ = sdk()
    barrier = threading.Barrier(32)
    times: list[float] = []
    failures: list[BaseException] = []

    def connect() -> None:
        try:
            barrier.wait(timeout=5)
            started = time.monotonic()
            response = requests.get(
                emulator.base_url + "/v1/agents",
                headers={
                    "x-api-key": emulator.api_key,
                    "anthropic-version": "2023-06-01",
                    "anthropic-beta": "managed-agents-2026-04-01",
                },
                timeout=5,
            )
            assert response.status_code == 200
            times.append(time.monotonic() - started)
        except BaseException as error:  # reported below, from the test's thread
            failures.append(error)

    workers = [threading.Thread(target=connect) for _ in range(32)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert failures == []
    assert len(times) == 32
    assert max(times) < 0.9  # a dropped SYN (a full backlog) costs a 1 s retransmission


# --- the SDK's requests and the project's client's ------------------------------------------

# A step of the comparison: what the SDK does and what the project's client does (the name
# of its method, then a call of it), each given a fresh world of its own.
_Step = tuple[str, Callable[[StrictAnthropic, dict[str, str]], Any], str, Callable[..., Any]]
_WHEN = datetime(2026, 1, 1, tzinfo=timezone.utc)
_BODY = {"name": "n", "model": "claude-sonnet-4-6", "system": "s", "tools": [WEATHER]}
_CREDENTIAL = {"type": "static_bearer", "mcp_server_url": "https://mcp.example", "token": "t"}
_OAUTH_CREDENTIAL = {
    "type": "mcp_oauth",
    "mcp_server_url": "https://mcp.example",
    "access_token": "a",
}
_STEPS: list[_Step] = [
    (
        "create agent",
        lambda c, w: c.beta.agents.create(**_BODY),
        "create_agent",
        lambda p, w: p.create_agent(_BODY),
    ),
    (
        "get agent",
        lambda c, w: c.beta.agents.retrieve(w["agent"]),
        "get_agent",
        lambda p, w: p.get_agent(w["agent"]),
    ),
    (
        "get an agent version",
        lambda c, w: c.beta.agents.retrieve(w["agent"], version=1),
        "get_agent",
        lambda p, w: p.get_agent(w["agent"], version=1),
    ),
    (
        "update agent",
        lambda c, w: c.beta.agents.update(w["agent"], version=1, system="x"),
        "update_agent",
        lambda p, w: p.update_agent(w["agent"], {"version": 1, "system": "x"}),
    ),
    (
        "list agents",
        lambda c, w: list(c.beta.agents.list(include_archived=True, limit=100)),
        "list_agents",
        lambda p, w: p.list_agents(include_archived=True),
    ),
    (
        "list agent versions",
        lambda c, w: list(c.beta.agents.versions.list(w["agent"])),
        "list_agent_versions",
        lambda p, w: p.list_agent_versions(w["agent"]),
    ),
    (
        "archive agent",
        lambda c, w: c.beta.agents.archive(w["agent"]),
        "archive_agent",
        lambda p, w: p.archive_agent(w["agent"]),
    ),
    (
        "create environment",
        lambda c, w: c.beta.environments.create(name="n"),
        "create_environment",
        lambda p, w: p.create_environment({"name": "n"}),
    ),
    (
        "get environment",
        lambda c, w: c.beta.environments.retrieve(w["environment"]),
        "get_environment",
        lambda p, w: p.get_environment(w["environment"]),
    ),
    (
        "update environment",
        lambda c, w: c.beta.environments.update(w["environment"], description="d"),
        "update_environment",
        lambda p, w: p.update_environment(w["environment"], {"description": "d"}),
    ),
    (
        "list environments",
        lambda c, w: list(c.beta.environments.list(limit=100)),
        "list_environments",
        lambda p, w: p.list_environments(),
    ),
    (
        "archive environment",
        lambda c, w: c.beta.environments.archive(w["spare_environment"]),
        "archive_environment",
        lambda p, w: p.archive_environment(w["spare_environment"]),
    ),
    (
        "delete environment",
        lambda c, w: c.beta.environments.delete(w["spare_environment"]),
        "delete_environment",
        lambda p, w: p.delete_environment(w["spare_environment"]),
    ),
    (
        "create session",
        lambda c, w: c.beta.sessions.create(agent=w["agent"], environment_id=w["environment"]),
        "create_session",
        lambda p, w: p.create_session(w["agent"], w["environment"]),
    ),
    (
        "create a pinned session with options",
        lambda c, w: c.beta.sessions.create(
            agent={"type": "agent", "id": w["agent"], "version": 1},
            environment_id=w["environment"],
            vault_ids=[w["vault"]],
            title="t",
            metadata={"k": "v"},
            resources=[{"type": "file", "file_id": w["file"]}],
        ),
        "create_session",
        lambda p, w: p.create_session(
            {"type": "agent", "id": w["agent"], "version": 1},
            w["environment"],
            vault_ids=[w["vault"]],
            title="t",
            metadata={"k": "v"},
            resources=[{"type": "file", "file_id": w["file"]}],
        ),
    ),
    (
        "get session",
        lambda c, w: c.beta.sessions.retrieve(w["session"]),
        "get_session",
        lambda p, w: p.get_session(w["session"]),
    ),
    (
        "update session",
        lambda c, w: c.beta.sessions.update(w["session"], title="t", metadata={"k": None}),
        "update_session",
        lambda p, w: p.update_session(w["session"], {"title": "t", "metadata": {"k": None}}),
    ),
    (
        "list sessions with filters",
        lambda c, w: list(
            c.beta.sessions.list(
                agent_id=w["agent"],
                statuses=["idle"],
                order="asc",
                created_at_gte=_WHEN,
                include_archived=False,
            )
        ),
        "list_sessions",
        lambda p, w: p.list_sessions(
            agent_id=w["agent"],
            statuses=["idle"],
            order="asc",
            created_at_gte=_WHEN,
            include_archived=False,
        ),
    ),
    (
        "archive session",
        lambda c, w: c.beta.sessions.archive(w["session"]),
        "archive_session",
        lambda p, w: p.archive_session(w["session"]),
    ),
    (
        "delete session",
        lambda c, w: c.beta.sessions.delete(w["session"]),
        "delete_session",
        lambda p, w: p.delete_session(w["session"]),
    ),
    (
        "send events",
        lambda c, w: c.beta.sessions.events.send(w["session"], events=[user_message("hi")]),
        "send_events",
        lambda p, w: p.send_events(w["session"], [user_message("hi")]),
    ),
    (
        "list events",
        lambda c, w: list(c.beta.sessions.events.list(w["session"])),
        "list_events",
        lambda p, w: p.list_events(w["session"]),
    ),
    (
        "list events with filters",
        lambda c, w: list(
            c.beta.sessions.events.list(
                w["session"], order="desc", types=["agent.message"], created_at_gt=_WHEN
            )
        ),
        "list_events",
        lambda p, w: p.list_events(
            w["session"], order="desc", types=["agent.message"], created_at_gt=_WHEN
        ),
    ),
    (
        "list threads",
        lambda c, w: list(c.beta.sessions.threads.list(w["session"])),
        "list_threads",
        lambda p, w: p.list_threads(w["session"]),
    ),
    (
        "get thread",
        lambda c, w: c.beta.sessions.threads.retrieve(w["thread"], session_id=w["session"]),
        "get_thread",
        lambda p, w: p.get_thread(w["session"], w["thread"]),
    ),
    (
        "list thread events",
        lambda c, w: list(
            c.beta.sessions.threads.events.list(w["thread"], session_id=w["session"])
        ),
        "list_thread_events",
        lambda p, w: p.list_thread_events(w["session"], w["thread"]),
    ),
    (
        "archive thread",
        lambda c, w: c.beta.sessions.threads.archive(w["thread"], session_id=w["session"]),
        "archive_thread",
        lambda p, w: p.archive_thread(w["session"], w["thread"]),
    ),
    (
        "attach a file",
        lambda c, w: c.beta.sessions.resources.add(w["session"], type="file", file_id=w["file"]),
        "attach_file",
        lambda p, w: p.attach_file(w["session"], w["file"]),
    ),
    (
        "list session resources",
        lambda c, w: list(c.beta.sessions.resources.list(w["session"])),
        "list_session_resources",
        lambda p, w: p.list_session_resources(w["session"]),
    ),
    (
        "list a session's files",
        lambda c, w: list(
            c.beta.files.list(scope_id=w["session"], betas=["managed-agents-2026-04-01"])
        ),
        "list_files",
        lambda p, w: p.list_files(scope_id=w["session"]),
    ),
    (
        "get file metadata",
        lambda c, w: c.beta.files.retrieve_metadata(w["file"]),
        "get_file",
        lambda p, w: p.get_file(w["file"]),
    ),
    (
        "delete file",
        lambda c, w: c.beta.files.delete(w["file"]),
        "delete_file",
        lambda p, w: p.delete_file(w["file"]),
    ),
    (
        "create memory store",
        lambda c, w: c.beta.memory_stores.create(name="m"),
        "create_memory_store",
        lambda p, w: p.create_memory_store({"name": "m"}),
    ),
    (
        "list memory stores",
        lambda c, w: list(c.beta.memory_stores.list(limit=100)),
        "list_memory_stores",
        lambda p, w: p.list_memory_stores(),
    ),
    (
        "create memory",
        lambda c, w: c.beta.memory_stores.memories.create(w["store"], path="/a.md", content="x"),
        "create_memory",
        lambda p, w: p.create_memory(w["store"], "/a.md", "x"),
    ),
    (
        "list memories",
        lambda c, w: list(c.beta.memory_stores.memories.list(w["store"])),
        "list_memories",
        lambda p, w: p.list_memories(w["store"]),
    ),
    (
        "create vault",
        lambda c, w: c.beta.vaults.create(display_name="v"),
        "create_vault",
        lambda p, w: p.create_vault({"display_name": "v"}),
    ),
    (
        "list vaults",
        lambda c, w: list(c.beta.vaults.list(limit=100)),
        "list_vaults",
        lambda p, w: p.list_vaults(),
    ),
    (
        "create credential",
        lambda c, w: c.beta.vaults.credentials.create(w["vault"], auth=_CREDENTIAL),
        "create_vault_credential",
        lambda p, w: p.create_vault_credential(w["vault"], {"auth": _CREDENTIAL}),
    ),
    (
        "update memory store",
        lambda c, w: c.beta.memory_stores.update(w["store"], description="d"),
        "update_memory_store",
        lambda p, w: p.update_memory_store(w["store"], {"description": "d"}),
    ),
    (
        "archive memory store",
        lambda c, w: c.beta.memory_stores.archive(w["store"]),
        "archive_memory_store",
        lambda p, w: p.archive_memory_store(w["store"]),
    ),
    (
        "get memory",
        lambda c, w: c.beta.memory_stores.memories.retrieve(
            w["memory"], memory_store_id=w["store"], view="basic"
        ),
        "get_memory",
        lambda p, w: p.get_memory(w["store"], w["memory"], view="basic"),
    ),
    (
        "update memory",
        lambda c, w: c.beta.memory_stores.memories.update(
            w["memory"], memory_store_id=w["store"], content="y", view="full"
        ),
        "update_memory",
        lambda p, w: p.update_memory(w["store"], w["memory"], {"content": "y"}, view="full"),
    ),
    (
        "delete memory",
        lambda c, w: c.beta.memory_stores.memories.delete(
            w["memory"], memory_store_id=w["store"], expected_content_sha256=w["sha256"]
        ),
        "delete_memory",
        lambda p, w: p.delete_memory(w["store"], w["memory"], expected_content_sha256=w["sha256"]),
    ),
    (
        "get memory version",
        lambda c, w: c.beta.memory_stores.memory_versions.retrieve(
            w["memory_version"], memory_store_id=w["store"], view="basic"
        ),
        "get_memory_version",
        lambda p, w: p.get_memory_version(w["store"], w["memory_version"], view="basic"),
    ),
    (
        "list memory versions",
        lambda c, w: list(c.beta.memory_stores.memory_versions.list(w["store"])),
        "list_memory_versions",
        lambda p, w: p.list_memory_versions(w["store"]),
    ),
    (
        "list memory versions with filters",
        lambda c, w: list(
            c.beta.memory_stores.memory_versions.list(
                w["store"],
                memory_id=w["memory"],
                operation="created",
                api_key_id="apikey_x",
                session_id="sesn_x",
                service_account_id="svac_x",
                created_at_gte=_WHEN,
                created_at_lte=_WHEN + timedelta(days=36500),
                view="full",
            )
        ),
        "list_memory_versions",
        lambda p, w: p.list_memory_versions(
            w["store"],
            memory_id=w["memory"],
            operation="created",
            api_key_id="apikey_x",
            session_id="sesn_x",
            service_account_id="svac_x",
            created_at_gte=_WHEN,
            created_at_lte=_WHEN + timedelta(days=36500),
            view="full",
        ),
    ),
    (
        "redact memory version",
        lambda c, w: c.beta.memory_stores.memory_versions.redact(
            w["memory_version"], memory_store_id=w["store"]
        ),
        "redact_memory_version",
        lambda p, w: p.redact_memory_version(w["store"], w["memory_version"]),
    ),
    (
        "delete memory store",
        lambda c, w: c.beta.memory_stores.delete(w["store"]),
        "delete_memory_store",
        lambda p, w: p.delete_memory_store(w["store"]),
    ),
    (
        "update vault",
        lambda c, w: c.beta.vaults.update(w["vault"], metadata={"k": "v"}),
        "update_vault",
        lambda p, w: p.update_vault(w["vault"], {"metadata": {"k": "v"}}),
    ),
    (
        "update credential",
        lambda c, w: c.beta.vaults.credentials.update(
            w["credential"], vault_id=w["vault"], auth={"type": "static_bearer", "token": "u"}
        ),
        "update_vault_credential",
        lambda p, w: p.update_vault_credential(
            w["vault"], w["credential"], {"auth": {"type": "static_bearer", "token": "u"}}
        ),
    ),
    (
        "validate an MCP OAuth credential",
        lambda c, w: c.beta.vaults.credentials.mcp_oauth_validate(
            w["oauth_credential"], vault_id=w["vault"]
        ),
        "validate_vault_credential",
        lambda p, w: p.validate_vault_credential(w["vault"], w["oauth_credential"]),
    ),
    (
        "list credentials",
        lambda c, w: list(c.beta.vaults.credentials.list(w["vault"], include_archived=True)),
        "list_vault_credentials",
        lambda p, w: p.list_vault_credentials(w["vault"], include_archived=True),
    ),
    (
        "archive credential",
        lambda c, w: c.beta.vaults.credentials.archive(w["credential"], vault_id=w["vault"]),
        "archive_vault_credential",
        lambda p, w: p.archive_vault_credential(w["vault"], w["credential"]),
    ),
    (
        "delete credential",
        lambda c, w: c.beta.vaults.credentials.delete(w["credential"], vault_id=w["vault"]),
        "delete_vault_credential",
        lambda p, w: p.delete_vault_credential(w["vault"], w["credential"]),
    ),
    (
        "archive vault",
        lambda c, w: c.beta.vaults.archive(w["vault"]),
        "archive_vault",
        lambda p, w: p.archive_vault(w["vault"]),
    ),
    (
        "delete vault",
        lambda c, w: c.beta.vaults.delete(w["vault"]),
        "delete_vault",
        lambda p, w: p.delete_vault(w["vault"]),
    ),
]


def _world(emulator: ClaudeEmulator, api: Api) -> dict[str, str]:
    """Fresh objects for one side of a comparison step."""
    agent = emulator.add_agent([Turn(thread="helper", text="Done.")])
    environment = emulator.add_environment()
    session = str(
        ok(api.post("/v1/sessions", {"agent": agent, "environment_id": environment}))["id"]
    )
    ok(api.send(session, user_message("go")))
    wait_for_idle(emulator, session)
    thread = emulator.threads(session)[1]["id"]
    store = ok(api.post("/v1/memory_stores", {"name": "s"}))["id"]
    memory = ok(api.post(f"/v1/memory_stores/{store}/memories", {"path": "/m.md", "content": "x"}))
    vault = ok(api.post("/v1/vaults", {"display_name": "v"}))["id"]
    credential = ok(api.post(f"/v1/vaults/{vault}/credentials", {"auth": _CREDENTIAL}))["id"]
    oauth = ok(api.post(f"/v1/vaults/{vault}/credentials", {"auth": _OAUTH_CREDENTIAL}))["id"]
    return {
        "agent": agent,
        "environment": environment,
        "spare_environment": emulator.add_environment(),
        "session": session,
        "thread": thread,
        "file": api.upload_file("f.csv", b"a,b\n")["id"],
        "vault": vault,
        "credential": credential,
        "oauth_credential": oauth,
        "store": store,
        "memory": memory["id"],
        "sha256": memory["content_sha256"],
        "memory_version": memory["memory_version_id"],
    }


def test_the_project_client_sends_what_the_sdk_sends(sdk: Any) -> None:
    from req_managed_agents._redact import Secret
    from req_managed_agents.providers.claude._client import ClaudeClient

    emulator, client = sdk()
    project = ClaudeClient(
        Secret(emulator.api_key), base_url=emulator.base_url, timeout=10, max_retries=0
    )
    api = Api(emulator)
    mismatches: list[str] = []
    for name, by_sdk, method, by_project in _STEPS:
        if not hasattr(project, method):
            mismatches.append(f"{name}: the project's client has no {method}")
            continue
        shapes = []
        for side, calling in ((by_sdk, client), (by_project, project)):
            world = _world(emulator, api)
            mark = len(emulator.requests)
            side(calling, world)
            shapes.append([wire_shape(r) for r in emulator.requests[mark:]])
        if shapes[0] != shapes[1]:
            mismatches.append(f"{name}:\n  SDK     {shapes[0]}\n  project {shapes[1]}")
    project.close()
    api.http.close()
    assert mismatches == [], "\n".join(mismatches)
