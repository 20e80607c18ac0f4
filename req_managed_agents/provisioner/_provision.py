"""``provision`` and ``teardown``: idempotent, content-addressed agents for both providers.

``provision`` returns the handle for a spec, creating provider resources only when neither the
store nor the provider already has them:

1. the store is asked first, and a hit is confirmed with one ``GET`` of the resource, so a
   repeat call costs one ``GET`` per resource (Claude: the environment and the agent;
   AgentCore: the harness) and no list or create. A resource archived or deleted elsewhere
   (``archived_at`` set, a 404, a harness ``DELETING``) is forgotten - every record of it,
   as :func:`teardown` forgets - and rebuilt by steps 2 and 3. A harness in another state
   (``UPDATING``, failed) is handled like one found by name: waited on until ``READY``, or
   reported by its named error. Any other error of that ``GET`` (network, 5xx, auth)
   propagates and changes nothing in the store: only proof that a record is stale removes
   it, and a provider that cannot answer a ``GET`` could not run a session either;
2. then the provider is searched for a resource of the content-addressed name (so a fresh
   machine, or a lost store, finds what an earlier run made);
3. only then is it created; a create answering 409 recovers the resource by name.

With a shared :class:`FileStore` the whole sequence holds the store's lock, so two processes
provisioning the same spec at once end with one resource. Claude: an agent plus an
environment (content-addressed too, shared by every agent with the same environment spec, so
teardown leaves it to :func:`prune_environments`). AgentCore: a harness, waited on until
``READY`` within ``timeout`` and deleted again if it never gets there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Union

from req_managed_agents.errors import (
    ConfigurationError,
    ConflictError,
    HarnessDeletingError,
    NotFoundError,
    ProvisioningError,
)
from req_managed_agents.provisioner._environments import (
    EnvironmentHandle,
    ensure_environment,
    is_live,
)
from req_managed_agents.provisioner._identity import (
    AGENTCORE_NAMES,
    CLAUDE_NAMES,
    compose_name,
    digest,
    digest8,
)
from req_managed_agents.provisioner._runtimes import system_prompt_block
from req_managed_agents.provisioner._specs import AgentSpec, EnvironmentSpec
from req_managed_agents.provisioner._store import Store, store_lock
from req_managed_agents.provisioner._targets import agentcore_client, claude_client, default_store

__all__ = ["ClaudeAgentHandle", "HarnessHandle", "provision", "teardown"]

# The environment an agent gets when none is given: a cloud sandbox with open networking.
DEFAULT_CLAUDE_ENVIRONMENT = EnvironmentSpec(
    {"type": "cloud", "networking": {"type": "unrestricted"}}
)
DEFAULT_HARNESS_TIMEOUT = 365.0
_HARNESS_GONE_POLL = 2.0


@dataclass(frozen=True)
class ClaudeAgentHandle:
    """A provisioned Claude agent and the environment its sessions run in.

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
    """A provisioned AgentCore harness (``READY`` when returned)."""

    harness_arn: str
    harness_id: str
    name: str
    digest: str
    kind: str = "agentcore"


Handle = Union[ClaudeAgentHandle, HarnessHandle]


def _from_record(record: Any) -> Handle | None:
    """A handle from its stored JSON form; None for anything unreadable (then rebuilt)."""
    if not isinstance(record, Mapping):
        return None
    try:
        if record.get("kind") == "claude":
            return ClaudeAgentHandle(**record)
        if record.get("kind") == "agentcore":
            return HarnessHandle(**record)
    except TypeError:
        return None
    return None


