"""BedrockAgentCore configuration: optional botocore, credentials, region, options (no network)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from req_managed_agents import BedrockAgentCore, ConfigurationError
from req_managed_agents.providers._base import Opening
from req_managed_agents.providers.agentcore._provider import new_runtime_session_id

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYSECRETKEY"
TOKEN = "IQoJb3JpZ2luX2VjEJr//////////CANARYSESSIONTOKEN=="
CREDENTIALS = {"access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": SECRET}


@pytest.fixture(autouse=True)
def isolated_aws_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No shared config, credentials file or metadata service may leak into these tests."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE",
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def open_options(provider: BedrockAgentCore, **options: Any) -> Any:
    return provider.open_conversation(options, Opening(lambda event: None))


def test_without_botocore_the_error_names_the_extra_to_install() -> None:
    code = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("botocore", "boto3"):
            raise ImportError("blocked for the test")

sys.meta_path.insert(0, Blocker())
import req_managed_agents as rma
from req_managed_agents.errors import MissingDependencyError
try:
    rma.BedrockAgentCore(region="us-east-1")
except MissingDependencyError as error:
    print(error.extra, "|", error)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == (
        "aws | AWS providers need botocore: pip install 'req-managed-agents[aws]'"
    )


def test_credentials_and_region_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    provider = BedrockAgentCore()
    assert provider.client.region == "eu-west-1"
    assert provider.client.data_url == "https://bedrock-agentcore.eu-west-1.amazonaws.com"
    assert provider.client.control_url == (
        "https://bedrock-agentcore-control.eu-west-1.amazonaws.com"
    )


def test_a_missing_region_names_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="AWS_REGION"):
        BedrockAgentCore(credentials=CREDENTIALS)


def test_missing_credentials_are_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no AWS credentials"):
        BedrockAgentCore(region="us-east-1")


def test_endpoint_overrides_from_arguments_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL", "http://127.0.0.1:9")
    provider = BedrockAgentCore(
        "us-east-1", credentials=CREDENTIALS, endpoint_url="http://127.0.0.1:8"
    )
    assert (provider.client.data_url, provider.client.control_url) == (
        "http://127.0.0.1:8",
        "http://127.0.0.1:9",
    )


def test_repr_never_shows_secrets() -> None:
    provider = BedrockAgentCore("us-east-1", credentials={**CREDENTIALS, "session_token": TOKEN})
    for text in (repr(provider), str(provider), repr(provider.client), repr(vars(provider.client))):
        assert SECRET not in text
        assert TOKEN not in text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "harness_arn"),
        ({"harness_arn": "arn", "bogus": 1}, "unknown option"),
        ({"harness_arn": "arn", "runtime_session_id": "too-short"}, "33-100"),
        ({"harness_arn": "arn", "runtime_session_id": "-" + "a" * 40}, "starting with"),
        ({"harness_arn": "arn", "max_tokens": 0}, "positive integer"),
        ({"harness_arn": "arn", "idle_timeout": -1}, "idle_timeout"),
    ],
)
def test_bad_options_are_rejected_before_any_request(options: dict[str, Any], message: str) -> None:
    provider = BedrockAgentCore("us-east-1", credentials=CREDENTIALS)
    with pytest.raises(ConfigurationError, match=message):
        open_options(provider, **options)


def test_generated_runtime_session_ids_fit_the_service_rules() -> None:
    ids = {new_runtime_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(33 <= len(i) <= 100 and i[0].isalnum() for i in ids)


def test_a_harness_handle_supplies_the_arn() -> None:
    provider = BedrockAgentCore("us-east-1", credentials=CREDENTIALS)
    conversation = open_options(provider, harness={"arn": "arn:aws:x", "harnessId": "h-1"})
    assert conversation.harness_arn == "arn:aws:x"
    assert conversation.info.provider == "agentcore"
    assert conversation.info.metadata["harness_arn"] == "arn:aws:x"
