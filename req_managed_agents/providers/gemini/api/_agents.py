"""Agents: a base agent, its instructions, tools and environment, saved under an id the
caller chooses."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from req_managed_agents.providers._api import body_of
from req_managed_agents.providers.gemini.api._core import ClientCore, Json, segment

__all__ = ["AGENT_FIELDS", "AgentsAPI"]

# The Agent type's fields (google-genai 3.6.1, types/agents/agent.py): the create body.
AGENT_FIELDS = frozenset(
    {
        "id",
        "base_agent",
        "base_environment",
        "description",
        "system_instruction",
        "agent_config",
        "tools",
    }
)


def _agent_body(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    merged = body_of(body, fields)
    unknown = sorted(set(merged) - AGENT_FIELDS)
    if unknown:
        raise ValueError(f"an agent declares no {', '.join(unknown)}")
    tools = merged.get("tools")
    if tools is not None and not isinstance(tools, (list, tuple)):
        raise ValueError(f"tools must be a list, got {type(tools).__name__}")
    return {key: value for key, value in merged.items() if value is not None}


class AgentsAPI(ClientCore):
    """Agents (``/{version}/agents``)."""

    def create_agent(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /agents``. Not retried once it may have landed; an agent whose ``id`` the
        caller chose is found again with :meth:`get_agent`."""
        return self._json("POST", "/agents", idempotent=False, body=_agent_body(body, fields))

    def get_agent(self, agent_id: str) -> Json:
        """One agent."""
        return self._get(f"/agents/{segment(agent_id)}")

    def iter_agents(self) -> Iterator[Json]:
        """Every agent, a page at a time."""
        return self._pages("/agents", member="agents")

    def list_agents(self) -> list[Json]:
        """Every agent (all pages)."""
        return list(self.iter_agents())

    def delete_agent(self, agent_id: str) -> Json:
        """Delete an agent (answered ``{}``)."""
        return self._delete(f"/agents/{segment(agent_id)}", required=())
