"""Reusable agents: a model, instructions and tools that sessions start from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers._api import body_of
from req_managed_agents.providers.openai.api._core import (
    ClientCore,
    Json,
    checked_metadata,
    list_params,
    segment,
)

__all__ = ["AgentsAPI"]


def _agent_body(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    """A body given as a mapping, as keywords, or both (a field given twice is refused)."""
    merged = body_of(body, fields)
    if merged.get("metadata") is not None:
        merged["metadata"] = checked_metadata(merged["metadata"])
    tools = merged.get("tools")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise ValueError(f"tools must be a list, got {type(tools).__name__}")
    return merged


class AgentsAPI(ClientCore):
    """Reusable agents (``/v1/agents``)."""

    def create_agent(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/agents``; ``model`` is required. Not retried once it may have landed:
        a repeat would leave a second agent."""
        agent = _agent_body(body, fields)
        if not isinstance(agent.get("model"), str) or not agent["model"]:
            raise ValueError("an agent needs a model")
        return self._json("POST", "/agents", idempotent=False, body=agent)

    def get_agent(self, agent_id: str) -> Json:
        """One agent."""
        return self._get(f"/agents/{segment(agent_id)}")

    def update_agent(
        self, agent_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change the fields given (``POST /v1/agents/{id}``); sessions already running keep
        the configuration they started with."""
        path = f"/agents/{segment(agent_id)}"
        return self._json("POST", path, idempotent=True, body=_agent_body(body, fields))

    def list_agents(self, *, order: str | None = None) -> list[Json]:
        """Every agent (all pages), newest first unless ``order="asc"``."""
        return self._list("/agents", list_params(order=order))

    def delete_agent(self, agent_id: str) -> Json:
        """Delete an agent; sessions started from it go on."""
        return self._delete(f"/agents/{segment(agent_id)}")
