"""Session artifacts: a session's files, by name, for both providers.

* :class:`ArtifactStore` - the protocol: ``list``, ``fetch``, ``put``, ``delete``.
* :class:`ClaudeFiles` - a Claude session's files (Files API; outputs under
  ``/mnt/session/outputs`` are downloadable).
* :class:`AgentCoreSessionStorage` - an AgentCore session's storage mount, through shell
  commands run in the session.
* :func:`for_session` - the store of the session a tool runs in, from its ``ToolContext``.
"""

from __future__ import annotations

from typing import Any

from req_managed_agents.artifacts._agentcore import AgentCoreSessionStorage
from req_managed_agents.artifacts._base import ArtifactStore, check_name
from req_managed_agents.artifacts._claude import ClaudeFiles
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import SessionInfo

__all__ = ["AgentCoreSessionStorage", "ArtifactStore", "ClaudeFiles", "check_name", "for_session"]


def for_session(provider: Any, info: SessionInfo, *, mount: str | None = None) -> ArtifactStore:
    """The artifact store of the session ``info`` describes (``ToolContext.session`` in a
    tool, or the ``info`` of ``handle_event``). AgentCore needs the storage ``mount`` path;
    Claude on Amazon Bedrock has no store (no Files API), which raises ``ConfigurationError``."""
    if info.provider == "agentcore":
        if not mount:
            raise ValueError("an AgentCore session's artifacts need the storage mount path")
        harness_arn = info.metadata.get("harness_arn")
        if not harness_arn:
            raise ValueError("this SessionInfo does not say which harness the session runs on")
        return AgentCoreSessionStorage(provider.client, str(harness_arn), info.session_id, mount)
    if info.provider == "claude":
        return ClaudeFiles(provider.client, info.session_id)
    if info.provider == "claude-bedrock":
        raise ConfigurationError(
            "Claude Managed Agents on Amazon Bedrock has no Files API: mount an S3 folder "
            "in the session (a read_write s3_mount resource with is_output=True) and read "
            "the finished work from S3"
        )
    raise ValueError(f"no artifact store for provider {info.provider!r}")
