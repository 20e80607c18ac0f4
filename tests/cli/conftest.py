"""Fixtures of the command-line tests: emulators the environment points ``rma`` at, and an
environment where nothing answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def agentcore_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """An AgentCore emulator the AWS environment variables point at."""
    pytest.importorskip("botocore")
    from req_managed_agents.testing import AgentCoreEmulator

    with AgentCoreEmulator() as emulator:
        for name, value in {
            "AWS_ACCESS_KEY_ID": emulator.access_key_id,
            "AWS_SECRET_ACCESS_KEY": emulator.secret_access_key,
            "AWS_REGION": emulator.region,
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": emulator.data_url,
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL": emulator.control_url,
            "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield emulator


@pytest.fixture
def bedrock_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """The Claude emulator's Bedrock flavor, which the AWS environment points at."""
    pytest.importorskip("botocore")
    from req_managed_agents.testing import ClaudeEmulator, Turn

    script = [Turn(text="Hello from Bedrock.")]
    with ClaudeEmulator(script, flavor="bedrock", region="us-west-2") as emulator:
        for name, value in {
            "AWS_ACCESS_KEY_ID": emulator.access_key_id,
            "AWS_SECRET_ACCESS_KEY": emulator.secret_access_key,
            "AWS_REGION": "us-west-2",
            "ANTHROPIC_BEDROCK_BASE_URL": emulator.base_url,
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }.items():
            monkeypatch.setenv(name, value)
        for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
            monkeypatch.delenv(name, raising=False)
        yield emulator


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials, and an endpoint where nothing listens: a command that should fail before
    any request would fail with status 4 (unreachable) if it sent one."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
