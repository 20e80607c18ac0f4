"""``rma emulator``: each runtime's emulator served until Ctrl-C, with the ``export`` lines
that point ``rma`` and the vendor SDKs at it. The test does what a person would: start it,
take the printed variables - and nothing else of its own environment - and complete a call
with the vendor's SDK (``anthropic``, its Bedrock client, ``boto3``, ``openai``,
``google-genai``); then Ctrl-C
stops it with status 130. ``rma demo --provider`` runs a session on each emulator."""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents.cli import _main as _cli
from tests.support.cli import fails, rma

READY = "# ready"
HELLO = 'script = ["Hello from the emulator."]\n'

# Each child gets only the printed variables (and PATH, and an empty HOME): what it needs to
# find the emulator, its credentials and the ready agent, environment or harness.
CLAUDE_SDK = """
import os, anthropic
client = anthropic.{client}()
session = client.beta.sessions.create(
    agent=os.environ["RMA_AGENT_ID"], environment_id=os.environ["RMA_ENVIRONMENT_ID"]
)
with client.beta.sessions.events.stream(session.id) as stream:
    client.beta.sessions.events.send(
        session.id,
        events=[{{"type": "user.message", "content": [{{"type": "text", "text": "Hi"}}]}}],
    )
    for event in stream:
        if event.type == "agent.message":
            print("".join(block.text for block in event.content))
        if event.type == "session.status_idle":
            break
"""
AGENTCORE_SDK = """
import os, uuid, boto3
control = boto3.client("bedrock-agentcore-control")
harness_arn = os.environ["RMA_HARNESS_ARN"]
assert control.get_harness(harnessId=harness_arn.rsplit("/", 1)[1])["harness"]["status"] == "READY"
invoked = boto3.client("bedrock-agentcore").invoke_harness(
    harnessArn=harness_arn,
    runtimeSessionId=str(uuid.uuid4()) + "-emulator",
    messages=[{"role": "user", "content": [{"text": "Weather?"}]}],
)
texts = [e["contentBlockDelta"]["delta"].get("text", "") for e in invoked["stream"]
         if "contentBlockDelta" in e]
print("".join(texts))
"""
OPENAI_SDK = """
import os, openai
stream = openai.OpenAI().beta.agents.sessions.create(
    agent_id=os.environ["RMA_AGENT_ID"],
    environment={"type": "none"},
    input="Hi",
    stream=True,
    tool_handlers={},
)
with stream:
    print(stream.get_final_result().output_text)
"""
GEMINI_SDK = """
import os
from google import genai
client = genai.Client()
interaction = client.interactions.create(agent=os.environ["RMA_AGENT_ID"], input="Hi")
print(interaction.status, interaction.output_text)
"""
SDK_CALLS = {
    "claude": (CLAUDE_SDK.format(client="Anthropic"), "Hello from the emulator."),
    "claude-bedrock": (CLAUDE_SDK.format(client="AnthropicBedrock"), "Hello from the emulator."),
    "agentcore": (AGENTCORE_SDK, "Let me look up both cities."),  # the demo's agent
    "openai": (OPENAI_SDK, "Hello from the emulator."),
    "gemini": (GEMINI_SDK, "completed Hello from the emulator."),
}


class Served:
    """A running ``rma emulator`` and what it printed before it said it was ready."""

    def __init__(self, *argv: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "req_managed_agents", "emulator", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        printed: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(printed,), daemon=True).start()
        self.lines: list[str] = []
        while not self.lines or not self.lines[-1].startswith(READY):
            try:
                line = printed.get(timeout=60)
            except queue.Empty:
                line = None
            assert line is not None, (self.lines, self.stop())  # it ended, or said nothing
            self.lines.append(line)

    def _read(self, printed: queue.Queue[str | None]) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            printed.put(line.rstrip("\n"))
        printed.put(None)

    def variables(self) -> dict[str, str]:
        """What the printed lines set, as a shell that evaluates them would have it."""
        found: dict[str, str] = {}
        for line in self.lines:
            words = shlex.split(line, comments=True)
            if words[:1] == ["export"]:
                name, _, value = words[1].partition("=")
                found[name] = value
            else:
                assert words[:1] in ([], ["unset"]), line  # nothing a shell would run
        return found

    def stop(self, number: int = signal.SIGINT) -> tuple[int, str]:
        self.process.send_signal(number)
        _, err = self.process.communicate(timeout=60)
        return self.process.returncode, err


@pytest.fixture
def served() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for one in started:
        if one.process.poll() is None:
            one.process.kill()
            one.process.communicate(timeout=30)


