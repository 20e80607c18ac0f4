"""The OpenAI emulator's event streams: ``GET /v1/agents/sessions/{id}/events`` as SSE.

A connection first gets a snapshot of the session's status (``agent.session.idle``,
``in_progress``, ``requires_action``, ``failed`` or ``budget_reached``, with the session as
it is then; a fresh ``event_id``, not in the log, not a fault position), then every event
logged after it opened, in log order (no replay of what happened while nobody listened),
each as an ``event: <type>`` and ``data: <json>`` frame, and a ``: keep-alive`` comment
after each ``ping_interval`` of silence. Frames have no ``id:`` line (the id is the event's
``event_id``): the SDK's decoder keeps the last ``id:`` across frames, as SSE says, so a
keep-alive's blank line after one would decode as an event with empty data, which it
cannot parse. Events carry random ``obfuscation`` padding unless the connection asked for
``include_obfuscation=false``. The stream never ends by itself: it lasts until the client
leaves, the session is deleted (a clean end) or the emulator closes. ``serve`` is shared
with ``POST /v1/agents/sessions`` with ``stream: true``, whose stream starts at the log's
first event (``agent.session.created``) instead of a snapshot.
"""

from __future__ import annotations

import functools
import json
import secrets
import string
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._log import status_event
from req_managed_agents.testing.openai._schema import invalid_value
from req_managed_agents.testing.openai._state import check_query
from req_managed_agents.testing.openai._wire import SESSION_PATH
from req_managed_agents.testing.server import LogStreams, new_id, query_value

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.openai._model import Session
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.server import Exchange, Lifecycle, Route

HEARTBEAT = b": keep-alive\n\n"
_PADDING = string.ascii_letters + string.digits


class EventStream:
    """The stream route: a session's log, as it grows, over SSE, after a status snapshot.

    ``ping_interval`` is the silence after which a stream writes a keep-alive comment.
    """

    def __init__(self, lifecycle: Lifecycle, state: OpenAIState, *, ping_interval: float) -> None:
        self._logs = LogStreams(lifecycle, ping_interval=ping_interval, heartbeat=HEARTBEAT)
        self._state = state

    def routes(self) -> list[Route]:
        return [("GET", f"{SESSION_PATH}/events", self._stream_events)]

    def _stream_events(self, exchange: Exchange, session_id: str) -> None:
        request = exchange.request
        check_query(request, ("include_obfuscation",))
        obfuscated = query_value(request, "include_obfuscation") or "true"
        if obfuscated not in ("true", "false"):
            raise invalid_value("include_obfuscation", "must be 'true' or 'false'.")
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            # No replay: only events logged from now on. Taken with the snapshot, before
            # the head is sent, so the snapshot and what follows it agree.
            cursor = len(session.log)
            snapshot = {"event_id": new_id("event"), **status_event(session)}
        self.serve(exchange, session, cursor, [snapshot], obfuscated=obfuscated == "true")

    def serve(
        self,
        exchange: Exchange,
        session: Session,
        cursor: int,
        opening: list[dict[str, Any]],
        *,
        obfuscated: bool,
    ) -> None:
        """Stream the session's log from position ``cursor``, after the ``opening`` frames,
        until the session is deleted (logged events are never changed: no copies)."""
        stream = exchange.open_stream(
            session.id,
            "text/event-stream",
            {"x-request-id": new_id("req"), "Cache-Control": "no-cache"},
        )
        frame = functools.partial(_frame, obfuscated=obfuscated)
        for event in opening:
            if not stream.write(frame(event)):
                return

        def send(position: int, event: Mapping[str, Any]) -> bool:
            corrupted = functools.partial(frame, event, cut=True)
            return stream.send_event(frame(event), position, corrupted)

        self._logs.follow(
            stream, session.log, cursor, bell=session.id, send=send, over=lambda: session.deleted
        )


def _frame(event: Mapping[str, Any], *, obfuscated: bool, cut: bool = False) -> bytes:
    """An event's SSE frame; ``cut`` (``corrupt_stream``) keeps only the first half of its
    JSON, which never parses: the closing brace is gone."""
    if obfuscated:
        padding = "".join(secrets.choice(_PADDING) for _ in range(4 + secrets.randbelow(13)))
        event = {**event, "obfuscation": padding}
    data = json.dumps(event, separators=(",", ":"))
    if cut:
        data = data[: len(data) // 2]
    return f"event: {event['type']}\ndata: {data}\n\n".encode()
