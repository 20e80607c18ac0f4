"""The Bedrock AgentCore REST client: harness and endpoint CRUD on the control plane, streaming
``InvokeHarness``, ``InvokeAgentRuntimeCommand`` and ``StopRuntimeSession`` on the data plane.

Each concern lives in its own module under :mod:`~req_managed_agents.providers.agentcore.api`
(where the retry rules are described); :class:`AgentCoreClient` is all of them over one pair
of signed, pooled HTTP clients.
"""

from __future__ import annotations

from req_managed_agents.providers.agentcore.api._endpoints import EndpointsAPI
from req_managed_agents.providers.agentcore.api._harnesses import HarnessesAPI
from req_managed_agents.providers.agentcore.api._runtime import (
    SESSION_HEADER,
    CommandResult,
    RuntimeAPI,
)

__all__ = ["SESSION_HEADER", "AgentCoreClient", "CommandResult"]


class AgentCoreClient(HarnessesAPI, EndpointsAPI, RuntimeAPI):
    """Thread-safe client for both AgentCore planes; built by ``BedrockAgentCore``."""