def provision(
    provider: Any,
    spec: AgentSpec,
    *,
    environment: EnvironmentSpec | EnvironmentHandle | None = None,
    store: Store | None = None,
    execution_role_arn: str | None = None,
    timeout: float = DEFAULT_HARNESS_TIMEOUT,
) -> Handle:
    """The provider resources for ``spec``, reused when they exist, created when not.

    Claude returns a :class:`ClaudeAgentHandle`; pass it as ``agent=`` to the drivers.
    AgentCore returns a :class:`HarnessHandle` (``harness=``) and needs
    ``execution_role_arn``; ``timeout`` bounds the whole harness provision.
    """
    if not isinstance(spec, AgentSpec):
        raise TypeError("provision needs an AgentSpec")
    store = store if store is not None else default_store()
    if _is_agentcore(provider):
        return _provision_harness(provider, spec, environment, store, execution_role_arn, timeout)
    return _provision_claude(provider, spec, environment, store)


def _is_agentcore(provider: Any) -> bool:
    try:
        agentcore_client(provider)
    except TypeError:
        return False
    return True


# -- Claude -------------------------------------------------------------------------------


def _claude_model(spec: AgentSpec) -> Any:
    # The API rejects provider-qualified ids ("anthropic:claude-..."): send the bare id.
    model = spec.model.split(":", 1)[1] if spec.model.startswith("anthropic:") else spec.model
    return {"id": model, **spec.model_config} if spec.model_config else model


def _claude_agent_body(spec: AgentSpec, environment: EnvironmentSpec | None) -> dict[str, Any]:
    system = spec.system_prompt
    if environment is not None and environment.runtimes:
        system = f"{system}\n\n{system_prompt_block(environment.runtimes)}".strip()
    return {
        "model": _claude_model(spec),
        "system": system,
        "tools": [{"type": "custom", **dict(tool)} for tool in spec.declarations],
    }


def _provision_claude(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | EnvironmentHandle | None,
    store: Store,
) -> ClaudeAgentHandle:
    client = claude_client(provider)
    env_spec = environment if isinstance(environment, EnvironmentSpec) else None
    if environment is None:
        env_spec = DEFAULT_CLAUDE_ENVIRONMENT
    body = _claude_agent_body(spec, env_spec)
    agent_digest = digest8(body)
    name = compose_name(spec.name, agent_digest, CLAUDE_NAMES)
    with store_lock(store):
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
        cached = _from_record(store.get(key))
        if isinstance(cached, ClaudeAgentHandle):
            if is_live(client.get_agent, cached.agent_id):
                return cached
            _forget(store, cached)  # archived or deleted elsewhere: rebuild below
        agent = _find_claude_agent(client, name)
        if agent is None:
            try:
                agent = client.create_agent({"name": name, **body})
            except ConflictError:
                agent = _find_claude_agent(client, name)
                if agent is None:
                    raise ProvisioningError(
                        f"agent name {name!r} is taken by an archived or unlisted agent; "
                        "change the spec or its name"
                    ) from None
        version = agent.get("version")
        handle = ClaudeAgentHandle(
            str(agent["id"]),
            env_handle.environment_id,
            name,
            agent_digest,
            version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        )
        _remember(store, key, handle)
    return handle


def _find_claude_agent(client: Any, name: str) -> dict[str, Any] | None:
    """The active agent named ``name``. An archived one does not count: a create may reuse
    the name (torn down, then provisioned again) where the API allows it."""
    return next((dict(a) for a in client.list_agents() if a.get("name") == name), None)


# -- AgentCore ----------------------------------------------------------------------------


def _harness_body(
    spec: AgentSpec, environment: EnvironmentSpec | None, execution_role_arn: str
) -> dict[str, Any]:
    from req_managed_agents.providers.agentcore import inline_function

    system = spec.system_prompt
    if environment is not None and environment.runtimes:
        system = f"{system}\n\n{system_prompt_block(environment.runtimes)}".strip()
    body: dict[str, Any] = {
        "executionRoleArn": execution_role_arn,
        "model": {"bedrockModelConfig": {"modelId": spec.model, **(spec.model_config or {})}},
        "tools": [inline_function(tool) for tool in spec.declarations],
    }
    if system:
        body["systemPrompt"] = [{"text": system}]
    if environment is not None:
        body.update(_harness_environment(environment.config, set(body)))
    return body


