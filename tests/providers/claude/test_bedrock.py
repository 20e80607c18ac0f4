"""Claude Managed Agents on Amazon Bedrock: ``ClaudeManagedAgentsBedrock`` against the
emulator's Bedrock flavor, which checks each request's SigV4 signature (service
``bedrock``) or its Bedrock API key.

What a user relies on: the same run as on Anthropic's API, every request (the long-lived
stream too) signed for the right region and service; the Bedrock session options reach
the service and the Anthropic-only ones are refused locally; credentials are resolved as
the AWS SDKs do, and a key and AWS credentials are never mixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import (
    ClaudeManagedAgentsBedrock,
    ConfigurationError,
    ToolContext,
    Tools,
    run_to_completion,
)
from req_managed_agents.errors import AuthenticationError, ElicitationRequiredError
from req_managed_agents.model import (
    Elicitation,
    ElicitationAccept,
    ElicitationCancel,
    ElicitationDecline,
)
from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call

pytest.importorskip("botocore")

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789"
ROLE = "arn:aws:iam::123456789012:role/AgentRole"
SCRIPT = [
    Turn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    Turn(tool_calls=[call("mul", a=5, b=6)]),
    Turn(text=lambda results: f"The total is {results[0]}."),
]


def arithmetic() -> tuple[Tools, list[str]]:
    tools = Tools()
    ran: list[str] = []

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append("add")
        return a + b

    @tools.tool
    def mul(a: int, b: int) -> int:
        """Multiply."""
        ran.append("mul")
        return a * b

    return tools, ran


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(SCRIPT, flavor="bedrock", region="us-west-2") as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def no_ambient_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_a_three_turn_two_tool_run_is_signed_for_bedrock_throughout(
    emulator: ClaudeEmulator,
) -> None:
    tools, ran = arithmetic()
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(
            provider,
            "Compute.",
            handler=tools,
            agent_id=emulator.add_agent(),
            environment_id=SANDBOX,
            working_directory="/home/agent/work",
            execution_identity={"type": "aws_role", "role_arn": ROLE},
            timeout=20,
        )
        assert result.session_id is not None
        session = provider.client.get_session(result.session_id)
    assert result.text == "The total is 30."
    # add and mul of the first turn run at once, in either order; the last mul after them.
    assert sorted(ran[:2]) == ["add", "mul"]
    assert ran[2:] == ["mul"]
    assert session["working_directory"] == "/home/agent/work"
    assert session["execution_identity"] == {"type": "aws_role", "role_arn": ROLE}
    assert "vault_ids" not in session
    paths = {r.path for r in emulator.requests}
    assert f"/v1/sessions/{result.session_id}/events/stream" in paths
    for request in emulator.requests:
        authorization = request.headers["authorization"]
        assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={emulator.access_key_id}/"), (
            request.path
        )
        assert "/us-west-2/bedrock/aws4_request" in authorization
        assert request.headers["anthropic-beta"] == "managed-agents-2026-04-01"


def test_a_bedrock_api_key_is_sent_as_a_bearer_and_needs_no_signature(
    emulator: ClaudeEmulator,
) -> None:
    tools, _ = arithmetic()
    provider = ClaudeManagedAgentsBedrock(
        "us-west-2", api_key=emulator.api_key, base_url=emulator.base_url
    )
    with provider:
        result = run_to_completion(
            provider,
            "Compute.",
            handler=tools,
            agent_id=emulator.add_agent(),
            environment_id=SANDBOX,
            timeout=20,
        )
    assert result.text == "The total is 30."
    assert {r.headers["authorization"] for r in emulator.requests} == {f"Bearer {emulator.api_key}"}


def test_the_key_from_the_environment_and_a_wrong_one(
    emulator: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "not-the-key")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", emulator.base_url)
    with ClaudeManagedAgentsBedrock("us-west-2") as provider:
        assert provider.client.base_url.rstrip("/") == emulator.base_url.rstrip("/")
        with pytest.raises(AuthenticationError):
            provider.client.list_sessions()
    assert "not-the-key" not in repr(provider)


def test_a_signature_for_another_region_or_secret_is_refused(emulator: ClaudeEmulator) -> None:
    for region, secret in (("eu-west-1", emulator.secret_access_key), ("us-west-2", "x" * 40)):
        credentials = {"access_key_id": emulator.access_key_id, "secret_access_key": secret}
        with (
            ClaudeManagedAgentsBedrock(
                region, credentials=credentials, base_url=emulator.base_url, max_retries=0
            ) as provider,
            pytest.raises(AuthenticationError) as caught,
        ):
            provider.client.list_sessions()
        assert caught.value.status_code == 403
        assert "InvalidSignatureException" in str(caught.value)


def test_the_default_url_is_the_regions_bedrock_anthropic_prefix() -> None:
    provider = ClaudeManagedAgentsBedrock(
        "eu-central-1", credentials={"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s"}
    )
    assert provider.client.base_url.rstrip("/") == (
        "https://bedrock.eu-central-1.amazonaws.com/anthropic"
    )
    assert provider.region == "eu-central-1"


def test_a_key_and_aws_credentials_are_exclusive_and_bad_settings_are_named() -> None:
    aws = {"access_key_id": "AKIDEXAMPLE", "secret_access_key": "s"}
    with pytest.raises(ConfigurationError, match="exclusive"):
        ClaudeManagedAgentsBedrock("us-east-1", api_key="k", credentials=aws)
    with pytest.raises(ConfigurationError, match="region"):
        ClaudeManagedAgentsBedrock("us-east-1/../x", credentials=aws)
    with pytest.raises(ConfigurationError, match="timeout"):
        ClaudeManagedAgentsBedrock("us-east-1", credentials=aws, timeout=0)


def test_anthropic_only_options_are_refused_before_any_request(
    emulator: ClaudeEmulator,
) -> None:
    tools, _ = arithmetic()
    with emulator.provider(timeout=5) as provider:
        for option in ({"vault_ids": ["vlt_1"]}, {"environment": {"environment_id": "env"}}):
            with pytest.raises(ConfigurationError, match="claude-bedrock"):
                run_to_completion(
                    provider,
                    "x",
                    handler=tools,
                    agent_id="agent_1",
                    environment_id=SANDBOX,
                    **option,
                )
        with pytest.raises(ConfigurationError, match="execution_identity"):
            run_to_completion(
                provider,
                "x",
                handler=tools,
                agent_id=emulator.add_agent(),
                environment_id=SANDBOX,
                execution_identity={"type": "aws_role", "role_arn": "me"},
            )
        with pytest.raises(ConfigurationError, match="working_directory"):
            run_to_completion(
                provider,
                "x",
                handler=tools,
                agent_id=emulator.add_agent(),
                environment_id=SANDBOX,
                working_directory="relative/path",
            )
    assert not [r for r in emulator.requests if r.path == "/v1/sessions"]


def test_the_emulator_refuses_what_bedrock_sessions_do_not_take(
    emulator: ClaudeEmulator,
) -> None:
    client = emulator.provider(timeout=5, max_retries=0).client
    agent = emulator.add_agent()
    from req_managed_agents.errors import BadRequestError

    with pytest.raises(BadRequestError, match="vault_ids"):
        client._json(
            "POST",
            "/v1/sessions",
            idempotent=False,
            body={"agent": agent, "environment_id": SANDBOX, "vault_ids": []},
        )
    with pytest.raises(BadRequestError, match="sandbox"):
        client._json(
            "POST",
            "/v1/sessions",
            idempotent=False,
            body={"agent": agent, "environment_id": "env_plain id"},
        )
    with pytest.raises(BadRequestError, match="not both"):
        client._json(
            "POST",
            "/v1/sessions",
            idempotent=False,
            body={
                "agent": agent,
                "environment_id": SANDBOX,
                "role_arn": ROLE,
                "execution_identity": {"type": "aws_role", "role_arn": ROLE},
            },
        )


# --- elicitations -------------------------------------------------------------------------

SIGN_IN = "https://bedrock-agentcore.us-west-2.amazonaws.com/identities/oauth2/authorize?x=1"
ASKING = [
    Turn(
        text="Searching the repos.",
        server_tool_calls=[
            ToolCall(
                "search_repos",
                {"q": "emulator"},
                result="3 repositories",
                mcp_server="github",
                elicitation_url=SIGN_IN,
            )
        ],
    ),
    Turn(text=lambda inputs: f"Found: {inputs[0]}"),
]


class SignsIn(Tools):
    """Answers each elicitation, recording what it was shown."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer
        self.shown: list[Elicitation] = []

    def handle_elicitation(self, elicitation: Elicitation, context: ToolContext) -> Any:
        self.shown.append(elicitation)
        return self.answer


