"""The OpenAI Agents API client: agents, sessions, their inputs and live events, items,
turns and subagents.

Each noun lives in its own module under :mod:`~req_managed_agents.providers.openai.api`
(where the retry rules are described); :class:`OpenAIClient` is all of them over one
authenticated, pooled HTTP client.
"""

from __future__ import annotations

from req_managed_agents.providers.openai.api._agents import AgentsAPI
from req_managed_agents.providers.openai.api._core import AGENTS_BETA
from req_managed_agents.providers.openai.api._events import EventsAPI
from req_managed_agents.providers.openai.api._items import ItemsAPI
from req_managed_agents.providers.openai.api._sessions import SessionsAPI
from req_managed_agents.providers.openai.api._subagents import SubagentsAPI
from req_managed_agents.providers.openai.api._turns import TurnsAPI

__all__ = ["AGENTS_BETA", "OpenAIClient"]


class OpenAIClient(AgentsAPI, SessionsAPI, EventsAPI, ItemsAPI, TurnsAPI, SubagentsAPI):
    """Thread-safe client for the OpenAI Agents API (one pooled session). Every method is
    one endpoint and returns the service's JSON verbatim (plain dicts); lists follow the
    cursor to the last page."""

    def __repr__(self) -> str:
        return f"OpenAIClient(base_url={self.base_url!r}, api_key=***)"
