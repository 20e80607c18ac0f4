"""The Gemini API's Managed Agents nouns (interactions, agents, environments), one module per
noun, each a part of :class:`~req_managed_agents.providers.gemini.GeminiClient` over a shared
:class:`~req_managed_agents.providers.gemini.api._core.ClientCore`. Internal."""
