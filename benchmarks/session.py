"""Concurrent tools against the built-in Claude emulator (run by hand, not in CI).

    .venv/bin/python benchmarks/session.py

Prints the wall time of one turn with 32 concurrent 200 ms tools against a turn with one such
tool (target: at most 1.3x). Events per second and the per-turn overhead need a server that is
not the bottleneck: ``report.py`` measures them against a replay server.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from req_managed_agents import Tools, run_to_completion
from req_managed_agents.model import SessionInfo
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.testing import ClaudeEmulator, Turn, call

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


def tool_turn_seconds(emulator: ClaudeEmulator, tools: int, repeat: int = 3) -> float:
    script = [Turn(tool_calls=[call("pause")] * tools), Turn(text="done")]
    return min(
        timed_run(emulator, script, max_concurrency=CONCURRENT_TOOLS)[0] for _ in range(repeat)
    )


def main() -> None:
    with ClaudeEmulator(ping_interval=5.0) as emulator:
        one = tool_turn_seconds(emulator, 1)
        many = tool_turn_seconds(emulator, CONCURRENT_TOOLS)
    print(f"1 tool of {TOOL_SECONDS:g} s:   {one:.3f} s wall")
    print(f"{CONCURRENT_TOOLS} tools of {TOOL_SECONDS:g} s: {many:.3f} s wall")
    print(f"ratio: {many / one:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()
