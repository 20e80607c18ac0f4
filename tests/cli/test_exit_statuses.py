"""The README's exit status table is the one ``rma`` uses, and every status it documents is
what a real failing command returns; each failure's hint fits it (the provider's own key
and endpoint variables, the command that resumes the session)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.cli._exits import EXIT_STATUSES
from req_managed_agents.testing import (
    ClaudeEmulator,
    ConverseTurn,
    OpenAIAgentsEmulator,
    ToolCall,
    Turn,
)
from tests.cli.process import rma_process
from tests.support.cli import fails

README = Path(__file__).resolve().parents[2] / "README.md"
SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/cli-0123456789"
SPEC = '{"agent": {"name": "support", "model": "claude-sonnet-4-6"}}'


def readme_statuses() -> list[tuple[int, str]]:
    """The rows of the README's exit status table."""
    text = README.read_text(encoding="utf-8")
    table = text.split("| status | meaning |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    rows = [re.fullmatch(r"\| (\d+) \| (.*) \|", row) for row in table.splitlines()]
    assert all(rows), table
    return [(int(row.group(1)), row.group(2)) for row in rows if row]


def test_the_readme_table_is_the_one_rma_uses(capsys: pytest.CaptureFixture[str]) -> None:
    assert readme_statuses() == list(EXIT_STATUSES)
    assert _cli.main(["--help"]) == 0
    shown = capsys.readouterr().out
    for status, meaning in EXIT_STATUSES:
        first_words = " ".join(meaning.replace("`", "").split()[:3])
        assert f"  {status:<4} {first_words}" in shown


# -- every documented status, from a real command ---------------------------------------------


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.json").write_text(SPEC)
    (tmp_path / "store.json").write_text("{}")
    (tmp_path / "corrupt.json").write_text("{not json")
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "Hi"}\n')
    return tmp_path


def session(emulator: ClaudeEmulator, *script: Any) -> list[str]:
    agent = emulator.add_agent(list(script) or ["Hello."])
    return ["--agent-id", agent, "--environment-id", emulator.add_environment()]


