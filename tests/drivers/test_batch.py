"""Batch runs: bounded, rate-limit aware, appended as they finish, resumable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from req_managed_agents import ConfigurationError, run_batch
from req_managed_agents.drivers import BatchItem, read_prompts
from req_managed_agents.drivers import _batch as batch_module
from req_managed_agents.drivers._batch import content_id
from req_managed_agents.testing import ClaudeEmulator, Turn
from tests.support.tools import CountingTools

ANSWER = [Turn(text=lambda inputs: f"answer to {inputs[0]}")]


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(ANSWER) as emulator:
        yield emulator


def lines(path: Path) -> list[dict[str, object]]:
    """The whole lines of ``path`` (a batch killed mid-write may leave half of one)."""
    text = path.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line]


def test_two_hundred_prompts_through_rate_limits_all_finish(
    emulator: ClaudeEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch_module, "RATE_LIMITED", batch_module.RATE_LIMITED.but(base=0.01))
    # Bursts of refusals longer than the HTTP layer's own retries, with and without a hint.
    emulator.fail_requests("POST", "/v1/sessions", 429, times=12, retry_after=0.02)
    emulator.fail_requests("POST", "/v1/sessions", 429, times=6)
    output = tmp_path / "out.jsonl"
    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    prompts = [f"question {n}" for n in range(200)]
    with emulator.provider(max_retries=1) as provider:
        outcomes = run_batch(
            provider,
            prompts,
            handler=CountingTools(),
            max_workers=8,
            output=output,
            timeout=30,
            **ids,
        )
    assert [o.error for o in outcomes] == [None] * 200
    assert [o.result.text for o in outcomes if o.result] == [f"answer to {p}" for p in prompts]
    recorded = lines(output)
    assert sorted(str(r["id"]) for r in recorded) == sorted(o.id for o in outcomes)
    assert len({o.id for o in outcomes}) == 200
    assert emulator.pending_faults() == 0, "the refusals were met"


def test_a_failure_is_recorded_and_the_batch_goes_on(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    output = tmp_path / "out.jsonl"
    items = [
        BatchItem("good", "hello", {"agent_id": emulator.add_agent()}),
        BatchItem("bad", "hello", {"agent_id": "agent_missing"}),
    ]
    with emulator.provider() as provider:
        outcomes = run_batch(
            provider,
            items,
            handler=CountingTools(),
            output=output,
            environment_id=emulator.add_environment(),
        )
    assert outcomes[0].result is not None
    assert outcomes[1].error is not None
    assert "NotFoundError" in outcomes[1].error
    assert {r["id"]: "error" in r for r in lines(output)} == {"good": False, "bad": True}


def test_a_rerun_skips_what_succeeded_and_retries_what_failed(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text(
        json.dumps({"id": "1", "terminal": "end_turn", "text": "old"})
        + "\n"
        + json.dumps({"id": "2", "error": "RateLimitError: later"})
        + "\n"
        + '{"id": "3", "termi'  # cut off by a kill mid-write
    )
    ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    items = [BatchItem(str(n), prompt) for n, prompt in enumerate("abc", 1)]
    with emulator.provider() as provider:
        run_batch(provider, items, handler=CountingTools(), output=output, **ids)
    sent = [
        e["content"][0]["text"]
        for s in emulator.session_ids()
        for e in emulator.events(s)
        if e["type"] == "user.message"
    ]
    assert sorted(sent) == ["b", "c"]


def test_read_prompts_names_lines_and_refuses_bad_ones(tmp_path: Path) -> None:
    good = tmp_path / "in.jsonl"
    good.write_text('{"prompt": "a"}\n\n{"id": "x", "prompt": "b", "title": "T"}\n')
    named = content_id("a", {}, set())
    assert read_prompts(good) == [BatchItem(named, "a"), BatchItem("x", "b", {"title": "T"})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a", "id": "x"}\n{"prompt": "b", "id": "x"}\n')
    with pytest.raises(ConfigurationError, match="twice"):
        read_prompts(bad)


def rma_batch(emulator: ClaudeEmulator, source: Path, output: Path) -> list[str]:
    agent, environment = emulator.add_agent(), emulator.add_environment()
    return [
        sys.executable, "-m", "req_managed_agents", "batch", str(source), "-o", str(output),
        "--agent-id", agent, "--environment-id", environment, "--workers", "4",
    ]  # fmt: skip


def emulator_env(emulator: ClaudeEmulator) -> dict[str, str]:
    return {
        **os.environ,
        "ANTHROPIC_API_KEY": emulator.api_key,
        "ANTHROPIC_BASE_URL": emulator.base_url,
    }


def test_rma_batch_runs_two_hundred_prompts_through_rate_limits(
    emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"prompt": f"p{n}"}) + "\n" for n in range(200)))
    emulator.fail_requests("POST", "/v1/sessions", 429, times=9, retry_after=0.05)
    done = subprocess.run(
        rma_batch(emulator, source, output),
        env=emulator_env(emulator),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "200 of 200 prompts succeeded"
    final = {str(r["id"]): r for r in lines(output)}
    assert len(final) == 200
    assert {r["text"] for r in final.values()} == {f"answer to p{n}" for n in range(200)}


def test_a_batch_killed_halfway_resumes_without_repeating_finished_prompts(
    tmp_path: Path,
) -> None:
    slow = [Turn(text=lambda inputs: f"answer to {inputs[0]}", delay=0.05)]
    source, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"prompt": f"p{n}"}) + "\n" for n in range(200)))
    with ClaudeEmulator(slow) as emulator:
        # Rate limits in both runs: some before the kill, the rest after it.
        emulator.fail_requests("POST", "/v1/sessions", 429, times=12, retry_after=0.05)
        args, env = rma_batch(emulator, source, output), emulator_env(emulator)
        first = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        # Whole lines only: the line being written may be read half written.
        while time.monotonic() < deadline and (
            not output.exists() or output.read_bytes().count(b"\n") < 100
        ):
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        finished_before = {str(r["id"]) for r in lines(output) if "error" not in r}
        assert 100 <= len(finished_before) < 200
        emulator.fail_requests("POST", "/v1/sessions", 429, times=6, retry_after=0.05)
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        sent = [
            e["content"][0]["text"]
            for s in emulator.session_ids()
            for e in emulator.events(s)
            if e["type"] == "user.message"
        ]
    final = {str(r["id"]): r for r in lines(output)}
    prompt_of = {item.id: item.prompt for item in read_prompts(source)}
    assert sorted(final) == sorted(prompt_of)
    assert all("error" not in r for r in final.values())
    for item_id in finished_before:
        assert sent.count(prompt_of[item_id]) == 1, "a finished prompt is not sent again"
