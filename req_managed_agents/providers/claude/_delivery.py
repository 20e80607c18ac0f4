"""How a Claude session takes its inputs (the :class:`~req_managed_agents.providers._delivery.Wire`
of :class:`~req_managed_agents.providers._delivery.Delivery`): posted events with no
idempotency key, whose landing is read back from the session's history - each event found by
the tool use it answers, or a prompt by its text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from req_managed_agents.errors import BadRequestError
from req_managed_agents.providers._delivery import Landed
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude._events import (
    CUSTOM_TOOL_RESULT,
    ELICITATION_RESPONSE,
    interrupt,
)
from req_managed_agents.providers.claude._feed import EventFeed
from req_managed_agents.transport._backoff import SendBudget

__all__ = ["ClaudeWire", "answered_id", "answers_landed"]

_UNREGISTERED = "does not match any agent.tool_use event"

Event = Mapping[str, Any]


class ClaudeWire:
    """Posts to one session's events; reads its history through the session's feed."""

    def __init__(
        self,
        client: ClaudeClient,
        session_id: str,
        feed: EventFeed,
        telemetry_metadata: Mapping[str, Any],
    ) -> None:
        self._client = client
        self._session_id = session_id
        self._feed = feed
        self._telemetry = telemetry_metadata

    def send(self, events: Sequence[Event], key: str | None, budget: SendBudget) -> set[str]:
        posted = self._client.send_events(
            self._session_id, list(events), telemetry_metadata=self._telemetry, budget=budget
        )
        return _echo_ids(posted, {str(event["type"]) for event in events})

    def stop_events(self) -> list[dict[str, Any]]:
        return [interrupt()]

    def unregistered(self, error: BadRequestError) -> bool:
        return _UNREGISTERED in (error.message or "").lower()

    def mark(self) -> str | None:
        return self._feed.newest_id()

    def history_after(self, mark: str | None) -> list[dict[str, Any]]:
        return self._feed.history_after(mark)


def answered_id(event: Event) -> str:
    """The tool use a result or a confirmation answers (the elicitation, for an answer to
    one)."""
    kind = event.get("type")
    if kind == CUSTOM_TOOL_RESULT:
        return str(event.get("custom_tool_use_id"))
    if kind == ELICITATION_RESPONSE:
        return str(event.get("mcp_elicitation_id"))
    return str(event.get("tool_use_id"))


def answers_landed(events: Sequence[Event]) -> Landed:
    """Which of the posted results and confirmations the history shows (by the tool use
    each answers)."""
    positions = {(str(e["type"]), answered_id(e)): i for i, e in enumerate(events)}

    def landed(history: Sequence[Event]) -> dict[int, str]:
        found = {}
        for event in history:
            position = positions.get((str(event.get("type")), answered_id(event)))
            if position is not None:
                found[position] = str(event.get("id"))
        return found

    return landed


def _echo_ids(posted: Mapping[str, Any], kinds: set[str]) -> set[str]:
    """The ids the session gave the events we posted (empty if it named none, and then
    nothing waits for them)."""
    data = posted.get("data")
    if not isinstance(data, list):
        return set()
    return {
        str(event["id"])
        for event in data
        if isinstance(event, Mapping)
        and event.get("id")
        and event.get("type", next(iter(kinds))) in kinds
    }
