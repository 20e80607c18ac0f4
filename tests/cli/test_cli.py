"""The ``rma`` command line: demo, provisioning, teardown, artifacts, and how every command
fails (one ``rma:`` line with a hint and a documented exit status, never a traceback)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.cli._demo import run_demo
from req_managed_agents.testing import ClaudeEmulator
from tests.support.cli import fails, rma

SPEC: dict[str, Any] = {
    "agent": {"name": "ops", "system_prompt": "Help.", "model": "claude-sonnet-4-6"},
    "environment": {"config": {"type": "cloud"}, "runtimes": [{"lang": "go", "version": "1.23"}]},
}


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


def write_spec(tmp_path: Path, spec: Any, name: str = "spec.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return str(path)


# -- rma demo ------------------------------------------------------------------------------


def test_demo_runs_on_the_emulator_and_summarises() -> None:
    out = io.StringIO()
    args = _cli.build_parser().parse_args(["demo"])
    assert run_demo(args, out) == 0
    text = out.getvalue()
    assert "agent> Let me look up both cities." in text
    assert '  -> get_weather {"city": "Paris"}' in text
    assert "result   end_turn after 2 turns" in text
    assert "get_weather({'city': 'Paris'}) -> 'Paris: 18 C and sunny' [ok]" in text
    assert "\r" not in text, "no status line off a terminal"


def test_demo_on_the_agentcore_emulator(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = rma(capsys, "demo", "--provider", "agentcore")
    assert code == 0
    assert "result   end_turn after 2 turns" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--agent-id", "agent_1"], "needs both --agent-id and --environment-id"),
        (["--prompt", "hi"], "--prompt only applies to a real agent"),
        (["--harness-arn", "arn:x"], "--harness-arn needs --provider agentcore"),
        (["--provider", "agentcore", "--agent-id", "a"], "--agent-id does not apply with"),
        (["--turn-delay", "-1"], "argument --turn-delay: must not be negative"),
        (["--timeout", "0"], "argument --timeout: must be a positive number"),
        (
            ["--agent-id", "a", "--environment-id", "e", "--turn-delay", "1"],
            "--turn-delay only applies to the built-in emulators",
        ),
    ],
)
def test_demo_refuses_options_that_do_not_apply(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert fragment in fails(capsys, 2, "demo", *argv)


def test_demo_against_the_real_api_needs_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    line = fails(capsys, 3, "demo", "--agent-id", "agent_1", "--environment-id", "env_1")
    assert "set ANTHROPIC_API_KEY" in line
    assert "explicitly" not in line, "no Python-argument advice on the command line"


# -- errors of every command ---------------------------------------------------------------


def test_no_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "no command given" in fails(capsys, 2)


def test_an_unknown_flag_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(capsys, 2, "resolve", "a:b", "--store", "s.json", "--frobnicate")
    assert "unrecognized arguments: --frobnicate" in line
    assert "rma resolve --help" in line


def test_help_shows_defaults_and_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli.main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert "(default: 600.0)" in text
    assert "(default: claude)" in text
    assert "130  interrupted" in text
    assert _cli.main(["provision", "--help"]) == 0
    assert '"input_schema"' in capsys.readouterr().out


def _every_option_has_help(parser: Any) -> list[str]:
    import argparse

    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                missing += _every_option_has_help(sub)
        elif not action.help:
            missing.append(f"{parser.prog} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_option_and_argument_has_help() -> None:
    assert _every_option_has_help(_cli.build_parser()) == []


def test_python_argument_advice_is_put_in_flag_terms() -> None:
    assert _cli.in_flag_terms("starting a Claude session needs agent_id= (or agent=)") == (
        "starting a Claude session needs --agent-id"
    )
    assert "pass --region" in _cli.in_flag_terms("no AWS region: pass region= or set AWS_REGION")
    assert "--execution-role-arn" in _cli.in_flag_terms(
        "provisioning an AgentCore harness needs execution_role_arn"
    )


def test_an_unexpected_error_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from req_managed_agents import provisioner

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("wires crossed")

    monkeypatch.setattr(provisioner, "resolve", broken)
    (tmp_path / "s.json").write_text("{}")
    line = fails(capsys, 1, "resolve", "web:prod", "--store", str(tmp_path / "s.json"))
    assert "unexpected RuntimeError: wires crossed" in line


# -- rma provision -------------------------------------------------------------------------


def test_provision_is_idempotent_across_runs(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, SPEC)
    store = str(tmp_path / "store.json")
    code, first = rma(capsys, "provision", spec, "--store", store)
    assert code == 0
    code, second = rma(capsys, "provision", spec, "--store", store)
    assert second == first
    assert first["kind"] == "claude"
    posts = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents"]
    assert len(posts) == 1
    assert "## Runtime bootstrap" in posts[0].body["system"]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"agent": {**SPEC["agent"], "tools": ["x"]}}, '"agent"."tools"[0] must be an object'),
        ({"agent": {**SPEC["agent"], "tools": "x"}}, '"agent"."tools" must be an array'),
        (
            {"agent": {**SPEC["agent"], "tools": [{"name": "t", "description": "d"}]}},
            "tool declaration lacks input_schema",
        ),
        ({"agent": {**SPEC["agent"], "model_config": "fast"}}, "must be an object, got a string"),
        ({"agent": {**SPEC["agent"], "colour": "red"}}, "unknown agent spec keys: colour"),
        ({"agent": {**SPEC["agent"], "model": 4}}, '"agent"."model" must be a string'),
        ({"agent": {"name": "ops", "model": ""}}, "needs a model id"),
        ({"environment": {}}, 'it needs an "agent" object'),
        ([], "it must be a JSON object"),
        ({**SPEC, "extra": 1}, "unknown member(s) 'extra'"),
        ({**SPEC, "environment": {"runtimes": "3.12"}}, '"environment"."runtimes" must be'),
        (
            {**SPEC, "environment": {"runtimes": [{"lang": "python", "version": "1.0; rm -rf /"}]}},
            "runtime version",
        ),
    ],
)
@pytest.mark.usefixtures("offline")
def test_a_bad_spec_is_named_member_by_member(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spec: Any,
    fragment: str,
) -> None:
    path = write_spec(tmp_path, spec)
    line = fails(capsys, 2, "provision", path, "--store", str(tmp_path / "s.json"))
    assert fragment in line
    assert "dictionary update sequence" not in line
    assert "rma provision --help describes the spec file" in line


def test_a_spec_that_is_missing_or_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "s.json")
    assert "No such file or directory" in fails(
        capsys, 2, "provision", str(tmp_path / "nope.json"), "--store", store
    )
    (tmp_path / "bad.json").write_text("{agent:")
    assert "is not JSON" in fails(
        capsys, 2, "provision", str(tmp_path / "bad.json"), "--store", store
    )


def test_provision_refuses_aws_flags_for_claude_and_needs_a_role_for_agentcore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "s.json")
    line = fails(capsys, 2, "provision", spec, "--store", store, "--region", "us-east-1")
    assert "--region is an AWS option" in line
    line = fails(capsys, 2, "provision", spec, "--store", store, "--provider", "agentcore")
    assert "needs --execution-role-arn" in line


def test_provision_for_agentcore_without_a_region_says_which_flag(
    agentcore_env: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "s.json")
    role = "arn:aws:iam::123456789012:role/Harness"
    argv = ["provision", spec, "--store", store, "--provider", "agentcore"]
    line = fails(capsys, 3, *argv, "--execution-role-arn", role)
    assert "pass --region or set AWS_REGION" in line
    assert "region=" not in line


BEDROCK_SPEC: dict[str, Any] = {
    "agent": {"name": "ops", "system_prompt": "Help.", "model": "us.anthropic.claude-sonnet-4-6"}
}
SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/cli-0123456789"
AGENT_ROLE = "arn:aws:iam::123456789012:role/Agent"


def provision_on_bedrock(capsys: Any, spec: str, store: str, *extra: str) -> tuple[int, Any]:
    return rma(
        capsys,
        "provision",
        spec,
        "--store",
        store,
        "--provider",
        "claude-bedrock",
        "--environment-id",
        SANDBOX,
        "--execution-role-arn",
        AGENT_ROLE,
        *extra,
    )


def test_provision_and_teardown_on_bedrock_by_spec_and_by_name(
    bedrock_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, store = write_spec(tmp_path, BEDROCK_SPEC), str(tmp_path / "store.json")
    code, handle = provision_on_bedrock(capsys, spec, store, "--region", "us-west-2")
    assert code == 0
    assert (handle["kind"], handle["environment_id"]) == ("claude-bedrock", SANDBOX)
    assert provision_on_bedrock(capsys, spec, store)[1] == handle, "idempotent"
    (create,) = [r for r in bedrock_env.requests if r.method == "POST" and r.path == "/v1/agents"]
    assert create.body["execution_identity"] == {"type": "aws_role", "role_arn": AGENT_ROLE}
    assert all("/us-west-2/bedrock/" in r.headers["authorization"] for r in bedrock_env.requests)

    line = fails(capsys, 2, "teardown", handle["name"], "--store", store, "--region", "eu-west-1")
    assert "contradicts the sandbox ARN, which is in us-west-2" in line
    code, torn = rma(capsys, "teardown", handle["name"], "--store", store)
    assert (code, torn["kind"], torn["id"]) == (0, "claude-bedrock", handle["agent_id"])
    archived = f"/v1/agents/{handle['agent_id']}/archive"
    assert archived in [r.path for r in bedrock_env.requests if r.method == "POST"]

    code, again = provision_on_bedrock(capsys, spec, store)  # a new agent: the old one is gone
    assert code == 0
    assert again["agent_id"] != handle["agent_id"]
    argv = ["teardown", spec, "--store", store, "--provider", "claude-bedrock"]
    assert "needs --execution-role-arn" in fails(capsys, 2, *argv)
    other_role = "arn:aws:iam::123456789012:role/Other"
    code, missing = rma(capsys, *argv, "--execution-role-arn", other_role)
    assert (code, missing) == (0, {"torn_down": None}), "another role is another agent"
    code, torn = rma(capsys, *argv, "--execution-role-arn", AGENT_ROLE)
    assert (code, torn["id"]) == (0, again["agent_id"])


@pytest.mark.parametrize(
    ("extra", "spec", "fragment"),
    [
        ((), BEDROCK_SPEC, "needs --execution-role-arn"),
        (("--execution-role-arn", AGENT_ROLE), BEDROCK_SPEC, "needs --environment-id"),
        (
            ("--execution-role-arn", AGENT_ROLE, "--environment-id", SANDBOX),
            {**BEDROCK_SPEC, "environment": {"config": {"type": "cloud"}}},
            "has an environment",
        ),
    ],
)
def test_provision_on_bedrock_says_what_is_missing(
    bedrock_env: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    spec: Any,
    fragment: str,
) -> None:
    path, store = write_spec(tmp_path, spec), str(tmp_path / "s.json")
    argv = ["provision", path, "--store", store, "--provider", "claude-bedrock", *extra]
    assert fragment in fails(capsys, 2, *argv)
    assert bedrock_env.requests == []


def test_provision_on_bedrock_refuses_a_claude_model_name(
    bedrock_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, {"agent": {**BEDROCK_SPEC["agent"], "model": "claude-sonnet-4-6"}})
    line = fails(
        capsys,
        2,
        "provision",
        spec,
        "--store",
        str(tmp_path / "s.json"),
        "--provider",
        "claude-bedrock",
        "--environment-id",
        SANDBOX,
        "--execution-role-arn",
        AGENT_ROLE,
    )
    assert "inference profile ID" in line
    assert [r.path for r in bedrock_env.requests] == ["/v1/agents"], "only the lookup by name"


def test_environment_id_is_a_bedrock_provisioning_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "s.json")
    line = fails(capsys, 2, "provision", spec, "--store", store, "--environment-id", SANDBOX)
    assert "--environment-id is the sandbox of a Claude agent on Amazon Bedrock" in line


# -- rma teardown --------------------------------------------------------------------------


def test_teardown_by_spec_archives_the_agent_and_forgets_it(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "store.json")
    _, handle = rma(capsys, "provision", spec, "--store", store)
    code, removed = rma(capsys, "teardown", spec, "--store", store)
    assert code == 0
    assert removed == {"torn_down": handle["name"], "kind": "claude", "id": handle["agent_id"]}
    archives = [
        r for r in emulator.requests if r.path == f"/v1/agents/{handle['agent_id']}/archive"
    ]
    assert len(archives) == 1
    assert handle["agent_id"] not in (tmp_path / "store.json").read_text()
    assert rma(capsys, "teardown", spec, "--store", store) == (0, {"torn_down": None})


def test_teardown_by_the_handle_name_the_store_knows(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "store.json")
    _, handle = rma(capsys, "provision", spec, "--store", store)
    line = fails(capsys, 2, "teardown", handle["name"], "--store", store, "--provider", "agentcore")
    assert "contradicts the stored handle" in line
    code, removed = rma(capsys, "teardown", handle["name"], "--store", store)
    assert (code, removed["id"]) == (0, handle["agent_id"])
    line = fails(capsys, 1, "teardown", handle["name"], "--store", store)
    assert f"has no handle named {handle['name']!r}" in line
    environment = json.loads((tmp_path / "store.json").read_text())
    env_name = next(v["name"] for v in environment.values() if isinstance(v, dict))
    assert "is an environment, not an agent" in fails(
        capsys, 1, "teardown", env_name, "--store", store
    )


def test_teardown_of_an_agentcore_harness_by_name(
    agentcore_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, {"agent": {"name": "ops", "model": "anthropic.claude-v1"}})
    store = str(tmp_path / "store.json")
    role = ["--execution-role-arn", f"arn:aws:iam::{agentcore_env.account_id}:role/Harness"]
    code, handle = rma(
        capsys, "provision", spec, "--store", store, "--provider", "agentcore", *role
    )
    assert code == 0
    line = fails(capsys, 2, "teardown", handle["name"], "--store", store, "--region", "eu-west-1")
    assert "contradicts the harness ARN, which is in us-east-1" in line
    code, removed = rma(capsys, "teardown", handle["name"], "--store", store)
    assert removed == {
        "torn_down": handle["name"],
        "kind": "agentcore",
        "id": handle["harness_arn"],
    }
    other = write_spec(tmp_path, {"agent": {"name": "dev", "model": "m"}}, "other.json")
    _, made = rma(capsys, "provision", other, "--store", store, "--provider", "agentcore", *role)
    line = fails(capsys, 2, "teardown", other, "--store", store, "--provider", "agentcore")
    assert "needs --execution-role-arn" in line
    code, removed = rma(
        capsys, "teardown", other, "--store", store, "--provider", "agentcore", *role
    )
    assert (code, removed["id"]) == (0, made["harness_arn"])
    deletes = [r.path for r in agentcore_env.requests if r.method == "DELETE"]
    assert deletes == [f"/harnesses/{handle['harness_id']}", f"/harnesses/{made['harness_id']}"]


def test_teardown_needs_an_existing_store_and_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.json")
    assert f"the store {missing} does not exist" in fails(
        capsys, 2, "teardown", "ops_1", "--store", missing
    )
    (tmp_path / "s.json").write_text("{}")
    line = fails(capsys, 2, "teardown", "gone.json", "--store", str(tmp_path / "s.json"))
    assert "the spec gone.json does not exist" in line


# -- environments, tags ---------------------------------------------------------------------


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
                EnvironmentSpec({"type": "cloud", "packages": {"pip": [f"pkg{i}"]}}),
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
    assert {item["name"]: item["tags"] for item in listed} == {
        handles[0].name: ["prod"],
        handles[1].name: [],
        handles[2].name: [],
    }
    _, pruned = rma(
        capsys, "environments", "prune", "--base", "web", "--keep", "1", "--store", store
    )
    assert pruned["archived"] == [handles[1].name]
    assert set(pruned["kept"]) == {handles[2].name, handles[0].name}


def test_resolve_with_a_missing_store_says_so_not_unknown_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, 2, "resolve", "web:nope", "--store", str(tmp_path / "s.json"))
    assert "does not exist" in line
    assert "unknown tag" not in line


def test_resolve_of_an_unknown_tag_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.json").write_text("{}")
    line = fails(capsys, 1, "resolve", "web:nope", "--store", str(tmp_path / "s.json"))
    assert "unknown tag 'web:nope'" in line
    assert "rma tag BASE TAG DIGEST" in line
    assert "looks like 'base:tag'" in fails(
        capsys, 2, "resolve", "web", "--store", str(tmp_path / "s.json")
    )


def test_prune_refuses_a_negative_keep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(
        capsys, 2, "environments", "prune", "--base", "web", "--keep", "-1", "--store", "s.json"
    )
    assert "argument --keep: must not be negative" in line


# -- rma artifacts -------------------------------------------------------------------------


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
    line = fails(capsys, 1, "artifacts", "fetch", session_id, "missing.bin")
    assert "no artifact named 'missing.bin'" in line
    line = fails(capsys, 2, "artifacts", "list", session_id, "--mount", "/mnt/data")
    assert "--mount is an AgentCore option" in line


def test_agentcore_artifacts_from_the_command_line(
    agentcore_env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from req_managed_agents import BedrockAgentCore
    from req_managed_agents.artifacts import AgentCoreSessionStorage

    session = "rma-" + "c" * 40
    arn = agentcore_env.add_harness()
    mount = f"{agentcore_env.workdir}/data"
    with BedrockAgentCore() as provider:
        AgentCoreSessionStorage(provider.client, arn, session, mount).put("a.bin", b"\x00xyz")
    common = ["--provider", "agentcore", "--harness-arn", arn, "--mount", mount]
    _, listed = rma(capsys, "artifacts", "list", session, *common)
    assert [(item["name"], item["size"]) for item in listed] == [("a.bin", 4)]
    target = tmp_path / "a.bin"
    assert _cli.main(["artifacts", "fetch", session, "a.bin", "-o", str(target), *common]) == 0
    assert target.read_bytes() == b"\x00xyz"
    assert "need --harness-arn and --mount" in fails(
        capsys, 2, "artifacts", "list", session, "--provider", "agentcore"
    )


# -- Ctrl-C on every command path ----------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["provision", "{spec}", "--store", "{store}"],
        ["teardown", "{spec}", "--store", "{store}"],
        ["environments", "list", "--base", "web", "--store", "{store}"],
        ["environments", "prune", "--base", "web", "--keep", "1", "--store", "{store}"],
        ["artifacts", "list", "sesn_1"],
        ["run", "--agent-id", "a", "--environment-id", "e", "hi"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_ctrl_c_during_a_request_is_one_line_on_every_path(
    emulator: ClaudeEmulator,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    import requests.adapters

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    (tmp_path / "store.json").write_text("{}")
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", interrupted)
    values = {"spec": write_spec(tmp_path, SPEC), "store": str(tmp_path / "store.json")}
    code = _cli.main([arg.format(**values) for arg in argv])
    assert (code, capsys.readouterr().err) == (130, "rma: interrupted\n")


@pytest.mark.parametrize("command", ["tag", "resolve"])
def test_ctrl_c_while_reading_the_store_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    from req_managed_agents.provisioner import FileStore

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    (tmp_path / "s.json").write_text("{}")
    monkeypatch.setattr(FileStore, "get", interrupted)
    argv = ["web", "prod", "0123abcd"] if command == "tag" else ["web:prod"]
    code = _cli.main([command, *argv, "--store", str(tmp_path / "s.json")])
    assert (code, capsys.readouterr().err) == (130, "rma: interrupted\n")


def test_a_real_ctrl_c_during_provision_is_one_line(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    reached, release = threading.Event(), threading.Event()

    def hold() -> None:
        reached.set()
        release.wait(20)

    emulator.before_requests("POST", "/v1/agents", hold)
    spec, store = write_spec(tmp_path, SPEC), str(tmp_path / "store.json")
    child = subprocess.Popen(
        [sys.executable, "-m", "req_managed_agents", "provision", spec, "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        assert reached.wait(20), "the provision never reached its create"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
    finally:
        release.set()
        if child.poll() is None:
            child.kill()
    assert (child.returncode, out, err) == (130, "", "rma: interrupted\n")


# -- a newcomer's slips --------------------------------------------------------------------


def test_a_misspelt_top_level_option_names_the_right_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = fails(capsys, 2, "--versoin")
    assert "unrecognized arguments: --versoin (did you mean --version?)" in line


def test_fetching_an_artifact_to_a_terminal_asks_for_a_file(
    emulator: ClaudeEmulator, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from req_managed_agents import ClaudeManagedAgents

    with ClaudeManagedAgents() as provider:
        session_id = provider.client.create_session(
            emulator.add_agent(), emulator.add_environment()
        )["id"]
    emulator.add_output(session_id, "chart.png", b"\x89PNG binary")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    line = fails(capsys, 2, "artifacts", "fetch", session_id, "chart.png")
    assert "not for a terminal" in line
    assert "-o FILE" in line


def test_listing_a_base_that_does_not_exist_says_which_do(
    emulator: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store.json"
    code, _ = rma(capsys, "provision", write_spec(tmp_path, SPEC), "--store", str(store))
    assert code == 0
    assert _cli.main(["environments", "list", "--base", "ops", "--store", str(store)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    assert "bases: ops_env" in captured.err


def test_the_demo_against_an_api_says_which(
    emulator: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, environment = emulator.add_agent(), emulator.add_environment()
    _cli.main(["demo", "--agent-id", agent, "--environment-id", environment])
    assert f"Managed Agents API at {emulator.base_url}" in capsys.readouterr().out


def test_a_missing_extra_is_hinted_as_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from req_managed_agents.errors import MissingDependencyError

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise MissingDependencyError("Bedrock AgentCore needs botocore", extra="aws")

    monkeypatch.setattr("req_managed_agents.cli._run.run_command", missing)
    arn = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/weather-AbCdEf1234"
    line = fails(capsys, 3, "run", "--provider", "agentcore", "--harness-arn", arn, "hi")
    assert "pip install 'req-managed-agents[aws]'" in line
    assert "credentials" not in line
