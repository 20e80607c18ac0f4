"""OpenAI's Agents API: the provider and its API client."""

from req_managed_agents.providers.openai._client import AGENTS_BETA, OpenAIClient
from req_managed_agents.providers.openai._provider import OpenAIAgents

__all__ = ["AGENTS_BETA", "OpenAIAgents", "OpenAIClient"]
