"""The official SDK's Bedrock client (``AnthropicBedrock``, strict response validation,
its own SigV4 signing) against the Claude emulator's Bedrock flavor: the calls a
provisioned run makes answer what the SDK's Bedrock models accept. (All 34 Bedrock methods
are driven in ``tests/testing/test_bedrock_sdk_fidelity.py``.)"""

from __future__ import annotations

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra")
pytest.importorskip("botocore")

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/dev-0123456789"
ROLE = "arn:aws:iam::123456789012:role/AgentRole"


def test_the_sdk_signs_and_validates_agents_and_sessions_strictly() -> None:
    with ClaudeEmulator([Turn(text="hi")], flavor="bedrock", region="us-west-2") as emulator:
        sdk = anthropic.AnthropicBedrock(
            aws_access_key=emulator.access_key_id,
            aws_secret_key=emulator.secret_access_key,
            aws_region="us-west-2",
            base_url=emulator.base_url,
            max_retries=0,
            _strict_response_validation=True,
        )
        identity = {"type": "aws_role", "role_arn": ROLE}
        created = sdk.beta.agents.create(
            name="sdk_agent", model="us.anthropic.claude-sonnet-4-6", execution_identity=identity
        )
        assert created.execution_identity is not None
        assert sdk.beta.agents.retrieve(emulator.add_agent()).execution_identity is not None
        assert [a.id for a in sdk.beta.agents.list()][-1] != ""
        session = sdk.beta.sessions.create(
            agent=created.id, environment_id=SANDBOX, working_directory="/srv/app"
        )
        assert session.working_directory == "/srv/app"
        assert sdk.beta.sessions.retrieve(session.id).environment_id == SANDBOX
        (listed,) = list(sdk.beta.sessions.list())
        assert listed.created_by_me is True
        signed = [r.headers["authorization"] for r in emulator.requests]
        assert all("/us-west-2/bedrock/aws4_request" in value for value in signed)
