"""``Session.detach``: let go of a session without stopping it, so another process can take
it up - the running tools are told to stop, the stream closes, the remote turn goes on."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from req_managed_agents import Session, ToolContext, Tools
from req_managed_agents.testing import ClaudeEmulator, Turn, call


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(ping_interval=0.2) as emulator:
        yield emulator


def blocking_tools(started: threading.Event, saw_cancel: threading.Event) -> Tools:
    tools = Tools()

    @tools.tool
    def slow(context: ToolContext) -> str:
        """Work until told to stop."""
        started.set()
        if context.cancelled.wait(10):
            saw_cancel.set()
        return "stopped"

    return tools


def test_detaching_tells_the_tools_to_stop_and_leaves_the_remote_turn_alone(
    emulator: ClaudeEmulator,
) -> None:
    started, saw_cancel = threading.Event(), threading.Event()
    script = [Turn(tool_calls=[call("slow")]), Turn(text="finished later")]
    with emulator.provider() as provider:
        session = Session(
            provider,
            handler=blocking_tools(started, saw_cancel),
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        )
        session.start("go")
        assert started.wait(10)
        session_id = str(session.session_id)
        session.detach()
        result = session.wait(5)
        assert saw_cancel.wait(2), "the running tool is told to stop"
        assert emulator.wait_until(lambda: emulator.open_stream_count(session_id) == 0)
        logged = [event["type"] for event in emulator.events(session_id)]
        assert result.terminal == "terminated"
        assert result.stop_reason == {"type": "detached"}
        assert "user.interrupt" not in logged
        assert logged[-1] == "session.status_idle"  # still waiting for the tool's result

        # Another session object (another process, in real life) takes it up and finishes.
        tools = Tools()

        @tools.tool(name="slow")
        def answer(context: ToolContext) -> str:
            """Answer at once."""
            return "done elsewhere"

        with Session(provider, handler=tools, session_id=session_id) as resumed:
            assert resumed.run(None, timeout=10).text == "finished later"


def test_detaching_after_the_run_ended_changes_nothing(emulator: ClaudeEmulator) -> None:
    with emulator.provider() as provider:
        session = Session(
            provider,
            handler=Tools(),
            agent_id=emulator.add_agent(["done"]),
            environment_id=emulator.add_environment(),
        )
        result = session.run("hi", timeout=10)
        session.detach()
        session.detach()  # idempotent
        assert session.wait(1) is result
        logged = [event["type"] for event in emulator.events(str(session.session_id))]
    assert result.stop_reason == {"type": "end_turn"}
    assert "user.interrupt" not in logged


def test_a_detached_session_cannot_start_another_run(emulator: ClaudeEmulator) -> None:
    with emulator.provider() as provider:
        session = Session(
            provider,
            handler=Tools(),
            agent_id=emulator.add_agent(["done"]),
            environment_id=emulator.add_environment(),
        )
        session.detach()
        with pytest.raises(Exception, match="closed"):
            session.run("hi", timeout=5)
