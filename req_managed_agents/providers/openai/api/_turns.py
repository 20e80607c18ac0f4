"""A session's turns - each a unit of the agent's work, root or subagent - and their items."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from req_managed_agents.providers.openai.api._core import ClientCore, Json, list_params, segment

__all__ = ["TurnsAPI"]


class TurnsAPI(ClientCore):
    """The turns of a session (read-only)."""

    def iter_turns(
        self,
        session_id: str,
        *,
        order: str = "desc",
        telemetry_metadata: Mapping[str, Any] | None = None,
        cancelled: threading.Event | None = None,
    ) -> Iterator[Json]:
        """The session's turns (root and subagent), newest first unless ``order="asc"``.
        Once ``cancelled`` is set, a retry's wait ends and no further page is asked for."""
        path = f"/agents/sessions/{segment(session_id)}/turns"
        return self._pages(
            path,
            list_params(order=order),
            telemetry_metadata=telemetry_metadata,
            cancelled=cancelled,
        )

    def list_turns(self, session_id: str, *, order: str = "desc") -> list[Json]:
        """Every turn of the session."""
        return list(self.iter_turns(session_id, order=order))

    def get_turn(self, session_id: str, turn_id: str) -> Json:
        """One turn: status, usage, error."""
        return self._get(f"/agents/sessions/{segment(session_id)}/turns/{segment(turn_id)}")

    def list_turn_items(
        self,
        session_id: str,
        turn_id: str,
        *,
        order: str = "asc",
        telemetry_metadata: Mapping[str, Any] | None = None,
        cancelled: threading.Event | None = None,
    ) -> list[Json]:
        """The items of one root turn, its subagent interactions included. Once
        ``cancelled`` is set, a retry's wait ends and no further page is asked for."""
        path = f"/agents/sessions/{segment(session_id)}/turns/{segment(turn_id)}/items"
        return self._list(
            path,
            list_params(order=order),
            telemetry_metadata=telemetry_metadata,
            cancelled=cancelled,
        )
