"""The Gemini Managed Agents API client: interactions, agents and environments.

Each noun lives in its own module under :mod:`~req_managed_agents.providers.gemini.api`
(where the retry rules are described); :class:`GeminiClient` is all of them over one
authenticated, pooled HTTP client.
"""

from __future__ import annotations

from req_managed_agents.providers.gemini.api._agents import AgentsAPI
from req_managed_agents.providers.gemini.api._core import API_REVISION, API_VERSION
from req_managed_agents.providers.gemini.api._environments import EnvironmentsAPI
from req_managed_agents.providers.gemini.api._interactions import InteractionsAPI

__all__ = ["API_REVISION", "API_VERSION", "GeminiClient"]


class GeminiClient(InteractionsAPI, AgentsAPI, EnvironmentsAPI):
    """Thread-safe client for the Gemini API's Managed Agents nouns (one pooled session).
    Every method is one endpoint and returns the service's JSON verbatim (plain dicts);
    lists follow ``next_page_token`` to the last page."""

    def __repr__(self) -> str:
        return f"GeminiClient(base_url={self.base_url!r}, api_key=***)"
