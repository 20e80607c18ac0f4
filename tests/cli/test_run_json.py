"""``rma run --json`` prints one JSON object for every outcome, with the same keys each time:
the session to resume, how the run ended (or null), the error and the command that picks
the session up again. Driven through the real entry point in a child process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, ConverseTurn, OpenAIAgentsEmulator, Turn
from tests.cli.process import rma_process

README = Path(__file__).resolve().parents[2] / "README.md"


def documented_keys() -> list[str]:
    """The keys of the README's ``--json`` table, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("| key | value |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    return [re.match(r"\| `(\w+)` \|", row).group(1) for row in table.splitlines()]  # type: ignore[union-attr]


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


def new_session(emulator: ClaudeEmulator, script: Any) -> list[str]:
    return [
        "--agent-id",
        emulator.add_agent(script),
        "--environment-id",
        emulator.add_environment(),
    ]


def check_schema(result: dict[str, Any], code: int) -> None:
    assert list(result) == documented_keys()
    assert result["exit_status"] == code


# -- the acceptance outcomes: a timeout, a 404, a bad profile ------------------------------


def test_a_timeout_prints_the_session_and_the_command_that_resumes_it(
    claude: ClaudeEmulator,
) -> None:
    done = rma_process(
        "run", *new_session(claude, [Turn(text="slow", delay=20)]), "--timeout", "2", "--json", "Go"
    )
    assert done.code == 124, done.err
    result = done.json()
    check_schema(result, 124)
    (session_id,) = claude.session_ids()
    assert result["session_id"] == session_id
    assert (result["terminal"], result["stop_reason"], result["text"]) == (None, None, None)
    assert result["error"]["type"] == "SessionTimeoutError"
    assert result["error"]["message"].startswith("the session did not finish within 2 s")
    assert result["resume"] == f"rma run --session-id {session_id}"
    assert result["resume"] in done.error_line()


def test_an_agentcore_timeout_resumes_on_the_same_harness(agentcore_env: Any) -> None:
    arn = agentcore_env.add_harness([ConverseTurn(text="slow", delay=5)])
    done = rma_process(
        "run", "--provider", "agentcore", "--harness-arn", arn, "--timeout", "2", "--json", "Go"
    )
    assert done.code == 124, done.err
    result = done.json()
    check_schema(result, 124)
    session_id = result["session_id"]
    assert session_id == agentcore_env.invocations[0].runtime_session_id
    assert result["resume"] == (
        f"rma run --provider agentcore --harness-arn {arn} --session-id {session_id}"
    )


def test_a_404_prints_the_error_and_no_resume(claude: ClaudeEmulator) -> None:
    done = rma_process(
        "run",
        "--agent-id",
        "agent_nope",
        "--environment-id",
        claude.add_environment(),
        "--json",
        "Hi",
    )
    assert done.code == 4, done.err
    result = done.json()
    check_schema(result, 4)
    assert result["session_id"] is None, "no session was created"
    assert result["error"]["type"] == "NotFoundError"
    assert "agent 'agent_nope' was not found" in result["error"]["message"]
    assert result["error"]["hint"] in done.error_line()
    assert result["resume"] is None
    assert result["tool_calls"] == []


def test_a_404_of_the_session_continued_names_it_and_offers_no_resume(
    claude: ClaudeEmulator,
) -> None:
    done = rma_process("run", "--session-id", "sesn_nope", "--json", "Hi")
    assert done.code == 4, done.err
    result = done.json()
    check_schema(result, 4)
    assert result["session_id"] == "sesn_nope"
    assert result["error"]["type"] == "NotFoundError"
    assert result["resume"] is None


