"""Claude Managed Agents sessions against the replay server: events per second through
``Session.run`` against the ``anthropic`` SDK, and what the SDK adds to each tool turn."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import requests
from _replay import ReplayServer, echo, idle, sse
from _table import Row, ratio

from req_managed_agents import Session as AgentSession
from req_managed_agents import Tools
from req_managed_agents.model import SessionInfo
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.sse import SSEDecoder

API_KEY = "sk-ant-replay"
TEXT = "the agent calls a tool and streams its answer token by token " * 2

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
            ratio(best["ours"], best["sdk"]),
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
