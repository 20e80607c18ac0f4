"""``rma run|batch|emulator|demo --provider gemini`` against the Gemini emulator."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.testing import call
from req_managed_agents.testing.gemini import GeminiEmulator, GeminiTurn
from tests.support.cli import fails, rma

WEATHER = [
    GeminiTurn(text="Looking it up.", tool_calls=[call("get_weather", city="Paris")]),
    GeminiTurn(text=lambda results: f"It is {results[0]}."),
    GeminiTurn(text="Still sunny."),
]
TOOLS_MODULE = '''
from req_managed_agents import Tools

tools = Tools()


@tools.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"
'''


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiEmulator]:
    with GeminiEmulator(WEATHER) as emulator:
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.setenv("GOOGLE_API_KEY", emulator.api_key)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", emulator.base_url)
        yield emulator


@pytest.fixture
def tools_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "gemini_weather_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("gemini_weather_tools", None)


def _creates(emulator: GeminiEmulator) -> list[dict[str, object]]:
    return [
        r.body
        for r in emulator.requests
        if r.method == "POST" and r.path.endswith("/interactions") and isinstance(r.body, dict)
    ]


def test_run_shows_the_run_sends_the_options_and_resumes_the_chain(
    gemini: GeminiEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = gemini.add_agent()
    argv = ["run", "--provider", "gemini", "--agent-id", agent]
    argv += ["--tools", "gemini_weather_tools:tools", "--session-metadata", "team=support"]
    argv += ["--system-instruction", "Be brief.", "--service-tier", "flex", "--json"]
    code, result = rma(capsys, *argv, "Weather in Paris?")
    assert (code, result["terminal"]) == (0, "end_turn"), result
    assert result["text"].endswith("It is sunny in Paris.")
    assert [call["result"] for call in result["tool_calls"]] == ["sunny in Paris"]
    first, answer = _creates(gemini)
    assert first["agent"] == agent
    assert first["labels"] == {"team": "support"}
    assert (first["system_instruction"], first["service_tier"]) == ("Be brief.", "flex")
    assert first["tools"][0]["name"] == "get_weather"  # type: ignore[index]
    # The session id is the newest interaction: the one answering the tool call.
    started, newest = gemini.interaction_ids()
    assert answer["previous_interaction_id"] == started
    assert result["session_id"] == newest
    # The resume line continues the chain from it, with the agent and the create fields.
    resume = shlex.split(result["resume"])
    assert resume[resume.index("--session-id") + 1] == newest
    assert resume[resume.index("--agent-id") + 1] == agent
    assert resume[resume.index("--system-instruction") + 1] == "Be brief."
    code, again = rma(capsys, *resume[1:], "--json", "And now?")
    assert (code, again["text"]) == (0, "Still sunny."), again
    follow = _creates(gemini)[-1]
    assert follow["previous_interaction_id"] == newest
    assert (follow["agent"], follow["labels"]) == (agent, {"team": "support"})


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "--provider gemini needs --agent-id"),
        (["--session-id", "int_1"], "--provider gemini needs --agent-id"),
        (["--agent-id", "a", "--environment-id", "e"], "--environment-id is a Claude option"),
        (["--agent-id", "a", "--vault-id", "v"], "--vault-id is a Claude option"),
        (["--agent-id", "a", "--spend-limit", "5"], "--spend-limit needs --provider openai"),
        (["--agent-id", "a", "--region", "us-east-1"], "is an AWS option"),
        (["--agent-id", "a", "--agent-config", "[1]"], "--agent-config must be a JSON object"),
        (["--agent-id", "a", "--agent-config", "{bad"], "--agent-config is not valid JSON"),
        (["--agent-id", "a", "--environment", "{bad"], "--environment is not valid JSON"),
    ],
)
def test_flags_that_do_not_apply_are_refused(
    gemini: GeminiEmulator, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    assert fragment in fails(capsys, 2, "run", "--provider", "gemini", *argv, "Hi")
    assert not gemini.interaction_ids()


@pytest.mark.parametrize("provider", ["claude", "openai"])
def test_gemini_flags_need_the_gemini_provider(
    provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--provider", provider, "--agent-id", "a", "--environment-id", "e"]
    line = fails(capsys, 2, *argv, "--service-tier", "flex", "Hi")
    assert "--service-tier needs --provider gemini" in line


def test_a_label_the_api_refuses_is_a_configuration_error(
    gemini: GeminiEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--provider", "gemini", "--agent-id", gemini.add_agent()]
    line = fails(capsys, 3, *argv, "--session-metadata", "Team=x", "Hi")
    assert "label key 'Team'" in line
    assert not gemini.interaction_ids()


def test_a_missing_key_names_the_gemini_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    line = fails(capsys, 3, "run", "--provider", "gemini", "--agent-id", "a", "Hi")
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in line


def test_an_unreachable_endpoint_names_the_base_url_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    argv = ["run", "--provider", "gemini", "--agent-id", "a", "--timeout", "30", "Hi"]
    assert "GOOGLE_GEMINI_BASE_URL" in fails(capsys, 4, *argv)


def test_batch_runs_every_prompt(
    gemini: GeminiEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tools_folder / "prompts.txt"
    prompts.write_text('{"prompt": "Weather in Paris?"}\n{"prompt": "Weather in Paris, again?"}\n')
    output = tools_folder / "out.jsonl"
    argv = ["batch", "--provider", "gemini", "--agent-id", gemini.add_agent()]
    argv += ["--tools", "gemini_weather_tools:tools", "--output", str(output), str(prompts)]
    code = _cli.main(argv)
    capsys.readouterr()
    assert code == 0
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(line["text"] for line in lines) == ["It is sunny in Paris."] * 2
    firsts = [c for c in _creates(gemini) if "previous_interaction_id" not in c]
    assert len(firsts) == 2, "one conversation per prompt"


def test_demo_runs_on_the_built_in_gemini_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = rma(capsys, "demo", "--provider", "gemini")
    assert code == 0, out
    assert "Gemini" in out
    assert "result   end_turn after 2 turns" in out
    assert "get_weather({'city': 'Tokyo'})" in out


REFUND_MODULE = '''
from req_managed_agents import Deferred, Tools

tools = Tools()


@tools.tool
def refund(amount: int) -> str:
    """Refund an amount: finance decides later."""
    raise Deferred("finance approves refunds", expires_in=3600)
'''


def test_a_deferred_tool_is_answered_with_rma_pending_on_the_chain(
    gemini: GeminiEmulator, tools_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tools_folder / "gemini_refund_tools.py").write_text(REFUND_MODULE)
    script = [
        GeminiTurn(tool_calls=[call("refund", amount=5)]),
        GeminiTurn(text=lambda results: f"Finance said: {results[0]}"),
    ]
    agent = gemini.add_agent(script)
    tools = ["--tools", "gemini_refund_tools:tools", "--decisions", "d"]
    argv = ["run", "--provider", "gemini", "--agent-id", agent, "--service-tier", "flex"]
    code, ran = rma(capsys, *argv, *tools, "--json", "Refund 5.")
    assert (code, ran["terminal"]) == (1, "requires_action"), ran
    [token] = ran["stop_reason"]["tokens"]
    code, out = rma(capsys, "pending", "answer", token, "--result", "refunded 5", *tools)
    assert code == 0, out
    assert "agent> Finance said: refunded 5" in out.splitlines()
    answer = _creates(gemini)[-1]
    assert answer["previous_interaction_id"] == ran["session_id"]
    assert (answer["agent"], answer["service_tier"]) == (agent, "flex")
    sys.modules.pop("gemini_refund_tools", None)


SPEC = {
    "agent": {
        "name": "Weather_Bot",
        "system_prompt": "Report the weather.",
        "model": "antigravity-preview-05-2026",
        "model_config": {"type": "antigravity", "model": "gemini-3-pro"},
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
    }
}


def _agent_creates(emulator: GeminiEmulator) -> list[object]:
    return [r.body for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents"]


def test_provision_names_the_agent_by_its_content_and_teardown_deletes_it(
    gemini: GeminiEmulator,
    tools_folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    store = tmp_path / "store.json"
    argv = ["provision", "--provider", "gemini", str(spec), "--store", str(store)]
    code, handle = rma(capsys, *argv)
    assert code == 0, handle
    assert handle["kind"] == "gemini"
    # The content address is the id: a Gemini id's alphabet, the spec's digest at its end.
    assert handle["agent_id"] == handle["name"]
    assert handle["agent_id"] == f"weather-bot-{handle['digest']}"
    assert rma(capsys, *argv) == (0, handle), "the same spec and store: the same handle"
    # A fresh store finds the agent at the provider by its id instead of making another.
    fresh = ["--store", str(tmp_path / "fresh.json")]
    assert rma(capsys, *argv[:-2], *fresh) == (0, handle)
    (created,) = _agent_creates(gemini)
    assert created == {
        "id": handle["agent_id"],
        "base_agent": "antigravity-preview-05-2026",
        "agent_config": {"type": "antigravity", "model": "gemini-3-pro"},
        "system_instruction": "Report the weather.",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": SPEC["agent"]["tools"][0]["input_schema"],  # type: ignore[index]
            }
        ],
    }
    # Another spec is another agent.
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps({"agent": {**SPEC["agent"], "system_prompt": "Be terse."}}))
    code, other = rma(
        capsys, "provision", "--provider", "gemini", str(changed), "--store", str(store)
    )
    assert code == 0
    assert other["agent_id"] != handle["agent_id"]
    # A run on the provisioned agent.
    run = ["run", "--provider", "gemini", "--agent-id", handle["agent_id"], "--json"]
    code, ran = rma(capsys, *run, "--tools", "gemini_weather_tools:tools", "Weather?")
    assert (code, ran["text"]) == (0, "It is sunny in Paris."), ran
    code, torn = rma(capsys, "teardown", handle["name"], "--store", str(store))
    assert (code, torn["kind"], torn["id"]) == (0, "gemini", handle["agent_id"])
    assert f"/v1/agents/{handle['agent_id']}" in [
        r.path for r in gemini.requests if r.method == "DELETE"
    ]
    code, by_spec = rma(
        capsys, "teardown", "--provider", "gemini", str(changed), "--store", str(store)
    )
    assert (code, by_spec["id"]) == (0, other["agent_id"])
    assert rma(capsys, "teardown", "--provider", "gemini", str(spec), "--store", str(store)) == (
        0,
        {"torn_down": None},
    )


def test_a_spec_with_an_environment_is_refused_for_gemini(
    gemini: GeminiEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**SPEC, "environment": {"config": {"type": "cloud"}}}))
    argv = ["provision", "--provider", "gemini", str(spec), "--store", str(tmp_path / "s")]
    assert "a Gemini agent has none" in fails(capsys, 2, *argv)
    assert not _agent_creates(gemini)
