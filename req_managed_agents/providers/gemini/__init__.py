"""Gemini Managed Agents (the Gemini API's Interactions API): the provider and its client."""

from req_managed_agents.providers.gemini._client import API_REVISION, API_VERSION, GeminiClient
from req_managed_agents.providers.gemini._provider import GeminiManagedAgents

__all__ = ["API_REVISION", "API_VERSION", "GeminiClient", "GeminiManagedAgents"]
