"""Every Python block of the README runs as written, against the emulators.

The blocks read their credentials and endpoints from the environment as user code would, so
the environment points at loopback emulators; the only edit is the placeholder ids
(``agent_...``, ``env_...``, ``sesn_...``, the example harness ARN), replaced with ids the
emulators made. Each block runs alone in a fresh namespace: a block that leans on another's
names fails here.
"""

from __future__ import annotations

import json
import os
import re
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import telemetry
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    ConverseTurn,
    GeminiEmulator,
    GeminiTurn,
    Turn,
    call,
)
from req_managed_agents.testing._script import ToolCall
from tests.support.readme import Block, python_blocks

EXAMPLE_REDIS = "redis://redis.internal:6379"
EXAMPLE_HARNESS = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/weather-AbCdEf1234"
WEATHER = [Turn(tool_calls=[call("get_weather", city="Paris")]), Turn(text="Sunny in Paris.")]
# The MCP block's run: the agent writes a note through the filesystem server's tool.
NOTE = [
    Turn(tool_calls=[call("fs_write_file", path="notes.md", content="Remember the milk.")]),
    Turn(text="Noted."),
]
NPM_BIN = Path(__file__).resolve().parents[1] / ".venv" / "mcp-servers" / "node_modules" / ".bin"
CONFIRMATIONS = [
    Turn(
        server_tool_calls=[
            ToolCall(
                "delete_branch", {"name": "old"}, "deleted", permission="ask", mcp_server="github"
            ),
            ToolCall("list_issues", {}, "[]", permission="ask", mcp_server="github"),
        ]
    ),
    Turn(text="Tidied up."),
]


BLOCKS = python_blocks()


@pytest.fixture
def claude() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(WEATHER) as emulator:
        yield emulator


@pytest.fixture
def environment(
    claude: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[AgentCoreEmulator | None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", claude.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.base_url)
    # A block that attaches telemetry must not leave its subscriber to later tests.
    monkeypatch.setattr(telemetry, "_subscribers", telemetry._subscribers)
    # The Celery block's own payments module: the side effect it guards.
    payments = types.ModuleType("payments")
    payments.refund = lambda order_id, amount: f"refunded {amount} on {order_id}"  # type: ignore[attr-defined]  # a stand-in module built at run time
    monkeypatch.setitem(sys.modules, "payments", payments)
    try:
        import botocore  # noqa: F401 - only to know whether the AgentCore blocks can run
    except ImportError:
        yield None
        return
    with AgentCoreEmulator([ConverseTurn(text="Sunny in Paris.")]) as agentcore:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", agentcore.access_key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", agentcore.secret_access_key)
        monkeypatch.setenv("AWS_REGION", agentcore.region)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", agentcore.data_url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL", agentcore.control_url)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
        yield agentcore


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiEmulator]:
    """The Gemini blocks' runtime, found through the environment as the SDK finds it."""
    script = [GeminiTurn(tool_calls=[call("get_weather", city="Paris")]), "Sunny in Paris."]
    with GeminiEmulator(script) as emulator:
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv("GEMINI_API_KEY", emulator.api_key)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", emulator.base_url)
        yield emulator


def prepare(
    block: Block,
    claude: ClaudeEmulator,
    agentcore: AgentCoreEmulator | None,
    request: pytest.FixtureRequest,
) -> str:
    """The block with its placeholders replaced by what the emulators made for it."""
    code = block.code
    if EXAMPLE_REDIS in code:
        server = request.getfixturevalue("redis_server")  # skips when there is no redis-server
        code = code.replace(EXAMPLE_REDIS, server.url.rsplit("/", 1)[0])
    script = CONFIRMATIONS if block.heading == "Tool confirmations" else WEATHER
    if "McpServer(" in code:
        # The server as `npm install -g` puts it on PATH; scripts/test installs it here.
        if not (NPM_BIN / "mcp-server-filesystem").exists():
            pytest.skip(f"the npm filesystem MCP server is not installed in {NPM_BIN}")
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PATH", f"{NPM_BIN}{os.pathsep}{os.environ['PATH']}")
        script = NOTE
    if "GeminiManagedAgents(" in code:
        gemini: GeminiEmulator = request.getfixturevalue("gemini")
        code = code.replace('"my-agent"', repr(gemini.add_agent()))
    code = code.replace('"agent_..."', repr(claude.add_agent(script)))
    code = code.replace('"env_..."', repr(claude.add_environment()))
    if '"sesn_..."' in code:
        session = claude.provider().client.create_session(
            claude.add_agent(), claude.add_environment()
        )
        claude.add_output(session["id"], "report.csv", b"city,weather\nParis,sunny\n")
        code = code.replace('"sesn_..."', repr(session["id"]))
    if EXAMPLE_HARNESS in code:
        if agentcore is None:
            pytest.skip("the AgentCore block needs the [aws] extra")
        code = code.replace(
            EXAMPLE_HARNESS, agentcore.add_harness(name=f"h{uuid.uuid4().hex[:12]}")
        )
    return code


def check(block: Block, namespace: dict[str, Any], claude: ClaudeEmulator) -> None:
    """What each block is for, beyond running without an error."""
    if "result" in namespace and hasattr(namespace["result"], "terminal"):
        assert namespace["result"].terminal == "end_turn", namespace["result"]
    if block.heading == "Streaming" and "ask" in namespace:
        serve_the_django_view(namespace)
    if "answer" in namespace and hasattr(namespace["answer"], "delay"):  # the Celery task
        assert namespace["answer"]("T-1", "Refund order 7, please.") == "Sunny in Paris."
    if "test_weather" in namespace:
        with ClaudeEmulator() as emulator:
            namespace["test_weather"](emulator)
    if block.heading == "Local MCP servers":
        assert Path("work/notes.md").read_text() == "Remember the milk."
    if block.heading == "Tool confirmations":
        confirmations = [
            event
            for session_id in claude.session_ids()
            for event in claude.events(session_id)
            if event["type"] == "user.tool_confirmation"
        ]
        assert [(e["result"], e.get("deny_message")) for e in confirmations] == [
            ("deny", "deleting is not allowed from this app"),
            ("allow", None),
        ]


def serve_the_django_view(namespace: dict[str, Any]) -> None:
    from django.conf import settings
    from django.test import RequestFactory

    if not settings.configured:
        settings.configure(DEBUG=False, ALLOWED_HOSTS=["*"])
    response = namespace["ask"](RequestFactory().get("/ask", {"q": "Weather in Paris?"}))
    body = b"".join(response.streaming_content).decode()
    assert response["content-type"] == "text/event-stream"
    texts = re.findall(r"^data: (.*)$", body, flags=re.MULTILINE)
    assert "".join(json.loads(text) for text in texts) == "Sunny in Paris."


def test_the_readme_has_blocks_to_run() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line-{b.line}-{b.heading}" for b in BLOCKS])
# Where bubblewrap cannot run, the worker's example runs bash unconfined and says so.
@pytest.mark.filterwarnings("ignore::req_managed_agents.toolset.UnsandboxedWarning")
def test_a_readme_block_runs_as_written(
    block: Block,
    claude: ClaudeEmulator,
    environment: AgentCoreEmulator | None,
    request: pytest.FixtureRequest,
) -> None:
    for package in ("django", "celery"):
        if f"from {package}" in block.code:
            pytest.importorskip(package)
    code = prepare(block, claude, environment, request)
    namespace: dict[str, Any] = {"__name__": f"readme_line_{block.line}"}
    exec(compile(code, f"README.md:{block.line}", "exec"), namespace)
    check(block, namespace, claude)
