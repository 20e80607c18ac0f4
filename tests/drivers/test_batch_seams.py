"""Where batches met other subsystems and lost or repeated work: a rate limit after the tools
ran, a killed batch resumed over and over, a cut-off output line, prompts inserted, a server
asking to wait a day, and Ctrl-C during a pause."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import ToolContext, Tools, run_batch
from req_managed_agents.drivers import BatchItem, read_prompts
from req_managed_agents.drivers import _batch as batch_module
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.tools import CountingTools


def refund_tools(effects: Path) -> Tools:
    tools = Tools()

    @tools.tool
    def refund(order: str, context: ToolContext) -> str:
        """Refund an order (a side effect that must happen once)."""
        with effects.open("a") as log:
            log.write(f"{context.tool_use_id}\n")
        return f"refunded {order}"

    return tools


def is_result(request: Any) -> bool:
    body = request.body
    return isinstance(body, dict) and body["events"][0]["type"] == "user.custom_tool_result"


def lines(path: Path) -> list[dict[str, Any]]:
    """The records of ``path``: whole JSON lines (a cut-off one is skipped, as batches do)."""
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def test_a_prompt_rate_limited_after_its_tools_ran_continues_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_module, "RATE_LIMITED", batch_module.RATE_LIMITED.but(base=0.01))
    effects = tmp_path / "effects"
    script = [Turn(tool_calls=[call("refund", order="7")]), Turn(text=lambda r: r[0])]
    with ClaudeEmulator(script) as emulator:
        # More refusals of the tool result than the HTTP layer and the resend loop take.
        path = r"/v1/sessions/[^/]+/events"
        emulator.fail_requests("POST", path, 429, times=8, retry_after=0.01, where=is_result)
        with emulator.provider(max_retries=1) as provider:
            (outcome,) = run_batch(
                provider,
                ["refund order 7"],
                handler=refund_tools(effects),
                output=tmp_path / "out.jsonl",
                agent_id=emulator.add_agent(),
                environment_id=emulator.add_environment(),
                timeout=30,
            )
        assert outcome.result is not None, outcome.error
        assert outcome.result.text == "refunded 7"
        assert len(effects.read_text().splitlines()) == 1, "the refund ran once"
        assert len(emulator.session_ids()) == 1, "the retry continued the same session"


def test_a_cut_off_last_line_does_not_swallow_the_next_record(
    tmp_path: Path,
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text(json.dumps({"id": "a", "text": "old"}) + "\n" + '{"id": "b", "te')
    with ClaudeEmulator([Turn(text="fresh")]) as emulator, emulator.provider() as provider:
        run_batch(
            provider,
            [BatchItem("a", "x"), BatchItem("b", "y")],
            handler=CountingTools(),
            output=output,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )
    records = lines(output)
    assert [r["id"] for r in records] == ["a", "b"]
    assert records[1]["text"] == "fresh"


def test_a_prompt_inserted_in_front_runs_and_the_others_stay_done(tmp_path: Path) -> None:
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in ("one", "two")))
    script = [Turn(text=lambda inputs: f"answer to {inputs[0]}")]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        run_batch(provider, read_prompts(source), handler=CountingTools(), output=output, **ids)
        source.write_text(json.dumps({"prompt": "zero"}) + "\n" + source.read_text())
        run_batch(provider, read_prompts(source), handler=CountingTools(), output=output, **ids)
        sent = [
            e["content"][0]["text"]
            for s in emulator.session_ids()
            for e in emulator.events(s)
            if e["type"] == "user.message"
        ]
    assert sorted(sent) == ["one", "two", "zero"]
    assert sorted(r["text"] for r in lines(output)) == [
        f"answer to {p}" for p in ("one", "two", "zero")
    ]


def test_a_day_long_retry_after_is_not_waited_out(tmp_path: Path) -> None:
    with ClaudeEmulator([Turn(text="hi")]) as emulator, emulator.provider() as provider:
        emulator.fail_requests("POST", "/v1/sessions", 429, times=3, retry_after=86400)
        started = time.monotonic()
        (outcome,) = run_batch(
            provider,
            ["hello"],
            handler=CountingTools(),
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
        )
    assert time.monotonic() - started < 5
    assert outcome.error is not None
    assert "RateLimitError" in outcome.error


PAUSED = textwrap.dedent(
    """
    import sys
    from req_managed_agents import ClaudeManagedAgents, Tools, run_batch

    base_url, api_key, agent_id, environment_id = sys.argv[1:]
    provider = ClaudeManagedAgents(api_key, base_url=base_url, max_retries=0)
    print("starting", flush=True)
    try:
        run_batch(provider, ["a", "b"], handler=Tools(), agent_id=agent_id,
                  environment_id=environment_id, max_workers=1)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


