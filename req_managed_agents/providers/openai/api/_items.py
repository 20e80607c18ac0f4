"""A session's items: messages, function calls and their outputs, as the root agent saw them.

A client that lost its stream reads here what happened meanwhile: the stream never replays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from req_managed_agents.providers.openai.api._core import ClientCore, Json, list_params, segment

__all__ = ["ItemsAPI"]


class ItemsAPI(ClientCore):
    """The items of a session's root agent (read-only)."""

    def iter_items(
        self,
        session_id: str,
        *,
        order: str = "asc",
        after: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Iterator[Json]:
        """The root agent's items (messages, function calls and outputs, ...), a page at a
        time; stop iterating and no further page is asked for."""
        path = f"/agents/sessions/{segment(session_id)}/items"
        params = list_params(order=order, after=after)
        return self._pages(path, params, telemetry_metadata=telemetry_metadata)

    def list_items(self, session_id: str, *, order: str = "asc") -> list[Json]:
        """Every item of the session, oldest first unless ``order="desc"``."""
        return list(self.iter_items(session_id, order=order))
