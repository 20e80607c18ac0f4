"""The subagents a session's agent created, with their items and turns."""

from __future__ import annotations

from req_managed_agents.providers.openai.api._core import ClientCore, Json, list_params, segment

__all__ = ["SubagentsAPI"]


class SubagentsAPI(ClientCore):
    """The subagents of a session (read-only)."""

    def list_subagents(self, session_id: str) -> list[Json]:
        """The subagents the session's agent created."""
        path = f"/agents/sessions/{segment(session_id)}/subagents"
        return self._list(path)

    def get_subagent(self, session_id: str, subagent_id: str) -> Json:
        """One subagent."""
        path = f"/agents/sessions/{segment(session_id)}/subagents/{segment(subagent_id)}"
        return self._get(path)

    def list_subagent_items(self, session_id: str, subagent_id: str) -> list[Json]:
        """A subagent's items, oldest first."""
        path = f"/agents/sessions/{segment(session_id)}/subagents/{segment(subagent_id)}/items"
        return self._list(path, list_params(order="asc"))

    def list_subagent_turns(self, session_id: str, subagent_id: str) -> list[Json]:
        """A subagent's turns, newest first."""
        path = f"/agents/sessions/{segment(session_id)}/subagents/{segment(subagent_id)}/turns"
        return self._list(path, list_params(order="desc"))

    def get_subagent_turn(self, session_id: str, subagent_id: str, turn_id: str) -> Json:
        """One of a subagent's turns."""
        path = (
            f"/agents/sessions/{segment(session_id)}/subagents/{segment(subagent_id)}"
            f"/turns/{segment(turn_id)}"
        )
        return self._get(path)

    def list_subagent_turn_items(
        self, session_id: str, subagent_id: str, turn_id: str
    ) -> list[Json]:
        """The items of one of a subagent's turns, oldest first."""
        path = (
            f"/agents/sessions/{segment(session_id)}/subagents/{segment(subagent_id)}"
            f"/turns/{segment(turn_id)}/items"
        )
        return self._list(path, list_params(order="asc"))
