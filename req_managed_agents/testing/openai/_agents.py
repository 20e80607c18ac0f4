"""Saved agents: ``/v1/agents`` (create, list) and ``/v1/agents/{id}`` (retrieve, update,
delete). An agent plays its script (the emulator's default unless ``add_agent`` gave one);
deleting it leaves the sessions made from it running."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._config import agent_settings, persisted_tools
from req_managed_agents.testing.openai._params import AGENT_CREATE, AGENT_UPDATE
from req_managed_agents.testing.openai._state import check_query, page
from req_managed_agents.testing.openai._wire import AGENT_ID, AGENTS_PATH, now
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.server import Exchange, Route


class Agents:
    """The agent routes, on the shared state."""

    def __init__(self, state: OpenAIState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        return [
            ("POST", AGENTS_PATH, self._create),
            ("GET", AGENTS_PATH, self._list),
            ("GET", f"{AGENTS_PATH}/{AGENT_ID}", self._retrieve),
            ("POST", f"{AGENTS_PATH}/{AGENT_ID}", self._update),
            ("DELETE", f"{AGENTS_PATH}/{AGENT_ID}", self._delete),
        ]

    def new_agent(self, body: Any) -> dict[str, Any]:
        """Create an agent from a create body (checked here); called with the lock held."""
        AGENT_CREATE(body, "")
        created = now()
        agent = {
            "id": new_id("agent"),
            "created_at": created,
            "updated_at": created,
            "object": "agent",
            **agent_settings(body),
        }
        self._state.agents[agent["id"]] = agent
        return agent

    def _create(self, exchange: Exchange) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return view(self.new_agent(exchange.request.body))

    def _list(self, exchange: Exchange) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            agents = [view(agent) for agent in self._state.agents.values()]
        return page(exchange.request, agents)

    def _retrieve(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return view(self._state.agents.find(agent_id))

    def _update(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        request = exchange.request
        check_query(request)
        body = AGENT_UPDATE(request.body, "")
        with self._state.condition:
            agent = self._state.agents.find(agent_id)
            settings = {k: v for k, v in agent.items() if k not in _IDENTITY}
            agent.update(agent_settings(body, settings), updated_at=now())
            return view(agent)

    def _delete(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            self._state.agents.remove(agent_id)
            self._state.agent_scripts.pop(agent_id, None)
        return {"id": agent_id, "deleted": True, "object": "agent.deleted"}


# The fields of a stored agent that are not settings.
_IDENTITY = ("id", "created_at", "updated_at", "object")


def view(agent: dict[str, Any]) -> dict[str, Any]:
    """An agent as the API answers it."""
    answered = copy.deepcopy(agent)
    answered["tools"] = persisted_tools(answered["tools"])
    return answered
