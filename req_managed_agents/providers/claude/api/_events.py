"""A session's events: sending, the paged history and the live stream."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import requests

from req_managed_agents.providers.claude.api._core import (
    EVENTS_PAGE_SIZE,
    ClientCore,
    Json,
    query_params,
    segment,
)
from req_managed_agents.transport._backoff import SendBudget

__all__ = ["EventsAPI"]


class EventsAPI(ClientCore):
    """A session's events: sending, the paged history and the live stream."""

    def send_events(
        self,
        session_id: str,
        events: Sequence[Mapping[str, Any]],
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
        budget: SendBudget | None = None,
    ) -> Json:
        """Post events in one request; the API rejects an empty list, so we refuse it first.
        Every send, retries included, spends one of ``budget``'s (see :class:`SendBudget`)."""
        if not events:
            raise ValueError("send_events needs at least one event")
        path = f"/v1/sessions/{segment(session_id)}/events"
        return self._json(
            "POST",
            path,
            idempotent=False,
            body={"events": [dict(e) for e in events]},
            telemetry_metadata=telemetry_metadata,
            budget=budget,
            required=(),
            listing="data",  # {"data": [the events as recorded]}
        )

    def list_events(
        self,
        session_id: str,
        *,
        page_size: int = EVENTS_PAGE_SIZE,
        telemetry_metadata: Mapping[str, Any] | None = None,
        cancelled: threading.Event | None = None,
        **query: Any,
    ) -> list[Json]:
        """The session's event history, every page, oldest first unless ``order="desc"``.

        ``types=[...]`` keeps only those event types (sent as ``types[]``);
        ``created_at_gte=``, ``_gt``, ``_lte`` and ``_lt`` (ISO 8601 strings or datetimes,
        sent as ``created_at[gte]`` and so on) bound ``processed_at``. Once ``cancelled``
        is set, a retry's wait ends and no further page is asked for (a stopped reader).
        """
        return list(
            self.iter_events(
                session_id,
                page_size=page_size,
                telemetry_metadata=telemetry_metadata,
                cancelled=cancelled,
                **query,
            )
        )

    def iter_events(
        self,
        session_id: str,
        *,
        page_size: int = EVENTS_PAGE_SIZE,
        telemetry_metadata: Mapping[str, Any] | None = None,
        cancelled: threading.Event | None = None,
        **query: Any,
    ) -> Iterator[Json]:
        """Like :meth:`list_events`, one page at a time: stop iterating and no further page
        is asked for (reading back from the newest with ``order="desc"`` to a known event)."""
        path = f"/v1/sessions/{segment(session_id)}/events"
        params = {**query_params(query), "limit": page_size}
        return self._pages(
            path, params, telemetry_metadata=telemetry_metadata, cut_deep=True, cancelled=cancelled
        )

    def open_event_stream(
        self,
        session_id: str,
        *,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        event_deltas: Sequence[str] = (),
    ) -> requests.Response:
        """Open ``GET /v1/sessions/{id}/events/stream`` and return the streaming response.

        The socket read timeout is ``idle_timeout``: heartbeats keep it alive, silence ends it.
        ``event_deltas`` asks for live previews of those event types (``agent.message``):
        ``event_start``/``event_delta`` frames that are never stored in the history.
        """
        path = f"/v1/sessions/{segment(session_id)}/events/stream"
        return self._http.request(
            "GET",
            path,
            idempotent=True,
            params={"event_deltas[]": list(event_deltas)} if event_deltas else None,
            headers={"accept": "text/event-stream"},
            stream=True,
            read_timeout=idle_timeout,
            cancelled=cancelled,
            telemetry_metadata={**(telemetry_metadata or {}), "session_id": session_id},
        )