def test_a_bad_profile_prints_a_configuration_error_naming_it(
    agentcore_env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "aws-config"
    config.write_text("[profile work]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "nosuch")
    arn = agentcore_env.add_harness()
    done = rma_process("run", "--provider", "agentcore", "--harness-arn", arn, "--json", "Hi")
    assert done.code == 3, done.err
    result = done.json()
    check_schema(result, 3)
    assert result["error"]["type"] == "ConfigurationError"
    message = result["error"]["message"]
    assert "'nosuch'" in message
    assert "AWS_PROFILE" in message
    assert str(config) in message
    assert "bug" not in done.err
    assert (result["session_id"], result["resume"]) == (None, None)
    assert agentcore_env.invocations == []


# -- every other outcome, same keys -------------------------------------------------------------


def test_success_and_a_terminated_run_carry_no_error(claude: ClaudeEmulator) -> None:
    done = rma_process("run", *new_session(claude, ["Hello."]), "--json", "Hi")
    assert done.code == 0, done.err
    result = done.json()
    check_schema(result, 0)
    (session_id,) = claude.session_ids()
    assert (result["terminal"], result["text"], result["error"]) == ("end_turn", "Hello.", None)
    assert result["stop_reason"] == {"type": "end_turn"}
    assert result["resume"] == f"rma run --session-id {session_id}"
    done = rma_process(
        "run", *new_session(claude, [Turn(text="No.", end="terminated")]), "--json", "Hi"
    )
    assert done.code == 1
    result = done.json()
    check_schema(result, 1)
    assert result["terminal"] == "terminated"
    assert result["stop_reason"]["type"]
    assert result["error"] is None


def test_a_usage_error_prints_the_object_too(offline: None) -> None:
    for argv in (["--agent-id", "a"], ["--timeout", "soon"], ["--agent-idd", "a"]):
        done = rma_process("run", *argv, "--json", "Hi")
        assert done.code == 2, done.err
        result = done.json()
        check_schema(result, 2)
        assert result["error"]["type"] == "UsageError"
        assert result["error"]["message"] in done.error_line()


def test_without_json_a_failure_prints_nothing_on_standard_output(claude: ClaudeEmulator) -> None:
    done = rma_process("run", "--agent-id", "agent_nope", "--environment-id", "env_1", "Hi")
    assert (done.code, done.out) == (4, "")


def test_ctrl_c_prints_the_object_with_the_session(claude: ClaudeEmulator) -> None:
    argv = [*new_session(claude, [Turn(text="slow", delay=30)]), "--json", "Go"]
    child = subprocess.Popen(
        [sys.executable, "-m", "req_managed_agents", "run", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            sessions = claude.session_ids()
            if sessions and any(
                e["type"] == "session.status_running" for e in claude.events(sessions[0])
            ):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run never started its turn")
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert (child.returncode, err) == (130, "rma: interrupted\n")
    result = json.loads(out)
    check_schema(result, 130)
    assert result["session_id"] == sessions[0]
    assert result["error"]["type"] == "KeyboardInterrupt"
    assert result["resume"] == f"rma run --session-id {sessions[0]}"


# -- stop_reason: one shape for every runtime ----------------------------------------------------


def test_agentcore_stop_reasons_are_objects_like_the_others(agentcore_env: Any) -> None:
    ended = agentcore_env.add_harness([ConverseTurn(text="Done.")])
    cut = agentcore_env.add_harness([ConverseTurn(text="Cut", stop_reason="max_tokens")], "cut")
    done = rma_process("run", "--provider", "agentcore", "--harness-arn", ended, "--json", "Hi")
    assert done.json()["stop_reason"] == {"type": "end_turn"}
    done = rma_process("run", "--provider", "agentcore", "--harness-arn", cut, "--json", "Hi")
    assert done.code == 1
    result = done.json()
    assert (result["terminal"], result["stop_reason"]) == ("terminated", {"type": "max_tokens"})


def test_openai_stop_reasons_keep_their_object(monkeypatch: pytest.MonkeyPatch) -> None:
    with OpenAIAgentsEmulator(["Hello."]) as emulator:
        monkeypatch.setenv("OPENAI_API_KEY", emulator.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url)
        agent = emulator.add_agent()
        done = rma_process("run", "--provider", "openai", "--agent-id", agent, "--json", "Hi")
    assert done.code == 0, done.err
    result = done.json()
    check_schema(result, 0)
    assert result["stop_reason"] == {"type": "end_turn"}
    assert result["resume"] == f"rma run --provider openai --session-id {result['session_id']}"
