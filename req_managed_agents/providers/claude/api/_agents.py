"""Agents and their versions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers.claude.api._core import (
    ClientCore,
    Json,
    body_of,
    positive_version,
    query_params,
    segment,
)

__all__ = ["AgentsAPI"]


class AgentsAPI(ClientCore):
    """Agents and their versions."""

    def create_agent(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/agents``; ``name`` and ``model`` are required by the API."""
        return self._create("/v1/agents", body_of(body, fields), "name", "an agent")

    def get_agent(self, agent_id: str, version: int | None = None) -> Json:
        """An agent: its latest version, or the one ``version`` names."""
        params = None if version is None else {"version": positive_version("version", version)}
        return self._get(f"/v1/agents/{segment(agent_id)}", params=params)

    def update_agent(
        self, agent_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Update an agent (a new version); pass ``version`` for optimistic concurrency."""
        path = f"/v1/agents/{segment(agent_id)}"
        return self._json("POST", path, idempotent=False, body=body_of(body, fields))

    def list_agents(self, **params: Any) -> list[Json]:
        """Every agent (all pages); ``include_archived=True`` to see archived ones."""
        return self._list("/v1/agents", query_params(params))

    def list_agent_versions(self, agent_id: str) -> list[Json]:
        """Every version of an agent (all pages), each a full agent object."""
        return self._list(f"/v1/agents/{segment(agent_id)}/versions")

    def archive_agent(self, agent_id: str) -> Json:
        """Make an agent read-only for good; running sessions go on."""
        return self._archive(f"/v1/agents/{segment(agent_id)}")
