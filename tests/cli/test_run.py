"""``rma run`` against both emulators: live output, ``--json``, local tools from ``--tools``,
the Claude session options, exit statuses, Ctrl-C, and every flag that does not apply."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.cli._output import Display
from req_managed_agents.model._stream import (
    MessageDone,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents.model._vocabulary import ToolResult, ToolUse, TurnResult
from req_managed_agents.testing import ClaudeEmulator, ConverseTurn, Turn, call
from tests.support.cli import fails, one_error_line, rma
from tests.support.sdk import without_create_token

WEATHER = [
    Turn(text="Looking it up.", tool_calls=[call("get_weather", city="Paris")], usage=(40, 9)),
    Turn(text=lambda results: f"It is {results[0]}.", usage=(60, 7)),
]
TOOLS_MODULE = '''
from req_managed_agents import Tools

tools = Tools()
not_a_handler = 42


@tools.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


class Careful(Tools):
    pass
'''


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


@pytest.fixture
def tools_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The current folder holds ``weather_tools.py``, as a user's project would."""
    (tmp_path / "weather_tools.py").write_text(TOOLS_MODULE)
    (tmp_path / "broken_tools.py").write_text("import no_such_dependency_here\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in ("weather_tools", "broken_tools"):
        sys.modules.pop(name, None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = _cli.main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def new_session(emulator: ClaudeEmulator, script: Any = WEATHER) -> list[str]:
    return [
        "--agent-id",
        emulator.add_agent(script),
        "--environment-id",
        emulator.add_environment(),
    ]


# -- Claude ---------------------------------------------------------------------------------


def test_run_shows_text_and_tool_calls_live_then_one_summary_line(
    claude: ClaudeEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*new_session(claude), "--tools", "weather_tools:tools", "Weather in Paris?"]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:4] == [
        "agent> Looking it up.",
        '  -> get_weather {"city": "Paris"}',
        '  <- get_weather returned "sunny in Paris"',
        "agent> It is sunny in Paris.",
    ]
    (session_id,) = claude.session_ids()
    assert lines[4:] == [
        f"end_turn after 2 turns, 100 input + 16 output tokens, 1 tool call; session {session_id}"
    ]
    assert "\r" not in out + err, "no status line off a terminal"
    assert claude.events(session_id)[0]["content"][0]["text"] == "Weather in Paris?"


def test_run_json_prints_one_object_for_scripts(
    claude: ClaudeEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*new_session(claude), "--tools", "weather_tools:tools", "--json", "--prompt", "Hi"]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result["terminal"] == "end_turn"
    assert result["text"] == "It is sunny in Paris."
    assert result["session_id"] == claude.session_ids()[0]
    assert result["turns"] == 2
    assert result["usage"]["input_tokens"] == 100
    assert result["usage"]["total_tokens"] == 116
    assert result["stop_reason"] == {"type": "end_turn"}
    assert result["tool_calls"] == [
        {
            "id": result["tool_calls"][0]["id"],
            "name": "get_weather",
            "input": {"city": "Paris"},
            "result": "sunny in Paris",
            "is_error": False,
        }
    ]


def test_without_tools_a_call_gets_the_unknown_tool_error(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, *new_session(claude), "--json", "Weather?")
    assert code == 0
    (tool_call,) = json.loads(out)["tool_calls"]
    assert tool_call["is_error"] is True
    assert "unknown tool 'get_weather'" in tool_call["result"]


def test_agentcore_without_tools_a_call_gets_the_unknown_tool_error_too(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [
        ConverseTurn(text="Checking.", tool_calls=[call("get_weather", city="Oslo")]),
        ConverseTurn(text=lambda results: f"Could not: {results[0]}"),
    ]
    arn = agentcore_env.add_harness(script)  # the harness deploys get_weather
    code, out, _ = run(capsys, "--provider", "agentcore", "--harness-arn", arn, "--json", "Hi")
    assert code == 0, out
    result = json.loads(out)
    (tool_call,) = result["tool_calls"]
    assert tool_call["is_error"] is True
    assert "unknown tool 'get_weather'" in tool_call["result"]
    assert result["text"].startswith("Could not: unknown tool 'get_weather'")
    (first, _) = agentcore_env.invocations
    assert "tools" not in first.body, "no local tools: the harness keeps its own"


def test_a_turn_the_harness_refuses_is_not_called_resumable(
    agentcore_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [ConverseTurn(text="Checking.", tool_calls=[call("get_weather")])]
    arn = agentcore_env.add_harness(script, tools=[])  # a model calling what nobody declared
    line = fails(capsys, 4, "run", "--provider", "agentcore", "--harness-arn", arn, "Hi")
    assert "runtimeClientError" in line
    assert "the provider refused the turn" in line
    assert "--session-id" not in line


def test_a_terminated_run_exits_1(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(text="Giving up.", end="terminated")]
    code, out, _ = run(capsys, *new_session(claude, script), "Go")
    assert code == 1
    assert out.splitlines()[-1].startswith("terminated (")


def test_the_prompt_can_come_from_standard_input(
    claude: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("from a pipe\n"))
    code, _, _ = run(capsys, *new_session(claude, ["ok"]), "--json", "-")
    assert code == 0
    (session_id,) = claude.session_ids()
    assert claude.events(session_id)[0]["content"][0]["text"] == "from a pipe\n"


def test_claude_session_options_reach_the_new_session(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    from req_managed_agents import ClaudeManagedAgents

    with ClaudeManagedAgents() as provider:
        vault = provider.client.create_vault({"display_name": "keys"})["id"]
    options = [
        "--title",
        "nightly",
        "--vault-id",
        vault,
        "--session-metadata",
        "team=ops",
        "--session-metadata",
        "run=7",
        "--agent-version",
        "1",
    ]
    code, _, _ = run(capsys, *new_session(claude, ["ok"]), *options, "--json", "Go")
    assert code == 0
    (created,) = [
        r.body for r in claude.requests if r.method == "POST" and r.path == "/v1/sessions"
    ]
    assert created["title"] == "nightly"
    assert created["vault_ids"] == [vault]
    assert without_create_token(created)["metadata"] == {"team": "ops", "run": "7"}
    assert created["agent"]["version"] == 1


def test_a_follow_up_in_the_same_session(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = run(capsys, *new_session(claude, ["first", "second"]), "--json", "One")
    session_id = json.loads(out)["session_id"]
    code, out, _ = run(capsys, "--session-id", session_id, "--json", "Two")
    assert (code, json.loads(out)["text"]) == (0, "second")
    assert claude.session_ids() == [session_id]


def test_a_timeout_exits_124_and_says_how_to_resume(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(text="slow", delay=5)]
    code, out, err = run(capsys, *new_session(claude, script), "--timeout", "0.3", "Go")
    line = one_error_line(code, 124, err)
    (session_id,) = claude.session_ids()
    assert f"rma run --session-id {session_id}" in line
    assert out == ""


def test_an_unknown_agent_is_an_api_error(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--agent-id", "agent_nope", "--environment-id", claude.add_environment(), "Hi"]
    code, _, err = run(capsys, *argv)
    assert "check the ids" in one_error_line(code, 4, err)


def test_no_api_key_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    line = fails(capsys, 3, "run", "--agent-id", "a", "--environment-id", "e", "Hi")
    assert "no Anthropic API key: set ANTHROPIC_API_KEY" in line


# -- Bedrock AgentCore -----------------------------------------------------------------------


def test_run_on_the_agentcore_emulator(
    agentcore_env: Any, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [
        ConverseTurn(text="Checking.", tool_calls=[call("get_weather", city="Oslo")]),
        ConverseTurn(text=lambda results: f"Oslo: {results[0]}."),
    ]
    arn = agentcore_env.add_harness(script)
    argv = ["--provider", "agentcore", "--harness-arn", arn, "--tools", "weather_tools:tools"]
    code, out, err = run(capsys, *argv, "Weather in Oslo?")
    assert (code, err) == (0, "")
    assert '  <- get_weather returned "sunny in Oslo"' in out
    assert "agent> Oslo: sunny in Oslo." in out
    (invocation, _) = agentcore_env.invocations
    declared = [tool["name"] for tool in invocation.body["tools"]]
    assert declared == ["get_weather"], "the registry's tools are declared per invocation"
    session_id = out.splitlines()[-1].rsplit(" ", 1)[1]
    code, out, _ = run(
        capsys, *argv, "--session-id", session_id, "--region", "us-east-1", "--json", "More?"
    )
    assert code == 0
    assert json.loads(out)["session_id"] == session_id


def test_agentcore_without_credentials_names_the_variables(
    agentcore_env: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    arn = agentcore_env.add_harness()
    line = fails(capsys, 3, "run", "--provider", "agentcore", "--harness-arn", arn, "Hi")
    assert "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in line
    assert "credentials=" not in line


# -- flags that do not apply, bad values, bad --tools ----------------------------------------

ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/h-1"
CLAUDE = ["--agent-id", "a", "--environment-id", "e"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([*CLAUDE, "--timeout", "-5", "Hi"], "argument --timeout: must be a positive number"),
        ([*CLAUDE, "--timeout", "nan", "Hi"], "not a finite number"),
        ([*CLAUDE, "--agent-version", "0", "Hi"], "argument --agent-version: must be at least 1"),
        (["--harness-arn", ARN, "Hi"], "--harness-arn needs --provider agentcore"),
        (
            [*CLAUDE, "--region", "us-east-1", "Hi"],
            "--region is an AWS option; it needs --provider agentcore or claude-bedrock",
        ),
        (
            ["--provider", "agentcore", "--harness-arn", ARN, "--agent-id", "a", "Hi"],
            "--agent-id is a Claude option",
        ),
        (
            ["--provider", "agentcore", "--harness-arn", ARN, "--title", "t", "Hi"],
            "--title is a Claude option",
        ),
        (
            ["--provider", "agentcore", "--harness-arn", ARN, "--working-directory", "/x", "Hi"],
            "--working-directory is a Claude option",
        ),
        (["--provider", "agentcore", "Hi"], "--provider agentcore needs --harness-arn"),
        (
            ["--provider", "agentcore", "--harness-arn", ARN, "--region", "eu-west-1", "Hi"],
            "--region eu-west-1 contradicts the harness ARN, which is in us-east-1",
        ),
        (
            ["--provider", "agentcore", "--harness-arn", "harness-1", "Hi"],
            "is not a Bedrock AgentCore harness ARN",
        ),
        (
            ["--provider", "agentcore", "--harness-arn", ARN, "--session-id", "short", "Hi"],
            "is not an AgentCore runtime session id",
        ),
        (["--agent-id", "a", "Hi"], "--environment-id is missing"),
        (["Hi"], "needs --agent-id and --environment-id"),
        (
            ["--session-id", "sesn_1", "--agent-id", "a", "Hi"],
            "--agent-id does not apply with --session-id",
        ),
        ([*CLAUDE], "no prompt given"),
        ([*CLAUDE, "--prompt", "a", "b"], "the prompt is given twice"),
        ([*CLAUDE, " "], "the prompt is empty"),
        ([*CLAUDE, "--session-metadata", "team", "Hi"], "--session-metadata takes KEY=VALUE"),
        (
            [*CLAUDE, "--session-metadata", "a=1", "--session-metadata", "a=2", "Hi"],
            "gives 'a' twice",
        ),
        ([*CLAUDE, "--tools", "weather_tools", "Hi"], "--tools takes MODULE:ATTRIBUTE"),
        ([*CLAUDE, "--tools", "no_such_module:tools", "Hi"], "no module named 'no_such_module'"),
        (
            [*CLAUDE, "--tools", "broken_tools:tools", "Hi"],
            "importing the module failed: ModuleNotFoundError",
        ),
        ([*CLAUDE, "--tools", "weather_tools:missing", "Hi"], "has no attribute 'missing'"),
        (
            [*CLAUDE, "--tools", "weather_tools:not_a_handler", "Hi"],
            "is a int, not a Tools registry",
        ),
        ([*CLAUDE, "--tools", "weather_tools:Careful", "Hi"], "is a class; name an instance of it"),
        (["--provider", "bard", "Hi"], "argument --provider: invalid choice: 'bard'"),
    ],
)
@pytest.mark.usefixtures("offline", "tools_folder")
def test_bad_flags_are_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert fragment in fails(capsys, 2, "run", *argv)


# -- the status line --------------------------------------------------------------------------


class Terminal(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_a_status_line_is_redrawn_in_place_and_wiped() -> None:
    out, status = io.StringIO(), Terminal()
    use = ToolUse("toolu_1", "get_weather", {"city": "Paris"})
    with Display(out, status) as display:
        display.show(TextDelta("Looking", "m1"))
        display.show(MessageDone("Looking", "m1"))
        display.show(TurnEnded(TurnResult("requires_action"), 1))
        display.show(ToolCallStarted(use))
        deadline = time.monotonic() + 5
        while "1 tool running" not in status.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        display.show(ToolCallFinished(use, ToolResult("toolu_1", "sunny")))
    drawn = status.getvalue()
    assert "\r" in drawn
    assert "turn 2 \u00b7 1 tool running" in drawn
    assert drawn.endswith("\r"), "wiped on the way out"
    assert out.getvalue() == (
        'agent> Looking\n  -> get_weather {"city": "Paris"}\n  <- get_weather returned "sunny"\n'
    )


# -- the real entry point -----------------------------------------------------------------------


def rma_command() -> list[str]:
    """The installed console script, as a user runs it."""
    script = Path(sys.executable).with_name("rma")
    return [str(script)] if script.exists() else [sys.executable, "-m", "req_managed_agents"]


def test_the_console_script_runs_with_local_tools(
    claude: ClaudeEmulator, tools_folder: Path
) -> None:
    argv = [
        *rma_command(),
        "run",
        *new_session(claude),
        "--tools",
        "weather_tools:tools",
        "--json",
        "Hi",
    ]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=tools_folder, env={**os.environ}
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["text"] == "It is sunny in Paris."


def test_a_real_ctrl_c_stops_the_remote_turn_and_prints_one_line(claude: ClaudeEmulator) -> None:
    argv = [*rma_command(), "run", *new_session(claude, [Turn(text="slow", delay=30)]), "Go"]
    child = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ}
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
        _, err = child.communicate(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert (child.returncode, err) == (130, "rma: interrupted\n")
    assert "user.interrupt" in [event["type"] for event in claude.events(sessions[0])]


def test_help_epilog_documents_the_tools_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli.main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--tools MODULE:ATTRIBUTE names a Tools registry" in text
    assert "124  --timeout passed" in text


# --- Claude on Amazon Bedrock ---------------------------------------------------------------


SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/cli-0123456789"


def test_rma_run_drives_claude_on_bedrock_with_its_session_options(
    bedrock_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code, result = rma(
        capsys,
        "run",
        "--provider",
        "claude-bedrock",
        "--agent-id",
        bedrock_env.add_agent(),
        "--environment-id",
        SANDBOX,
        "--working-directory",
        "/srv/app",
        "--execution-role-arn",
        "arn:aws:iam::123456789012:role/Runner",
        "--json",
        "Hi",
    )
    assert code == 0
    assert result["text"] == "Hello from Bedrock."
    (create,) = [r for r in bedrock_env.requests if r.method == "POST" and r.path == "/v1/sessions"]
    assert create.body["working_directory"] == "/srv/app"
    assert create.body["execution_identity"]["role_arn"].endswith(":role/Runner")
    assert all("/us-west-2/bedrock/" in r.headers["authorization"] for r in bedrock_env.requests)


def test_rma_run_refuses_flags_of_other_providers(
    bedrock_env: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(
        capsys,
        2,
        "run",
        "--provider",
        "claude-bedrock",
        "--agent-id",
        "a",
        "--environment-id",
        SANDBOX,
        "--vault-id",
        "vlt_1",
        "Hi",
    )
    assert "--vault-id" in line
    line = fails(
        capsys,
        2,
        "run",
        "--agent-id",
        "a",
        "--environment-id",
        "env",
        "--working-directory",
        "/x",
        "Hi",
    )
    assert "--working-directory" in line
    assert "claude-bedrock" in line
    assert bedrock_env.requests == []
