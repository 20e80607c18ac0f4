"""Provisioning for Gemini Managed Agents: an agent whose caller-chosen id is its content
address (``<base>-<digest8>`` of its base agent, configuration, instructions and function
tools), so the provider is asked for it by id - no list - and a create that lost its answer
is found again the same way. Environments are an interaction's choice, not an agent's."""

from __future__ import annotations

import contextlib
from typing import Any

from req_managed_agents.errors import ConflictError, NotFoundError
from req_managed_agents.provisioner._handles import GeminiAgentHandle, forget, from_record, remember
from req_managed_agents.provisioner._identity import GEMINI_NAMES, compose_name, digest, digest8
from req_managed_agents.provisioner._specs import AgentSpec
from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock

__all__ = ["find_gemini_agent", "gemini_agent_body", "gemini_agent_id", "gemini_client"]


def gemini_client(provider: Any) -> Any:
    """The client of a ``GeminiManagedAgents`` (or a ``GeminiClient`` itself)."""
    from req_managed_agents.providers.gemini import GeminiClient, GeminiManagedAgents

    if isinstance(provider, GeminiManagedAgents):
        return provider.client
    if isinstance(provider, GeminiClient):
        return provider
    raise TypeError(f"expected a GeminiManagedAgents provider, got {type(provider).__name__}")


def gemini_agent_body(spec: AgentSpec) -> dict[str, Any]:
    """The agent as the API takes it, but its id: the spec's ``model`` is the agent it
    builds on (``base_agent``, e.g. ``antigravity-preview-05-2026``), its ``model_config``
    the ``agent_config`` (e.g. ``{"type": "antigravity", "model": ...}``), each tool a
    ``function`` with its JSON Schema as ``parameters``."""
    body: dict[str, Any] = {"base_agent": spec.model}
    if spec.model_config:
        body["agent_config"] = dict(spec.model_config)
    if spec.system_prompt:
        body["system_instruction"] = spec.system_prompt
    if spec.declarations:
        body["tools"] = [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["input_schema"],
            }
            for tool in spec.declarations
        ]
    return body


def gemini_agent_id(spec: AgentSpec) -> tuple[str, str]:
    """The agent's content-addressed id, and the digest it ends with."""
    agent_digest = digest8(gemini_agent_body(spec))
    return compose_name(spec.name, agent_digest, GEMINI_NAMES), agent_digest


def provision_gemini(provider: Any, spec: AgentSpec, store: Store) -> GeminiAgentHandle:
    """The stored agent, the one of the content-addressed id at the provider, or a new one."""
    client = gemini_client(provider)
    agent_id, agent_digest = gemini_agent_id(spec)
    handle = GeminiAgentHandle(agent_id, agent_id, agent_digest)
    key = "provision:" + digest(["gemini", client.base_url, agent_id])
    # The cached path takes no lock (one GET); the lock guards only the create.
    if _live(client, store, store.get(key)):
        return handle
    with store_lock(store):
        if find_gemini_agent(client, agent_id) is None:
            # A 409: made meanwhile (or by a create whose answer was lost) - the same content.
            with contextlib.suppress(ConflictError):
                client.create_agent({"id": agent_id, **gemini_agent_body(spec)})
        remember(store, key, handle)
    return handle


def _live(client: Any, store: Store, record: Any) -> bool:
    """Whether the stored agent still exists; one deleted elsewhere is forgotten."""
    cached = from_record(record)
    if not isinstance(cached, GeminiAgentHandle):
        return False
    if find_gemini_agent(client, cached.agent_id) is None:
        forget(store, cached)
        return False
    return True


def find_gemini_agent(client: Any, agent_id: str) -> dict[str, Any] | None:
    """The agent of this id (None: there is none)."""
    try:
        return dict(client.get_agent(agent_id))
    except NotFoundError:
        return None
