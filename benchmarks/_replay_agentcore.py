"""A Bedrock AgentCore stand-in that replays pre-encoded ``InvokeHarness`` answers (benchmarks
only).

``POST /harnesses/invoke`` answers the next prepared body - an
``application/vnd.amazon.eventstream`` of Converse events, encoded in advance - whole, as
one response. Nothing is checked (the SigV4 signature included): what a client measures is
its own cost of reading, decoding and handling. Any other request is a 404, recorded in
``unexpected``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from _replay import LoopbackReplay, send_body, send_json

from req_managed_agents.eventstream import encode_message

REGION = "us-east-1"
HARNESS_ARN = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:harness/replay-0000000000"
CREDENTIALS = {"access_key_id": "AKIAREPLAY", "secret_access_key": "replay-secret"}


def event(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """One Converse event as InvokeHarness frames it."""
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload, separators=(",", ":")).encode())


def text_turn(pieces: Iterable[str]) -> bytes:
    """A turn whose one text block is written in ``pieces``, as the emulator plays one."""
    frames = [event("messageStart", {"role": "assistant"})]
    frames += [
        event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}})
        for piece in pieces
    ]
    usage = {"inputTokens": 10, "outputTokens": 10, "totalTokens": 20}
    frames += [
        event("contentBlockStop", {"contentBlockIndex": 0}),
        event("messageStop", {"stopReason": "end_turn"}),
        event("metadata", {"usage": usage, "metrics": {"latencyMs": 0}}),
    ]
    return b"".join(frames)


class AgentCoreReplayServer(LoopbackReplay):
    """Serve on ``127.0.0.1``; :meth:`add_invocation` prepares the next answer."""

    def __init__(self) -> None:
        super().__init__()
        self._answers: list[bytes] = []
        self.unexpected: list[str] = []

    def add_invocation(self, body: bytes) -> None:
        with self._lock:
            self._answers.append(body)

    def _respond(self, connection: socket.socket, method: str, path: str, body: bytes) -> bool:
        if method == "POST" and path == "/harnesses/invoke":
            with self._lock:
                answer = self._answers.pop(0)
            return send_body(connection, answer, content_type="application/vnd.amazon.eventstream")
        self.unexpected.append(f"{method} {path}")
        return send_json(connection, {"message": "not found"}, 404)
