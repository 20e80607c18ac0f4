"""A run stops for a person and is continued by an answer: a deferred tool, a deferred
confirmation and a deferred elicitation, on each runtime's emulator. Each call runs once,
the hooks that deferred are not asked again, and a second answer learns the first."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import Tools, run_to_completion
from req_managed_agents.drivers import (
    AlreadyAnsweredError,
    DecisionNotFoundError,
    answer,
    pending,
)
from req_managed_agents.errors import ConfigurationError, SessionError
from req_managed_agents.model import (
    Allow,
    Decision,
    Defer,
    Deferred,
    Deny,
    Elicitation,
    ElicitationAnswer,
    ToolResult,
    ToolUse,
)
from req_managed_agents.stores import FileStore
from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call
from req_managed_agents.tools import ToolContext
from tests.emulated import BY_NAME, RUNTIMES, Runtime

RUN_TIMEOUT = 60.0


class _Refunds(Tools):
    """A lookup that answers at once and a refund that waits for finance; every call is
    counted, and the confirmation and elicitation hooks defer (counted too)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.asked: list[str] = []
        self.tool(self.lookup)
        self.tool(self.refund)

    def lookup(self, order: str) -> str:
        """Look an order up."""
        self.calls.append(f"lookup {order}")
        return f"order {order} is paid"

    def refund(self, amount: int) -> str:
        """Refund an amount: finance decides later."""
        self.calls.append(f"refund {amount}")
        raise Deferred("finance approves refunds", expires_in=3600)

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision | Defer:
        self.asked.append(tool_use.name)
        return Defer("the on-call engineer decides")

    def handle_elicitation(
        self, elicitation: Elicitation, context: ToolContext
    ) -> ElicitationAnswer | Defer:
        self.asked.append(elicitation.server_name)
        return Defer("the account owner signs in")


def _joined(texts: list[str]) -> str:
    return " | ".join(texts)


def _emulated(runtime: Runtime, turns: list[dict[str, Any]]) -> Any:
    return runtime.start([runtime.turn(**turn) for turn in turns])


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "decisions")


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_a_deferred_tool_waits_then_an_answer_finishes_the_run(
    runtime: Runtime, store: FileStore
) -> None:
    tools = _Refunds()
    turns = [
        {"tool_calls": [call("lookup", order="A1"), call("refund", amount=5)]},
        {"text": _joined},
    ]
    with _emulated(runtime, turns) as emulator, emulator.provider(timeout=10) as provider:
        stopped = run_to_completion(
            provider,
            "Refund order A1.",
            handler=tools,
            decisions=store,
            timeout=RUN_TIMEOUT,
            **runtime.connect(emulator),
        )
        [waiting] = stopped.pending
        assert stopped.terminal == "requires_action"
        assert stopped.stop_reason == {"type": "deferred", "tokens": [waiting.token]}
        assert (waiting.kind, waiting.reason) == ("tool_result", "finance approves refunds")
        assert waiting.tool_use is not None
        assert (waiting.tool_use.name, dict(waiting.tool_use.input)) == ("refund", {"amount": 5})
        assert waiting.session_id == stopped.session_id
        assert waiting.runtime == provider.name
        assert waiting.expires is not None
        assert not waiting.expired
        assert pending(store) == [waiting]
        assert pending(store, session_id="another") == []

        finished = answer(
            provider, waiting.token, handler=tools, decisions=store, result="refunded 5"
        )

        assert finished.terminal == "end_turn"
        assert finished.text == "order A1 is paid | refunded 5"
        assert finished.pending == ()
        assert sorted(tools.calls) == ["lookup A1", "refund 5"]  # each ran once, in the first run
        assert pending(store) == []
        with pytest.raises(AlreadyAnsweredError) as again:
            answer(provider, waiting.token, handler=tools, decisions=store, result="other")
        assert again.value.first == ToolResult(waiting.tool_use.id, "refunded 5")
        assert again.value.answered_at is not None


