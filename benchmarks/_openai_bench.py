"""OpenAI Agents sessions against the replay server: events per second through
``Session.run`` against the ``openai`` SDK, and a turn of 32 slow tools against the SDK's
``sessions.stream(tool_handlers=...)``.

The wire is the emulator's: a turn is recorded from ``OpenAIAgentsEmulator`` (which speaks
the SDK's shapes), then scaled - its three text deltas become 20,000 - and encoded once.
Every distinct object served is validated strictly against the SDK's models first, so the
SDK is measured reading what it accepts.
"""

from __future__ import annotations

import importlib.metadata
import json
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pydantic
import requests
from _replay_openai import OpenAIReplayServer, OpenAIScript
from _table import Row, ratio

from req_managed_agents import Session, Tools, run_to_completion
from req_managed_agents.model import SessionInfo
from req_managed_agents.providers import OpenAIAgents
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call

API_KEY = "sk-replay"
TOOL_SECONDS = 0.2
TOOL_CALLS = 32
_DELTA = "agent.session.turn.output_text.delta"
_RECORDED_TEXT = "recorded text to scale"
_WORDS = ("the", "agent", "calls", "a", "tool", "and", "streams", "its", "answer", "token")
_PAUSE = {
    "type": "function",
    "name": "pause",
    "description": "Sleep a little, like a tool doing I/O.",
    "parameters": {"type": "object", "properties": {}},
}


# --- the wire ---------------------------------------------------------------------------------


