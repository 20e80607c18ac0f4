"""An OpenAI Agents API stand-in that replays pre-encoded event streams (benchmarks only).

It answers the calls a turn makes, for our client and for the ``openai`` SDK's helper alike:

* ``POST /v1/agents/sessions`` (our client: a streaming create with the prompt) hands out the
  next prepared session and answers its stream, ``agent.session.created`` and then the turn;
* ``GET /v1/agents/sessions/{id}`` (the SDK's retrieve) answers the session, idle;
* ``GET /v1/agents/sessions/{id}/events`` (the SDK's stream) opens with the idle status
  snapshot the service sends first;
* ``POST /v1/agents/sessions/{id}/events`` answers 202 and releases what the inputs start:
  a message, the turn; each tool result, the item that accepts it (in the order they come,
  whether posted together or one by one); the last result, the rest of the turn.

Everything is encoded in advance; the only work a request costs is reading the posted JSON
to see which calls it answers. Any other request is a 404, and is recorded in
``unexpected`` so that a benchmark can check each client made only the calls it expects.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from _replay import LoopbackReplay, Segments, send_body, send_json

_NOT_FOUND = {
    "error": {"message": "Not found.", "type": "invalid_request_error", "param": None, "code": None}
}


@dataclass(frozen=True)
class OpenAIScript:
    """One session's wire, as frames ready to send (``event:``/``data:``, no ``id:``)."""

    session_id: str
    session: bytes  # the session as JSON, idle: what a retrieve answers
    created: bytes  # agent.session.created: how a streaming create's answer opens
    snapshot: bytes  # agent.session.idle: how a GET stream opens
    turn: bytes  # what the input starts, up to its idle or requires_action
    answers: Mapping[str, bytes] = field(default_factory=dict)  # per call id
    resume: bytes = b""  # what follows the last answer

    def segment_count(self) -> int:
        return 2 + len(self.answers) + (1 if self.answers else 0)


class _Session:
    def __init__(self, script: OpenAIScript, stream: Segments) -> None:
        self.script = script
        self.stream = stream
        self.answered: set[str] = set()

    def accept(self, events: list[dict[str, object]]) -> None:
        for event in events:
            call_id = event.get("call_id")
            if event.get("type") == "agent.session.input.message":
                self.stream.push(self.script.turn)
            elif isinstance(call_id, str) and call_id not in self.answered:
                self.answered.add(call_id)
                self.stream.push(self.script.answers[call_id])
                if len(self.answered) == len(self.script.answers):
                    self.stream.push(self.script.resume)


class OpenAIReplayServer(LoopbackReplay):
    """Serve on ``127.0.0.1``; ``base_url`` ends in ``/v1`` like the emulator's."""

    def __init__(self) -> None:
        super().__init__()
        self.base_url += "/v1"
        self._sessions: dict[str, _Session] = {}
        self._prepared: list[str] = []
        self.unexpected: list[str] = []

    def add_session(self, script: OpenAIScript, *, created_by_client: bool = True) -> str:
        """Prepare a session (replacing any earlier one of its id). When
        ``created_by_client``, the next ``POST /v1/agents/sessions`` hands it out."""
        session = _Session(script, self._segments(script.segment_count()))
        with self._lock:
            self._sessions[script.session_id] = session
            if created_by_client:
                self._prepared.append(script.session_id)
        return script.session_id

    def _respond(self, connection: socket.socket, method: str, path: str, body: bytes) -> bool:
        parts = path.strip("/").split("/")
        if parts[:3] != ["v1", "agents", "sessions"]:
            return self._not_found(connection, method, path)
        if method == "POST" and len(parts) == 3:
            with self._lock:
                created = self._sessions[self._prepared.pop(0)]
            created.stream.push(created.script.created, created.script.turn)
            self._stream(connection, created.stream)
            return False
        session = self._sessions.get(parts[3]) if len(parts) >= 4 else None
        if session is None:
            return self._not_found(connection, method, path)
        if method == "GET" and len(parts) == 4:
            return send_body(connection, session.script.session)
        if method == "GET" and parts[4:] == ["events"]:
            session.stream.push(session.script.snapshot)
            self._stream(connection, session.stream)
            return False
        if method == "POST" and parts[4:] == ["events"]:
            with self._lock:
                session.accept(json.loads(body)["events"])
            return send_body(connection, b"", 202)
        return self._not_found(connection, method, path)

    def _not_found(self, connection: socket.socket, method: str, path: str) -> bool:
        self.unexpected.append(f"{method} {path}")
        return send_json(connection, _NOT_FOUND, 404)