def test_an_elicitation_is_answered_by_the_handlers_hook(emulator: ClaudeEmulator) -> None:
    handler = SignsIn(ElicitationAccept())
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(
            provider,
            "Find repos.",
            handler=handler,
            agent_id=emulator.add_agent(ASKING),
            environment_id=SANDBOX,
            timeout=20,
        )
    (shown,) = handler.shown
    assert (shown.server_name, shown.url) == ("github", SIGN_IN)
    assert shown.id.startswith("sevt_")
    assert shown.message
    assert result.text == "Found: accepted"
    assert result.session_id is not None
    log = emulator.events(result.session_id)
    (answer,) = [e for e in log if e["type"] == "user.mcp_elicitation_response"]
    assert answer["mcp_elicitation_id"] == shown.id
    assert answer["response"] == {"type": "accept"}
    (tool_result,) = [e for e in log if e["type"] == "agent.mcp_tool_result"]
    assert tool_result["is_error"] is False


@pytest.mark.parametrize("answer", [ElicitationDecline(), ElicitationCancel(), "yes please"])
def test_a_declined_cancelled_or_wrongly_answered_elicitation_fails_the_call(
    emulator: ClaudeEmulator, answer: Any
) -> None:
    handler = SignsIn(answer)
    with emulator.provider(timeout=5) as provider:
        result = run_to_completion(
            provider,
            "Find repos.",
            handler=handler,
            agent_id=emulator.add_agent(ASKING),
            environment_id=SANDBOX,
            timeout=20,
        )
    expected = "declined" if isinstance(answer, ElicitationDecline) else "cancelled"
    assert result.text == f"Found: {expected}"
    assert result.session_id is not None
    (tool_result,) = [
        e for e in emulator.events(result.session_id) if e["type"] == "agent.mcp_tool_result"
    ]
    assert tool_result["is_error"] is True


