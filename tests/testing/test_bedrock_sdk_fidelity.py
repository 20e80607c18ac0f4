"""The Claude emulator's Bedrock flavor driven by the SDK's ``AnthropicBedrock`` client.

Every call goes through :class:`tests.support.sdk.StrictAnthropicBedrock`, which signs
with SigV4 itself and fails on any answer, page or streamed event that does not fit the
SDK's Bedrock models exactly. Between them the tests call each of the 34 Bedrock methods
(:data:`BEDROCK_METHODS`); the last test reads this module to check that none is left out
(a check that holds however the tests are spread over worker processes).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra")
pytest.importorskip("botocore", reason="AnthropicBedrock signs with botocore")

from req_managed_agents.testing import ClaudeEmulator, Turn, call  # noqa: E402
from tests.support.sdk import StrictAnthropicBedrock, strict_bedrock_client  # noqa: E402

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789"
ROLE = "arn:aws:iam::123456789012:role/AgentRole"
IDENTITY = {"type": "aws_role", "role_arn": ROLE}
MODEL = "us.anthropic.claude-sonnet-4-6"
WEATHER = {
    "type": "custom",
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    turns = [Turn(text="hello"), Turn(tool_calls=[call("get_weather", city="Oslo")])]
    with ClaudeEmulator(turns, flavor="bedrock", region="us-west-2", ping_interval=0.2) as served:
        yield served


@pytest.fixture
def beta(emulator: ClaudeEmulator) -> Iterator[Any]:
    client: StrictAnthropicBedrock = strict_bedrock_client(emulator)
    yield client.beta
    client.close()


def new_agent(beta: Any, **fields: Any) -> Any:
    return beta.agents.create(name="sdk_agent", model=MODEL, execution_identity=IDENTITY, **fields)


def test_agents_and_their_versions(beta: Any) -> None:
    agent = new_agent(beta, tools=[WEATHER], metadata={"team": "a"})
    assert agent.execution_identity.role_arn == ROLE
    assert agent.version == 1
    updated = beta.agents.update(agent.id, version=1, system="Be brief.")
    assert (updated.version, updated.system) == (2, "Be brief.")
    assert beta.agents.retrieve(agent.id, version=1).system is None
    assert [v.version for v in beta.agents.versions.list(agent.id)] == [2, 1]
    assert [a.id for a in beta.agents.list()] == [agent.id]
    archived = beta.agents.archive(agent.id)
    assert archived.archived_at is not None


def test_sessions_create_update_list_archive_delete(beta: Any) -> None:
    agent = new_agent(beta)
    session = beta.sessions.create(
        agent=agent.id, environment_id=SANDBOX, working_directory="/srv/app", title="t"
    )
    assert (session.working_directory, session.environment_id) == ("/srv/app", SANDBOX)
    assert session.execution_identity.role_arn == ROLE
    renamed = beta.sessions.update(session.id, title="renamed", metadata={"k": "v"})
    assert (renamed.title, renamed.metadata) == ("renamed", {"k": "v"})
    assert beta.sessions.retrieve(session.id).title == "renamed"
    (listed,) = list(beta.sessions.list())
    assert (listed.id, listed.created_by_me) == (session.id, True)
    assert beta.sessions.archive(session.id).archived_at is not None
    assert beta.sessions.delete(session.id).type == "session_deleted"


def test_events_send_list_and_stream(beta: Any, emulator: ClaudeEmulator) -> None:
    agent = new_agent(beta, tools=[WEATHER])
    session = beta.sessions.create(agent=agent.id, environment_id=SANDBOX)
    message = {"type": "user.message", "content": [{"type": "text", "text": "hi"}]}
    kinds = []
    with beta.sessions.events.stream(session.id) as stream:
        sent = beta.sessions.events.send(session.id, events=[message])
        assert [e.type for e in sent.data] == ["user.message"]
        for event in stream:
            kinds.append(event.type)
            if event.type == "session.status_idle":
                break
    assert "agent.message" in kinds
    listed = [e.type for e in beta.sessions.events.list(session.id)]
    assert listed[0] == "user.message"
    assert "agent.message" in listed
    beta.sessions.events.send(session.id, events=[message])
    assert emulator.wait_until(
        lambda: any(e["type"] == "agent.custom_tool_use" for e in emulator.events(session.id))
    )
    (use,) = [e for e in emulator.events(session.id) if e["type"] == "agent.custom_tool_use"]
    result = {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": use["id"],
        "content": [{"type": "text", "text": "sunny"}],
    }
    assert beta.sessions.events.send(session.id, events=[result]).data[0].type == (
        "user.custom_tool_result"
    )


def test_threads_and_their_events(beta: Any, emulator: ClaudeEmulator) -> None:
    worker = new_agent(beta)
    lead = beta.agents.create(
        name="lead",
        model=MODEL,
        execution_identity=IDENTITY,
        multiagent={"type": "coordinator", "agents": [{"type": "agent", "id": worker.id}]},
    )
    session = beta.sessions.create(agent=lead.id, environment_id=SANDBOX)
    threads = list(beta.sessions.threads.list(session.id))
    assert threads, "a coordinator session has its primary thread"
    thread = beta.sessions.threads.retrieve(threads[0].id, session_id=session.id)
    assert thread.session_id == session.id
    assert list(beta.sessions.threads.events.list(thread.id, session_id=session.id)) == []
    message = {"type": "user.message", "content": [{"type": "text", "text": "hi"}]}
    with beta.sessions.threads.events.stream(thread.id, session_id=session.id) as stream:
        beta.sessions.events.send(session.id, events=[message])
        for event in stream:
            if event.type == "session.status_idle":
                break
    if len(threads) > 1:
        assert beta.sessions.threads.archive(threads[1].id, session_id=session.id).archived_at
    else:
        with pytest.raises(anthropic.BadRequestError):
            beta.sessions.threads.archive(thread.id, session_id=session.id)


def test_memory_stores_memories_and_versions(beta: Any) -> None:
    store = beta.memory_stores.create(name="notes", backend={"type": "managed"})
    assert store.backend.type == "managed"
    todo = beta.memory_stores.memories.create(store.id, path="/todo.md", content="buy milk")
    assert (
        beta.memory_stores.memories.retrieve(todo.id, memory_store_id=store.id).content
        == "buy milk"
    )
    moved = beta.memory_stores.memories.update(todo.id, memory_store_id=store.id, path="/done.md")
    assert moved.path == "/done.md"
    assert [m.path for m in beta.memory_stores.memories.list(store.id)] == ["/done.md"]
    history = list(beta.memory_stores.memory_versions.list(store.id, memory_id=todo.id))
    assert [v.operation for v in history] == ["modified", "created"]
    assert history[0].created_by.type == "role_actor"
    assert (
        beta.memory_stores.memory_versions.retrieve(history[1].id, memory_store_id=store.id).content
        == "buy milk"
    )
    assert (
        beta.memory_stores.memory_versions.redact(
            history[1].id, memory_store_id=store.id
        ).redacted_at
        is not None
    )
    assert (
        beta.memory_stores.memories.delete(todo.id, memory_store_id=store.id).type
        == "memory_deleted"
    )
    assert beta.memory_stores.retrieve(store.id).name == "notes"
    assert beta.memory_stores.update(store.id, description="d").description == "d"
    (listed,) = list(beta.memory_stores.list())
    assert listed.created_by_me is True
    assert beta.memory_stores.archive(store.id).archived_at is not None
    assert beta.memory_stores.delete(store.id).type == "memory_store_deleted"


GATEWAY = "arn:aws:bedrock-agentcore:us-west-2:123456789012:gateway/tools-0123456789"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"model": "claude-sonnet-4-6"}, "model"),
        ({"model": "anthropic.claude-sonnet-4-6"}, "model"),
        ({"model": "arn:aws:bedrock:us-west-2:123456789012:inference-profile/x"}, "model"),
        ({"model": {"id": MODEL, "speed": "fast"}}, "speed"),
        (
            {"tools": [{"type": "agent_toolset_20260401", "configs": [{"name": "web_fetch"}]}]},
            "configs[0].name",
        ),
        (
            {
                "tools": [{"type": "mcp_toolset", "mcp_server_name": "docs"}],
                "mcp_servers": [{"type": "url", "name": "docs", "url": "https://x.test/mcp"}],
            },
            "mcp_servers[0]",
        ),
        ({"skills": [{"type": "anthropic", "skill_id": "xlsx"}]}, "skills[0].type"),
        ({"multiagent": {"type": "multiagent_20261001"}}, "multiagent.type"),
    ],
)
def test_what_bedrock_refuses_is_a_400(beta: Any, fields: dict[str, Any], named: str) -> None:
    body = {"name": "refused", "model": MODEL, "execution_identity": IDENTITY, **fields}
    with pytest.raises(anthropic.BadRequestError, match=re.escape(named)):
        beta.agents.create(**body)


def test_what_bedrock_takes_instead(beta: Any) -> None:
    agent = new_agent(
        beta,
        tools=[
            {"type": "agent_toolset_20260401"},
            {"type": "memory_toolset_20261030"},
            {"type": "mcp_toolset", "mcp_server_name": "tools"},
        ],
        mcp_servers=[{"type": "aws_agentcore_gateway", "name": "tools", "gateway_arn": GATEWAY}],
        skills=[{"type": "sandbox_path", "path": "/opt/skills/report"}],
    )
    toolset = agent.tools[0]
    assert "web_fetch" not in [c.name for c in toolset.configs]
    assert agent.mcp_servers[0].gateway_arn == GATEWAY
    session = beta.sessions.create(agent=agent.id, environment_id=SANDBOX)
    assert session.working_directory == "/mnt/workspace"
    assert session.execution_identity.role_arn == ROLE  # the agent's role by default
    with pytest.raises(anthropic.BadRequestError, match="memory_store"):
        beta.sessions.create(
            agent=agent.id,
            environment_id=SANDBOX,
            resources=[{"type": "github_repository", "url": "https://github.com/a/b"}],
        )


S3_FOLDER = {
    "type": "s3_mount",
    "s3_uri": "s3://team-bucket/runs/{session_id}",
    "mount_path": "/mnt/out",
    "region": "us-west-2",
    "mount_as": "read_write",
    "is_output": True,
}
S3_FILE = {
    "type": "s3_object",
    "s3_uri": "s3://team-bucket/inputs/brief.md",
    "mount_path": "/mnt/workspace/brief.md",
    "region": "us-west-2",
}
SANDBOX_PATH = {"type": "sandbox_path", "path": "/opt/data", "instructions": "Read only."}


def test_sandbox_resources_are_mounted_as_bedrock_answers_them(beta: Any) -> None:
    agent = new_agent(beta, tools=[{"type": "agent_toolset_20260401"}])
    session = beta.sessions.create(
        agent=agent.id, environment_id=SANDBOX, resources=[S3_FOLDER, S3_FILE, SANDBOX_PATH]
    )
    folder, file, path = session.resources
    assert folder.s3_uri == f"s3://team-bucket/runs/{session.id}/"  # filled in, one '/'
    assert (folder.mount_as, folder.is_output) == ("read_write", True)
    assert (file.type, file.mount_path) == ("s3_object", "/mnt/workspace/brief.md")
    assert (path.path, path.instructions, path.is_output) == ("/opt/data", "Read only.", False)
    assert beta.sessions.retrieve(session.id).resources == session.resources
    (listed,) = [s for s in beta.sessions.list() if s.id == session.id]
    assert listed.resources == []  # a list shows memory stores only


@pytest.mark.parametrize(
    ("resource", "named"),
    [
        ({**S3_FOLDER, "mount_as": "read_only"}, "is_output"),
        ({**S3_FOLDER, "mount_path": "/mnt/workspace/out"}, "mount_path"),
        ({**S3_FOLDER, "mount_path": "/tmp/out"}, "mount_path"),
        ({**S3_FOLDER, "mount_path": "/mnt/../etc"}, "mount_path"),
        ({**S3_FOLDER, "s3_uri": "s3://team-bucket"}, "s3_uri"),
        ({**S3_FILE, "s3_uri": "s3://team-bucket/inputs/"}, "s3_uri"),
        ({**S3_FILE, "mount_path": "/mnt/workspace"}, "mount_path"),
        ({**S3_FILE, "region": "Oregon"}, "region"),
        ({**SANDBOX_PATH, "path": "data"}, "path"),
        ({**SANDBOX_PATH, "path": "/opt/{session_id}"}, "path"),
        ({"type": "file", "file_id": "file_1"}, "type"),
    ],
)
def test_sandbox_resources_bedrock_refuses(beta: Any, resource: Any, named: str) -> None:
    agent = new_agent(beta, tools=[{"type": "agent_toolset_20260401"}])
    with pytest.raises(anthropic.BadRequestError, match=re.escape(named)):
        beta.sessions.create(agent=agent.id, environment_id=SANDBOX, resources=[resource])


def test_sandbox_resources_need_the_read_tool(beta: Any) -> None:
    no_read = {"type": "agent_toolset_20260401", "configs": [{"name": "read", "enabled": False}]}
    for tools in ([WEATHER], [no_read]):
        agent = new_agent(beta, tools=tools)
        with pytest.raises(anthropic.BadRequestError, match="'read' tool"):
            beta.sessions.create(agent=agent.id, environment_id=SANDBOX, resources=[SANDBOX_PATH])


BEDROCK_METHODS = {
    "beta.agents." + name for name in ("create", "retrieve", "update", "list", "archive")
} | {"beta.agents.versions.list"}
BEDROCK_METHODS |= {
    "beta.sessions." + name
    for name in ("create", "retrieve", "update", "list", "archive", "delete")
}
BEDROCK_METHODS |= {"beta.sessions.events." + name for name in ("send", "list", "stream")}
BEDROCK_METHODS |= {"beta.sessions.threads." + name for name in ("retrieve", "list", "archive")}
BEDROCK_METHODS |= {"beta.sessions.threads.events." + name for name in ("list", "stream")}
BEDROCK_METHODS |= {
    "beta.memory_stores." + name
    for name in ("create", "retrieve", "update", "list", "archive", "delete")
}
BEDROCK_METHODS |= {
    "beta.memory_stores.memories." + name
    for name in ("create", "retrieve", "update", "list", "delete")
}
BEDROCK_METHODS |= {
    "beta.memory_stores.memory_versions." + name for name in ("list", "retrieve", "redact")
}


def test_every_bedrock_method_is_driven() -> None:
    """The tests above call each of the SDK's 34 Bedrock methods through ``beta``."""
    called = set()
    for node in ast.walk(ast.parse(Path(__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            names, target = [], node.func
            while isinstance(target, ast.Attribute):
                names.append(target.attr)
                target = target.value
            if isinstance(target, ast.Name) and target.id == "beta":
                called.add(".".join(["beta", *reversed(names)]))
    assert len(BEDROCK_METHODS) == 34
    assert sorted(BEDROCK_METHODS - called) == []
