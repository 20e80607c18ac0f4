"""Gemini Managed Agents against the Gemini emulator: events per second through
``Session.run`` against ``google-genai`` iterating its own stream of the same turn.

The turn is one hop of an agent that writes ``steps`` ``model_output`` steps (a word each,
whole in its ``step.start``, then its ``step.stop``): two events a step, between the hop's
``interaction.created``, ``interaction.status_update`` and ``interaction.completed``. The
server is :class:`~req_managed_agents.testing.GeminiEmulator` itself - which answers only
what the SDK's models accept - so it plays the hop anew for each client, and a bare read
(plain ``requests`` and our decoder, no JSON) shows how fast it can be read at all.

    .venv/bin/python benchmarks/_gemini_bench.py [steps]
"""

from __future__ import annotations

import importlib.metadata
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).parent))

from _table import Row, ratio

from req_managed_agents import Session, Tools
from req_managed_agents.model import SessionInfo
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import GeminiEmulator, GeminiTurn

_WORDS = ("the", "agent", "calls", "a", "tool", "and", "streams", "its", "answer", "token")
_END = "interaction.completed"


def _turn(steps: int) -> GeminiTurn:
    return GeminiTurn(
        steps=[
            {"type": "model_output", "content": [{"type": "text", "text": _WORDS[n % 10] + " "}]}
            for n in range(steps)
        ]
    )


class _Counting(Tools):
    """Counts the events a run hands to ``handle_event``."""

    def __init__(self) -> None:
        super().__init__()
        self.events = 0

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events += 1


def ours(emulator: GeminiEmulator, agent: str) -> tuple[float, int]:
    """Seconds for ``Session.run`` to take the turn, from the streamed create to the hop's
    end, and the events its ``handle_event`` saw."""
    handler = _Counting()
    with (
        emulator.provider(max_retries=0) as provider,
        Session(provider, handler=handler, agent=agent) as session,
    ):
        started = time.perf_counter()
        result = session.run("go", timeout=300)
        elapsed = time.perf_counter() - started
    assert result.terminal == "end_turn", result.stop_reason
    return elapsed, handler.events


def sdk(client: Any, agent: str) -> tuple[float, int]:
    """Seconds for ``google-genai`` to create the interaction streamed and iterate its
    events to ``interaction.completed``, and how many it yielded."""
    seen = 0
    started = time.perf_counter()
    for event in client.interactions.create(agent=agent, input="go", stream=True):
        seen += 1
        if event.event_type == _END:
            break
    return time.perf_counter() - started, seen


def bare(emulator: GeminiEmulator, agent: str) -> tuple[float, int]:
    """Plain ``requests`` and our decoder, no JSON: how fast the emulator can be read."""
    body = {"agent": agent, "input": "go", "stream": True}
    headers = {"x-goog-api-key": emulator.api_key, "accept": "text/event-stream"}
    with requests.Session() as http:
        started = time.perf_counter()
        response = http.post(
            f"{emulator.base_url}/v1/interactions", json=body, headers=headers, stream=True
        )
        decoder, seen, ended = SSEDecoder(), 0, False
        while not ended:
            chunk = response.raw.read1(65536)
            if not chunk:
                break
            for event in decoder.feed(chunk):
                seen += 1
                ended = ended or f'"event_type":"{_END}"' in event.data.replace(" ", "")
        elapsed = time.perf_counter() - started
        response.close()
    return elapsed, seen


def _version() -> str:
    return f"google-genai {importlib.metadata.version('google-genai')}"


def event_rows(steps: int, repeat: int) -> list[Row]:
    """The ``Gemini session throughput`` rows: ours against the SDK, best of ``repeat``
    alternating runs, and the bare read."""
    from google import genai

    best = {"ours": 0.0, "sdk": 0.0, "bare": 0.0}
    with GeminiEmulator(ping_interval=5.0) as emulator:
        agent = emulator.add_agent([_turn(steps)] * (3 * repeat))
        client = genai.Client(
            api_key=emulator.api_key, http_options={"base_url": emulator.base_url}
        )
        for _ in range(repeat):
            seconds, ours_seen = ours(emulator, agent)
            best["ours"] = max(best["ours"], ours_seen / seconds)
            seconds, seen = sdk(client, agent)
            assert seen == ours_seen, (seen, ours_seen)
            best["sdk"] = max(best["sdk"], seen / seconds)
            seconds, seen = bare(emulator, agent)
            best["bare"] = max(best["bare"], seen / seconds)
        client.close()
    return [
        Row(
            "Gemini session throughput",
            f"events/s, one hop of {steps:,} `model_output` steps ({2 * steps + 3:,} events, "
            "GeminiEmulator)",
            f"{best['ours']:,.0f}",
            f"{_version()}: `interactions.create(stream=True)` {best['sdk']:,.0f}",
            ratio(best["ours"], best["sdk"]),
        ),
        Row(
            "Gemini session throughput",
            "the same hop read bare (requests + our decoder, no JSON)",
            f"{best['bare']:,.0f}",
            "",
            "",
            "server not the bottleneck",
        ),
    ]


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    for row in event_rows(count, 3):
        print(row)
