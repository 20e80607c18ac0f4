"""What a batch keeps in its ledger (``<output>.state``): nothing of an item that succeeded -
its session's tool entries and its key's binding go once its line is safely in the output -
and everything of one that did not, for the next run to continue it. A batch killed between
writing a success and forgetting it loses nothing: the next run skips the item and clears
what was left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from req_managed_agents import ToolContext, ToolLedger, Tools, run_batch
from req_managed_agents.drivers import BatchItem
from req_managed_agents.stores import FileStore
from req_managed_agents.testing import ClaudeEmulator, Turn, call

SCRIPT = [Turn(tool_calls=[call("fetch", order="7")]), Turn(text=lambda results: "done")]


def fetch_tools(effects: Path) -> Tools:
    tools = Tools()

    @tools.tool
    def fetch(order: str, context: ToolContext) -> str:
        """Fetch an order (10 kB; a side effect that must happen once)."""
        with effects.open("a") as log:
            log.write(f"{context.tool_use_id}\n")
        return "x" * 10_000

    return tools


def state_records(output: Path) -> list[Path]:
    folder = output.with_name(output.name + ".state.records")
    return sorted(folder.rglob("*.json")) if folder.exists() else []


def test_the_state_store_keeps_nothing_of_the_items_that_succeeded(tmp_path: Path) -> None:
    output, effects = tmp_path / "out.jsonl", tmp_path / "effects"
    with ClaudeEmulator(SCRIPT) as emulator, emulator.provider() as provider:
        outcomes = run_batch(
            provider,
            [f"order {n}" for n in range(20)],
            handler=fetch_tools(effects),
            max_workers=4,
            output=output,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )
    assert [o.error for o in outcomes] == [None] * 20
    assert len(effects.read_text().splitlines()) == 20
    assert state_records(output) == []


def test_a_failed_item_keeps_its_entries_for_the_next_run_to_continue(tmp_path: Path) -> None:
    output, effects = tmp_path / "out.jsonl", tmp_path / "effects"
    with ClaudeEmulator(SCRIPT) as emulator, emulator.provider() as provider:
        ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        # The tool ran and its result is in the ledger; posting it is refused for good.
        emulator.fail_requests("POST", r"/v1/sessions/[^/]+/events", 400, where=is_result)
        (failed,) = run_batch(
            provider, ["order 1"], handler=fetch_tools(effects), output=output, **ids
        )
        assert failed.error is not None
        assert len(state_records(output)) == 2, "its binding and its finished call stay"
        (again,) = run_batch(
            provider, ["order 1"], handler=fetch_tools(effects), output=output, **ids
        )
        assert again.result is not None, again.error
        assert len(emulator.session_ids()) == 1, "the same session went on"
    assert len(effects.read_text().splitlines()) == 1, "the tool ran once"
    assert state_records(output) == []


def test_a_key_the_user_gave_stays_bound_and_the_sessions_entries_go(tmp_path: Path) -> None:
    output, effects = tmp_path / "out.jsonl", tmp_path / "effects"
    ledger = ToolLedger(FileStore(tmp_path / "ledger"))
    with ClaudeEmulator(SCRIPT) as emulator, emulator.provider() as provider:
        (outcome,) = run_batch(
            provider,
            [BatchItem("mine", "order 1", {"idempotency_key": "my-key"})],
            handler=fetch_tools(effects),
            output=output,
            ledger=ledger,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )
    assert outcome.result is not None
    binding = ledger.binding("my-key")
    assert binding is not None, "a key the user gave is the user's to let go of"
    assert binding["session_id"] == outcome.result.session_id
    assert len(list((tmp_path / "ledger.records").rglob("*.json"))) == 1, "only the binding"


def is_result(request: Any) -> bool:
    body = request.body
    return isinstance(body, dict) and body["events"][0]["type"] == "user.custom_tool_result"


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from req_managed_agents import ToolContext, ToolLedger, Tools, run_batch
    from req_managed_agents.providers import ClaudeManagedAgents

    base_url, api_key, agent, environment, output, effects = sys.argv[1:7]
    tools = Tools()

    @tools.tool
    def fetch(order: str, context: ToolContext) -> str:
        '''Fetch an order.'''
        with open(effects, "a") as log:
            log.write(context.tool_use_id + "\\n")
        return "x" * 10_000

    def killed(self, session_id):  # right after the first success was written
        os.kill(os.getpid(), signal.SIGKILL)

    ToolLedger.forget = killed
    with ClaudeManagedAgents(api_key=api_key, base_url=base_url) as provider:
        run_batch(provider, ["order 1", "order 2"], handler=tools, max_workers=1,
                  output=output, agent_id=agent, environment_id=environment)
    """
)


def test_killed_between_recording_a_success_and_forgetting_it_nothing_runs_twice(
    tmp_path: Path,
) -> None:
    output, effects = tmp_path / "out.jsonl", tmp_path / "effects"
    with ClaudeEmulator(SCRIPT) as emulator:
        agent, environment = emulator.add_agent(), emulator.add_environment()
        args = [emulator.base_url, emulator.api_key, agent, environment, str(output), str(effects)]
        child = subprocess.run(
            [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=60
        )
        assert child.returncode == -signal.SIGKILL, child.stderr
        (first,) = [json.loads(line) for line in output.read_text().splitlines()]
        assert "error" not in first, "the success was written before the kill"
        assert len(state_records(output)) == 2, "its entries were not forgotten yet"
        with emulator.provider() as provider:
            outcomes = run_batch(
                provider,
                ["order 1", "order 2"],
                handler=fetch_tools(effects),
                output=output,
                agent_id=agent,
                environment_id=environment,
            )
        sent = [
            e["content"][0]["text"]
            for s in emulator.session_ids()
            for e in emulator.events(s)
            if e["type"] == "user.message"
        ]
    assert [o.error for o in outcomes] == [None, None]
    assert sorted(sent) == ["order 1", "order 2"], "each prompt was sent once"
    ran = effects.read_text().splitlines()
    assert len(ran) == 2
    assert len(set(ran)) == 2, "no tool ran twice"
    assert state_records(output) == [], "the rerun cleared what the killed run left"
    assert os.path.getsize(output) > 0
