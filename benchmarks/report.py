"""The measured report: every benchmark in one run, peers measured side by side (by hand).

    .venv/bin/python benchmarks/report.py            # print the table
    .venv/bin/python benchmarks/report.py --write    # and put it into benchmarks/README.md

Run ``scripts/test`` once first: it installs the test extras (``anthropic``, ``boto3``), which
are peers here. ``httpx-sse`` and ``sseclient-py`` are installed into ``benchmarks/.peers``,
outside the project's environment (see ``_peers.py``). The whole run takes a few minutes.

Each row is measured on the same input for us and for the peer, in the same process where the
peer is a library, alternating repetitions and keeping the best, so a ratio is meaningful even
on a noisy machine; absolute numbers are not comparable across machines.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).parent))

import _eventstream_bench
import _peers
import _sse_bench
import import_time
import session as session_bench
from _replay import ReplayServer, echo, idle, sse

from req_managed_agents import Session as AgentSession
from req_managed_agents import SessionInfo, Tools
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import ClaudeEmulator, Turn

README = Path(__file__).parent / "README.md"
START, END = "<!-- report:start -->", "<!-- report:end -->"
API_KEY = "sk-ant-replay"
TEXT = "the agent calls a tool and streams its answer token by token " * 2


@dataclass(frozen=True)
class Row:
    section: str
    measure: str
    ours: str
    peer: str = ""
    ratio: str = ""
    target: str = ""


def _ratio(ours: float, peer: float) -> str:
    return f"{ours / peer:.2f}x"


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
                f"{_ratio(results['ours'], peers[best_peer])} vs {best_peer}",
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
                _ratio(ours, mb_s),
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
            _ratio(best[peer], ours) + " faster",
            "< 150 ms" if peer == "anthropic" else "",
        )
        for peer in ("anthropic", "boto3", "requests")
    ]


# --- events through a session -----------------------------------------------------------------


class _Counting(Tools):
    def __init__(self) -> None:
        super().__init__()
        self.events = 0

        @self.tool
        def noop() -> str:
            """Return at once: the turn measures the SDK, not the tool."""
            return "ok"

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events += 1


def _message_turn(events: int) -> list[bytes]:
    """One segment: the prompt's echo, ``events`` agent messages, the idle that ends it."""
    messages = b"".join(
        sse(
            {
                "type": "agent.message",
                "id": f"sevt_msg_{n:08d}",
                "content": [{"type": "text", "text": TEXT}],
                "processed_at": "2026-12-03T12:00:00.000Z",
            }
        )
        for n in range(events)
    )
    return [echo(0) + messages + idle({"type": "end_turn"}, 0)]


def _provider(server: ReplayServer) -> ClaudeManagedAgents:
    return ClaudeManagedAgents(API_KEY, base_url=server.base_url, max_retries=0)


def _session(provider: ClaudeManagedAgents, handler: Tools, **options: Any) -> AgentSession:
    return AgentSession(
        provider, handler=handler, agent_id="agent_replay", environment_id="env_replay", **options
    )


def ours_events_per_second(server: ReplayServer, events: int) -> float:
    segments = _message_turn(events)
    server.add_session(segments)
    handler = _Counting()
    with _provider(server) as provider, _session(provider, handler) as session:
        started = time.perf_counter()
        result = session.run("go", timeout=300)
        elapsed = time.perf_counter() - started
    assert result.terminal == "end_turn", result.stop_reason
    assert handler.events == events + 2, handler.events
    return handler.events / elapsed


def sdk_events_per_second(server: ReplayServer, events: int) -> float:
    import anthropic

    session_id = server.add_session(_message_turn(events), created_by_client=False)
    client = anthropic.Anthropic(api_key=API_KEY, base_url=server.base_url, max_retries=0)
    started = time.perf_counter()
    stream = client.beta.sessions.events.stream(session_id)
    client.beta.sessions.events.send(
        session_id, events=[{"type": "user.message", "content": [{"type": "text", "text": "go"}]}]
    )
    seen = 0
    for event in stream:
        seen += 1
        if event.type == "session.status_idle":
            break
    elapsed = time.perf_counter() - started
    stream.close()
    client.close()
    assert seen == events + 2, seen
    return seen / elapsed


def bare_events_per_second(server: ReplayServer, events: int) -> float:
    """Plain ``requests`` and our decoder, no JSON: how fast the server can be read at all."""
    session_id = server.add_session(_message_turn(events), created_by_client=False)
    url = f"{server.base_url}/v1/sessions/{session_id}/events"
    with requests.Session() as http:
        started = time.perf_counter()
        stream = http.get(url + "/stream", stream=True, timeout=30)
        http.post(url, json={"events": [{"type": "user.message"}]}, timeout=30)
        decoder, seen = SSEDecoder(), 0
        read = stream.raw.read1
        while True:
            batch = decoder.feed(read(65536))
            seen += len(batch)
            if batch and batch[-1].event == "session.status_idle":
                break
        elapsed = time.perf_counter() - started
        stream.close()
    return seen / elapsed


