"""Provisioning for OpenAI's Agents API: an agent named by its content (the model, its
instructions and its function tools); the environment is a session's choice, not an agent's."""

from __future__ import annotations

from typing import Any

from req_managed_agents.errors import NotFoundError
from req_managed_agents.provisioner._handles import OpenAIAgentHandle, forget, from_record, remember
from req_managed_agents.provisioner._identity import OPENAI_NAMES, compose_name, digest, digest8
from req_managed_agents.provisioner._specs import AgentSpec
from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock

__all__ = ["find_openai_agent", "openai_agent_body", "openai_client", "provision_openai"]


def openai_client(provider: Any) -> Any:
    """The client of an ``OpenAIAgents`` (or an ``OpenAIClient`` itself)."""
    from req_managed_agents.providers.openai import OpenAIAgents, OpenAIClient

    if isinstance(provider, OpenAIAgents):
        return provider.client
    if isinstance(provider, OpenAIClient):
        return provider
    raise TypeError(f"expected an OpenAIAgents provider, got {type(provider).__name__}")


def openai_agent_body(spec: AgentSpec) -> dict[str, Any]:
    """The agent as the API takes it: ``model_config`` (e.g. ``{"reasoning": {"effort":
    "high"}}``) merged in, each tool a ``function`` with its JSON Schema as ``parameters``."""
    model = spec.model.split(":", 1)[1] if spec.model.startswith("openai:") else spec.model
    return {
        **(spec.model_config or {}),
        "model": model,
        "instructions": spec.system_prompt or None,
        "tools": [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["input_schema"],
            }
            for tool in spec.declarations
        ],
    }


def provision_openai(provider: Any, spec: AgentSpec, store: Store) -> OpenAIAgentHandle:
    """The stored agent, the listed one of the content-addressed name, or a new one."""
    client = openai_client(provider)
    body = openai_agent_body(spec)
    agent_digest = digest8(body)
    name = compose_name(spec.name, agent_digest, OPENAI_NAMES)
    key = "provision:" + digest(["openai", client.base_url, name])
    # The cached path takes no lock (a lookup and one GET); the lock guards only the create.
    cached = _live_agent(client, store, store.get(key))
    if cached is not None:
        return cached
    with store_lock(store):
        cached = _live_agent(client, store, store.get(key))  # made while we waited?
        if cached is not None:
            return cached
        agent = find_openai_agent(client, name)
        if agent is None:
            agent = client.create_agent({"name": name, **body})
        handle = OpenAIAgentHandle(str(agent["id"]), name, agent_digest)
        remember(store, key, handle)
    return handle


def _live_agent(client: Any, store: Store, record: Any) -> OpenAIAgentHandle | None:
    """The stored agent if it still exists; one deleted elsewhere is forgotten."""
    cached = from_record(record)
    if not isinstance(cached, OpenAIAgentHandle):
        return None
    try:
        client.get_agent(cached.agent_id)
    except NotFoundError:
        forget(store, cached)
        return None
    return cached


def find_openai_agent(client: Any, name: str) -> dict[str, Any] | None:
    """The agent named ``name`` (the API keeps no archived agents: deleted is gone)."""
    return next((dict(a) for a in client.list_agents() if a.get("name") == name), None)
