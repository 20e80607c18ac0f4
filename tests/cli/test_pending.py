"""``rma pending``: a run on the emulators defers (a tool answering ``Deferred``,
``--confirm defer``, ``--elicit defer``), ``rma pending list`` and ``show`` show what waits,
``approve``, ``deny`` and ``answer`` finish the session, and a second answer gets its own
exit status naming the first. Driven through the real entry point; one story runs each
command in a process of its own."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.cli import _main as _cli
from req_managed_agents.testing import ClaudeEmulator, ConverseTurn, ToolCall, Turn, call
from tests.cli.process import rma_process
from tests.cli.test_run_json import documented_keys
from tests.support.cli import fails, rma

SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/cli-0123456789"
TOOLS_MODULE = '''
from pathlib import Path

from req_managed_agents import Deferred, Tools

tools = Tools()


def _count(line: str) -> None:
    with open(Path(__file__).with_name("calls.txt"), "a", encoding="utf-8") as calls:
        calls.write(line + "\\n")


@tools.tool
def lookup(order: str) -> str:
    """Look an order up."""
    _count(f"lookup {order}")
    return f"order {order} is paid"


@tools.tool
def refund(amount: int) -> str:
    """Refund an amount: finance decides later."""
    _count(f"refund {amount}")
    raise Deferred("finance approves refunds", expires_in=3600)


@tools.tool
def void(order: str) -> str:
    """Void an order: someone decides at once, or never."""
    _count(f"void {order}")
    raise Deferred("void it, or not", expires_in=0)
'''
DECISION_KEYS = [
    "token",
    "kind",
    "session_id",
    "runtime",
    "tool_use",
    "elicitation",
    "reason",
    "created",
    "expires",
    "expired",
    "status",
    "answer",
]
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
REFUND = [
    Turn(tool_calls=[call("lookup", order="A1"), call("refund", amount=5)]),
    Turn(text=lambda results: " | ".join(results)),
]
ASKS = ToolCall("bash", {"command": "rm -rf build"}, result="removed", permission="ask")


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        monkeypatch.setenv("ANTHROPIC_API_KEY", emulator.api_key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.base_url)
        yield emulator


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The current folder holds ``refund_tools.py``, whose calls are counted in calls.txt."""
    (tmp_path / "refund_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("refund_tools", None)


def new_session(emulator: ClaudeEmulator, script: Any) -> list[str]:
    return [
        "--agent-id",
        emulator.add_agent(script),
        "--environment-id",
        emulator.add_environment(),
    ]


def calls(folder: Path) -> list[str]:
    path = folder / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def deferred_run(
    capsys: pytest.CaptureFixture[str], emulator: ClaudeEmulator, script: Any, *flags: str
) -> tuple[str, str]:
    """``rma run`` that stops for a person: its one pending token, and its output."""
    code, out = rma(capsys, "run", *new_session(emulator, script), *flags, "--json", "Go")
    assert code == 1, out
    assert out["terminal"] == "requires_action"
    assert out["stop_reason"]["type"] == "deferred"
    [token] = out["stop_reason"]["tokens"]
    return token, out["session_id"]


# -- the story, each command in a process of its own -----------------------------------------


def test_a_deferred_tool_is_listed_then_answered_from_another_process(
    claude: ClaudeEmulator, folder: Path
) -> None:
    tools = ["--tools", "refund_tools:tools", "--decisions", "decisions"]
    ran = rma_process("run", *new_session(claude, REFUND), *tools, "Refund order A1.")
    assert ran.code == 1, ran.err
    [session_id] = claude.session_ids()
    waiting = [line for line in ran.out.splitlines() if line.startswith("pending ")]
    assert len(waiting) == 1, ran.out
    token = waiting[0].split()[1].rstrip(":")
    assert waiting[0] == (
        f'pending {token}: refund {{"amount": 5}} waits for its result (finance approves refunds)'
    )
    assert f"  rma pending answer {token} --result TEXT --decisions decisions" in ran.out

    listed = rma_process("pending", "list", "--decisions", "decisions")
    assert (listed.code, listed.err) == (0, "")
    first, question = listed.out.splitlines()
    assert first.startswith(f"{token}  tool_result  claude session {session_id}  created ")
    assert question == '  refund {"amount": 5} waits for its result (finance approves refunds)'

    answered = rma_process("pending", "answer", token, "--result", "refunded 5", *tools)
    assert (answered.code, answered.err) == (0, "")
    lines = answered.out.splitlines()
    assert "agent> order A1 is paid | refunded 5" in lines
    assert lines[-1].startswith("end_turn after 1 turn, ")
    assert lines[-1].endswith(f"; session {session_id}")
    assert sorted(calls(folder)) == ["lookup A1", "refund 5"]  # each ran once, in the first process

    nothing = rma_process("pending", "list", "--decisions", "decisions")
    assert (nothing.code, nothing.out) == (0, "no decision waits\n")

    again = rma_process("pending", "answer", token, "--result", "other", *tools)
    assert again.code == 5
    line = again.error_line()
    assert f"decision {token[:8]}... was already answered at " in line
    assert ": result 'refunded 5'" in line
    assert sorted(calls(folder)) == ["lookup A1", "refund 5"]


# -- confirmations ------------------------------------------------------------------------------


def test_a_deferred_confirmation_is_approved_once(
    claude: ClaudeEmulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(server_tool_calls=[ASKS]), Turn(text="cleaned")]
    token, session_id = deferred_run(
        capsys, claude, script, "--confirm", "defer", "--decisions", "d"
    )

    code, out = rma(capsys, "pending", "approve", token, "--decisions", "d")

    assert code == 0, out
    assert "agent> cleaned" in out.splitlines()
    sent = [e for e in claude.events(session_id) if e["type"] == "user.tool_confirmation"]
    assert [e["result"] for e in sent] == ["allow"]
    line = fails(capsys, 5, "pending", "deny", token, "--decisions", "d")
    assert ": allowed" in line
    assert "(hint: " in line
    sent = [e for e in claude.events(session_id) if e["type"] == "user.tool_confirmation"]
    assert len(sent) == 1, "the second answer sent nothing"


def test_a_denial_reaches_the_agent_with_its_message(
    claude: ClaudeEmulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(server_tool_calls=[ASKS]), Turn(text="not cleaned")]
    token, session_id = deferred_run(
        capsys, claude, script, "--confirm", "defer", "--decisions", "d"
    )
    code, out = rma(
        capsys, "pending", "deny", token, "--message", "not on a Friday", "--decisions", "d"
    )
    assert code == 0, out
    sent = [e for e in claude.events(session_id) if e["type"] == "user.tool_confirmation"]
    assert [(e["result"], e.get("deny_message")) for e in sent] == [("deny", "not on a Friday")]
    line = fails(capsys, 5, "pending", "approve", token, "--decisions", "d")
    assert ": denied: not on a Friday" in line


def test_confirm_defer_needs_a_decisions_store(
    claude: ClaudeEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, 2, "run", *new_session(claude, ["Hi"]), "--confirm", "defer", "Hi")
    assert "--confirm defer needs --decisions" in line
    assert claude.session_ids() == [], "refused before anything was sent"


# -- JSON -------------------------------------------------------------------------------------


def test_json_shapes_of_list_show_and_an_answer(
    claude: ClaudeEmulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--tools", "refund_tools:tools", "--decisions", "d"]
    token, session_id = deferred_run(capsys, claude, REFUND, *flags)

    code, listed = rma(capsys, "pending", "list", "--decisions", "d", "--json")
    assert code == 0
    [item] = listed
    assert list(item) == DECISION_KEYS
    assert item["token"] == token
    assert (item["kind"], item["session_id"], item["runtime"]) == (
        "tool_result",
        session_id,
        "claude",
    )
    assert item["tool_use"]["name"] == "refund"
    assert item["tool_use"]["input"] == {"amount": 5}
    assert item["elicitation"] is None
    assert item["reason"] == "finance approves refunds"
    assert ISO_UTC.fullmatch(item["created"])
    assert ISO_UTC.fullmatch(item["expires"])
    assert (item["expired"], item["status"], item["answer"]) == (False, "waiting", None)
    code, of_other = rma(
        capsys, "pending", "list", "--session", "sesn_other", "--decisions", "d", "--json"
    )
    assert (code, of_other) == (0, [])
    code, shown = rma(capsys, "pending", "show", token, "--decisions", "d", "--json")
    assert (code, shown) == (0, item)

    code, done = rma(
        capsys, "pending", "answer", token, "--result", "no", "--error", *flags, "--json"
    )
    assert code == 0
    assert list(done) == documented_keys()  # rma run --json's object
    assert (done["exit_status"], done["terminal"], done["session_id"]) == (
        0,
        "end_turn",
        session_id,
    )
    assert done["text"] == "order A1 is paid | no"
    code, shown = rma(capsys, "pending", "show", token, "--decisions", "d", "--json")
    assert code == 0
    assert (shown["status"], shown["answer"]) == (
        "answered",
        {"result": "no", "is_error": True},
    )

    code, again = rma(capsys, "pending", "answer", token, "--result", "x", *flags, "--json")
    assert code == 5
    assert list(again) == documented_keys()
    assert (again["exit_status"], again["session_id"], again["terminal"]) == (5, session_id, None)
    assert again["error"]["type"] == "AlreadyAnsweredError"
    assert "already answered" in again["error"]["message"]
    assert capsys.readouterr().err == ""  # (the rma: line was read with the output)


def test_an_unknown_token_fails_cleanly(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "d.records").mkdir()
    line = fails(capsys, 2, "pending", "show", "no-such-token", "--decisions", "d")
    assert "no decision no-such-... in" in line
    assert "rma pending list" in line
    code = _cli.main(["pending", "show", "no-such-token", "--decisions", "d", "--json"])
    captured = capsys.readouterr()
    assert code == 2
    import json

    shown = json.loads(captured.out)
    assert shown["exit_status"] == 2
    assert shown["error"]["type"] == "DecisionNotFoundError"
    assert captured.err.startswith("rma: no decision")


def test_a_missing_store_is_the_command_lines_mistake(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(capsys, 2, "pending", "list", "--decisions", "decisons")
    assert "the decisions store decisons does not exist" in line


def test_an_answer_of_the_wrong_kind_is_refused_and_claims_nothing(
    claude: ClaudeEmulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--tools", "refund_tools:tools", "--decisions", "d"]
    token, _ = deferred_run(capsys, claude, REFUND, *flags)
    line = fails(capsys, 2, "pending", "approve", token, *flags)
    assert "rma pending answer TOKEN --result TEXT" in line
    code, listed = rma(capsys, "pending", "list", "--decisions", "d", "--json")
    assert (code, [item["token"] for item in listed]) == (0, [token])  # still waiting


# -- expiry and elicitations --------------------------------------------------------------------


def test_expire_answers_an_expired_tool_with_an_error(
    claude: ClaudeEmulator, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [Turn(tool_calls=[call("void", order="A1")]), Turn(text=lambda r: f"got: {r[0]}")]
    flags = ["--tools", "refund_tools:tools", "--decisions", "d"]
    token, session_id = deferred_run(capsys, claude, script, *flags)
    code, listed = rma(capsys, "pending", "list", "--decisions", "d", "--json")
    assert [item["expired"] for item in listed] == [True]

    code, out = rma(capsys, "pending", "expire", *flags)

    assert code == 0, out
    assert f"{token}: answered no; end_turn" in out
    assert rma(capsys, "pending", "list", "--decisions", "d", "--json") == (0, [])
    tool_results = [e for e in claude.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert [e.get("is_error") for e in tool_results] == [True]
    assert calls(folder) == ["void A1"]


def test_a_deferred_elicitation_on_bedrock_is_accepted(
    bedrock_env: Any, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asks = ToolCall("list_repos", mcp_server="github", elicitation_url="https://sign.in/x")
    script = [Turn(server_tool_calls=[asks]), Turn(text="listed")]
    argv = ["--provider", "claude-bedrock", "--agent-id", bedrock_env.add_agent(script)]
    code, out = rma(
        capsys,
        "run",
        *argv,
        "--environment-id",
        SANDBOX,
        "--elicit",
        "defer",
        "--decisions",
        "d",
        "--json",
        "List.",
    )
    assert code == 1, out
    [token] = out["stop_reason"]["tokens"]
    code, shown = rma(capsys, "pending", "show", token, "--decisions", "d", "--json")
    assert shown["kind"] == "elicitation"
    assert shown["elicitation"]["url"] == "https://sign.in/x"
    assert shown["elicitation"]["server_name"] == "github"
    line = fails(
        capsys, 2, "pending", "approve", token, "--content", '{"a": 1}', "--decisions", "d"
    )
    assert "--content" in line

    code, done = rma(capsys, "pending", "approve", token, "--decisions", "d")

    assert code == 0, done
    assert "agent> listed" in done.splitlines()


def test_a_token_reads_as_an_argument_not_an_option() -> None:
    # A token that began with "-" would be taken for a flag by every command line parser.
    from datetime import datetime, timezone

    from req_managed_agents.drivers._decision_book import DecisionBook
    from req_managed_agents.model import PendingDecision, ToolUse
    from req_managed_agents.stores import MemoryStore

    book = DecisionBook(MemoryStore())
    now = datetime.now(timezone.utc)
    tokens = [
        book.open(
            PendingDecision(
                "", "tool_result", "sesn_1", "claude", ToolUse(f"t{n}", "x"), None, "", now
            )
        ).token
        for n in range(400)
    ]
    assert len(set(tokens)) == 400
    assert [token for token in tokens if token.startswith("-")] == []


def test_an_agentcore_decision_is_answered_in_its_harness_region(
    agentcore_env: Any, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [
        ConverseTurn(tool_calls=[call("refund", amount=5)]),
        ConverseTurn(text=lambda results: f"done: {results[0]}"),
    ]
    arn = agentcore_env.add_harness(script)
    flags = ["--tools", "refund_tools:tools", "--decisions", "d"]
    argv = ["--provider", "agentcore", "--harness-arn", arn, *flags, "--json", "Refund."]
    code, out = rma(capsys, "run", *argv)
    assert code == 1, out
    [token] = out["stop_reason"]["tokens"]

    line = fails(
        capsys, 2, "pending", "answer", token, "--result", "x", "--region", "eu-west-1", *flags
    )
    assert "contradicts the harness ARN" in line
    code, done = rma(capsys, "pending", "answer", token, "--result", "refunded", *flags, "--json")

    assert code == 0, done
    assert (done["session_id"], done["text"]) == (out["session_id"], "done: refunded")
    assert calls(folder) == ["refund 5"]