def event_rows(events: int, repeat: int) -> list[Row]:
    best = {"ours": 0.0, "sdk": 0.0, "bare": 0.0}
    with ReplayServer() as server:
        for _ in range(repeat):
            best["ours"] = max(best["ours"], ours_events_per_second(server, events))
            best["sdk"] = max(best["sdk"], sdk_events_per_second(server, events))
            best["bare"] = max(best["bare"], bare_events_per_second(server, events))
    return [
        Row(
            "session throughput",
            f"events/s, one turn of {events:,} `agent.message` events (replayed)",
            f"{best['ours']:,.0f}",
            f"anthropic `sessions.events.stream` {best['sdk']:,.0f}",
            _ratio(best["ours"], best["sdk"]),
        ),
        Row(
            "session throughput",
            "the same stream read bare (requests + our decoder, no JSON)",
            f"{best['bare']:,.0f}",
            "",
            "",
            "server not the bottleneck",
        ),
    ]


# --- per-turn overhead ------------------------------------------------------------------------


def _tool_turns(turns: int) -> list[bytes]:
    segments = []
    for n in range(turns):
        kind = "user.message" if n == 0 else "user.custom_tool_result"
        fields = {} if n == 0 else {"custom_tool_use_id": f"sevt_tool_{n - 1}"}
        tool_use = sse(
            {
                "type": "agent.custom_tool_use",
                "id": f"sevt_tool_{n}",
                "name": "noop",
                "input": {},
                "processed_at": "2026-12-03T12:00:00.000Z",
            }
        )
        requires = {"type": "requires_action", "event_ids": [f"sevt_tool_{n}"]}
        segments.append(echo(n, kind, **fields) + tool_use + idle(requires, n))
    last = sse(
        {
            "type": "agent.message",
            "id": "sevt_final",
            "content": [{"type": "text", "text": "done"}],
            "processed_at": "2026-12-03T12:00:00.000Z",
        }
    )
    final_echo = echo(turns, "user.custom_tool_result", custom_tool_use_id=f"sevt_tool_{turns - 1}")
    segments.append(final_echo + last + idle({"type": "end_turn"}, turns))
    return segments


def ours_seconds_per_turn(server: ReplayServer, turns: int) -> float:
    server.add_session(_tool_turns(turns))
    with (
        _provider(server) as provider,
        _session(provider, _Counting(), max_turns=turns + 1) as session,
    ):
        started = time.perf_counter()
        result = session.run("go", timeout=300)
        elapsed = time.perf_counter() - started
    assert result.terminal == "end_turn", result.stop_reason
    assert result.turns == turns + 1, result.turns
    return elapsed / (turns + 1)


def bare_seconds_per_turn(server: ReplayServer, turns: int) -> float:
    """The same exchanges with no SDK: post, then read frames up to the idle."""
    session_id = server.add_session(_tool_turns(turns), created_by_client=False)
    url = f"{server.base_url}/v1/sessions/{session_id}/events"
    with requests.Session() as http:
        started = time.perf_counter()
        stream = http.get(url + "/stream", stream=True, timeout=30)
        read, decoder = stream.raw.read1, SSEDecoder()
        for n in range(turns + 1):
            kind = "user.message" if n == 0 else "user.custom_tool_result"
            http.post(url, json={"events": [{"type": kind}]}, timeout=30).json()
            while not any(e.event == "session.status_idle" for e in decoder.feed(read(65536))):
                pass
        elapsed = time.perf_counter() - started
        stream.close()
    return elapsed / (turns + 1)


def overhead_rows(turns: int, repeat: int) -> list[Row]:
    ours = bare = float("inf")
    with ReplayServer() as server:
        for _ in range(repeat):
            ours = min(ours, ours_seconds_per_turn(server, turns))
            bare = min(bare, bare_seconds_per_turn(server, turns))
    return [
        Row(
            "per-turn overhead",
            f"one tool turn through `Session` ({turns} turns, no-op tool, replayed)",
            f"{ours * 1000:.2f} ms/turn",
            f"bare HTTP exchange {bare * 1000:.2f} ms/turn",
            f"SDK overhead {(ours - bare) * 1000:.2f} ms",
            "< 1 ms",
        )
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
            f"a turn of {count} concurrent 200 ms tools vs a turn of one",
            f"{many:.3f} s",
            f"one tool {one:.3f} s",
            _ratio(many, one),
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


# --- the table --------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    peers = ", ".join(f"{name} {version}" for name, version in sorted(_peers.versions().items()))
    return (
        f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"peers: {peers}"
    )


def markdown(rows: list[Row], header: str) -> str:
    lines = [header, "", "| | measure | ours | peer / baseline | ratio | target |", "|-" * 6 + "|"]
    for row in rows:
        cells = (row.section, row.measure, row.ours, row.peer, row.ratio, row.target)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_readme(table: str) -> None:
    text = README.read_text()
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    README.write_text(f"{before}{START}\n{table}{END}{after}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="update benchmarks/README.md")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per measure")
    parser.add_argument("--only", action="append", help="run just this section (repeatable)")
    arguments = parser.parse_args()
    _peers.ensure_peers()
    repeat = arguments.repeat
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("decoders", lambda: decoder_rows(repeat)),
        ("import time", lambda: import_rows(7)),
        ("events/s", lambda: event_rows(20_000, repeat)),
        ("per-turn overhead", lambda: overhead_rows(200, repeat)),
        ("tool concurrency", lambda: tool_rows(3)),
        ("memory", lambda: memory_rows(20)),
        ("batch", lambda: batch_rows(200)),
    ]
    rows: list[Row] = []
    for name, measure in sections:
        if arguments.only and name not in arguments.only:
            continue
        started = time.perf_counter()
        rows += measure()
        print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    table = markdown(rows, f"Measured {machine()}.")
    print(table)
    if arguments.write:
        write_readme(table)
        print(f"wrote {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
