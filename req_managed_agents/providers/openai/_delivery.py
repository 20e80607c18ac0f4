"""How an OpenAI Agents session takes its inputs (the
:class:`~req_managed_agents.providers._delivery.Wire` of
:class:`~req_managed_agents.providers._delivery.Delivery`): every post carries an
``Idempotency-Key``, and the service takes a repeat of a key it has seen as the same request,
so a post whose answer was lost is simply sent again under its key. Tool results carry keys
derived from what they answer, so even another process answering the same calls with the
same results sends the same key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from req_managed_agents.errors import BadRequestError
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.providers.openai._events import cancel
from req_managed_agents.transport._backoff import SendBudget

__all__ = ["OpenAIWire", "stable_key"]

_UNREGISTERED = "unknown pending tool call"

Event = Mapping[str, Any]


def stable_key(session_id: str, events: Sequence[Event]) -> str:
    """The same key for the same inputs to the same session, in any process."""
    body = json.dumps([session_id, list(events)], sort_keys=True, separators=(",", ":"))
    return "rma-" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:48]


class OpenAIWire:
    """Posts one session's inputs under their keys; the service keeps no history to read."""

    def __init__(
        self, client: OpenAIClient, session_id: str, telemetry_metadata: Mapping[str, Any]
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._telemetry = telemetry_metadata

    def send(self, events: Sequence[Event], key: str | None, budget: SendBudget) -> set[str]:
        if key is None:
            raise ValueError("every OpenAI input carries an idempotency key")
        self._client.send_events(
            self._session_id,
            events,
            idempotency_key=key,
            telemetry_metadata=self._telemetry,
            budget=budget,
        )
        return set()  # answered 202, naming nothing

    def stop_events(self) -> list[dict[str, Any]]:
        return [cancel()]

    def unregistered(self, error: BadRequestError) -> bool:
        return (error.message or "").lower().startswith(_UNREGISTERED)

    def mark(self) -> str | None:
        return None

    def history_after(self, mark: str | None) -> list[dict[str, Any]]:
        return []
