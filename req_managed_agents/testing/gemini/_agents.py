"""Agents: ``/{v}/agents`` (create with a caller-chosen ``id``, list) and
``/{v}/agents/{id}`` (get, delete). An agent plays its script (the emulator's default unless
``add_agent`` gave one); interactions name it by ``id`` or ``agents/{id}``.

The body is ``Agent`` (google-genai 3.6.1, ``types/agents/agent.py``), answered as stored:
its fields only (an undeclared one is a 400), an ``id`` of 1 to 63 lowercase letters, digits
and dashes starting with a letter and not ending with a dash (the emulator's choice: Google's
resource id rule); a taken id is a 409 ``already_exists``. Lists page by ``page_size`` (1 to
1000, default 50) and ``page_token``, answering ``next_page_token`` while more follow.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.gemini._request import check_tools
from req_managed_agents.testing.gemini._wire import AGENTS_PATH, ID, APIError, invalid

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._state import GeminiState
    from req_managed_agents.testing.server import Exchange, RecordedRequest, Route

AGENT_ID = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
_FIELDS = frozenset(
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
_TOOL_TYPES = frozenset(
    {"code_execution", "function", "google_search", "mcp_server", "url_context"}
)
DEFAULT_PAGE = 50
MAX_PAGE = 1000


def check_fields(body: Any, fields: frozenset[str]) -> dict[str, Any]:
    """A create body: a JSON object of ``fields`` only."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    for name in body:
        if name not in fields:
            raise invalid(
                f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'
            )
    return body


def check_query(request: RecordedRequest, allowed: tuple[str, ...] = ()) -> None:
    for name in request.query:
        if name not in allowed:
            raise invalid(f"Unknown query parameter '{name}'.")


class Agents:
    """The agent routes, on the shared state."""

    def __init__(self, state: GeminiState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        return [
            ("POST", AGENTS_PATH, self._create),
            ("GET", AGENTS_PATH, self._list),
            ("GET", f"{AGENTS_PATH}/{ID}", self._get),
            ("DELETE", f"{AGENTS_PATH}/{ID}", self._delete),
        ]

    def new_agent(self, body: Any) -> dict[str, Any]:
        """Create an agent from a create body (checked here); called with the lock held."""
        agent = copy.deepcopy(check_fields(body, _FIELDS))
        agent_id = agent.get("id")
        if not isinstance(agent_id, str) or not AGENT_ID.fullmatch(agent_id):
            raise invalid(
                "id is required: 1 to 63 lowercase letters, digits and dashes, starting with "
                "a letter and not ending with a dash."
            )
        for name in ("base_agent", "description", "system_instruction"):
            if name in agent and not isinstance(agent[name], str):
                raise invalid(f"{name} must be a string.")
        check_tools(agent.get("tools"), _TOOL_TYPES)
        if agent_id in self._state.agents:
            raise APIError(409, f"Agent '{agent_id}' already exists.")
        self._state.agents[agent_id] = agent
        return agent

    def _create(self, exchange: Exchange) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return copy.deepcopy(self.new_agent(exchange.request.body))

    def _list(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        check_query(request, ("page_size", "page_token", "parent"))
        with self._state.condition:
            keyed = self._state.page_keys(self._state.agents)
            page = self._state.pages.cut(request, keyed, DEFAULT_PAGE, MAX_PAGE)
        answer: dict[str, Any] = {"agents": page.items}
        if page.next_token is not None:
            answer["next_page_token"] = page.next_token
        return answer

    def _get(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return copy.deepcopy(self._state.agents.find(agent_id))

    def _delete(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            self._state.agents.remove(agent_id)
            self._state.agent_scripts.pop(agent_id, None)
        return {}
