"""The AgentCore REST API, one module per concern, each a part of
:class:`~req_managed_agents.providers.agentcore.AgentCoreClient` over a shared
:class:`~req_managed_agents.providers.agentcore.api._core.ClientCore`. Internal."""