# The members of CreateHarness's ``environment`` union (botocore model bedrock-agentcore-control).
HARNESS_ENVIRONMENT_MEMBERS = frozenset({"agentCoreRuntimeEnvironment"})


def _harness_environment(config: Mapping[str, Any], taken: set[str]) -> dict[str, Any]:
    """The CreateHarness members an AgentCore environment config stands for.

    A config holding the ``environment`` object itself (``{"agentCoreRuntimeEnvironment":
    {...}}``) goes under the ``environment`` member, as given. A config of CreateHarness
    members (``environment``, ``environmentVariables``, ``environmentArtifact``, ...) is
    merged into the request as given. Mixing the two is refused.
    """
    keys = set(config)
    if keys and keys <= HARNESS_ENVIRONMENT_MEMBERS:
        return {"environment": dict(config)}
    stray = keys & HARNESS_ENVIRONMENT_MEMBERS
    if stray:
        raise ValueError(
            f"environment config mixes {', '.join(sorted(stray))} (the environment object) with "
            f"CreateHarness members {', '.join(sorted(keys - stray))}; nest it under 'environment'"
        )
    clash = (taken | {"harnessName", "clientToken"}) & keys
    if clash:
        raise ValueError(f"environment config may not set {', '.join(sorted(clash))}")
    return dict(config)


def _provision_harness(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | EnvironmentHandle | None,
    store: Store,
    execution_role_arn: str | None,
    timeout: float,
) -> HarnessHandle:
    from req_managed_agents.providers.agentcore import create_harness_and_wait, wait_until_ready

    if not execution_role_arn or not execution_role_arn.strip():
        raise ConfigurationError("provisioning an AgentCore harness needs execution_role_arn")
    if isinstance(environment, EnvironmentHandle):
        raise TypeError("AgentCore harnesses take an EnvironmentSpec, not a Claude environment")
    client = agentcore_client(provider)
    deadline = time.monotonic() + timeout
    body = _harness_body(spec, environment, execution_role_arn.strip())
    harness_digest = digest8(body)
    name = compose_name(spec.name, harness_digest, AGENTCORE_NAMES)
    key = "provision:" + digest(["agentcore", client.control_url, name])
    with store_lock(store):
        cached = _from_record(store.get(key))
        if isinstance(cached, HarnessHandle):
            status = _harness_status(client, cached.harness_id, deadline)
            if status == "READY":
                return cached
            if status in (None, "DELETING"):
                _forget(store, cached)  # deleted elsewhere: a fresh one is made below
        harness = _adopt_harness(client, name, deadline, wait_until_ready)
        if harness is None:
            request = {"harnessName": name, **body}
            try:
                harness = create_harness_and_wait(
                    client, request, timeout=max(0.001, deadline - time.monotonic())
                )
            except ConflictError:
                harness = _adopt_harness(client, name, deadline, wait_until_ready)
                if harness is None:
                    raise ProvisioningError(
                        f"harness name {name!r} conflicts but is not listed"
                    ) from None
        handle = HarnessHandle(str(harness["arn"]), str(harness["harnessId"]), name, harness_digest)
        _remember(store, key, handle)
    return handle


def _harness_status(client: Any, harness_id: str, deadline: float) -> str | None:
    """A stored harness's status from one ``GetHarness``; None when it is gone (404)."""
    try:
        harness = client.get_harness(harness_id, deadline=deadline)
    except NotFoundError:
        return None
    return str(harness.get("status") or "")


