"""Streamed text: one agent message written in 200,000 deltas, through ``Session.run`` with
an ``on_text`` hook, for each provider against its replay server - and whether the time a
delta costs stays flat as the message grows.

Each delta is one frame on the wire (Claude's ``event_delta`` preview, OpenAI's
``output_text.delta``, AgentCore's ``contentBlockDelta``) carrying one word, and reaches
``on_text`` as one piece of text. The hook stamps the CPU time of the thread it runs on - the
session's worker, which takes each delta from the wire (AgentCore) or from the stream's
reader thread (Claude, OpenAI) to ``on_text`` - so the figure is the cost of the delta alone,
whatever the reader thread is doing meanwhile. The CPU per delta over the first 20,000 deltas
is compared with the last 20,000 (each the median over blocks of 1,000 deltas): a text path
whose cost grows with the text written so far shows it there.

    .venv/bin/python benchmarks/_text_bench.py [deltas]   # the rows, printed
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from _openai_bench import API_KEY as OPENAI_KEY
from _openai_bench import text_turn as openai_text_turn
from _replay import ReplayServer, echo, idle
from _replay_agentcore import CREDENTIALS, HARNESS_ARN, REGION, AgentCoreReplayServer
from _replay_agentcore import text_turn as agentcore_text_turn
from _replay_openai import OpenAIReplayServer
from _table import Row, ratio

from req_managed_agents import Session, Tools
from req_managed_agents.providers import BedrockAgentCore, ClaudeManagedAgents, OpenAIAgents

DELTAS = 200_000
WINDOW = 20_000
BLOCK = 1_000
_WORDS = ("the", "agent", "calls", "a", "tool", "and", "streams", "its", "answer", "token")
_MESSAGE_ID = "sevt_message_0"


def pieces(deltas: int) -> list[str]:
    """The message's pieces, one word each (what ``_openai_bench.text_turn`` writes too)."""
    return [_WORDS[n % len(_WORDS)] + " " for n in range(deltas)]