def test_without_a_hook_the_elicitation_is_raised_with_its_link_and_the_session_resumes(
    emulator: ClaudeEmulator,
) -> None:
    tools, _ = arithmetic()
    agent_id = emulator.add_agent(ASKING)
    with emulator.provider(timeout=5) as provider:
        with pytest.raises(ElicitationRequiredError) as caught:
            run_to_completion(
                provider,
                "Find repos.",
                handler=tools,
                agent_id=agent_id,
                environment_id=SANDBOX,
                timeout=20,
            )
        error = caught.value
        assert error.url == SIGN_IN
        assert SIGN_IN in str(error)
        assert error.session_id is not None
        posted = [r for r in emulator.requests if r.method == "POST" and "events" in r.path]
        assert len(posted) == 1, "only the prompt: nothing was answered"
        resumed = run_to_completion(
            provider,
            None,
            handler=tools,
            session_id=error.session_id,
            elicit="accept",
            timeout=20,
        )
    assert resumed.text == "Found: accepted"


def test_an_unknown_elicit_policy_is_refused(emulator: ClaudeEmulator) -> None:
    tools, _ = arithmetic()
    with (
        emulator.provider(timeout=5) as provider,
        pytest.raises(ConfigurationError, match="elicit"),
    ):
        run_to_completion(
            provider,
            "x",
            handler=tools,
            agent_id="agent_1",
            environment_id=SANDBOX,
            elicit="maybe",
        )


