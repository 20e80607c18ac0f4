"""The AgentCore Harness emulator (see :class:`~req_managed_agents.testing.AgentCoreEmulator`)."""
