"""A session's inputs and its live event stream.

Inputs are posted under an ``Idempotency-Key``: the service takes a repeat of a key it has
seen as the same request, so a post whose answer was lost is simply sent again with its
key. The stream carries live events only - nothing that happened while no one listened.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from req_managed_agents.providers.openai.api._core import ClientCore, segment
from req_managed_agents.transport._backoff import SendBudget

__all__ = ["EventsAPI"]

_MAX_IDEMPOTENCY_KEY = 255


class EventsAPI(ClientCore):
    """A session's inputs (``POST``) and live events (``GET``, SSE)."""

    def send_events(
        self,
        session_id: str,
        events: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str,
        telemetry_metadata: Mapping[str, Any] | None = None,
        budget: SendBudget | None = None,
    ) -> None:
        """Post inputs (``agent.session.input.*``) in one request, answered 202 with no body.
        The key makes repeats harmless, so failures are retried like an idempotent call;
        every send, retries included, spends one of ``budget``'s (see :class:`SendBudget`)."""
        if not events:
            raise ValueError("send_events needs at least one event")
        if not isinstance(idempotency_key, str) or not 1 <= len(idempotency_key) <= (
            _MAX_IDEMPOTENCY_KEY
        ):
            raise ValueError(
                f"idempotency_key must be a string of 1 to {_MAX_IDEMPOTENCY_KEY} characters"
            )
        for i, event in enumerate(events):
            kind = event.get("type") if isinstance(event, Mapping) else None
            if not isinstance(kind, str) or not kind.startswith("agent.session.input."):
                raise ValueError(f"events[{i}] must be an agent.session.input.* event")
        self._http.request(
            "POST",
            f"/agents/sessions/{segment(session_id)}/events",
            idempotent=True,
            json={"events": [dict(event) for event in events]},
            headers={"idempotency-key": idempotency_key, "accept": "*/*"},
            telemetry_metadata={**(telemetry_metadata or {}), "session_id": session_id},
            budget=budget,
        ).close()

    def open_event_stream(
        self,
        session_id: str,
        *,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> requests.Response:
        """Open ``GET /v1/agents/sessions/{id}/events`` and return the streaming response.

        The socket read timeout is ``idle_timeout``: silence longer than that ends the read.
        Obfuscation padding is turned off: it only costs bytes here.
        """
        return self._http.request(
            "GET",
            f"/agents/sessions/{segment(session_id)}/events",
            idempotent=True,
            params={"include_obfuscation": "false"},
            headers={"accept": "text/event-stream"},
            stream=True,
            read_timeout=idle_timeout,
            cancelled=cancelled,
            telemetry_metadata={**(telemetry_metadata or {}), "session_id": session_id},
        )
