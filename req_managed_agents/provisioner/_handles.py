"""What provisioning hands back, and how it is remembered in a store.

A handle names the provider resources a spec was provisioned as. The store keeps it under
the spec's key, and indexes every key by resource, so teardown can find each copy (one
Claude agent serves several environments, each under its own key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Union

from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock

__all__ = [
    "CLAUDE_KINDS",
    "ClaudeAgentHandle",
    "GeminiAgentHandle",
    "Handle",
    "HarnessHandle",
    "OpenAIAgentHandle",
    "forget",
    "from_record",
    "remember",
]


@dataclass(frozen=True)
class ClaudeAgentHandle:
    """A provisioned Claude agent and the environment its sessions run in.

    ``kind`` is ``"claude"``, or ``"claude-bedrock"`` for an agent on Amazon Bedrock, whose
    ``environment_id`` is the ARN of its sandbox.

    ``version`` is the agent version provisioning found or made; sessions started from the
    handle are pinned to it, so an update made elsewhere cannot change them unannounced.
    """

    agent_id: str
    environment_id: str
    name: str
    digest: str
    kind: str = "claude"
    version: int | None = None


@dataclass(frozen=True)
class HarnessHandle:
    """A provisioned AgentCore harness, ``READY`` when returned together with its endpoint
    ``endpoint_name``, which sessions started from the handle invoke (their ``qualifier``)."""

    harness_arn: str
    harness_id: str
    name: str
    digest: str
    kind: str = "agentcore"
    endpoint_name: str = "DEFAULT"


@dataclass(frozen=True)
class OpenAIAgentHandle:
    """A provisioned OpenAI agent; sessions started from it (``agent=``) run it in the
    environment the session names (the API has no environments to provision)."""

    agent_id: str
    name: str
    digest: str
    kind: str = "openai"


@dataclass(frozen=True)
class GeminiAgentHandle:
    """A provisioned Gemini agent, whose caller-chosen id is its content-addressed name
    (``name`` and ``agent_id`` are the same); interactions started from it (``agent=``)
    name their environment themselves."""

    agent_id: str
    name: str
    digest: str
    kind: str = "gemini"


Handle = Union[ClaudeAgentHandle, HarnessHandle, OpenAIAgentHandle, GeminiAgentHandle]
CLAUDE_KINDS = ("claude", "claude-bedrock")


def from_record(record: Any) -> Handle | None:
    """A handle from its stored JSON form; None for anything unreadable (then rebuilt)."""
    if not isinstance(record, Mapping):
        return None
    try:
        if record.get("kind") in CLAUDE_KINDS:
            return ClaudeAgentHandle(**record)
        if record.get("kind") == "agentcore":
            return HarnessHandle(**record)
        if record.get("kind") == "openai":
            return OpenAIAgentHandle(**record)
        if record.get("kind") == "gemini":
            return GeminiAgentHandle(**record)
    except TypeError:
        return None
    return None


def _resource_key(handle: Handle) -> str:
    resource = handle.harness_arn if isinstance(handle, HarnessHandle) else handle.agent_id
    return f"resource:{handle.kind}:{resource}"


def remember(store: Store, key: str, handle: Handle) -> None:
    """Cache the handle, and index the key by resource so teardown can find every copy
    (one Claude agent serves several environments, each under its own key)."""
    store.put(key, asdict(handle))
    index = _resource_key(handle)
    keys = list(store.get(index) or [])
    if key not in keys:
        store.put(index, [*keys, key])


def forget(store: Store, handle: Handle) -> None:
    """Remove every cached record of this resource."""
    with store_lock(store):
        index = _resource_key(handle)
        for key in store.get(index) or []:
            store.delete(key)
        store.delete(index)
        store.delete_value(asdict(handle))
