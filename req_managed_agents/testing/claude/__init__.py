"""The Claude Managed Agents emulator (see :class:`~req_managed_agents.testing.ClaudeEmulator`)."""
