"""Claude Managed Agents: the provider (on Anthropic's API and on Amazon Bedrock), its
control-plane client and its event helpers."""

from req_managed_agents.providers.claude._bedrock import ClaudeManagedAgentsBedrock
from req_managed_agents.providers.claude._bedrock_client import ClaudeBedrockClient
from req_managed_agents.providers.claude._client import (
    ANTHROPIC_VERSION,
    FILES_BETA,
    MANAGED_AGENTS_BETA,
    ClaudeClient,
)
from req_managed_agents.providers.claude._provider import ClaudeManagedAgents

__all__ = [
    "ANTHROPIC_VERSION",
    "FILES_BETA",
    "MANAGED_AGENTS_BETA",
    "ClaudeBedrockClient",
    "ClaudeClient",
    "ClaudeManagedAgents",
    "ClaudeManagedAgentsBedrock",
]
