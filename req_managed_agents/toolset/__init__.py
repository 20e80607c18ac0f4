"""The built-in agent toolset (``bash``, ``read``, ``write``, ``edit``, ``glob``,
``grep``) run on this machine for self-hosted environments, confined to one working
directory, ``bash`` inside a bubblewrap sandbox where one works."""

from req_managed_agents.toolset._limits import DEFAULT_SHELL_LIMITS, ShellLimits
from req_managed_agents.toolset._sandbox import UnsandboxedWarning
from req_managed_agents.toolset._toolset import (
    AGENT_TOOL_NAMES,
    DEFAULT_BASH_TIMEOUT,
    DEFAULT_MAX_OUTPUT,
    AgentToolset,
)

__all__ = [
    "AGENT_TOOL_NAMES",
    "DEFAULT_BASH_TIMEOUT",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_SHELL_LIMITS",
    "AgentToolset",
    "ShellLimits",
    "UnsandboxedWarning",
]
