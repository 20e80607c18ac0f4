"""The threads of a multi-agent session."""

from __future__ import annotations

from typing import Any

from req_managed_agents.providers.claude.api._core import (
    EVENTS_PAGE_SIZE,
    ClientCore,
    Json,
    query_params,
    segment,
)

__all__ = ["ThreadsAPI"]


def _thread_path(session_id: str, thread_id: str) -> str:
    return f"/v1/sessions/{segment(session_id)}/threads/{segment(thread_id)}"


class ThreadsAPI(ClientCore):
    """The threads of a multi-agent session."""

    def list_threads(self, session_id: str, **params: Any) -> list[Json]:
        """Every thread of a session (all pages); ``statuses=[...]`` filters."""
        return self._list(f"/v1/sessions/{segment(session_id)}/threads", query_params(params))

    def get_thread(self, session_id: str, thread_id: str) -> Json:
        """One thread of a session."""
        return self._get(_thread_path(session_id, thread_id))

    def archive_thread(self, session_id: str, thread_id: str) -> Json:
        """Archive one thread of a session."""
        return self._archive(_thread_path(session_id, thread_id))

    def list_thread_events(
        self, session_id: str, thread_id: str, *, page_size: int = EVENTS_PAGE_SIZE
    ) -> list[Json]:
        """One thread's whole event history, every page."""
        path = f"{_thread_path(session_id, thread_id)}/events"
        return self._list(path, {"limit": page_size})