def _adopt_harness(
    client: Any, name: str, deadline: float, wait_until_ready: Any
) -> dict[str, Any] | None:
    """An existing harness of this name brought to READY, or None when there is none (a
    harness still being deleted is waited out first, since a create would conflict)."""
    pause = 0.25
    while True:
        match = next((h for h in client.list_harnesses() if h.get("harnessName") == name), None)
        if match is None:
            return None
        status = match.get("status")
        if status == "DELETING":
            pause = min(_HARNESS_GONE_POLL, pause * 2)
            if time.monotonic() + pause > deadline:
                raise HarnessDeletingError(
                    str(match.get("harnessId")),
                    status,
                    elapsed=0.0,
                    polls=0,
                    detail="is still being deleted and the budget ran out",
                )
            time.sleep(pause)
            continue
        if not status:
            return None
        return dict(
            wait_until_ready(
                client,
                str(match["harnessId"]),
                deadline=deadline,
                poll_interval=min(5.0, max(0.05, (deadline - time.monotonic()) / 12)),
            )
        )


# -- teardown -----------------------------------------------------------------------------


def teardown(
    provider: Any,
    handle_or_spec: Handle | AgentSpec | Mapping[str, Any],
    *,
    store: Store | None = None,
    environment: EnvironmentSpec | None = None,
    execution_role_arn: str | None = None,
) -> None:
    """Archive the Claude agent or delete the AgentCore harness, and forget it in the store.

    Takes the handle ``provision`` returned, or the same spec (with the same ``environment``
    and, for AgentCore, ``execution_role_arn``), in which case the resource is found by its
    content-addressed name. A resource already gone counts as torn down. Claude environments
    are shared by content and outlive their agents; remove old ones with
    :func:`prune_environments`.
    """
    store = store if store is not None else default_store()
    if isinstance(handle_or_spec, AgentSpec):
        located = _locate(provider, handle_or_spec, environment, execution_role_arn)
        if located is None:
            return
        resolved: Handle | None = located
    elif isinstance(handle_or_spec, (ClaudeAgentHandle, HarnessHandle)):
        resolved = handle_or_spec
    else:
        resolved = _from_record(handle_or_spec)
    if resolved is None:
        raise TypeError("teardown needs a handle returned by provision, or its AgentSpec")
    try:
        if isinstance(resolved, ClaudeAgentHandle):
            claude_client(provider).archive_agent(resolved.agent_id)
        else:
            agentcore_client(provider).delete_harness(resolved.harness_id)
    except NotFoundError:
        pass
    _forget(store, resolved)


def _resource_key(handle: Handle) -> str:
    resource = handle.agent_id if isinstance(handle, ClaudeAgentHandle) else handle.harness_arn
    return f"resource:{handle.kind}:{resource}"


def _remember(store: Store, key: str, handle: Handle) -> None:
    """Cache the handle, and index the key by resource so teardown can find every copy
    (one Claude agent serves several environments, each under its own key)."""
    store.put(key, asdict(handle))
    index = _resource_key(handle)
    keys = list(store.get(index) or [])
    if key not in keys:
        store.put(index, [*keys, key])


def _forget(store: Store, handle: Handle) -> None:
    """Remove every cached record of this resource."""
    with store_lock(store):
        index = _resource_key(handle)
        for key in store.get(index) or []:
            store.delete(key)
        store.delete(index)
        store.delete_value(asdict(handle))


def _locate(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | None,
    execution_role_arn: str | None,
) -> Handle | None:
    """The live resource a spec was provisioned as, found by name at the provider."""
    if _is_agentcore(provider):
        body = _harness_body(spec, environment, (execution_role_arn or "").strip())
        name = compose_name(spec.name, digest8(body), AGENTCORE_NAMES)
        client = agentcore_client(provider)
        match = next((h for h in client.list_harnesses() if h.get("harnessName") == name), None)
        if match is None:
            return None
        return HarnessHandle(str(match["arn"]), str(match["harnessId"]), name, name[-8:])
    body = _claude_agent_body(spec, environment or DEFAULT_CLAUDE_ENVIRONMENT)
    name = compose_name(spec.name, digest8(body), CLAUDE_NAMES)
    agents = claude_client(provider).list_agents()
    match = next((a for a in agents if a.get("name") == name and not a.get("archived_at")), None)
    if match is None:
        return None
    return ClaudeAgentHandle(str(match["id"]), "", name, name[-8:])