def test_ctrl_c_ends_a_rate_limit_pause_at_once() -> None:
    with ClaudeEmulator([Turn(text="hi")]) as emulator:
        emulator.fail_requests("POST", "/v1/sessions", 429, times=50, retry_after=25)
        args = [
            emulator.base_url,
            emulator.api_key,
            emulator.add_agent(),
            emulator.add_environment(),
        ]
        with subprocess.Popen(
            [sys.executable, "-c", PAUSED, *args], stdout=subprocess.PIPE, text=True
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "starting"
            assert emulator.wait_until(
                lambda: any(r.path == "/v1/sessions" for r in emulator.requests), 20
            )
            time.sleep(0.5)  # the pool is pausing for the server's 25 s now
            started = time.monotonic()
            child.send_signal(signal.SIGINT)
            code = child.wait(10)
    assert time.monotonic() - started < 5
    assert code == 130


TOOLS_MODULE = textwrap.dedent(
    """
    import os
    from req_managed_agents import ToolContext, Tools

    tools = Tools()

    @tools.tool
    def refund(order: str, context: ToolContext) -> str:
        '''Refund an order.'''
        with open(os.environ["EFFECTS"], "a") as log:
            log.write(context.tool_use_id + "\\n")
        return "refunded " + order
    """
)


def test_rma_batch_killed_at_random_points_and_resumed_repeats_no_side_effect(
    tmp_path: Path,
) -> None:
    (tmp_path / "refunds.py").write_text(TOOLS_MODULE)
    source, output, effects = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "effects"
    source.write_text("".join(json.dumps({"prompt": f"order {n}"}) + "\n" for n in range(200)))
    script = [
        Turn(tool_calls=[call("refund", order="7")], delay=0.1),
        Turn(text=lambda results: f"done: {results[0]}", delay=0.1),
    ]
    chance = random.Random(20261203)
    with ClaudeEmulator(script) as emulator:
        emulator.fail_requests("POST", "/v1/sessions", 429, times=10, retry_after=0.05)
        command = [
            sys.executable, "-m", "req_managed_agents", "batch", str(source), "-o", str(output),
            "--agent-id", emulator.add_agent(), "--environment-id", emulator.add_environment(),
            "--tools", "refunds:tools", "--workers", "8",
        ]  # fmt: skip
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": emulator.api_key,
            "ANTHROPIC_BASE_URL": emulator.base_url,
            "EFFECTS": str(effects),
            "PYTHONPATH": str(tmp_path),
        }
        finished: list[int] = []
        for _ in range(5):  # killed at random moments
            run = subprocess.Popen(
                command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            time.sleep(chance.uniform(0.5, 2.5))
            run.send_signal(signal.SIGKILL)
            run.wait(10)
            finished.append(len(lines(output)) if output.exists() else 0)
        done = subprocess.run(
            command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        statuses = [emulator.events(s)[-1] for s in emulator.session_ids() if emulator.events(s)]
        prompted = [
            any(e["type"] == "user.message" for e in emulator.events(s))
            for s in emulator.session_ids()
        ]
    assert prompted.count(False) == 0, "a session killed before its binding was left empty"
    assert len(prompted) == 200, "each prompt made one session, adopted after a kill"
    assert finished[0] < 200, "the first run was killed before it finished"
    final = {str(r["id"]): r for r in lines(output)}
    assert len(final) == 200
    assert all("error" not in r for r in final.values())
    ran = effects.read_text().splitlines()
    assert len(ran) == len(set(ran)), "a tool side effect was repeated"
    waiting = [e for e in statuses if e.get("stop_reason", {}).get("type") == "requires_action"]
    assert waiting == [], "a session was left waiting for its tools"
