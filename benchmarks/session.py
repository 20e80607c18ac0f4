"""Session throughput against the built-in Claude emulator (run by hand, not in CI).

    .venv/bin/python benchmarks/session.py

Prints:
* events per second through ``Session`` (SSE over loopback, decoding, dedupe, normalisation,
  ``handle_event``) for one turn carrying thousands of events, next to a bare reader (raw
  socket reads plus our SSE decoder) on the same emulator: the emulator's Python server is
  the bottleneck when the two are close;
* the wall time of one turn with 32 concurrent 200 ms tools against a turn with one such
  tool (target: at most 1.3x).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents import SessionInfo, Tools, run_to_completion
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call

TOOL_SECONDS = 0.2
CONCURRENT_TOOLS = 32


class Counting(Tools):
    def __init__(self) -> None:
        super().__init__()
        self.events = 0

        @self.tool
        def pause() -> str:
            """Sleep a little, like a tool doing I/O."""
            time.sleep(TOOL_SECONDS)
            return "ok"

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events += 1


def timed_run(emulator: ClaudeEmulator, script: list[Turn], **options: Any) -> tuple[float, int]:
    handler = Counting()
    with ClaudeManagedAgents(emulator.api_key, base_url=emulator.base_url) as provider:
        agent_id = emulator.add_agent(script)
        environment_id = emulator.add_environment()
        started = time.perf_counter()
        result = run_to_completion(
            provider,
            "go",
            handler=handler,
            timeout=300,
            agent_id=agent_id,
            environment_id=environment_id,
            **options,
        )
        elapsed = time.perf_counter() - started
    assert result.terminal == "end_turn", result.stop_reason
    return elapsed, len(result.events)


def events_per_second(emulator: ClaudeEmulator, server_calls: int, repeat: int = 3) -> float:
    calls = [ToolCall("bash", {"command": f"echo {i}"}, result=str(i)) for i in range(server_calls)]
    best = 0.0
    for _ in range(repeat):
        elapsed, events = timed_run(emulator, [Turn(text="busy", server_tool_calls=calls)])
        best = max(best, events / elapsed)
    return best


def bare_reader_events_per_second(emulator: ClaudeEmulator, server_calls: int) -> float:
    """The same turn read with plain ``requests`` and our decoder: the emulator's own pace."""
    calls = [ToolCall("bash", {"command": f"echo {i}"}, result=str(i)) for i in range(server_calls)]
    headers = {
        "x-api-key": emulator.api_key,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "managed-agents-2026-04-01",
    }
    body = {"agent": emulator.add_agent([Turn(text="busy", server_tool_calls=calls)])}
    body["environment_id"] = emulator.add_environment()
    base = emulator.base_url
    session_id = requests.post(
        f"{base}/v1/sessions", json=body, headers=headers, timeout=10
    ).json()["id"]
    stream = requests.get(
        f"{base}/v1/sessions/{session_id}/events/stream", headers=headers, stream=True, timeout=10
    )
    started = time.perf_counter()
    message = {"type": "user.message", "content": [{"type": "text", "text": "go"}]}
    requests.post(
        f"{base}/v1/sessions/{session_id}/events",
        json={"events": [message]},
        headers=headers,
        timeout=10,
    )
    decoder, count = SSEDecoder(), 0
    while True:
        events = decoder.feed(stream.raw.read1(65536))
        count += len(events)
        if any(event.event == "session.status_idle" for event in events):
            break
    elapsed = time.perf_counter() - started
    stream.close()
    return count / elapsed


def tool_turn_seconds(emulator: ClaudeEmulator, tools: int, repeat: int = 3) -> float:
    script = [Turn(tool_calls=[call("pause")] * tools), Turn(text="done")]
    return min(
        timed_run(emulator, script, max_concurrency=CONCURRENT_TOOLS)[0] for _ in range(repeat)
    )


def main() -> None:
    with ClaudeEmulator(ping_interval=5.0) as emulator:
        rate = events_per_second(emulator, server_calls=2500)
        bare = bare_reader_events_per_second(emulator, server_calls=2500)
        one = tool_turn_seconds(emulator, 1)
        many = tool_turn_seconds(emulator, CONCURRENT_TOOLS)
    print(f"events through Session: {rate:,.0f} events/s (one turn of ~5,000 events)")
    print(f"bare reader, same turn: {bare:,.0f} events/s (ratio {rate / bare:.2f}x)")
    print(f"1 tool of {TOOL_SECONDS:g} s:   {one:.3f} s wall")
    print(f"{CONCURRENT_TOOLS} tools of {TOOL_SECONDS:g} s: {many:.3f} s wall")
    print(f"ratio: {many / one:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
