"""The measured report: every benchmark in one run, peers measured side by side (by hand).

    .venv/bin/python benchmarks/report.py            # print the table
    .venv/bin/python benchmarks/report.py --write    # and put it into benchmarks/README.md
    .venv/bin/python benchmarks/report.py --only "openai events/s" --write  # just those rows

Run ``scripts/test`` once first: it installs the test extras (``anthropic``, ``boto3``,
``openai``, ``google-genai``), which are peers here. ``httpx-sse`` and ``sseclient-py`` are
installed into ``benchmarks/.peers``, outside the project's environment (see ``_peers.py``).
The whole run takes a few minutes.

Each row is measured on the same input for us and for the peer, in the same process where the
peer is a library, alternating repetitions and keeping the best, so a ratio is meaningful even
on a noisy machine; absolute numbers are not comparable across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _claude_session_bench
import _eventstream_bench
import _gemini_bench
import _load_bench
import _mcp_bench
import _openai_bench
import _peers
import _sse_bench
import _text_bench
import import_time
import session as session_bench
from _table import README, Row, full_table, merged_table, ratio, write_readme

from req_managed_agents.testing import ClaudeEmulator, Turn

# The table's sections, in its order.
ROW_ORDER = (
    "SSE decoding",
    "event-stream decoding",
    "import time",
    "session throughput",
    "per-turn overhead",
    "OpenAI session throughput",
    "OpenAI tool turn",
    "Gemini session throughput",
    "streamed text",
    "tool concurrency",
    "MCP tool calls",
    "memory",
    "batch",
    "load test",
)


# --- decoders ---------------------------------------------------------------------------------


def decoder_rows(repeat: int) -> list[Row]:
    rows = []
    sse_rows = _sse_bench.run(repeat)
    by_case: dict[str, dict[str, float]] = {}
    for label, mb_s, _ in sse_rows:
        case, _, who = label.rpartition(" [")
        by_case.setdefault(case, {})[who.rstrip("]")] = mb_s
    for case, results in by_case.items():
        peers = {name: mb for name, mb in results.items() if name != "ours"}
        best_peer = max(peers, key=peers.__getitem__)
        rows.append(
            Row(
                "SSE decoding",
                case,
                f"{results['ours']:.0f} MB/s",
                ", ".join(f"{name} {mb:.0f}" for name, mb in peers.items()),
                f"{ratio(results['ours'], peers[best_peer])} vs {best_peer}",
                "2x the fastest peer" if "CMA" in case else "",
            )
        )
    for label, mb_s, _ in _eventstream_bench.run(repeat):
        case, _, who = label.rpartition(" [")
        if who == "ours]":
            ours = mb_s
            continue
        rows.append(
            Row(
                "event-stream decoding",
                case,
                f"{ours:.0f} MB/s",
                f"botocore {mb_s:.1f}",
                ratio(ours, mb_s),
                "2x botocore",
            )
        )
    return rows


# --- import time ------------------------------------------------------------------------------


def import_rows(runs: int) -> list[Row]:
    best: dict[str, float] = {}
    for _ in range(runs):
        for module in ("req_managed_agents", "anthropic", "boto3", "requests"):
            ms = import_time.cumulative_ms(module)[0]
            best[module] = min(ms, best.get(module, float("inf")))
    ours = best["req_managed_agents"]
    return [
        Row(
            "import time",
            f"`import req_managed_agents` vs `import {peer}`",
            f"{ours:.0f} ms",
            f"{best[peer]:.0f} ms",
            ratio(best[peer], ours) + " faster",
            "< 150 ms" if peer == "anthropic" else "",
        )
        for peer in ("anthropic", "boto3", "requests")
    ]


# --- concurrent tools -------------------------------------------------------------------------


def tool_rows(repeat: int) -> list[Row]:
    with ClaudeEmulator(ping_interval=5.0) as emulator:
        one = session_bench.tool_turn_seconds(emulator, 1, repeat)
        many = session_bench.tool_turn_seconds(emulator, session_bench.CONCURRENT_TOOLS, repeat)
    count = session_bench.CONCURRENT_TOOLS
    return [
        Row(
            "tool concurrency",
            "MCP tool calls",
            f"a turn of {count} concurrent 200 ms tools vs a turn of one",
            f"{many:.3f} s",
            f"one tool {one:.3f} s",
            ratio(many, one),
            "<= 1.3x",
        )
    ]


# --- memory -----------------------------------------------------------------------------------

_RSS_CHILD = textwrap.dedent(
    """
    import gc, json, sys, time
    from req_managed_agents import Session, Tools
    from req_managed_agents.providers import ClaudeManagedAgents

    def rss_kib():
        with open("/proc/self/status") as status:
            return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))

    key, url, agent, environment, extra = sys.argv[1:6]
    provider = ClaudeManagedAgents(key, base_url=url)
    gc.collect()
    before = rss_kib()
    sessions = []
    def idle_session():
        session = Session(provider, handler=Tools(), agent_id=agent, environment_id=environment)
        session.run("hello", timeout=30)
        sessions.append(session)
    idle_session()
    gc.collect(); time.sleep(0.2)
    one = rss_kib()
    for _ in range(int(extra)):
        idle_session()
    gc.collect(); time.sleep(0.2)
    many = rss_kib()
    print(json.dumps({"before": before, "one": one, "many": many}))
    for session in sessions:
        session.close()
    provider.close()
    """
)


def memory_rows(extra: int) -> list[Row]:
    with ClaudeEmulator([Turn(text="hi")], ping_interval=5.0) as emulator:
        agent, environment = emulator.add_agent(), emulator.add_environment()
        arguments = [emulator.api_key, emulator.base_url, agent, environment, str(extra)]
        done = subprocess.run(
            [sys.executable, "-c", _RSS_CHILD, *arguments],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
    kib = json.loads(done.stdout)
    return [
        Row(
            "memory",
            "RSS of a process holding one idle session (after a run)",
            f"{kib['one'] / 1024:.1f} MiB",
            f"before the session {kib['before'] / 1024:.1f} MiB",
            f"+{(kib['one'] - kib['before']) / 1024:.1f} MiB",
        ),
        Row(
            "memory",
            f"each further idle session (mean of {extra})",
            f"{(kib['many'] - kib['one']) / extra:.0f} KiB",
        ),
    ]


# --- batch ------------------------------------------------------------------------------------


def batch_rows(prompts: int) -> list[Row]:
    rows = []
    for workers, refusals in ((4, 0), (16, 0), (16, 20)):
        with ClaudeEmulator([Turn(text=lambda inputs: f"answer to {inputs[0]}")]) as emulator:
            if refusals:
                emulator.fail_requests("POST", "/v1/sessions", 429, times=refusals, retry_after=0.1)
            with tempfile.TemporaryDirectory() as folder:
                source, output = Path(folder, "in.jsonl"), Path(folder, "out.jsonl")
                source.write_text(
                    "".join(json.dumps({"prompt": f"p{n}"}) + "\n" for n in range(prompts))
                )
                command = [sys.executable, "-m", "req_managed_agents", "batch", str(source)]
                command += ["-o", str(output), "--workers", str(workers)]
                command += ["--agent-id", emulator.add_agent()]
                command += ["--environment-id", emulator.add_environment()]
                environment = {
                    **os.environ,
                    "ANTHROPIC_API_KEY": emulator.api_key,
                    "ANTHROPIC_BASE_URL": emulator.base_url,
                }
                started = time.perf_counter()
                subprocess.run(command, env=environment, check=True, capture_output=True)
                elapsed = time.perf_counter() - started
                finished = sum(1 for line in output.read_text().splitlines() if line)
            assert finished == prompts, finished
        rows.append(
            Row(
                "batch",
                f"`rma batch`, {prompts} prompts, {workers} workers"
                + (f", {refusals} injected 429s" if refusals else ""),
                f"{prompts / elapsed:.1f} prompts/s",
                f"{elapsed:.1f} s wall incl. start-up",
            )
        )
    return rows


def sections(repeat: int) -> list[tuple[str, Callable[[], list[Row]]]]:
    """Each section ``--only`` can name, and what measures it."""
    return [
        ("decoders", lambda: decoder_rows(repeat)),
        ("import time", lambda: import_rows(7)),
        ("events/s", lambda: _claude_session_bench.event_rows(20_000, repeat)),
        ("per-turn overhead", lambda: _claude_session_bench.overhead_rows(200, repeat)),
        ("openai events/s", lambda: _openai_bench.event_rows(20_000, repeat)),
        ("openai tool turn", lambda: _openai_bench.tool_turn_rows(3)),
        ("gemini events/s", lambda: _gemini_bench.event_rows(10_000, repeat)),
        ("streamed text", lambda: _text_bench.text_rows(repeat=min(repeat, 3))),
        ("tool concurrency", lambda: tool_rows(3)),
        ("mcp calls", lambda: _mcp_bench.call_rows(500, min(repeat, 3))),
        ("memory", lambda: memory_rows(20)),
        ("batch", lambda: batch_rows(200)),
        ("load test", lambda: _load_bench.load_rows(1000)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measure")
    parser.add_argument(
        "--only",
        action="append",
        choices=[name for name, _ in sections(1)],
        help="run just this section (repeatable); --write then keeps the other rows",
    )
    arguments = parser.parse_args()
    _peers.ensure_peers()
    rows: list[Row] = []
    for name, measure in sections(arguments.repeat):
        if arguments.only and name not in arguments.only:
            continue
        started = time.perf_counter()
        rows += measure()
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    # A run of a few sections replaces just their rows in the README's table.
    table = merged_table(rows, ROW_ORDER) if arguments.only else full_table(rows)
    print(table)
    if arguments.write:
        write_readme(table)
        print(f"wrote {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
