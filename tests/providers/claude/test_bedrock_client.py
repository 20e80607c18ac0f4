"""``ClaudeBedrockClient``: the Bedrock control plane, its own fields checked before sending.

What a user relies on: a field Bedrock refuses is a ``ValueError`` naming it, raised before
any request leaves (the emulator logs none); what Bedrock takes instead goes through and
comes back as Bedrock answers it; and a noun Bedrock does not have (environments, files,
vaults, session resources) is a ``ConfigurationError`` saying so, not a 404.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ConfigurationError, ToolContext, Tools, run_to_completion
from req_managed_agents.artifacts import for_session
from req_managed_agents.providers.claude import ClaudeBedrockClient
from req_managed_agents.testing import ClaudeEmulator, Turn, call

pytest.importorskip("botocore")

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789"
ROLE = "arn:aws:iam::123456789012:role/AgentRole"
GATEWAY = "arn:aws:bedrock-agentcore:us-west-2:123456789012:gateway/tools-0123456789"
MODEL = "us.anthropic.claude-sonnet-4-6"


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator([Turn(text="ok")], flavor="bedrock", region="us-west-2") as emulator:
        yield emulator


@pytest.fixture
def client(emulator: ClaudeEmulator) -> Iterator[ClaudeBedrockClient]:
    with emulator.provider(timeout=5, max_retries=0) as provider:
        assert isinstance(provider.client, ClaudeBedrockClient)
        yield provider.client


def agent_body(**fields: Any) -> dict[str, Any]:
    return {"name": "a", "model": MODEL, "execution_identity": ROLE, **fields}


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"model": "claude-sonnet-4-6"}, "inference profile ID"),
        ({"model": "anthropic.claude-sonnet-4-6"}, "inference profile ID"),
        ({"model": {"id": MODEL, "speed": "fast"}}, "speed"),
        ({"execution_identity": None}, "execution_identity"),
        ({"execution_identity": "arn:aws:iam::123456789012:user/me"}, "role_arn"),
        (
            {"tools": [{"type": "agent_toolset_20260401", "configs": [{"name": "web_search"}]}]},
            "web_search",
        ),
        ({"tools": [{"type": "web_search_20250305"}]}, "tools[0].type"),
        ({"mcp_servers": [{"type": "url", "name": "d", "url": "https://x.test"}]}, "gateway"),
        (
            {"mcp_servers": [{"type": "aws_agentcore_gateway", "name": "d", "gateway_arn": "x"}]},
            "gateway_arn",
        ),
        ({"skills": [{"type": "anthropic", "skill_id": "xlsx"}]}, "skills[0].type"),
        ({"multiagent": {"type": "multiagent_20261001"}}, "coordinator"),
    ],
)
def test_an_agent_bedrock_refuses_is_refused_before_sending(
    client: ClaudeBedrockClient, emulator: ClaudeEmulator, fields: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        client.create_agent(agent_body(**fields))
    assert emulator.requests == []


def test_an_agent_needs_a_model_and_keeps_its_role(
    client: ClaudeBedrockClient, emulator: ClaudeEmulator
) -> None:
    with pytest.raises(ValueError, match="model"):
        client.create_agent(name="a", execution_identity=ROLE)
    agent = client.create_agent(agent_body(model={"id": MODEL, "effort": "high"}))
    with pytest.raises(ValueError, match="cannot change"):
        client.update_agent(agent["id"], version=1, execution_identity=ROLE)
    with pytest.raises(ValueError, match="inference profile ID"):
        client.update_agent(agent["id"], version=1, model="claude-opus-4-6")
    assert [r.method for r in emulator.requests] == ["POST"]  # only the one create


def test_what_bedrock_takes_goes_through(client: ClaudeBedrockClient) -> None:
    agent = client.create_agent(
        agent_body(
            tools=[
                {"type": "agent_toolset_20260401", "configs": [{"name": "bash", "enabled": False}]},
                {"type": "memory_toolset_20261030"},
                {"type": "mcp_toolset", "mcp_server_name": "tools"},
            ],
            mcp_servers=[
                {"type": "aws_agentcore_gateway", "name": "tools", "gateway_arn": GATEWAY}
            ],
            skills=[{"type": "sandbox_path", "path": "/opt/skills"}],
        )
    )
    assert agent["execution_identity"] == {"type": "aws_role", "role_arn": ROLE}
    store = client.create_memory_store(name="notes", backend={"type": "managed"})
    assert store["backend"] == {"type": "managed"}
    session = client.create_session(
        agent["id"],
        SANDBOX,
        working_directory="/home/agent",
        resources=[
            {"type": "memory_store", "memory_store_id": store["id"]},
            {"type": "sandbox_path", "path": "/opt/data"},
            {
                "type": "s3_mount",
                "s3_uri": "s3://bucket/out/",
                "mount_path": "/mnt/out",
                "region": "us-west-2",
                "mount_as": "read_write",
            },
        ],
    )
    assert [r["type"] for r in session["resources"]] == ["memory_store", "sandbox_path", "s3_mount"]
    assert session["working_directory"] == "/home/agent"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"environment_id": "env_0123"}, "ARN of a sandbox"),
        ({"vault_ids": ["vlt_1"]}, "no vaults"),
        ({"resources": [{"type": "file", "file_id": "file_1"}]}, "resources\\[0\\].type"),
        ({"resources": [{"type": "s3_object"}]}, "s3_uri"),
        ({"working_directory": "work"}, "absolute path"),
        ({"working_directory": "/mnt/../etc"}, "'..'"),
        ({"execution_identity": {"type": "person"}}, "aws_role"),
    ],
)
def test_a_session_bedrock_refuses_is_refused_before_sending(
    client: ClaudeBedrockClient, emulator: ClaudeEmulator, options: dict[str, Any], named: str
) -> None:
    options = {"environment_id": SANDBOX, **options}
    with pytest.raises(ValueError, match=named):
        client.create_session("agent_1", **options)
    assert emulator.requests == []


def test_a_memory_store_backend_is_managed(
    client: ClaudeBedrockClient, emulator: ClaudeEmulator
) -> None:
    with pytest.raises(ValueError, match="backend"):
        client.create_memory_store(name="n", backend={"type": "s3", "bucket": "b"})
    assert emulator.requests == []


@pytest.mark.parametrize(
    ("call", "noun"),
    [
        (lambda c: c.list_environments(), "environments"),
        (lambda c: c.create_environment(name="e"), "environments"),
        (lambda c: c.upload_file(b"x", filename="x.txt"), "Files API"),
        (lambda c: c.list_files(), "Files API"),
        (lambda c: c.create_vault(name="v"), "vaults"),
        (lambda c: c.list_session_resources("sesn_1"), "session resources"),
        (lambda c: c.attach_file("sesn_1", "file_1"), "session resources"),
    ],
)
def test_nouns_bedrock_lacks_say_so(
    client: ClaudeBedrockClient, emulator: ClaudeEmulator, call: Any, noun: str
) -> None:
    with pytest.raises(ConfigurationError, match=f"Amazon Bedrock has no {noun}"):
        call(client)
    assert emulator.requests == []


def test_a_tool_asking_for_its_session_files_learns_bedrock_has_none() -> None:
    script = [Turn(tool_calls=[call("report")]), Turn(text=lambda results: results[0])]
    tools = Tools()

    @tools.tool
    def report(context: ToolContext) -> str:
        """Look for the session's files."""
        for_session(provider, context.session)
        return "unreachable"

    with (
        ClaudeEmulator(script, flavor="bedrock", region="us-west-2") as emulator,
        emulator.provider(timeout=5) as provider,
    ):
        result = run_to_completion(
            provider,
            "Report.",
            handler=tools,
            agent_id=emulator.add_agent(),
            environment_id=SANDBOX,
            timeout=20,
        )
    (tool_result,) = result.tool_results
    assert tool_result.is_error
    assert "no Files API" in str(tool_result.content)
    assert "s3_mount" in str(tool_result.content)
