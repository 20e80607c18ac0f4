"""Driver logic against a scripted in-memory conversation (no network): the loop's rules."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from req_managed_agents import (
    ConfigurationError,
    SessionTimeoutError,
    ToolContext,
    ToolResult,
    Tools,
    run_to_completion,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import SessionError, UnresolvedRequiresActionError
from req_managed_agents.model import SessionInfo, ToolUse, TurnResult, Usage
from req_managed_agents.model._vocabulary import Outcome
from req_managed_agents.providers._base import Aborted, Confirmations, Opening
from req_managed_agents.testing import ClaudeEmulator


class FakeConversation:
    """Plays a fixed list of turns; records what the driver sent."""

    def __init__(self, turns: Sequence[TurnResult], unanswered: Sequence[ToolUse] = ()) -> None:
        self.info = SessionInfo("sesn_fake", "fake")
        self.turns = list(turns)
        self.unanswered = list(unanswered)
        self.sent: list[Any] = []
        self.aborted = threading.Event()
        self.block = threading.Event()

    def resume(self) -> TurnResult | None:
        return None

    def _next(self) -> TurnResult:
        if self.block.is_set():
            self.aborted.wait(10)
            raise Aborted
        return self.turns.pop(0)

    def send_prompt(self, prompt: str) -> TurnResult:
        self.sent.append(("prompt", prompt))
        return self._next()

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Any = (),
    ) -> TurnResult:
        self.sent.append(("results", list(results)))
        if confirmations:
            self.sent.append(("confirmations", list(confirmations)))
        return self._next()

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        self.sent.append(("outcome", outcome))
        return self._next()

    def accepts_input(self) -> bool:
        return True

    def unanswered_tool_uses(self) -> list[ToolUse]:
        return self.unanswered

    def send_event(self, event: Mapping[str, Any]) -> None:
        self.sent.append(("event", dict(event)))

    def interrupt(self) -> None:
        self.sent.append(("interrupt", None))

    def abort(self) -> None:
        self.aborted.set()

    def close(self) -> None:
        self.aborted.set()

    def delivered(self, prompt: str) -> bool | None:
        return any(sent == ("prompt", prompt) for sent in self.sent)

    def discard(self) -> None:
        self.close()


class FakeProvider:
    name = "fake"

    def __init__(self, conversation: FakeConversation) -> None:
        self.conversation = conversation
        self.options: Mapping[str, Any] = {}

    def open_conversation(self, options: Mapping[str, Any], opening: Opening) -> FakeConversation:
        self.options = options
        return self.conversation


def needs(*uses: ToolUse) -> TurnResult:
    return TurnResult("requires_action", tool_uses=uses, usage=Usage(1, 1))


def done(text: str = "done") -> TurnResult:
    return TurnResult("end_turn", text=text, usage=Usage(1, 1))


def counting_tools() -> tuple[Tools, list[str]]:
    calls: list[str] = []
    tools = Tools()

    @tools.tool
    def echo(text: str, context: ToolContext) -> str:
        """Echo."""
        calls.append(context.tool_use_id)
        return text

    return tools, calls


def test_provider_options_pass_through_untouched() -> None:
    conversation = FakeConversation([done()])
    provider = FakeProvider(conversation)
    tools, _ = counting_tools()
    run_to_completion(provider, "hi", handler=tools, agent_id="a", custom=1)
    assert provider.options == {"agent_id": "a", "custom": 1}
    assert conversation.sent == [("prompt", "hi")]


def test_no_prompt_sends_the_default_kickoff() -> None:
    conversation = FakeConversation([done()])
    tools, _ = counting_tools()
    run_to_completion(FakeProvider(conversation), handler=tools)
    assert conversation.sent == [("prompt", "Begin.")]


def test_requires_action_without_tool_uses_recovers_unanswered_ones() -> None:
    pending = ToolUse("t1", "echo", {"text": "recovered"})
    conversation = FakeConversation([needs(), done()], unanswered=[pending])
    tools, calls = counting_tools()
    result = run_to_completion(FakeProvider(conversation), "go", handler=tools)
    assert calls == ["t1"]
    assert result.tool_results == (ToolResult("t1", "recovered"),)


def test_requires_action_with_nothing_recoverable_raises_and_sends_nothing() -> None:
    conversation = FakeConversation([needs()])
    tools, _ = counting_tools()
    with pytest.raises(UnresolvedRequiresActionError) as caught:
        run_to_completion(FakeProvider(conversation), "go", handler=tools)
    assert caught.value.session_id == "sesn_fake"
    assert not [sent for sent in conversation.sent if sent[0] == "results"]


def test_a_tool_use_asked_again_gets_its_recorded_result_not_a_second_run() -> None:
    use = ToolUse("t1", "echo", {"text": "once"})
    conversation = FakeConversation([needs(use), needs(use), done()])
    tools, calls = counting_tools()
    result = run_to_completion(FakeProvider(conversation), "go", handler=tools)
    assert calls == ["t1"]
    results_sent = [sent[1] for sent in conversation.sent if sent[0] == "results"]
    assert results_sent == [[ToolResult("t1", "once")], [ToolResult("t1", "once")]]
    assert result.turns == 3


def test_duplicate_ids_within_one_turn_run_once() -> None:
    use = ToolUse("t1", "echo", {"text": "x"})
    conversation = FakeConversation([needs(use, use), done()])
    tools, calls = counting_tools()
    run_to_completion(FakeProvider(conversation), "go", handler=tools)
    assert calls == ["t1"]


def test_max_turns_one_stops_before_running_tools() -> None:
    conversation = FakeConversation([needs(ToolUse("t1", "echo", {"text": "x"}))])
    tools, calls = counting_tools()
    result = run_to_completion(FakeProvider(conversation), "go", handler=tools, max_turns=1)
    assert result.terminal == "terminated"
    assert calls == []


def test_usage_and_text_of_the_result() -> None:
    conversation = FakeConversation([needs(ToolUse("t1", "echo", {"text": "x"})), done("fin")])
    tools, _ = counting_tools()
    result = run_to_completion(FakeProvider(conversation), "go", handler=tools)
    assert result.text == "fin"
    assert result.usage == Usage(2, 2)
    assert result.turn_usage == (Usage(1, 1), Usage(1, 1))
    assert result.session_id == "sesn_fake"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_turns": 0}, "max_turns"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"tool_timeout": 0}, "tool_timeout"),
        ({"turn_guard": 42}, "turn_guard"),
    ],
)
def test_invalid_options_are_rejected_up_front(options: dict[str, Any], message: str) -> None:
    tools, _ = counting_tools()
    with pytest.raises(ConfigurationError, match=message):
        Session(FakeProvider(FakeConversation([])), handler=tools, **options)


def test_a_handler_without_handle_tool_call_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="handle_tool_call"):
        Session(FakeProvider(FakeConversation([])), handler=object())  # type: ignore[arg-type]


def test_wait_before_start_and_double_start_are_errors() -> None:
    conversation = FakeConversation([])
    conversation.block.set()
    tools, _ = counting_tools()
    session = Session(FakeProvider(conversation), handler=tools)
    with pytest.raises(SessionError, match="nothing was started"):
        session.wait()
    session.start("go")
    with pytest.raises(SessionError, match="already in progress"):
        session.start("again")
    session.close()


def test_wait_timeout_leaves_the_run_going_but_run_timeout_tears_it_down() -> None:
    conversation = FakeConversation([])
    conversation.block.set()
    tools, _ = counting_tools()
    session = Session(FakeProvider(conversation), handler=tools)
    session.start("go")
    with pytest.raises(SessionTimeoutError):
        session.wait(0.1)
    assert not conversation.aborted.is_set()
    session.close()
    assert conversation.aborted.is_set()

    blocked = FakeConversation([])
    blocked.block.set()
    started = time.monotonic()
    with pytest.raises(SessionTimeoutError) as caught:
        Session(FakeProvider(blocked), handler=tools).run("go", timeout=0.2)
    assert time.monotonic() - started < 1.5
    assert blocked.aborted.is_set()
    assert caught.value.session_id == "sesn_fake"


def test_a_closed_session_refuses_new_runs() -> None:
    tools, _ = counting_tools()
    session = Session(FakeProvider(FakeConversation([done()])), handler=tools)
    session.close()
    with pytest.raises(SessionError, match="closed"):
        session.start("go")


def test_send_event_goes_to_the_open_conversation() -> None:
    conversation = FakeConversation([done()])
    tools, _ = counting_tools()
    with Session(FakeProvider(conversation), handler=tools) as session:
        with pytest.raises(SessionError, match="not been opened"):
            session.send_event({"type": "x"})
        session.run("go")
        session.send_event({"type": "user.tool_confirmation"})
    assert ("event", {"type": "user.tool_confirmation"}) in conversation.sent


def test_the_turn_guard_does_not_rewrite_a_finished_run() -> None:
    tools, _ = counting_tools()
    result = run_to_completion(
        FakeProvider(FakeConversation([done("fin")])),
        "go",
        handler=tools,
        turn_guard=lambda usage, turns, session_id: "always halt",
    )
    assert (result.terminal, result.text, result.stop_reason) == ("end_turn", "fin", None)


def test_the_turn_guard_stops_further_work() -> None:
    tools, calls = counting_tools()
    result = run_to_completion(
        FakeProvider(FakeConversation([needs(ToolUse("t1", "echo", {"text": "x"}))])),
        "go",
        handler=tools,
        turn_guard=lambda usage, turns, session_id: "budget",
    )
    assert result.stop_reason == {"type": "halted", "reason": "budget"}
    assert calls == []


def test_a_misspelt_option_is_refused_with_the_closest_name() -> None:
    with ClaudeEmulator() as emulator, emulator.provider() as provider:
        with pytest.raises(ConfigurationError, match=r"'max_turn' \(did you mean 'max_turns'\?\)"):
            Session(provider, handler=Tools(), max_turn=3, agent_id="a", environment_id="e")
        with pytest.raises(ConfigurationError, match=r"'agent_idd' \(did you mean 'agent_id'\?\)"):
            run_to_completion(provider, "hi", handler=Tools(), agent_idd="a", environment_id="e")
    assert emulator.requests == [], "refused before anything was sent"
