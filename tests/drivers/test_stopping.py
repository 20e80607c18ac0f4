"""The one stopping rule, end to end: whoever stops waiting, the remote turn stops too.

Ctrl-C is a real SIGINT sent to a separate Python process driving a session against an
emulator this test owns, so the emulator's log shows what the client did on its way out.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from req_managed_agents import Session, ToolContext, Tools, run_to_completion
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator, ConverseTurn, Turn, call
from tests.support.tools import CountingTools

CHILD = textwrap.dedent(
    """
    import sys, threading, time
    from req_managed_agents import ClaudeManagedAgents, Session, ToolContext, Tools

    base_url, api_key, agent_id, environment_id, mode = sys.argv[1:]
    tools = Tools()

    @tools.tool
    def slow(context: ToolContext) -> str:
        '''Work until told to stop.'''
        print("tool-started", flush=True)
        began = time.monotonic()
        if context.cancelled.wait(30):
            print(f"tool-cancelled {time.monotonic() - began:.3f}", flush=True)
        return "stopped"

    provider = ClaudeManagedAgents(api_key, base_url=base_url)
    session = Session(provider, handler=tools, agent_id=agent_id, environment_id=environment_id)
    try:
        if mode == "run":
            session.run("go", timeout=60)
        else:
            for item in session.stream("go", timeout=60):
                pass
    except KeyboardInterrupt:
        # The tool reports its cancel signal meanwhile; the threads end (bounded for a busy box).
        ours = ("rma-session", "rma-feed")
        deadline = time.monotonic() + 20
        while True:
            alive = [t.name for t in threading.enumerate() if t.name.startswith(ours)]
            if not alive or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        print(f"interrupted threads={alive}", flush=True)
        sys.exit(130)
    print("finished", flush=True)
    """
)


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(ping_interval=0.2) as emulator:
        yield emulator


def spawn(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ}
    )


def read_until(process: subprocess.Popen[str], marker: str, timeout: float = 20) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if marker in line:
            return
        if not line and process.poll() is not None:
            break
    process.kill()
    _, err = process.communicate()
    pytest.fail(f"never saw {marker!r}; stderr: {err}")


@pytest.mark.parametrize("mode", ["run", "stream"])
def test_ctrl_c_interrupts_the_remote_turn_and_the_running_tool(
    emulator: ClaudeEmulator, tmp_path: object, mode: str
) -> None:
    script = [Turn(tool_calls=[call("slow")]), Turn(text="never reached")]
    agent_id, environment_id = emulator.add_agent(script), emulator.add_environment()
    child = spawn(
        [
            sys.executable,
            "-c",
            CHILD,
            emulator.base_url,
            emulator.api_key,
            agent_id,
            environment_id,
            mode,
        ]
    )
    read_until(child, "tool-started")
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    cancelled = [line for line in out.splitlines() if line.startswith("tool-cancelled")]
    assert cancelled, out
    # Told at once, not after its own 30 s (with room for a busy machine).
    assert float(cancelled[0].split()[1]) < 10, "the tool saw its cancel signal"
    assert "interrupted threads=[]" in out, out
    (session_id,) = emulator.session_ids()
    logged = [event["type"] for event in emulator.events(session_id)]
    assert "user.interrupt" in logged
    assert "user.custom_tool_result" not in logged


def test_rma_demo_exits_130_with_one_line_on_ctrl_c() -> None:
    child = spawn([sys.executable, "-m", "req_managed_agents", "demo", "--turn-delay", "30"])
    read_until(child, "Running against the built-in emulator")
    time.sleep(0.3)  # inside the first turn now
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 130
    assert err.splitlines() == ["rma: interrupted"]


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


def test_leaving_the_with_block_with_a_run_in_flight_interrupts_it(
    emulator: ClaudeEmulator,
) -> None:
    started, saw_cancel = threading.Event(), threading.Event()
    script = [Turn(tool_calls=[call("slow")]), Turn(text="never reached")]
    with (
        emulator.provider() as provider,
        Session(
            provider,
            handler=blocking_tools(started, saw_cancel),
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        ) as session,
    ):
        session.start("go")
        assert started.wait(10)
        session_id = str(session.session_id)
    assert saw_cancel.wait(20)
    assert "user.interrupt" in [event["type"] for event in emulator.events(session_id)]


@pytest.mark.parametrize("interrupt", [False, True], ids=["resumable", "interrupt_on_timeout"])
def test_a_run_timeout_interrupts_the_turn_only_when_asked(
    emulator: ClaudeEmulator, interrupt: bool
) -> None:
    started, saw_cancel = threading.Event(), threading.Event()
    script = [Turn(tool_calls=[call("slow")]), Turn(text="later")]
    with emulator.provider() as provider, pytest.raises(TimeoutError) as caught:
        run_to_completion(
            provider,
            "go",
            handler=blocking_tools(started, saw_cancel),
            timeout=1.0,
            interrupt_on_timeout=interrupt,
            agent_id=emulator.add_agent(script),
            environment_id=emulator.add_environment(),
        )
    assert saw_cancel.wait(20), "the tool is told to stop either way"
    session_id = str(caught.value.session_id)  # type: ignore[attr-defined]
    logged = [event["type"] for event in emulator.events(session_id)]
    assert ("user.interrupt" in logged) is interrupt


def test_cancelling_an_agentcore_run_stops_its_runtime_session() -> None:
    pytest.importorskip("botocore")
    started, saw_cancel = threading.Event(), threading.Event()
    script = [ConverseTurn(tool_calls=[call("slow")]), ConverseTurn(text="later")]
    with AgentCoreEmulator(script) as emulator, emulator.provider() as provider:
        session = Session(
            provider,
            handler=blocking_tools(started, saw_cancel),
            harness_arn=emulator.add_harness(),
        )
        session.start("go")
        assert started.wait(10)
        session.cancel()
        result = session.wait(5)
        assert saw_cancel.wait(20)
        stops = [r for r in emulator.requests if r.path.endswith("/stopruntimesession")]
    assert result.stop_reason == {"type": "cancelled"}
    assert [r.headers["x-amzn-bedrock-agentcore-runtime-session-id"] for r in stops] == [
        session.session_id
    ]


def test_a_finished_run_is_not_interrupted_by_close(emulator: ClaudeEmulator) -> None:
    with (
        emulator.provider() as provider,
        Session(
            provider,
            handler=CountingTools(),
            agent_id=emulator.add_agent(["done"]),
            environment_id=emulator.add_environment(),
        ) as session,
    ):
        assert session.run("hi", timeout=10).text == "done"
        session_id = str(session.session_id)
    assert "user.interrupt" not in [event["type"] for event in emulator.events(session_id)]
