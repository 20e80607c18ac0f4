"""``rma run --mcp`` and ``rma batch --mcp``: a local MCP server (a real child process, the
``mcp`` package's server) whose tools a run on the Claude emulator calls; ``--verbose``
shows which server tool each declared name calls; a bad ``--mcp`` is one usage line."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.cli import fails

SERVER = Path(__file__).parent.parent / "mcp" / "servers" / "python_server.py"
MCP = shlex.join([sys.executable, str(SERVER)])
ECHO = [
    Turn(text="Echoing.", tool_calls=[call("echo", text="hello over MCP")]),
    Turn(text=lambda results: f"The server said: {results[0]}"),
]


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


def _session(emulator: ClaudeEmulator) -> list[str]:
    return ["--agent-id", emulator.add_agent(ECHO), "--environment-id", emulator.add_environment()]


def test_run_calls_the_tool_of_an_mcp_server(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _cli.main(["run", *_session(claude), "--mcp", MCP, "--json", "Echo something"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    (tool_call,) = result["tool_calls"]
    assert (tool_call["name"], tool_call["result"], tool_call["is_error"]) == (
        "echo",
        "hello over MCP",
        False,
    )
    assert result["text"].endswith("The server said: hello over MCP")
    assert f"--mcp {shlex.quote(MCP)}" in result["resume"]


def test_verbose_shows_each_declared_name_and_its_server_tool_once(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _cli.main(["run", *_session(claude), "--mcp", MCP, "--verbose", "Echo something"])
    err = capsys.readouterr().err
    assert code == 0, err
    server = Path(sys.executable).name
    assert err.count(f"rma: MCP tool echo -> echo of the server {server!r}\n") == 1
    assert "rma: MCP tool forecast -> forecast" in err


def test_batch_calls_the_tool_of_an_mcp_server(
    claude: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "Echo something", "id": "one"}\n')
    output = tmp_path / "out.jsonl"
    argv = ["batch", *_session(claude), "--mcp", MCP, "--output", str(output), str(prompts)]
    code = _cli.main(argv)
    capsys.readouterr()
    assert code == 0
    (line,) = [json.loads(line) for line in output.read_text().splitlines()]
    assert line["text"].endswith("The server said: hello over MCP")


@pytest.mark.parametrize(
    ("mcp", "fragment"),
    [
        ("", "--mcp needs a command"),
        ("python3 'unclosed", "No closing quotation"),
        ("/no/such/mcp-server --flag", "could not start '/no/such/mcp-server'"),
    ],
)
@pytest.mark.usefixtures("offline")
def test_a_bad_mcp_flag_is_one_usage_line_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mcp: str, fragment: str
) -> None:
    prompts = tmp_path / "in.jsonl"
    prompts.write_text('{"prompt": "Hi"}\n')
    argv = ["--agent-id", "agent_1", "--environment-id", "env_1", "--mcp", mcp]
    assert fragment in fails(capsys, 2, "run", *argv, "Hi")
    output = tmp_path / "out.jsonl"
    assert fragment in fails(capsys, 2, "batch", *argv, "-o", str(output), str(prompts))
    assert not output.exists()


@pytest.mark.usefixtures("offline")
def test_mcp_with_a_handler_that_is_not_a_registry_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plain_handler.py").write_text(
        "class Handler:\n"
        "    def handle_tool_call(self, name, input, context):\n"
        "        return 'ok'\n\n"
        "handler = Handler()\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    argv = ["--agent-id", "a", "--environment-id", "e", "--tools", "plain_handler:handler"]
    line = fails(capsys, 2, "run", *argv, "--mcp", MCP, "Hi")
    sys.modules.pop("plain_handler", None)
    assert "--mcp adds tools to a Tools registry" in line


# -- "mcp_servers" in a spec file ------------------------------------------------------------

SPEC_AGENT = {"name": "echoer", "system_prompt": "Echo.", "model": "claude-sonnet-4-6"}
PY_SERVER = {
    "command": sys.executable,
    "args": [str(SERVER)],
    "prefix": "py_",
    "allow": ["echo", "forecast"],
}


def _write_spec(tmp_path: Path, agent: dict[str, object]) -> str:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"agent": agent}))
    return str(path)


def test_provision_declares_the_tools_of_the_spec_mcp_servers(
    claude: ClaudeEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    weather = {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}
    spec = _write_spec(tmp_path, {**SPEC_AGENT, "tools": [weather], "mcp_servers": [PY_SERVER]})
    code = _cli.main(["provision", spec, "--store", str(tmp_path / "store.json")])
    assert code == 0, capsys.readouterr().err
    (post,) = [r for r in claude.requests if r.method == "POST" and r.path == "/v1/agents"]
    declared = {tool.get("name"): tool for tool in post.body["tools"]}
    assert {"get_weather", "py_echo", "py_forecast"} <= set(declared)
    assert "py_fail" not in declared, "allow leaves the other tools out"
    assert declared["py_echo"]["input_schema"]["properties"]["text"]["type"] == "string"


def test_run_with_the_spec_entry_as_json_calls_the_prefixed_tool(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(tool_calls=[call("py_echo", text="prefixed")]), Turn(text="done")]
    argv = ["--agent-id", claude.add_agent(script), "--environment-id", claude.add_environment()]
    code = _cli.main(["run", *argv, "--mcp", json.dumps(PY_SERVER), "--json", "Echo"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    (tool_call,) = result["tool_calls"]
    assert (tool_call["name"], tool_call["result"]) == ("py_echo", "prefixed")


@pytest.mark.parametrize(("confirm", "denied"), [(None, True), ("never", False)])
def test_a_destructive_tool_runs_from_the_cli_only_when_its_entry_says_confirm_never(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str], confirm: str | None, denied: bool
) -> None:
    # The server marks "fail" destructive; rma run has no one to ask, so it is denied unless
    # the entry lets it run unasked (then it runs, and fails as it always does).
    script = [Turn(tool_calls=[call("fail", reason="test")]), Turn(text="done")]
    argv = ["--agent-id", claude.add_agent(script), "--environment-id", claude.add_environment()]
    entry = {"command": sys.executable, "args": [str(SERVER)]}
    if confirm is not None:
        entry["confirm"] = confirm
    code = _cli.main(["run", *argv, "--mcp", json.dumps(entry), "--json", "Fail"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    (tool_call,) = result["tool_calls"]
    assert tool_call["is_error"]
    assert ("was denied" in tool_call["result"]) is denied, tool_call["result"]


@pytest.mark.parametrize(
    ("servers", "fragment"),
    [
        ("npx", '"agent"."mcp_servers" must be an array of objects, got a string'),
        (["npx"], '"agent"."mcp_servers"[0] must be an object with a command'),
        ([{"args": []}], '"agent"."mcp_servers"[0]."command" must be a non-empty string'),
        ([{"command": "npx", "args": "-y"}], '"agent"."mcp_servers"[0]."args" must be an array'),
        ([{"command": "npx", "env": {"A": 1}}], '"env" must be an object of strings'),
        ([{"command": "npx", "allow": "echo"}], '"allow" must be an array of tool names'),
        ([{"command": "npx", "colour": "red"}], "unknown member(s) 'colour'"),
        ([{"command": "npx", "confirm": "ask"}], '"confirm" must be one of'),
        ([{"command": "npx", "prefix": "mcp__"}], "[0].\"prefix\": prefix 'mcp__' must be"),
        ([{"command": "/no/such/mcp-server"}], "could not start '/no/such/mcp-server'"),
    ],
)
@pytest.mark.usefixtures("offline")
def test_a_bad_mcp_servers_entry_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], servers: object, fragment: str
) -> None:
    spec = _write_spec(tmp_path, {**SPEC_AGENT, "mcp_servers": servers})
    line = fails(capsys, 2, "provision", spec, "--store", str(tmp_path / "s.json"))
    assert fragment in line


@pytest.mark.usefixtures("offline")
def test_a_spec_tool_and_a_server_tool_of_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    echo = {"name": "echo", "description": "Mine.", "input_schema": {"type": "object"}}
    server = {"command": sys.executable, "args": [str(SERVER)]}
    spec = _write_spec(tmp_path, {**SPEC_AGENT, "tools": [echo], "mcp_servers": [server]})
    line = fails(capsys, 2, "provision", spec, "--store", str(tmp_path / "s.json"))
    assert "two tools are named 'echo'" in line


@pytest.mark.usefixtures("offline")
def test_a_bad_mcp_json_flag_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--agent-id", "a", "--environment-id", "e"]
    line = fails(capsys, 2, "run", *argv, "--mcp", '{"command": "npx", "allow": "x"}', "Hi")
    assert '--mcp."allow" must be an array of tool names' in line


# -- rma worker --mcp -------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")
def test_worker_calls_the_tool_of_an_mcp_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp", reason="the mcp package (Python >= 3.10) is not installed")
    with ClaudeEmulator(ping_interval=0.2) as emulator:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        environment_id = emulator.add_environment("sandbox", config={"type": "self_hosted"})
        monkeypatch.setenv("ANTHROPIC_ENVIRONMENT_KEY", emulator.environment_key(environment_id))
        with emulator.provider() as provider:
            session = provider.client.create_session(emulator.add_agent(ECHO), environment_id)
            message = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
            provider.client.send_events(session["id"], [message])

        returned = threading.Event()

        def stop_when_served() -> None:
            # The signal goes to the main thread, where rma's handler is installed meanwhile.
            emulator.wait_until(lambda: _stopped(emulator) or returned.is_set(), 30)
            if not returned.is_set():
                os.kill(os.getpid(), signal.SIGTERM)

        stopper = threading.Thread(target=stop_when_served)
        stopper.start()
        try:
            code = _cli.main(
                [
                    "worker",
                    *("--environment-id", environment_id, "--workdir", str(tmp_path / "w")),
                    *("--idle-grace", "0.2", "--mcp", MCP),
                ]
            )
        finally:
            returned.set()
            stopper.join(5)
        out = capsys.readouterr().out
        assert code == 0, out
        assert f"session {session['id']}: stopped" in out
        texts = [
            block.get("text", "")
            for event in emulator.events(session["id"])
            if event.get("type") == "agent.message"
            for block in event.get("content", [])
        ]
        assert "The server said: hello over MCP" in texts


def _stopped(emulator: ClaudeEmulator) -> bool:
    return any(item["state"] == "stopped" for item in emulator.work_items())


def test_verbose_shows_a_local_tools_progress(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    counting = [Turn(tool_calls=[call("count", steps=2)]), Turn(text="Counted.")]
    agent = claude.add_agent(counting)
    session = ["--agent-id", agent, "--environment-id", claude.add_environment()]
    code = _cli.main(["run", *session, "--mcp", MCP, "--verbose", "Count"])
    shown = capsys.readouterr()
    assert code == 0, shown.err
    assert "  .. count 1/2 step 1\n" in shown.out
    assert "  .. count 2/2 step 2\n" in shown.out
