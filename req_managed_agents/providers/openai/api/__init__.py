"""The OpenAI Agents API, one module per API noun, each a part of
:class:`~req_managed_agents.providers.openai.OpenAIClient` over a shared
:class:`~req_managed_agents.providers.openai.api._core.ClientCore`. Internal."""