def test_two_questions_of_one_turn_go_out_together_once_both_are_answered(
    store: FileStore,
) -> None:
    tools = _Refunds()
    turns = [
        {"tool_calls": [call("refund", amount=5), call("refund", amount=7)]},
        {"text": _joined},
    ]
    runtime = BY_NAME["openai"]  # OpenAI wants every call of a turn answered in one input
    with _emulated(runtime, turns) as emulator, emulator.provider(timeout=10) as provider:
        stopped = run_to_completion(
            provider, "Refund both.", handler=tools, decisions=store, **runtime.connect(emulator)
        )
        first, second = stopped.pending

        halfway = answer(provider, first.token, handler=tools, decisions=store, result="5 back")
        assert halfway.terminal == "requires_action"
        assert [d.token for d in halfway.pending] == [second.token]  # the same question
        done = answer(provider, second.token, handler=tools, decisions=store, result="7 back")

    assert done.text == "5 back | 7 back"
    assert sorted(tools.calls) == ["refund 5", "refund 7"]


def test_a_deferred_confirmation_is_answered_without_asking_the_hook_again(
    store: FileStore,
) -> None:
    tools = _Refunds()
    bash = ToolCall("bash", {"command": "rm -rf build"}, result="removed", permission="ask")
    script = [Turn(server_tool_calls=[bash]), Turn(text="cleaned")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        stopped = run_to_completion(
            provider, "Clean up.", handler=tools, decisions=store, **connect
        )
        [waiting] = stopped.pending
        assert (waiting.kind, waiting.reason) == ("confirmation", "the on-call engineer decides")
        assert tools.asked == ["bash"]

        finished = answer(provider, waiting.token, handler=tools, decisions=store, allow=True)

        assert finished.terminal == "end_turn"
        assert finished.text == "cleaned"
        assert tools.asked == ["bash"]  # not asked again
        sent = [
            e for e in emulator.events(stopped.session_id) if e["type"] == "user.tool_confirmation"
        ]
        assert [e["result"] for e in sent] == ["allow"]


def test_a_denial_reaches_the_agent_with_its_message(store: FileStore) -> None:
    runtime = BY_NAME["openai"]
    ask = ToolCall("delete_repo", {"name": "x"}, permission="ask", mcp_server="github")
    turns = [{"mcp_calls": [ask]}, {"text": _joined}]
    with _emulated(runtime, turns) as emulator, emulator.provider(timeout=10) as provider:
        stopped = run_to_completion(
            provider, "Delete it.", handler=_Refunds(), decisions=store, **runtime.connect(emulator)
        )
        [waiting] = stopped.pending
        finished = answer(
            provider, waiting.token, handler=_Refunds(), decisions=store, allow=False, message="no"
        )
    assert finished.text == "denied"


def test_a_deferred_elicitation_on_bedrock_is_answered_later(store: FileStore) -> None:
    tools = _Refunds()
    asks = ToolCall("list_repos", mcp_server="github", elicitation_url="https://sign.in/x")
    runtime = BY_NAME["claude-bedrock"]
    turns = [{"server_tool_calls": [asks]}, {"text": "listed"}]
    with _emulated(runtime, turns) as emulator, emulator.provider(timeout=10) as provider:
        stopped = run_to_completion(
            provider, "List.", handler=tools, decisions=store, **runtime.connect(emulator)
        )
        [waiting] = stopped.pending
        assert waiting.kind == "elicitation"
        assert waiting.elicitation is not None
        assert waiting.elicitation.url == "https://sign.in/x"
        finished = answer(provider, waiting.token, handler=tools, decisions=store, allow=True)
    assert finished.terminal == "end_turn"
    assert tools.asked == ["github"]


def test_deferring_needs_a_store() -> None:
    script = [Turn(tool_calls=[call("refund", amount=5)]), Turn(text="x")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        with pytest.raises(SessionError, match="decisions="):
            run_to_completion(provider, "Refund.", handler=_Refunds(), **connect)
        with pytest.raises(ConfigurationError, match="decisions="):
            run_to_completion(provider, "x", handler=Tools(), confirm="defer", **connect)


@pytest.mark.parametrize(
    ("arguments", "wrong"),
    [
        ({"allow": True}, "result="),
        ({"result": "x", "content": {"a": 1}}, "result="),
        ({}, "result="),
    ],
)
def test_an_answer_of_the_wrong_kind_is_refused_before_anything_is_sent(
    arguments: Mapping[str, Any], wrong: str, store: FileStore
) -> None:
    tools = _Refunds()
    script = [Turn(tool_calls=[call("refund", amount=5)]), Turn(text="x")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        [waiting] = run_to_completion(
            provider, "Refund.", handler=tools, decisions=store, **connect
        ).pending
        with pytest.raises(ConfigurationError, match=wrong):
            answer(provider, waiting.token, handler=tools, decisions=store, **arguments)
        with pytest.raises(DecisionNotFoundError):
            answer(provider, "no-such-token", handler=tools, decisions=store, result="x")
        assert pending(store) == [waiting]  # still waiting: nothing was claimed


def test_an_allow_from_a_policy_is_unchanged(store: FileStore) -> None:
    # A store alone changes nothing: a hook that answers now is not deferred.
    class Allowing(Tools):
        def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
            return Allow()

    bash = ToolCall("bash", {"command": "ls"}, result="a b", permission="ask")
    script = [Turn(server_tool_calls=[bash]), Turn(text="listed")]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        result = run_to_completion(provider, "ls", handler=Allowing(), decisions=store, **connect)
    assert (result.terminal, result.pending) == ("end_turn", ())
    assert pending(store) == []
    assert not isinstance(Deny(), Allow)


class _AskingLater(Tools):
    """Defers every confirmation, local MCP tools' included."""

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision | Defer:
        return Defer("the folder's owner decides")


@pytest.mark.parametrize("allow", [True, False])
def test_a_local_mcp_tools_confirmation_waits_and_the_tool_runs_only_once_allowed(
    allow: bool, store: FileStore, tmp_path: Path
) -> None:
    from req_managed_agents import McpServer
    from tests.mcp.conftest import npm_server

    command, *args = npm_server("server-filesystem")
    folder = tmp_path / "files"
    folder.mkdir()
    note = folder / "note.txt"
    write = call("fs_write_file", path=str(note), content="hello")
    script = [Turn(tool_calls=[write]), Turn(text=_joined)]
    with (
        McpServer(command, [*args, str(folder)], name="files") as server,
        ClaudeEmulator(script) as emulator,
        emulator.provider(timeout=10) as provider,
    ):
        tools = _AskingLater()
        tools.include(server, prefix="fs_", allow=["write_file"])
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        stopped = run_to_completion(
            provider, "Write it.", handler=tools, decisions=store, timeout=RUN_TIMEOUT, **connect
        )
        [waiting] = stopped.pending
        assert (waiting.kind, waiting.reason) == ("confirmation", "the folder's owner decides")
        assert waiting.tool_use is not None
        assert (waiting.tool_use.name, waiting.tool_use.mcp_server) == ("fs_write_file", None)
        assert not note.exists()  # not run while it waits

        arguments: dict[str, Any] = {"allow": True} if allow else {"allow": False}
        if not allow:
            arguments["message"] = "not that folder"
        finished = answer(provider, waiting.token, handler=tools, decisions=store, **arguments)

    assert finished.terminal == "end_turn"
    if allow:
        assert note.read_text() == "hello"
        assert "Successfully wrote" in finished.text
    else:
        assert not note.exists()
        assert "denied: not that folder" in finished.text


def test_an_answer_that_does_not_wait_is_sent_by_whoever_continues_the_session(
    store: FileStore,
) -> None:
    tools = _Refunds()
    script = [Turn(tool_calls=[call("refund", amount=5)]), Turn(text=_joined)]
    with ClaudeEmulator(script) as emulator, emulator.provider(timeout=10) as provider:
        connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        stopped = run_to_completion(provider, "Refund.", handler=tools, decisions=store, **connect)
        [waiting] = stopped.pending

        kept = answer(
            provider, waiting.token, handler=tools, decisions=store, result="5 back", wait=False
        )
        assert kept is None
        assert pending(store) == []
        [session] = emulator.session_ids()
        events = emulator.events(session)
        assert not [e for e in events if e["type"] == "user.custom_tool_result"]  # not yet
        with pytest.raises(AlreadyAnsweredError):
            answer(provider, waiting.token, handler=tools, decisions=store, result="5 back")

        # A worker goes on with the session: the kept answer is what it sends.
        finished = run_to_completion(
            provider, handler=tools, decisions=store, session_id=stopped.session_id, **connect
        )

    assert (finished.terminal, finished.text) == ("end_turn", "5 back")
    assert tools.calls == ["refund 5"]
