"""Managed agent runtimes the drivers can talk to.

* :class:`ClaudeManagedAgents` - Anthropic Claude Managed Agents (long-lived SSE stream).
"""

from req_managed_agents.providers._base import Conversation, Provider
from req_managed_agents.providers.claude import ClaudeManagedAgents

__all__ = ["ClaudeManagedAgents", "Conversation", "Provider"]
