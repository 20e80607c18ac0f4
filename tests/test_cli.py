"""The ``rma`` command line: demo, provisioning and environment commands."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import _cli
from req_managed_agents._demo import run_demo
from req_managed_agents.testing import ClaudeEmulator


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


def rma(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = _cli.main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith(("{", "[")) else out


def test_demo_runs_on_the_emulator_and_summarises() -> None:
    out = io.StringIO()
    args = _cli.build_parser().parse_args(["demo"])
    assert run_demo(args, out) == 0
    text = out.getvalue()
    assert "agent> Let me look up both cities." in text
    assert "result   end_turn after 2 turns" in text
    assert "get_weather({'city': 'Paris'}) -> 'Paris: 18 C and sunny' [ok]" in text


def test_demo_refuses_half_of_the_real_api_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = io.StringIO()
    args = _cli.build_parser().parse_args(["demo", "--agent-id", "agent_1"])
    assert run_demo(args, out) == 2
    assert "ANTHROPIC_API_KEY" in out.getvalue()


def test_provision_is_idempotent_across_runs(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "agent": {"name": "ops", "system_prompt": "Help.", "model": "claude-sonnet-4-6"},
                "environment": {
                    "config": {"type": "cloud"},
                    "runtimes": [{"lang": "go", "version": "1.23"}],
                },
            }
        )
    )
    store = str(tmp_path / "store.json")
    code, first = rma(capsys, "provision", str(spec), "--store", store)
    assert code == 0
    code, second = rma(capsys, "provision", str(spec), "--store", store)
    assert second == first
    assert first["kind"] == "claude"
    posts = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents"]
    assert len(posts) == 1
    assert "## Runtime bootstrap" in posts[0].body["system"]


def test_a_hostile_runtime_version_is_rejected(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "agent": {"name": "ops", "system_prompt": "", "model": "m"},
                "environment": {"runtimes": [{"lang": "python", "version": "1.0; rm -rf /"}]},
            }
        )
    )
    code = _cli.main(["provision", str(spec), "--store", str(tmp_path / "s.json")])
    assert code == 1
    assert "runtime version" in capsys.readouterr().err
    assert not [r for r in emulator.requests if r.method == "POST"], "rejected before any request"


def test_tag_resolve_list_and_prune(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from req_managed_agents import ClaudeManagedAgents
    from req_managed_agents.provisioner import EnvironmentSpec, FileStore, ensure_environment

    store_path = tmp_path / "store.json"
    with ClaudeManagedAgents() as provider:
        handles = [
            ensure_environment(
                provider,
                EnvironmentSpec({"type": "cloud", "v": i}),
                name="web",
                store=FileStore(store_path),
            )
            for i in range(3)
        ]
    store = str(store_path)
    assert rma(capsys, "tag", "web", "prod", handles[0].digest, "--store", store)[0] == 0
    _, resolved = rma(capsys, "resolve", "web:prod", "--store", store)
    assert resolved["environment_id"] == handles[0].environment_id
    _, listed = rma(capsys, "environments", "list", "--base", "web", "--store", store)
    assert {item["name"] for item in listed} == {h.name for h in handles}
    _, pruned = rma(
        capsys, "environments", "prune", "--base", "web", "--keep", "1", "--store", store
    )
    assert pruned["archived"] == [handles[1].name]
    assert set(pruned["kept"]) == {handles[2].name, handles[0].name}


def test_resolve_of_an_unknown_tag_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli.main(["resolve", "web:nope", "--store", str(tmp_path / "s.json")]) == 1
    assert "unknown tag" in capsys.readouterr().err


def test_artifacts_list_and_fetch(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from req_managed_agents import ClaudeManagedAgents

    with ClaudeManagedAgents() as provider:
        session_id = provider.client.create_session(
            emulator.add_agent(), emulator.add_environment()
        )["id"]
    emulator.add_output(session_id, "result.bin", b"\x00\x01payload")
    code, listed = rma(capsys, "artifacts", "list", session_id)
    assert code == 0
    assert [(item["name"], item["size"]) for item in listed] == [("result.bin", 9)]
    target = tmp_path / "out.bin"
    code, _ = rma(capsys, "artifacts", "fetch", session_id, "result.bin", "-o", str(target))
    assert code == 0
    assert target.read_bytes() == b"\x00\x01payload"
    assert _cli.main(["artifacts", "fetch", session_id, "missing.bin"]) == 1
    assert "no artifact named 'missing.bin'" in capsys.readouterr().err


def test_agentcore_artifacts_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from req_managed_agents import BedrockAgentCore
    from req_managed_agents.artifacts import AgentCoreSessionStorage
    from req_managed_agents.testing import AgentCoreEmulator

    session = "rma-" + "c" * 40
    with AgentCoreEmulator() as emulator:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", emulator.access_key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", emulator.secret_access_key)
        monkeypatch.setenv("AWS_REGION", emulator.region)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", emulator.data_url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL", emulator.control_url)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
        arn = emulator.add_harness()
        mount = f"{emulator.workdir}/data"
        with BedrockAgentCore() as provider:
            AgentCoreSessionStorage(provider.client, arn, session, mount).put("a.bin", b"\x00xyz")
        common = ["--provider", "agentcore", "--harness-arn", arn, "--mount", mount]
        _, listed = rma(capsys, "artifacts", "list", session, *common)
        assert [(item["name"], item["size"]) for item in listed] == [("a.bin", 4)]
        target = tmp_path / "a.bin"
        assert _cli.main(["artifacts", "fetch", session, "a.bin", "-o", str(target), *common]) == 0
        assert target.read_bytes() == b"\x00xyz"