# --- provisioning -------------------------------------------------------------------------


def test_an_agent_spec_provisions_a_bedrock_agent_once_and_runs(emulator: ClaudeEmulator) -> None:
    from req_managed_agents.provisioner import AgentSpec, MemoryStore, provision, teardown

    tools, _ = arithmetic()
    spec = AgentSpec(
        name="calc", system_prompt="Compute.", model="us.anthropic.claude-sonnet-4-6", tools=tools
    )
    store = MemoryStore()
    with emulator.provider(timeout=5) as provider:
        handle = provision(
            provider, spec, environment=SANDBOX, store=store, execution_role_arn=ROLE
        )
        again = provision(
            provider, spec, environment=SANDBOX, store=MemoryStore(), execution_role_arn=ROLE
        )
        assert again.agent_id == handle.agent_id, "found by its content-addressed name"
        created = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents"]
        assert len(created) == 1
        assert created[0].body["execution_identity"] == {"type": "aws_role", "role_arn": ROLE}
        assert (handle.kind, handle.environment_id) == ("claude-bedrock", SANDBOX)
        result = run_to_completion(provider, "Compute.", handler=tools, agent=handle, timeout=20)
        assert result.text == "The total is 30."
        teardown(provider, handle, store=store)
        assert provider.client.get_agent(handle.agent_id)["archived_at"] is not None


def test_a_bedrock_agent_is_torn_down_by_its_spec_and_role(emulator: ClaudeEmulator) -> None:
    from req_managed_agents.provisioner import AgentSpec, MemoryStore, provision, teardown

    spec = AgentSpec(name="calc", system_prompt="Compute.", model="us.anthropic.claude-sonnet-4-6")
    store = MemoryStore()
    other = "arn:aws:iam::123456789012:role/Other"
    with emulator.provider(timeout=5) as provider:
        handle = provision(
            provider, spec, environment=SANDBOX, store=store, execution_role_arn=ROLE
        )
        teardown(provider, spec, store=store, execution_role_arn=other)  # another agent: none
        assert provider.client.get_agent(handle.agent_id)["archived_at"] is None
        teardown(provider, spec, store=store, execution_role_arn=ROLE)
        assert provider.client.get_agent(handle.agent_id)["archived_at"] is not None
        with pytest.raises(ConfigurationError, match="execution_role_arn"):
            teardown(provider, spec, store=store)


def test_bedrock_provisioning_needs_a_role_and_a_sandbox_arn(emulator: ClaudeEmulator) -> None:
    from req_managed_agents.provisioner import AgentSpec, EnvironmentSpec, MemoryStore, provision

    spec = AgentSpec(name="calc", system_prompt="Compute.", model="us.anthropic.claude-sonnet-4-6")
    with emulator.provider(timeout=5) as provider:
        with pytest.raises(ConfigurationError, match="execution_role_arn"):
            provision(provider, spec, environment=SANDBOX, store=MemoryStore())
        with pytest.raises(ConfigurationError, match="sandbox"):
            provision(
                provider,
                spec,
                environment=EnvironmentSpec({"type": "cloud"}),
                store=MemoryStore(),
                execution_role_arn=ROLE,
            )
        with pytest.raises(ConfigurationError, match="role"):
            provision(
                provider,
                spec,
                environment=SANDBOX,
                store=MemoryStore(),
                execution_role_arn="not-a-role",
            )
    assert emulator.requests == []
