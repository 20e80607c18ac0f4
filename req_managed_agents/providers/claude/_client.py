"""The Claude Managed Agents control plane: agents, environments, sessions, threads, events,
files, memory stores, vaults and the work queue of self-hosted environments.

Every method is one documented endpoint and returns the provider's JSON verbatim (plain dicts);
list methods follow the cursor to the last page. Each API noun lives in its own module under
:mod:`~req_managed_agents.providers.claude.api` (where the retry rules of each kind of call
are described); :class:`ClaudeClient` is all of them over one authenticated, pooled client.
"""

from __future__ import annotations

from req_managed_agents.providers.claude.api._agents import AgentsAPI
from req_managed_agents.providers.claude.api._core import (
    ANTHROPIC_VERSION,
    FILES_BETA,
    MANAGED_AGENTS_BETA,
    MEMORY_BETA,
    AuthScheme,
)
from req_managed_agents.providers.claude.api._environments import EnvironmentsAPI
from req_managed_agents.providers.claude.api._events import EventsAPI
from req_managed_agents.providers.claude.api._files import FilesAPI
from req_managed_agents.providers.claude.api._memory import MemoryAPI
from req_managed_agents.providers.claude.api._sessions import SessionsAPI
from req_managed_agents.providers.claude.api._threads import ThreadsAPI
from req_managed_agents.providers.claude.api._vaults import VaultsAPI
from req_managed_agents.providers.claude.api._work import WorkAPI

__all__ = [
    "ANTHROPIC_VERSION",
    "FILES_BETA",
    "MANAGED_AGENTS_BETA",
    "MEMORY_BETA",
    "AuthScheme",
    "ClaudeClient",
]


class ClaudeClient(
    AgentsAPI,
    EnvironmentsAPI,
    SessionsAPI,
    ThreadsAPI,
    EventsAPI,
    FilesAPI,
    MemoryAPI,
    VaultsAPI,
    WorkAPI,
):
    """Thread-safe client for the Claude Managed Agents REST API (one pooled session)."""

    def __repr__(self) -> str:
        return f"ClaudeClient(base_url={self.base_url!r}, api_key=***)"