class _Stamps:
    """The ``on_text`` hook: the worker thread's CPU time at each piece of text."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.length = 0

    def __call__(self, text: str) -> None:
        self.cpu.append(time.thread_time())
        self.length += len(text)

    def per_delta(self, window: int) -> tuple[float, float]:
        """Seconds of CPU per delta over the first and the last ``window`` deltas: the median
        over their blocks of ``BLOCK`` deltas, so that a pause landing in one block (a full
        garbage collection, which costs in proportion to every object the run keeps) is not
        taken for the cost of every delta around it."""
        cpu = self.cpu

        def median(start: int) -> float:
            costs = [
                (cpu[at + BLOCK] - cpu[at]) / BLOCK for at in range(start, start + window, BLOCK)
            ]
            return statistics.median(costs)

        return median(0), median(len(cpu) - 1 - window)


def claude(deltas: int) -> tuple[_Stamps, float]:
    """The message as ``event_delta`` previews of one ``agent.message``, then the message."""
    text = pieces(deltas)
    start = {"type": "event_start", "event": {"type": "agent.message", "id": _MESSAGE_ID}}
    previews = [_frame(start)]
    for piece in text:
        content = {"type": "text", "text": piece}
        delta = {"type": "content_delta", "index": 0, "content": content}
        previews.append(_frame({"type": "event_delta", "event_id": _MESSAGE_ID, "delta": delta}))
    message = {
        "type": "agent.message",
        "id": _MESSAGE_ID,
        "content": [{"type": "text", "text": "".join(text)}],
        "processed_at": "2026-12-03T12:00:00.000Z",
    }
    segment = echo(0) + b"".join(previews) + _frame(message, with_id=True)
    segment += idle({"type": "end_turn"}, 0)
    with ReplayServer() as server:
        server.add_session([segment])
        provider = ClaudeManagedAgents("sk-ant-replay", base_url=server.base_url, max_retries=0)
        return _timed(
            lambda on_text: Session(
                provider,
                handler=Tools(),
                agent_id="agent_replay",
                environment_id="env_replay",
                on_text=on_text,
            ),
            provider.close,
            deltas,
        )


def openai(deltas: int) -> tuple[_Stamps, float]:
    """The message as ``output_text.delta`` events of one turn (``_openai_bench``'s)."""
    script, _ = openai_text_turn(deltas)
    with OpenAIReplayServer() as server:
        server.add_session(script)
        provider = OpenAIAgents(OPENAI_KEY, base_url=server.base_url, max_retries=0)
        stamps = _timed(
            lambda on_text: Session(
                provider, handler=Tools(), agent_id="agent_replay", on_text=on_text
            ),
            provider.close,
            deltas,
        )
        assert not server.unexpected, server.unexpected
    return stamps


def agentcore(deltas: int) -> tuple[_Stamps, float]:
    """The message as ``contentBlockDelta`` events of one ``InvokeHarness`` answer."""
    body = agentcore_text_turn(pieces(deltas))
    with AgentCoreReplayServer() as server:
        server.add_invocation(body)
        provider = BedrockAgentCore(
            REGION,
            credentials=CREDENTIALS,
            endpoint_url=server.base_url,
            control_endpoint_url=server.base_url,
        )
        stamps = _timed(
            lambda on_text: Session(
                provider, handler=Tools(), harness_arn=HARNESS_ARN, on_text=on_text
            ),
            provider.close,
            deltas,
        )
        assert not server.unexpected, server.unexpected
    return stamps


def _timed(
    session: Callable[[_Stamps], Session], close: Callable[[], None], deltas: int
) -> tuple[_Stamps, float]:
    stamps = _Stamps()
    try:
        with session(stamps) as running:
            started = time.perf_counter()
            result = running.run("go", timeout=3600)
            elapsed = time.perf_counter() - started
    finally:
        close()
    assert result.terminal == "end_turn", result.stop_reason
    assert len(stamps.cpu) == deltas, f"{len(stamps.cpu)} pieces of text for {deltas} deltas"
    assert stamps.length == len(result.text) == len("".join(pieces(deltas)))
    return stamps, elapsed


def _frame(event: dict[str, Any], with_id: bool = False) -> bytes:
    """A frame as the service sends it; previews carry no ``id:``."""
    lines = [f"event: {event['type']}"] + ([f"id: {event['id']}"] if with_id else [])
    lines.append("data: " + json.dumps(event, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode()


PROVIDERS: dict[str, tuple[str, Callable[[int], tuple[_Stamps, float]]]] = {
    "Claude": ("`event_delta` previews", claude),
    "OpenAI": ("`output_text.delta` events", openai),
    "AgentCore": ("`contentBlockDelta` events", agentcore),
}


def text_rows(deltas: int = DELTAS, window: int = WINDOW, repeat: int = 1) -> list[Row]:
    """One row per provider: CPU per delta over the last ``window`` deltas against the first
    (the best of ``repeat`` runs for each)."""
    rows = []
    for name, (kind, measure) in PROVIDERS.items():
        first = last = wall = float("inf")
        for _ in range(repeat):
            stamps, elapsed = measure(deltas)
            early, late = stamps.per_delta(window)
            first, last, wall = min(first, early), min(last, late), min(wall, elapsed)
        rows.append(
            Row(
                "streamed text",
                f"{name}: one message of {deltas:,} {kind}, CPU per delta over the last {window:,}",
                f"{last * 1e6:.1f} µs",
                f"first {window:,}: {first * 1e6:.1f} µs; whole message {wall:.1f} s wall",
                ratio(last, first),
                "flat (<= 1.2x)",
            )
        )
    return rows


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else DELTAS
    for row in text_rows(count, min(WINDOW, count // 10 // BLOCK * BLOCK)):
        print(f"{row.measure}: {row.ours} vs {row.peer} -> {row.ratio}")
