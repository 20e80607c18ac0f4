"""Managed agent runtimes the drivers can talk to.

* :class:`ClaudeManagedAgents` - Anthropic Claude Managed Agents (long-lived SSE stream).
* :class:`ClaudeManagedAgentsBedrock` - the same protocol served by Amazon Bedrock (SigV4).
* :class:`BedrockAgentCore` - AWS Bedrock AgentCore Harness (one event stream per turn;
  needs the ``[aws]`` extra, loaded on first use).
* :class:`OpenAIAgents` - OpenAI's Agents API (a live SSE stream per session).
* :class:`GeminiManagedAgents` - Gemini Managed Agents, the Interactions API (a chain of
  streamed interactions).
"""

from req_managed_agents.providers._base import Conversation, Provider
from req_managed_agents.providers.agentcore import BedrockAgentCore, CommandResult
from req_managed_agents.providers.claude import ClaudeManagedAgents, ClaudeManagedAgentsBedrock
from req_managed_agents.providers.gemini import GeminiManagedAgents
from req_managed_agents.providers.openai import OpenAIAgents

__all__ = [
    "BedrockAgentCore",
    "ClaudeManagedAgents",
    "ClaudeManagedAgentsBedrock",
    "CommandResult",
    "Conversation",
    "GeminiManagedAgents",
    "OpenAIAgents",
    "Provider",
]
