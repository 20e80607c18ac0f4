"""AWS Bedrock AgentCore Harness: the provider, its client, Converse helpers and harness waits.

Importing this package does not import botocore; constructing :class:`BedrockAgentCore` does
(install ``req-managed-agents[aws]``).
"""

from req_managed_agents.providers.agentcore._client import AgentCoreClient, CommandResult
from req_managed_agents.providers.agentcore._converse import inline_function, resume_messages
from req_managed_agents.providers.agentcore._harness import (
    DEFAULT_ENDPOINT,
    create_harness_and_wait,
    wait_until_ready,
)
from req_managed_agents.providers.agentcore._provider import (
    BedrockAgentCore,
    new_runtime_session_id,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "AgentCoreClient",
    "BedrockAgentCore",
    "CommandResult",
    "create_harness_and_wait",
    "inline_function",
    "new_runtime_session_id",
    "resume_messages",
    "wait_until_ready",
]
