"""``rma run|batch|provision|teardown --provider openai`` against the OpenAI emulator."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call
from tests.support.cli import fails, rma

WEATHER = [
    OpenAITurn(text="Looking it up.", tool_calls=[call("get_weather", city="Paris")]),
    OpenAITurn(text=lambda results: f"It is {results[0]}."),
]
TOOLS_MODULE = '''
from req_managed_agents import Tools

tools = Tools()


@tools.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"
'''
SPEC = {
    "agent": {
        "name": "weather",
        "system_prompt": "Report the weather.",
        "model": "gpt-5.1",
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
    }
}


@pytest.fixture
def openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIAgentsEmulator]:
    with OpenAIAgentsEmulator(WEATHER) as emulator:
        monkeypatch.setenv("OPENAI_API_KEY", emulator.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url)
        yield emulator


@pytest.fixture
def tools_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "openai_weather_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("openai_weather_tools", None)


def test_run_shows_the_run_and_sends_the_session_options(
    openai: OpenAIAgentsEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        "--provider",
        "openai",
        "--agent-id",
        openai.add_agent(),
        "--tools",
        "openai_weather_tools:tools",
        "--spend-limit",
        "5000",
        "--session-metadata",
        "team=support",
        "Weather in Paris?",
    ]
    code = _cli.main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "It is sunny in Paris." in out
    (session_id,) = openai.session_ids()
    session = openai.session(session_id)
    assert session["spend_control"]["limit"] == 5000
    assert session["metadata"]["team"] == "support"
    assert session["environment"]["type"] == "none"
    # A follow-up in the same session.
    follow = _cli.main(
        ["run", "--provider", "openai", "--session-id", session_id, "--json", "And?"]
    )
    result = json.loads(capsys.readouterr().out)
    assert (follow, result["session_id"]) == (0, session_id)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--environment-id", "env_1", "--agent-id", "a"], "--environment-id is a Claude option"),
        (["--title", "t", "--agent-id", "a"], "--title is a Claude option"),
        (["--harness-arn", "arn:x", "--agent-id", "a"], "needs --provider agentcore"),
        ([], "a new OpenAI session needs --agent-id"),
        (["--session-id", "s", "--spend-limit", "5"], "does not apply with --session-id"),
        (["--agent-id", "a", "--environment", "{bad"], "--environment is not valid JSON"),
    ],
)
def test_flags_that_do_not_apply_are_refused(
    openai: OpenAIAgentsEmulator, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert fragment in fails(capsys, 2, "run", "--provider", "openai", *argv, "Hi")
    assert not openai.session_ids()


def test_openai_flags_need_the_openai_provider(capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(
        capsys, 2, "run", "--agent-id", "a", "--environment-id", "e", "--spend-limit", "1", "Hi"
    )
    assert "--spend-limit needs --provider openai" in line


def test_batch_runs_every_prompt(
    openai: OpenAIAgentsEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tools_folder / "prompts.txt"
    prompts.write_text('{"prompt": "Weather in Paris?"}\n{"prompt": "Weather in Paris, again?"}\n')
    output = tools_folder / "out.jsonl"
    argv = ["batch", "--provider", "openai", "--agent-id", openai.add_agent()]
    argv += ["--tools", "openai_weather_tools:tools", "--output", str(output), str(prompts)]
    code = _cli.main(argv)
    capsys.readouterr()
    assert code == 0
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(line["text"] for line in lines) == ["It is sunny in Paris."] * 2
    assert len(openai.session_ids()) == 2


def test_provision_is_idempotent_and_teardown_deletes_the_agent(
    openai: OpenAIAgentsEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    store = tmp_path / "store.json"
    code, handle = rma(
        capsys, "provision", "--provider", "openai", str(spec), "--store", str(store)
    )
    assert code == 0
    assert handle["kind"] == "openai"
    assert handle["name"].startswith("weather_")
    again = rma(capsys, "provision", "--provider", "openai", str(spec), "--store", str(store))
    assert again == (0, handle)
    agents = [r for r in openai.requests if r.method == "POST" and r.path == "/v1/agents"]
    assert len(agents) == 1, "provisioned once"
    (created,) = agents
    assert isinstance(created.body, dict)
    assert created.body["instructions"] == "Report the weather."
    assert created.body["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": SPEC["agent"]["tools"][0]["input_schema"],  # type: ignore[index]
    }
    code, torn = rma(capsys, "teardown", handle["name"], "--store", str(store))
    assert (code, torn["kind"], torn["id"]) == (0, "openai", handle["agent_id"])
    assert [r.path for r in openai.requests if r.method == "DELETE"] == [
        f"/v1/agents/{handle['agent_id']}"
    ]


def test_a_spec_with_an_environment_is_refused_for_openai(
    openai: OpenAIAgentsEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SPEC, "environment": {"config": {"type": "cloud"}}}))
    line = fails(
        capsys, 2, "provision", "--provider", "openai", str(spec), "--store", str(tmp_path / "s")
    )
    assert "an OpenAI agent has none" in line
