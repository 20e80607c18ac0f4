"""The Claude control plane, one module per API noun, each a part of
:class:`~req_managed_agents.providers.claude.ClaudeClient` over a shared
:class:`~req_managed_agents.providers.claude.api._core.ClientCore`. Internal."""
