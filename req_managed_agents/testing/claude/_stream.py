"""The Claude emulator's event streams: ``GET /v1/sessions/{id}/events/stream`` as SSE, and
``GET /v1/sessions/{id}/threads/{thread_id}/stream`` for one thread's log.

A stream sends the events logged after it opened (no replay), each as an ``event: <type>``
and ``data: <json>`` frame, with heartbeats when it is quiet, until the client leaves, the
session is deleted or the emulator closes. A connection that asks for previews
(``event_deltas[]=agent.message``, ``agent.thinking``) also gets, right before each event of
those types, an ``event_start`` frame and, for a message, ``event_delta`` frames carrying its
text in a few pieces per text block: live-only frames, without ``id`` or ``processed_at``,
never in the history. Stream faults meet an event before its previews.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import text_pieces
from req_managed_agents.testing.claude._inputs import ANSWERS, delta_types
from req_managed_agents.testing.claude._wire import SESSION_PATH
from req_managed_agents.testing.server import LogStreams, new_id

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Lifecycle, Route

_HEARTBEATS = {
    "comment": b": ping\n\n",
    "event": b'event: ping\ndata: {"type":"ping"}\n\n',
}

# How many event_delta frames a text block of a previewed message is split into (fewer when
# it is shorter).
DELTA_PIECES = 3


class EventStream:
    """The stream route: a session's log, as it grows, over SSE.

    ``ping_interval`` is the silence after which a stream writes a heartbeat, in the form
    ``heartbeat`` names; ``sse_ids`` adds ``id:`` lines to frames; without ``echo_answers``
    the answers a client sent are not streamed (the history has them).
    """

    def __init__(
        self,
        lifecycle: Lifecycle,
        state: ClaudeState,
        *,
        ping_interval: float,
        heartbeat: str,
        sse_ids: bool,
        echo_answers: bool = True,
    ) -> None:
        if heartbeat not in _HEARTBEATS:
            raise ValueError(f"heartbeat must be 'comment' or 'event', not {heartbeat!r}")
        beat = _HEARTBEATS[heartbeat]
        self._logs = LogStreams(lifecycle, ping_interval=ping_interval, heartbeat=beat)
        self._state = state
        self._sse_ids = sse_ids
        self._unstreamed = frozenset() if echo_answers else ANSWERS

    def routes(self) -> list[Route]:
        return [("GET", f"{SESSION_PATH}/events/stream", self._stream_events)]

    def serve(
        self, exchange: Exchange, session: _Session, log: list[dict[str, Any]], scope: str
    ) -> None:
        """Stream a log (the session's, or one thread's); stream faults target ``scope``.

        A thread's log has no ``session.deleted`` of its own: it ends with the session."""
        previewed = delta_types(exchange.request)
        with self._state.condition:
            # No replay: only events logged from now on. Taken before the response head is
            # sent, so nothing logged after the client sees the stream open can be missed.
            cursor = len(log)
        stream = exchange.open_stream(
            scope,
            "text/event-stream",
            {"request-id": new_id("req"), "Cache-Control": "no-cache"},
        )

        def send(position: int, event: Mapping[str, Any]) -> bool:
            if event["type"] in self._unstreamed:
                return True
            corrupted = functools.partial(self._frame, event, cut=True)
            previews = _previews(event) if event["type"] in previewed else []
            frames = [self._frame(preview) for preview in previews]
            if not stream.send_event(self._frame(event), position, corrupted, frames):
                return False
            if event["type"] == "session.deleted":  # nothing follows it
                stream.finish("session_deleted")
                return False
            return True

        thread_log = log is not session.log
        # Copies: a queued event's processed_at may change once it is logged.
        self._logs.follow(
            stream,
            log,
            cursor,
            bell=session.record["id"],
            send=send,
            over=lambda: thread_log and session.deleted,
            copies=True,
        )

    def _stream_events(self, exchange: Exchange, session_id: str) -> None:
        with self._state.condition:
            session = self._state.sessions.find(session_id)
        self.serve(exchange, session, session.log, session_id)

    def _frame(self, event: Mapping[str, Any], *, cut: bool = False) -> bytes:
        """An event's SSE frame; ``cut`` (``corrupt_stream``) keeps only the first half of its
        JSON, which never parses: the closing brace is gone."""
        lines = [f"event: {event['type']}"]
        if self._sse_ids and "id" in event:
            lines.append(f"id: {event['id']}")
        data = json.dumps(event, separators=(",", ":"))
        lines.append("data: " + (data[: len(data) // 2] if cut else data))
        return ("\n".join(lines) + "\n\n").encode()


def _previews(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The preview frames of a logged event: its ``event_start``, then (for a message) one
    ``event_delta`` per piece of each text block, in order."""
    previews: list[dict[str, Any]] = [
        {"type": "event_start", "event": {"type": event["type"], "id": event["id"]}}
    ]
    if event["type"] != "agent.message":
        return previews  # thinking previews are start-only
    for index, block in enumerate(event["content"]):
        if block.get("type") != "text":
            continue
        for piece in text_pieces(str(block.get("text", "")), DELTA_PIECES):
            content = {"type": "text", "text": piece}
            delta = {"type": "content_delta", "index": index, "content": content}
            previews.append({"type": "event_delta", "event_id": event["id"], "delta": delta})
    return previews
