"""``--profile`` on every command that reaches AWS, refused on the others; a bad profile is a
configuration error naming it, wherever it is met; Claude on Bedrock runs in its sandbox
ARN's region without ``--region``. Temporary AWS config files only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.process import rma_process
from tests.support.cli import fails, rma

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/cli-0123456789"
ROLE = "arn:aws:iam::123456789012:role/Agent"
BEDROCK_SPEC = {"agent": {"name": "helper", "model": "us.anthropic.claude-sonnet-4-6"}}


def profile_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emulator: Any) -> Path:
    """A config with a ``work`` profile holding the emulator's keys, and no keys in the
    environment: only ``--profile work`` (or ``AWS_PROFILE``) can sign."""
    config, credentials = tmp_path / "aws-config", tmp_path / "aws-credentials"
    config.write_text("[profile work]\nregion = us-east-1\n")
    credentials.write_text(
        f"[work]\naws_access_key_id = {emulator.access_key_id}\n"
        f"aws_secret_access_key = {emulator.secret_access_key}\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    return config


def test_profile_picks_the_agentcore_credentials(
    agentcore_env: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = profile_files(tmp_path, monkeypatch, agentcore_env)
    arn = agentcore_env.add_harness(["Hello."])
    argv = ["run", "--provider", "agentcore", "--harness-arn", arn, "--json", "Hi"]
    code, result = rma(capsys, *argv, "--profile", "work")
    assert (code, result["text"]) == (0, "Hello.")
    assert result["resume"].startswith(f"rma run --provider agentcore --harness-arn {arn} ")
    assert "--profile work --session-id" in result["resume"], "the resume keeps the profile"
    assert rma(capsys, "harnesses", "list", "--profile", "work")[0] == 0
    line = fails(capsys, 3, *argv, "--profile", "nosuch")
    assert "AWS profile 'nosuch' (given as --profile) does not exist" in line
    assert str(config) in line
    line = fails(capsys, 3, "harnesses", "list", "--profile", "nosuch")
    assert "'nosuch'" in line
    session = "rma-" + "0" * 40
    line = fails(
        capsys,
        3,
        "artifacts",
        "list",
        session,
        "--provider",
        "agentcore",
        "--harness-arn",
        arn,
        "--mount",
        "/mnt/data",
        "--profile",
        "nosuch",
    )
    assert "'nosuch'" in line


def test_a_bad_aws_profile_from_the_environment_is_named_in_every_command(
    agentcore_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = profile_files(tmp_path, monkeypatch, agentcore_env)
    monkeypatch.setenv("AWS_PROFILE", "nosuch")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"agent": {"name": "h", "model": "anthropic.claude"}}))
    store = str(tmp_path / "store.json")
    arn = agentcore_env.add_harness()
    for argv in (
        ["harnesses", "list"],
        ["run", "--provider", "agentcore", "--harness-arn", arn, "Hi"],
        [
            "provision",
            str(spec),
            "--store",
            store,
            "--provider",
            "agentcore",
            "--execution-role-arn",
            ROLE,
        ],
    ):
        done = rma_process(*argv)
        assert done.code == 3, done.err
        line = done.error_line()
        assert "AWS profile 'nosuch' (from AWS_PROFILE) does not exist" in line, line
        assert str(config) in line
        assert "bug" not in line


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--agent-id", "a", "--environment-id", "e", "Hi"],
        ["run", "--provider", "openai", "--agent-id", "a", "Hi"],
        ["artifacts", "list", "sesn_1"],
    ],
)
@pytest.mark.usefixtures("offline")
def test_profile_is_refused_where_nothing_reaches_aws(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, 2, *argv, "--profile", "work")
    assert "--profile" in line
    assert "AgentCore" in line or "agentcore" in line


def test_profile_is_refused_by_provision_for_claude(
    offline: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"agent": {"name": "a", "model": "claude-sonnet-4-6"}}))
    line = fails(
        capsys, 2, "provision", str(spec), "--store", str(tmp_path / "s.json"), "--profile", "w"
    )
    assert "--profile is an AWS option" in line


# -- Claude on Bedrock: the region of the sandbox ARN ------------------------------------------


def test_bedrock_runs_in_the_sandbox_region_without_region(
    bedrock_env: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    agent = bedrock_env.add_agent()
    argv = ["run", "--provider", "claude-bedrock", "--agent-id", agent]
    code, result = rma(capsys, *argv, "--environment-id", SANDBOX, "--json", "Hi")
    assert (code, result["text"]) == (0, "Hello from Bedrock.")
    assert all("/us-west-2/bedrock/" in r.headers["authorization"] for r in bedrock_env.requests)
    assert result["resume"] == (
        f"rma run --provider claude-bedrock --region us-west-2 --session-id {result['session_id']}"
    ), "a session id names no region: the resume carries it"
    line = fails(capsys, 2, *argv, "--environment-id", SANDBOX, "--region", "eu-west-1", "Hi")
    assert "--region eu-west-1 contradicts the sandbox ARN, which is in us-west-2" in line


def test_bedrock_provision_takes_the_sandbox_region_too(
    bedrock_env: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(BEDROCK_SPEC))
    argv = ["provision", str(spec), "--store", str(tmp_path / "store.json")]
    code, handle = rma(
        capsys,
        *argv,
        "--provider",
        "claude-bedrock",
        "--environment-id",
        SANDBOX,
        "--execution-role-arn",
        ROLE,
    )
    assert code == 0
    assert handle["environment_id"] == SANDBOX
    assert all("/us-west-2/bedrock/" in r.headers["authorization"] for r in bedrock_env.requests)