def interrupted(emulator: ClaudeEmulator) -> int:
    """A real Ctrl-C to a running ``rma run``."""
    argv = ["run", *session(emulator, Turn(text="slow", delay=30)), "Go"]
    child = subprocess.Popen(
        [sys.executable, "-m", "req_managed_agents", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        # Pressed once the run is under way (a loaded machine may take a while to get there).
        assert emulator.wait_until(emulator.session_ids, timeout=120), "the run never started"
        child.send_signal(signal.SIGINT)
        return child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def reader_gone(emulator: ClaudeEmulator) -> int:
    """``rma run ... | head -c 0``: the output's reader closes before anything is written."""
    child = subprocess.Popen(
        [sys.executable, "-m", "req_managed_agents", "run", *session(emulator), "--json", "Hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    assert child.stdout is not None
    child.stdout.close()
    try:
        return child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def in_process(*argv: str) -> int:
    return _cli.main(list(argv))


def answered_twice(emulator: ClaudeEmulator, folder: Path) -> int:
    """A second ``rma pending`` answer to a decision a run left (the first allowed it)."""
    from req_managed_agents import pending
    from req_managed_agents.stores import FileStore

    asks = ToolCall("bash", {"command": "ls"}, result="a b", permission="ask")
    argv = ["run", *session(emulator, Turn(server_tool_calls=[asks]), "Listed.")]
    assert in_process(*argv, "--confirm", "defer", "--decisions", "decisions", "Go") == 1
    [decision] = pending(FileStore(folder / "decisions"))
    assert in_process("pending", "approve", decision.token, "--decisions", "decisions") == 0
    return in_process("pending", "deny", decision.token, "--decisions", "decisions")


# Each documented status: commands that must return it (fixtures: claude, folder).
PRODUCERS: dict[int, list[Callable[[ClaudeEmulator, Path], int]]] = {
    0: [lambda c, f: in_process("run", *session(c), "Hi")],
    1: [
        lambda c, f: in_process("run", *session(c, Turn(text="No.", end="terminated")), "Hi"),
        lambda c, f: in_process("resolve", "web:prod", "--store", "store.json"),
        lambda c, f: in_process("teardown", "nothing_here", "--store", "store.json"),
        lambda c, f: in_process(
            "batch",
            "prompts.jsonl",
            "-o",
            "out.jsonl",
            "--agent-id",
            "agent_nope",
            "--environment-id",
            c.add_environment(),
        ),
    ],
    2: [
        lambda c, f: in_process("run", "--agent-id", "a", "Hi"),
        lambda c, f: in_process("provision", "missing.json", "--store", "store.json"),
        lambda c, f: in_process("resolve", "web:prod", "--store", "corrupt.json"),
        lambda c, f: in_process("provision", "spec.json", "--store", "corrupt.json"),
        lambda c, f: in_process(
            "batch", "prompts.jsonl", "-o", "no/such/folder/out.jsonl", *session(c)
        ),
    ],
    3: [
        lambda c, f: in_process("run", "--provider", "openai", "--agent-id", "a", "Hi"),
        lambda c, f: in_process("harnesses", "list", "--region", "us-east-1", "--profile", "x"),
    ],
    4: [
        lambda c, f: in_process("run", "--agent-id", "agent_nope", "--environment-id", "e", "Hi"),
        lambda c, f: in_process("artifacts", "list", "sesn_nope"),
    ],
    5: [answered_twice],
    124: [
        lambda c, f: in_process(
            "run", *session(c, Turn(text="slow", delay=5)), "--timeout", "0.3", "Hi"
        )
    ],
    130: [lambda c, f: interrupted(c)],
    141: [lambda c, f: reader_gone(c)],
}


@pytest.mark.parametrize("status", [status for status, _ in readme_statuses()])
def test_every_documented_status_is_what_a_real_command_returns(
    status: int,
    claude: ClaudeEmulator,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(folder / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(folder / "aws-credentials"))
    assert PRODUCERS[status], f"no command documented to return {status}"
    for produce in PRODUCERS[status]:
        assert produce(claude, folder) == status, capsys.readouterr().err


# -- hints that fit the failure ---------------------------------------------------------------


def test_openai_failures_name_openai_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIAgentsEmulator(["Hi."]) as emulator:
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        line = fails(capsys, 4, "run", "--provider", "openai", "--agent-id", "agent_1", "Hi")
        assert "(hint: check OPENAI_API_KEY)" in line
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")
    line = fails(capsys, 4, "run", "--provider", "openai", "--agent-id", "agent_1", "Hi")
    assert "check the network and the endpoint (OPENAI_BASE_URL)" in line
    assert "ANTHROPIC" not in line


def test_bedrock_failures_name_the_aws_credentials_and_its_endpoint(
    bedrock_env: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--provider", "claude-bedrock", "--agent-id", "a", "--environment-id", SANDBOX]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    line = fails(capsys, 4, *argv, "Hi")
    assert "(hint: check the AWS credentials (--profile, AWS_PROFILE)" in line
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", "http://127.0.0.1:9")
    line = fails(capsys, 4, *argv, "Hi")
    assert "the endpoint (ANTHROPIC_BEDROCK_BASE_URL)" in line


def test_agentcore_control_plane_failures_name_its_endpoint(
    agentcore_env: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL", "http://127.0.0.1:9")
    line = fails(capsys, 4, "harnesses", "list")
    assert "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL" in line
    assert "ANTHROPIC" not in line


def test_a_corrupt_store_is_the_command_lines_mistake(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, 2, "resolve", "web:prod", "--store", "corrupt.json")
    assert "corrupt.json is corrupt" in line
    assert "(hint: check --store" in line


def test_a_turn_that_may_have_run_offers_to_continue_with_a_new_prompt(
    agentcore_env: Any,
) -> None:
    arn = agentcore_env.add_harness([ConverseTurn(text="A long answer, cut short.")])
    agentcore_env.truncate_stream(after_frames=3)
    done = rma_process("run", "--provider", "agentcore", "--harness-arn", arn, "--json", "Hi")
    assert done.code == 4, done.err
    result = done.json()
    assert result["error"]["type"] == "InvocationOutcomeUnknownError"
    resume = f"rma run --provider agentcore --harness-arn {arn} --session-id {result['session_id']}"
    assert result["resume"] == resume
    assert f"check, then {resume} PROMPT" in done.error_line()
    assert len(agentcore_env.invocations) == 1, "not sent again"


def test_a_worker_without_its_key_names_the_key_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_ENVIRONMENT_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-the-one")
    argv = ["worker", "--environment-id", "env_1", "--workdir", str(tmp_path)]
    line = fails(capsys, 3, *argv)
    assert "credentials: ANTHROPIC_ENVIRONMENT_KEY or --environment-key-file" in line
    assert "ANTHROPIC_API_KEY" not in line
