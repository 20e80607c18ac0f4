"""Managed agent runtimes the drivers can talk to.

* :class:`ClaudeManagedAgents` - Anthropic Claude Managed Agents (long-lived SSE stream).
* :class:`ClaudeManagedAgentsBedrock` - the same protocol served by Amazon Bedrock (SigV4).
* :class:`BedrockAgentCore` - AWS Bedrock AgentCore Harness (one event stream per turn;
  needs the ``[aws]`` extra, loaded on first use).
"""

from req_managed_agents.providers._base import Conversation, Provider
from req_managed_agents.providers.agentcore import BedrockAgentCore, CommandResult
from req_managed_agents.providers.claude import ClaudeManagedAgents, ClaudeManagedAgentsBedrock

__all__ = [
    "BedrockAgentCore",
    "ClaudeManagedAgents",
    "ClaudeManagedAgentsBedrock",
    "CommandResult",
    "Conversation",
    "Provider",
]