@pytest.mark.parametrize("provider", ["claude", "claude-bedrock", "agentcore", "openai", "gemini"])
def test_the_vendor_sdk_completes_a_call_with_only_the_printed_variables(
    provider: str, served: list[Served], tmp_path: Path
) -> None:
    pytest.importorskip("boto3" if provider == "agentcore" else "anthropic")
    pytest.importorskip("openai")
    if provider == "gemini":
        pytest.importorskip("google.genai")
    script = tmp_path / "hello.py"
    script.write_text(HELLO)
    argv = ["--provider", provider]
    if provider != "agentcore":  # the harness plays the demo's agent, as with no --script
        argv += ["--script", str(script)]
    emulator = Served(*argv)
    served.append(emulator)
    variables = emulator.variables()
    code, expected = SDK_CALLS[provider]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **variables}
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    assert expected in child.stdout
    status, err = emulator.stop(signal.SIGINT)
    assert status == 130, err
    assert "rma emulator: stopped" in err
    assert "Traceback" not in err


def test_rma_itself_runs_on_the_printed_variables(served: list[Served], tmp_path: Path) -> None:
    emulator = Served("--provider", "claude")
    served.append(emulator)
    variables = emulator.variables()
    argv = ["run", "--agent-id", variables["RMA_AGENT_ID"]]
    argv += ["--environment-id", variables["RMA_ENVIRONMENT_ID"], "--json", "Weather?"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **variables}
    child = subprocess.run(
        [sys.executable, "-m", "req_managed_agents", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(child.stdout)
    # The demo's agent asks for get_weather, which this run has no tool for: it is answered
    # with an error and the agent goes on to its answer.
    assert report["terminal"] == "end_turn", child.stderr
    assert [call["name"] for call in report["tool_calls"]] == ["get_weather", "get_weather"]
    assert emulator.stop(signal.SIGTERM)[0] == 0


def _two_free_ports() -> int:
    """A port N with N + 1 free too, as far as binding them now tells."""
    while True:
        with socket.socket() as first, socket.socket() as second:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port


def test_a_fixed_port_is_served_and_a_taken_one_refused(
    served: list[Served], tmp_path: Path
) -> None:
    pytest.importorskip("boto3")
    port = _two_free_ports()
    emulator = Served("--provider", "agentcore", "--port", str(port))
    served.append(emulator)
    variables = emulator.variables()
    assert variables["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE"] == f"http://127.0.0.1:{port}"
    control = variables["AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL"]
    assert control == f"http://127.0.0.1:{port + 1}"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **variables}
    child = subprocess.run(  # signed for the named ports, checked by the emulator behind them
        [sys.executable, "-c", textwrap.dedent(AGENTCORE_SDK)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr
    assert "Let me look up both cities." in child.stdout
    taken = subprocess.run(
        [sys.executable, "-m", "req_managed_agents", "emulator", "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert taken.returncode == 2, taken.stderr
    assert taken.stderr.startswith(f"rma: cannot serve on port {port}")
    assert emulator.stop(signal.SIGTERM)[0] == 0


def test_a_script_file_that_does_not_hold_a_script_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.py")
    assert "does not exist" in fails(capsys, 2, "emulator", "--script", missing)
    empty = tmp_path / "empty.py"
    empty.write_text("turns = []\n")
    assert "no `script`" in fails(capsys, 2, "emulator", "--script", str(empty))
    wrong = tmp_path / "wrong.py"
    wrong.write_text("script = [42]\n")
    assert "wrong.py" in fails(capsys, 2, "emulator", "--script", str(wrong))


@pytest.mark.parametrize("provider", ["claude", "claude-bedrock", "agentcore", "openai", "gemini"])
def test_the_demo_runs_on_every_emulator(provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    if provider in ("agentcore", "claude-bedrock"):
        pytest.importorskip("botocore")
    code, out = rma(capsys, "demo", "--provider", provider)
    assert code == 0, out
    assert "Here is the weather: Paris: 18 C and sunny; Tokyo: 24 C with light rain." in out
    assert "tools    2 local call(s)" in out


def test_the_demo_refuses_flags_a_runtime_does_not_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = fails(capsys, 2, "demo", "--provider", "openai", "--environment-id", "env_1")
    assert "--environment-id" in line
    assert _cli.main(["demo", "--provider", "nope"]) == 2


@pytest.mark.parametrize("provider", ["claude", "claude-bedrock", "agentcore", "openai", "gemini"])
def test_the_demo_runs_against_the_service_the_environment_names(
    provider: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from req_managed_agents.cli._emulator import emulated

    if provider in ("agentcore", "claude-bedrock"):
        pytest.importorskip("botocore")
    with emulated(provider) as running:  # the service, as far as the demo can tell
        for name in running.unset:
            monkeypatch.delenv(name, raising=False)
        for name, value in running.variables.items():
            monkeypatch.setenv(name, value)
        named = {
            "agent": "--agent-id",
            "agent_id": "--agent-id",
            "environment_id": "--environment-id",
            "harness_arn": "--harness-arn",
        }
        flags = [word for key, value in running.connect.items() for word in (named[key], value)]
        code, out = rma(capsys, "demo", "--provider", provider, *flags, "--prompt", "Weather?")
    assert code == 0, out
    assert "built-in" not in out.splitlines()[0]
    assert "tools    2 local call(s)" in out
