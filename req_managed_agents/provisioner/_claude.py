"""Provisioning for Claude Managed Agents: an agent named by its content, in a
content-addressed environment shared by every agent with the same environment spec; on
Amazon Bedrock, an agent with its execution role, for a sandbox given by ARN."""

from __future__ import annotations

from typing import Any

from req_managed_agents.errors import ConfigurationError, ConflictError, ProvisioningError
from req_managed_agents.provisioner._environments import (
    EnvironmentHandle,
    ensure_environment,
    is_live,
)
from req_managed_agents.provisioner._handles import ClaudeAgentHandle, forget, from_record, remember
from req_managed_agents.provisioner._identity import CLAUDE_NAMES, compose_name, digest, digest8
from req_managed_agents.provisioner._runtimes import system_prompt_block
from req_managed_agents.provisioner._specs import AgentSpec, EnvironmentSpec
from req_managed_agents.provisioner._targets import claude_client
from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock

__all__ = [
    "DEFAULT_CLAUDE_ENVIRONMENT",
    "bedrock_agent_body",
    "claude_agent_body",
    "find_claude_agent",
    "provision_claude",
    "provision_claude_bedrock",
]

# The environment an agent gets when none is given: a cloud sandbox with open networking.
DEFAULT_CLAUDE_ENVIRONMENT = EnvironmentSpec(
    {"type": "cloud", "networking": {"type": "unrestricted"}}
)


def _claude_model(spec: AgentSpec) -> Any:
    # The API rejects provider-qualified ids ("anthropic:claude-..."): send the bare id.
    model = spec.model.split(":", 1)[1] if spec.model.startswith("anthropic:") else spec.model
    return {"id": model, **spec.model_config} if spec.model_config else model


def claude_agent_body(spec: AgentSpec, environment: EnvironmentSpec | None) -> dict[str, Any]:
    system = spec.system_prompt
    if environment is not None and environment.runtimes:
        system = f"{system}\n\n{system_prompt_block(environment.runtimes)}".strip()
    return {
        "model": _claude_model(spec),
        "system": system,
        "tools": [{"type": "custom", **dict(tool)} for tool in spec.declarations],
    }


def provision_claude(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | EnvironmentHandle | None,
    store: Store,
) -> ClaudeAgentHandle:
    client = claude_client(provider)
    env_spec = environment if isinstance(environment, EnvironmentSpec) else None
    if environment is None:
        env_spec = DEFAULT_CLAUDE_ENVIRONMENT
    body = claude_agent_body(spec, env_spec)
    agent_digest = digest8(body)
    name = compose_name(spec.name, agent_digest, CLAUDE_NAMES)
    env_handle = (
        environment
        if isinstance(environment, EnvironmentHandle)
        else ensure_environment(
            provider,
            env_spec or DEFAULT_CLAUDE_ENVIRONMENT,
            name=f"{spec.name}_env",
            store=store,
        )
    )
    key = "provision:" + digest(["claude", client.base_url, name, env_handle.environment_id])
    return _ensure_agent(client, store, key, name, body, agent_digest, env_handle.environment_id)


def bedrock_agent_body(spec: AgentSpec, execution_role_arn: str | None) -> dict[str, Any]:
    """The agent body on Amazon Bedrock: Claude's, with the role its sessions run as (part
    of the agent's identity, so a different role is a different agent)."""
    from req_managed_agents.providers.claude.api._sessions import execution_identity_of

    if not execution_role_arn or not execution_role_arn.strip():
        raise ConfigurationError(
            "a Claude agent on Amazon Bedrock needs execution_role_arn "
            "(the IAM role its sessions run as)"
        )
    try:
        identity = execution_identity_of(execution_role_arn.strip())
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    return {**claude_agent_body(spec, None), "execution_identity": identity}


def provision_claude_bedrock(
    provider: Any,
    spec: AgentSpec,
    environment: Any,
    store: Store,
    execution_role_arn: str | None,
) -> ClaudeAgentHandle:
    """A Claude agent on Amazon Bedrock: named by its content as on Anthropic's API, with
    the IAM role its sessions run as (``execution_identity``, required), for the sandbox
    ``environment`` names by ARN (Bedrock has no environments to create)."""
    body = bedrock_agent_body(spec, execution_role_arn)
    if not isinstance(environment, str) or not environment.startswith("arn:"):
        raise ConfigurationError(
            "provisioning on Amazon Bedrock needs environment= the ARN of a sandbox "
            "(there are no environments to create there)"
        )
    client = claude_client(provider)
    agent_digest = digest8(body)
    name = compose_name(spec.name, agent_digest, CLAUDE_NAMES)
    key = "provision:" + digest(["claude-bedrock", client.base_url, name, environment])
    return _ensure_agent(
        client, store, key, name, body, agent_digest, environment, kind="claude-bedrock"
    )


def _ensure_agent(
    client: Any,
    store: Store,
    key: str,
    name: str,
    body: dict[str, Any],
    agent_digest: str,
    environment_id: str,
    kind: str = "claude",
) -> ClaudeAgentHandle:
    """The stored agent, the listed one of ``name``, or a new one; remembered under ``key``."""
    # The cached path takes no lock (a lookup and one GET); the lock guards only the create.
    cached = _live_agent(client, store, store.get(key))
    if cached is not None:
        return cached
    with store_lock(store):
        cached = _live_agent(client, store, store.get(key))  # made while we waited?
        if cached is not None:
            return cached
        agent = find_claude_agent(client, name)
        if agent is None:
            try:
                agent = client.create_agent({"name": name, **body})
            except ConflictError:
                agent = find_claude_agent(client, name)
                if agent is None:
                    raise ProvisioningError(
                        f"agent name {name!r} is taken by an archived or unlisted agent; "
                        "change the spec or its name"
                    ) from None
        version = agent.get("version")
        handle = ClaudeAgentHandle(
            str(agent["id"]),
            environment_id,
            name,
            agent_digest,
            kind=kind,
            version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        )
        remember(store, key, handle)
    return handle


def _live_agent(client: Any, store: Store, record: Any) -> ClaudeAgentHandle | None:
    """The stored agent if it is still live; one archived or deleted elsewhere is
    forgotten (every record of it) and ``None`` returned."""
    cached = from_record(record)
    if not isinstance(cached, ClaudeAgentHandle):
        return None
    if is_live(client.get_agent, cached.agent_id):
        return cached
    forget(store, cached)
    return None


def find_claude_agent(client: Any, name: str) -> dict[str, Any] | None:
    """The active agent named ``name``. An archived one does not count: a create may reuse
    the name (torn down, then provisioned again) where the API allows it."""
    return next((dict(a) for a in client.list_agents() if a.get("name") == name), None)
