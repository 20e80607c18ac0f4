"""Which provider a provisioning call talks to, and the default store."""

from __future__ import annotations

from typing import Any

from req_managed_agents.stores import MemoryStore

__all__ = ["agentcore_client", "claude_client", "default_store"]

_DEFAULT_STORE = MemoryStore()


def default_store() -> MemoryStore:
    """The process-wide store used when a call gets ``store=None``."""
    return _DEFAULT_STORE


def claude_client(provider: Any) -> Any:
    """The control-plane client of a ``ClaudeManagedAgents`` (or a ``ClaudeClient`` itself)."""
    from req_managed_agents.providers.claude import ClaudeClient, ClaudeManagedAgents

    if isinstance(provider, ClaudeManagedAgents):
        return provider.client
    if isinstance(provider, ClaudeClient):
        return provider
    raise TypeError(f"expected a ClaudeManagedAgents provider, got {type(provider).__name__}")


def agentcore_client(provider: Any) -> Any:
    """The client of a ``BedrockAgentCore`` (or an ``AgentCoreClient`` itself)."""
    from req_managed_agents.providers.agentcore import AgentCoreClient, BedrockAgentCore

    if isinstance(provider, BedrockAgentCore):
        return provider.client
    if isinstance(provider, AgentCoreClient):
        return provider
    raise TypeError(f"expected a BedrockAgentCore provider, got {type(provider).__name__}")
