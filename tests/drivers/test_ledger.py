"""The tool ledger: a tool call runs once, even when the process running it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import ToolContext, ToolLedger, ToolResult, Tools, run_to_completion
from req_managed_agents.errors import UnfinishedToolCallError
from req_managed_agents.model import Document, Image
from req_managed_agents.provisioner import FileStore, MemoryStore
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.ledger import claim_and_die

CHARGE = [Turn(tool_calls=[call("charge", amount=5)]), Turn(text=lambda r: f"charged: {r[0]}")]


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_claim_then_finish_then_reuse(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store: Any
    if kind == "redis":
        from req_managed_agents.provisioner import RedisStore

        server = request.getfixturevalue("redis_server")  # skips without a redis-server
        store = RedisStore(server.url, prefix=f"ledger-{tmp_path.name}:")
    else:
        store = FileStore(tmp_path / "ledger.json") if kind == "file" else MemoryStore()
    ledger = ToolLedger(store)
    assert ledger.claim("s1", "t1") is None, "the first claim may run the call"
    started = ledger.claim("s1", "t1")
    assert started is not None
    assert not started.finished
    result = ToolResult.of_blocks(
        "t1", ["a chart", Image(b"\x89PNG", "image/png"), Document(b"%PDF")]
    )
    ledger.finish("s1", "t1", result)
    again = ToolLedger(store).entry("s1", "t1")
    assert again is not None
    assert again.result == result
    assert ledger.claim("s2", "t1") is None, "sessions do not share tool call ids"
    ledger.release("s2", "t1")  # held, its lease would be renewed on past this test


def charging_tools(side_effects: Path) -> Tools:
    tools = Tools()

    @tools.tool
    def charge(amount: int, context: ToolContext) -> str:
        """Charge the customer (a side effect that must happen once)."""
        with side_effects.open("a") as effects:
            effects.write(f"{context.tool_use_id} {amount}\n")
        return f"{amount} EUR"

    return tools


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(CHARGE) as emulator:
        yield emulator


def carrying(kind: str) -> Any:
    return lambda request: (
        isinstance(request.body, dict) and request.body["events"][0]["type"] == kind
    )


def paused_on_a_claimed_call(
    emulator: ClaudeEmulator, provider: Any, store: Path
) -> tuple[str, str]:
    """A session waiting for a tool call that another process claimed and died running."""
    session = provider.client.create_session(emulator.add_agent(), emulator.add_environment())
    message = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
    provider.client.send_events(session["id"], [message])
    last = lambda: emulator.events(session["id"])[-1]["type"]  # noqa: E731 - one use
    assert emulator.wait_until(lambda: last() == "session.status_idle")
    use = next(e for e in emulator.events(session["id"]) if e["type"] == "agent.custom_tool_use")
    claim_and_die(store, session["id"], use["id"])
    return session["id"], use["id"]


@pytest.mark.parametrize(
    ("policy", "expected"), [("error", "was interrupted earlier"), ("rerun", "5 EUR")]
)
def test_a_call_that_started_and_never_finished_follows_the_policy(
    emulator: ClaudeEmulator, tmp_path: Path, policy: Any, expected: str
) -> None:
    effects, store = tmp_path / "effects", tmp_path / "ledger.json"
    ledger = ToolLedger(FileStore(store))
    with emulator.provider() as provider:
        session_id, _ = paused_on_a_claimed_call(emulator, provider, store)
        result = run_to_completion(
            provider,
            handler=charging_tools(effects),
            session_id=session_id,
            ledger=ledger,
            on_unfinished=policy,
            timeout=10,
        )
    assert expected in result.text
    assert effects.exists() == (policy == "rerun")


def test_the_raise_policy_stops_with_a_named_error(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    store = tmp_path / "ledger.json"
    ledger = ToolLedger(FileStore(store))
    with emulator.provider() as provider:
        session_id, use_id = paused_on_a_claimed_call(emulator, provider, store)
        with pytest.raises(UnfinishedToolCallError) as caught:
            run_to_completion(
                provider,
                handler=charging_tools(tmp_path / "effects"),
                session_id=session_id,
                ledger=ledger,
                on_unfinished="raise",
                timeout=10,
            )
    assert caught.value.tool_use.id == use_id


WORKER = textwrap.dedent(
    """
    import sys
    from req_managed_agents import ClaudeManagedAgents, ToolContext, ToolLedger, Tools
    from req_managed_agents import run_to_completion
    from req_managed_agents.provisioner import FileStore

    base_url, api_key, ledger_path, effects_path, mode, target = sys.argv[1:]
    tools = Tools()

    @tools.tool
    def charge(amount: int, context: ToolContext) -> str:
        '''Charge the customer.'''
        with open(effects_path, "a") as effects:
            effects.write(f"{context.tool_use_id} {amount}\\n")
        return f"{amount} EUR"

    ledger = ToolLedger(FileStore(ledger_path))
    provider = ClaudeManagedAgents(api_key, base_url=base_url)
    if mode == "start":
        agent_id, environment_id = target.split(",")
        connect = {"agent_id": agent_id, "environment_id": environment_id}
    else:
        connect = {"session_id": target}
    prompt = "Charge 5" if mode == "start" else None
    result = run_to_completion(provider, prompt, handler=tools, ledger=ledger, **connect)
    print(result.text, flush=True)
    """
)


def test_a_worker_killed_before_posting_its_result_is_resumed_without_running_again(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    ledger, effects = tmp_path / "ledger.json", tmp_path / "effects"
    posting = threading.Event()

    def hold_the_post() -> None:
        posting.set()
        threading.Event().wait(0.5)  # the worker is killed meanwhile

    results = carrying("user.custom_tool_result")
    emulator.before_requests("POST", r"/v1/sessions/.+/events", hold_the_post, where=results)
    emulator.reset_requests("POST", r"/v1/sessions/.+/events", after_acting=False, where=results)
    base = [
        sys.executable,
        "-c",
        WORKER,
        emulator.base_url,
        emulator.api_key,
        str(ledger),
        str(effects),
    ]
    ids = f"{emulator.add_agent()},{emulator.add_environment()}"
    first = subprocess.Popen(
        [*base, "start", ids], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert posting.wait(20), "the worker ran the tool and began to post its result"
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=10)
    (session_id,) = emulator.session_ids()
    assert effects.read_text().count("\n") == 1, "the tool ran before the worker died"

    second = subprocess.run(
        [*base, "resume", session_id], capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "charged: 5 EUR"
    assert effects.read_text().count("\n") == 1, "the side effect happened once"
    posted = [e for e in emulator.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert len(posted) == 1