def frame(event: Mapping[str, Any]) -> bytes:
    """An event as the service frames it (no obfuscation padding: both clients read the
    same bytes, and ours asks for none)."""
    data = json.dumps(event, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def frames(events: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(map(frame, events))


def record(script: Sequence[OpenAITurn]) -> list[dict[str, Any]]:
    """The event log of one run of ``script`` through the emulator, prompt ``go``."""
    handler = Tools()

    @handler.tool
    def pause() -> str:
        """Return at once: only the wire is recorded."""
        return "ok"

    with OpenAIAgentsEmulator(ping_interval=5.0) as emulator:
        agent_id = emulator.add_agent(script, tools=[_PAUSE])
        with emulator.provider() as provider:
            result = run_to_completion(provider, "go", handler=handler, agent_id=agent_id)
        assert result.terminal == "end_turn", result.stop_reason
        return emulator.events(emulator.session_ids()[0])


def _script(
    created: Mapping[str, Any],
    turn: bytes,
    answers: Mapping[str, bytes] | None = None,
    resume: bytes = b"",
) -> OpenAIScript:
    """The script of the session ``created`` announces (idle): a streaming create's answer
    opens with ``created``, a GET stream with an idle snapshot of the same session (a fresh
    event id, as the service sends it); then ``turn`` (see :class:`OpenAIScript`)."""
    session = created["session"]
    snapshot = {"event_id": f"event_{secrets.token_hex(12)}", "type": "agent.session.idle"}
    return OpenAIScript(
        session["id"],
        session=json.dumps(session, separators=(",", ":")).encode(),
        created=frame(created),
        snapshot=frame({**snapshot, "session": session}),
        turn=turn,
        answers=answers or {},
        resume=resume,
    )


def text_turn(deltas: int) -> tuple[OpenAIScript, list[dict[str, Any]]]:
    """A turn whose one message is written in ``deltas`` deltas, and the events to validate
    (all but the copies past the second). The recorded turn's deltas are replaced by as many
    copies of its first as needed, with fresh event ids; the finished text is their sum."""
    log = record([OpenAITurn(text=_RECORDED_TEXT)])
    positions = [n for n, event in enumerate(log) if event["type"] == _DELTA]
    first, last = positions[0], positions[-1]
    pieces = [_WORDS[n % len(_WORDS)] + " " for n in range(deltas)]
    copies = [
        {**log[first], "event_id": f"event_{n:024x}", "delta": piece}
        for n, piece in enumerate(pieces)
    ]
    recorded, whole = json.dumps(_RECORDED_TEXT), json.dumps("".join(pieces))
    ending = [json.loads(json.dumps(event).replace(recorded, whole)) for event in log[last + 1 :]]
    turn = [*log[1:first], *copies, *ending]
    return _script(log[0], frames(turn)), [log[0], *log[1:first], *copies[:2], *ending]


def tool_turn(calls: int) -> tuple[OpenAIScript, list[dict[str, Any]]]:
    """A turn in which the agent calls ``pause`` ``calls`` times, then answers ``done``; and
    its events, to validate."""
    log = record([OpenAITurn(tool_calls=[call("pause")] * calls), OpenAITurn(text="done")])
    asked = next(n for n, e in enumerate(log) if e["type"] == "agent.session.requires_action")
    answers, resume = {}, []
    for event in log[asked + 1 :]:
        item = event.get("item") or {}
        if event["type"] == "agent.session.turn.item.added" and item.get("call_id"):
            answers[item["call_id"]] = frame(event)
        else:
            resume.append(event)
    assert len(answers) == calls, len(answers)
    return _script(log[0], frames(log[1 : asked + 1]), answers=answers, resume=frames(resume)), log


def validate(script: OpenAIScript, events: Iterable[Mapping[str, Any]]) -> None:
    """Check ``events`` and the script's session and opening frames strictly against the
    SDK's models, with no field they do not declare."""
    from openai.types.beta.agent_session import AgentSession
    from openai.types.beta.agent_session_event import AgentSessionEvent

    opening = [json.loads(s.data) for s in SSEDecoder().feed(script.created + script.snapshot)]
    event_model = pydantic.TypeAdapter(AgentSessionEvent)
    for event in [*opening, *events]:
        _strictly(event_model, event, event["type"])
    _strictly(pydantic.TypeAdapter(AgentSession), json.loads(script.session), "the session")


def _strictly(model: pydantic.TypeAdapter[Any], data: Any, what: str) -> None:
    value = model.validate_json(json.dumps(data), strict=True)
    extra = _unmodeled(value)
    assert not extra, f"{what}: fields the SDK does not model: {extra}"


def _unmodeled(value: Any, path: str = "") -> list[str]:
    if isinstance(value, pydantic.BaseModel):
        if path.endswith(".parameters"):
            return []  # a JSON schema: any keyword is allowed
        found = [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += _unmodeled(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, (list, tuple)):
        return [extra for n, item in enumerate(value) for extra in _unmodeled(item, f"{path}[{n}]")]
    return []


# --- the clients ------------------------------------------------------------------------------


class _Counting(Tools):
    """Counts the events a run hands to ``handle_event``; ``pause`` sleeps like I/O."""

    def __init__(self) -> None:
        super().__init__()
        self.events = 0
        self.calls: list[float] = []  # appended to from the pool's threads

        @self.tool
        def pause() -> str:
            """Sleep a little, like a tool doing I/O."""
            time.sleep(TOOL_SECONDS)
            self.calls.append(time.perf_counter())
            return "ok"

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events += 1


def ours(server: OpenAIReplayServer, script: OpenAIScript) -> tuple[float, _Counting]:
    """Seconds for ``Session.run`` to take the turn, from creating the session to its idle."""
    server.add_session(script)
    handler = _Counting()
    with (
        OpenAIAgents(API_KEY, base_url=server.base_url, max_retries=0) as provider,
        Session(
            provider, handler=handler, agent_id="agent_replay", max_concurrency=TOOL_CALLS
        ) as session,
    ):
        started = time.perf_counter()
        result = session.run("go", timeout=300)
        elapsed = time.perf_counter() - started
    assert result.terminal == "end_turn", result.stop_reason
    return elapsed, handler


def sdk(server: OpenAIReplayServer, script: OpenAIScript, helper: bool = True) -> tuple[float, int]:
    """Seconds for the SDK to take the turn - ``sessions.stream`` (retrieve, stream, post the
    input, run each call's handler and post its result) or, with ``helper`` False, the bare
    ``sessions.events.stream`` and ``events.create`` - and the events it yielded."""
    import openai

    session_id = server.add_session(script, created_by_client=False)
    calls: list[dict[str, Any]] = []

    def pause(arguments: dict[str, Any]) -> str:
        time.sleep(TOOL_SECONDS)
        calls.append(arguments)
        return "ok"

    seen = 0
    with openai.OpenAI(api_key=API_KEY, base_url=server.base_url, max_retries=0) as client:
        sessions = client.beta.agents.sessions
        started = time.perf_counter()
        if helper:
            with sessions.stream(session_id, input="go", tool_handlers={"pause": pause}) as turn:
                for _ in turn:
                    seen += 1
        else:
            with sessions.events.stream(session_id) as stream:
                sessions.events.create(session_id, events=[_message("go")])
                for event in stream:
                    seen += 1
                    if event.type == "agent.session.idle" and seen > 1:
                        break
        elapsed = time.perf_counter() - started
    assert len(calls) == len(script.answers), len(calls)
    return elapsed, seen


def bare(server: OpenAIReplayServer, script: OpenAIScript) -> tuple[float, int]:
    """Plain ``requests`` and our decoder, no JSON: how fast the server can be read at all."""
    session_id = server.add_session(script, created_by_client=False)
    url = f"{server.base_url}/agents/sessions/{session_id}/events"
    with requests.Session() as http:
        started = time.perf_counter()
        stream = http.get(url, stream=True, timeout=30)
        http.post(url, json={"events": [_message("go")]}, timeout=30).close()
        decoder, seen, idles = SSEDecoder(), 0, 0
        read = stream.raw.read1
        while idles < 2:
            batch = decoder.feed(read(65536))
            seen += len(batch)
            idles += sum(1 for event in batch if event.event == "agent.session.idle")
        elapsed = time.perf_counter() - started
        stream.close()
    return elapsed, seen


def _message(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return {"type": "agent.session.input.message", "input": [{"role": "user", "content": content}]}


# --- the rows ---------------------------------------------------------------------------------


def _version() -> str:
    return f"openai {importlib.metadata.version('openai')}"


_SDK_WAYS = {"helper": "sessions.stream", "events": "sessions.events.stream"}


def event_rows(deltas: int, repeat: int) -> list[Row]:
    script, served = text_turn(deltas)
    validate(script, served)
    best = {"ours": 0.0, "helper": 0.0, "events": 0.0, "bare": 0.0}
    with OpenAIReplayServer() as server:
        for _ in range(repeat):
            seconds, handler = ours(server, script)
            best["ours"] = max(best["ours"], handler.events / seconds)
            for name, helper in (("helper", True), ("events", False)):
                seconds, seen = sdk(server, script, helper)
                assert seen == handler.events, (name, seen, handler.events)
                best[name] = max(best[name], seen / seconds)
            seconds, seen = bare(server, script)
            best["bare"] = max(best["bare"], seen / seconds)
        assert not server.unexpected, server.unexpected
    faster = "helper" if best["helper"] >= best["events"] else "events"
    return [
        Row(
            "OpenAI session throughput",
            f"events/s, one turn of {deltas:,} `output_text.delta` events (replayed)",
            f"{best['ours']:,.0f}",
            f"{_version()}: `sessions.stream` {best['helper']:,.0f}, "
            f"`sessions.events.stream` {best['events']:,.0f}",
            f"{ratio(best['ours'], best[faster])} vs `{_SDK_WAYS[faster]}`",
        ),
        Row(
            "OpenAI session throughput",
            "the same stream read bare (requests + our decoder, no JSON)",
            f"{best['bare']:,.0f}",
            "",
            "",
            "server not the bottleneck",
        ),
    ]


def tool_turn_rows(repeat: int) -> list[Row]:
    script, served = tool_turn(TOOL_CALLS)
    validate(script, served)
    best = {"ours": float("inf"), "sdk": float("inf")}
    with OpenAIReplayServer() as server:
        for _ in range(repeat):
            seconds, handler = ours(server, script)
            assert len(handler.calls) == TOOL_CALLS, handler.calls
            best["ours"] = min(best["ours"], seconds)
            best["sdk"] = min(best["sdk"], sdk(server, script)[0])
        assert not server.unexpected, server.unexpected
    return [
        Row(
            "OpenAI tool turn",
            f"a turn of {TOOL_CALLS} function tools of {TOOL_SECONDS * 1000:.0f} ms each "
            "(replayed)",
            f"{best['ours']:.3f} s",
            f"{_version()} `sessions.stream(tool_handlers=...)` {best['sdk']:.2f} s",
            f"{ratio(best['sdk'], best['ours'])} faster",
        )
    ]
