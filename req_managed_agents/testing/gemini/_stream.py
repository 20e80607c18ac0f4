"""An interaction's events over SSE: the answer of a streamed create, and of
``GET /{v}/interactions/{id}?stream=true`` (from the start, or from the event after
``last_event_id``).

Each event goes out as an ``event: <event_type>`` / ``data: <json>`` frame (no ``id:``
line: the SDK resumes by the JSON ``event_id``, and its decoder would carry an ``id:`` over
to the next frame) and a ``: keep-alive`` comment fills each ``ping_interval`` of silence.
The stream ends cleanly right after ``interaction.completed`` (at once when resumed after
it; no ``[DONE]``, as the REST docs' sample shows none), or when the interaction is deleted.
Stream faults meet an event at its position in its conversation's log
(``conversation_events``), the stream's scope being the conversation's id (its first
interaction's).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.server import LogStreams, new_id

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.gemini._model import Interaction
    from req_managed_agents.testing.server import Exchange, Lifecycle

HEARTBEAT = b": keep-alive\n\n"
_LAST = "interaction.completed"


class EventStream:
    """Serves interactions' logs as SSE; ``ping_interval`` is the silence before a
    keep-alive comment."""

    def __init__(self, lifecycle: Lifecycle, *, ping_interval: float) -> None:
        self._logs = LogStreams(lifecycle, ping_interval=ping_interval, heartbeat=HEARTBEAT)

    def serve(self, exchange: Exchange, interaction: Interaction, cursor: int) -> None:
        """Stream the interaction's log from its event ``cursor`` until it completes."""
        stream = exchange.open_stream(
            interaction.conversation.id,
            "text/event-stream",
            {"x-request-id": new_id("req"), "Cache-Control": "no-cache"},
        )

        events = interaction.events  # only ever appended to
        if cursor >= len(events) and events and events[-1]["event_type"] == _LAST:
            stream.finish()  # resumed after the hop's last event: nothing more will come
            return

        def send(position: int, event: Mapping[str, Any]) -> bool:
            corrupted = functools.partial(frame, event, cut=True)
            place = interaction.positions[position]
            if not stream.send_event(frame(event), place, corrupted):
                return False
            if event["event_type"] == _LAST:
                stream.finish()
                return False
            return True

        self._logs.follow(
            stream,
            interaction.events,
            cursor,
            bell=interaction.id,
            send=send,
            over=lambda: interaction.deleted,
        )


def frame(event: Mapping[str, Any], *, cut: bool = False) -> bytes:
    """An event's SSE frame; ``cut`` (``corrupt_stream``) keeps only the first half of its
    JSON, which never parses: the closing brace is gone."""
    data = json.dumps(event, separators=(",", ":"))
    if cut:
        data = data[: len(data) // 2]
    return f"event: {event['event_type']}\ndata: {data}\n\n".encode()
