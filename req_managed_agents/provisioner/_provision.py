"""``provision`` and ``teardown``: idempotent, content-addressed agents for every provider.

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

Steps 2 and 3 hold the store's lock (and look in the store again once they have it), so
two processes provisioning the same spec at once end with one resource; step 1 takes no
lock, so a lookup never waits for another process's provision, and a tool call (whose
ledger shares the store) never waits for either. Claude: an agent plus an
environment (content-addressed too, shared by every agent with the same environment spec, so
teardown leaves it to :func:`prune_environments`). AgentCore: a harness, waited on until
``READY`` within ``timeout`` and deleted again if it never gets there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.errors import NotFoundError
from req_managed_agents.model._progress import ProgressCallback
from req_managed_agents.provisioner._claude import (
    DEFAULT_CLAUDE_ENVIRONMENT,
    bedrock_agent_body,
    claude_agent_body,
    provision_claude,
    provision_claude_bedrock,
)
from req_managed_agents.provisioner._environments import EnvironmentHandle
from req_managed_agents.provisioner._gemini import (
    find_gemini_agent,
    gemini_agent_id,
    gemini_client,
    provision_gemini,
)
from req_managed_agents.provisioner._handles import (
    ClaudeAgentHandle,
    GeminiAgentHandle,
    Handle,
    HarnessHandle,
    OpenAIAgentHandle,
    forget,
    from_record,
)
from req_managed_agents.provisioner._harness import (
    DEFAULT_HARNESS_TIMEOUT,
    harness_body,
    provision_harness,
)
from req_managed_agents.provisioner._identity import (
    AGENTCORE_NAMES,
    CLAUDE_NAMES,
    OPENAI_NAMES,
    compose_name,
    digest8,
)
from req_managed_agents.provisioner._openai import (
    find_openai_agent,
    openai_agent_body,
    openai_client,
    provision_openai,
)
from req_managed_agents.provisioner._specs import AgentSpec, EnvironmentSpec
from req_managed_agents.provisioner._targets import agentcore_client, claude_client, default_store
from req_managed_agents.stores import Store

__all__ = [
    "ClaudeAgentHandle",
    "GeminiAgentHandle",
    "HarnessHandle",
    "OpenAIAgentHandle",
    "locate",
    "provision",
    "teardown",
]


def provision(
    provider: Any,
    spec: AgentSpec,
    *,
    environment: EnvironmentSpec | EnvironmentHandle | str | None = None,
    store: Store | None = None,
    execution_role_arn: str | None = None,
    timeout: float = DEFAULT_HARNESS_TIMEOUT,
    endpoint_name: str = "DEFAULT",
    progress: ProgressCallback | None = None,
) -> Handle:
    """The provider resources for ``spec``, reused when they exist, created when not.

    Claude returns a :class:`ClaudeAgentHandle`; pass it as ``agent=`` to the drivers.
    OpenAI returns an :class:`OpenAIAgentHandle` (``agent=``); its sessions choose their
    environment, so ``environment`` is refused there. Gemini returns a
    :class:`GeminiAgentHandle` (``agent=``) whose id is the content address, likewise
    without an environment.
    On Amazon Bedrock (``ClaudeManagedAgentsBedrock``) ``environment`` is a sandbox ARN and
    ``execution_role_arn`` is required. AgentCore returns a :class:`HarnessHandle`
    (``harness=``) and needs
    ``execution_role_arn``; ``timeout`` bounds the whole harness provision, which returns
    once the harness and its endpoint ``endpoint_name`` (which sessions started from the
    handle invoke) are both ``READY``. ``progress`` hears where that wait stands at each
    poll (a :class:`~req_managed_agents.model.Progress`, on this thread; what it raises ends the
    wait, and a harness this call created is deleted again). Claude and OpenAI resources
    take no wait to report.
    """
    if not isinstance(spec, AgentSpec):
        raise TypeError("provision needs an AgentSpec")
    store = store if store is not None else default_store()
    from req_managed_agents.providers.claude import ClaudeManagedAgentsBedrock

    if is_openai(provider):
        if environment is not None:
            raise TypeError(
                "an OpenAI agent has no environment: name it per session (environment=)"
            )
        return provision_openai(provider, spec, store)
    if is_gemini(provider):
        if environment is not None:
            raise TypeError(
                "a Gemini agent is provisioned without an environment: name it per "
                "conversation (environment=)"
            )
        return provision_gemini(provider, spec, store)
    if isinstance(provider, ClaudeManagedAgentsBedrock):
        return provision_claude_bedrock(provider, spec, environment, store, execution_role_arn)
    if isinstance(environment, str):
        raise TypeError(
            "environment= is a sandbox ARN only on Amazon Bedrock; give an EnvironmentSpec "
            "or an environment handle"
        )
    if is_agentcore(provider):
        return provision_harness(
            provider,
            spec,
            environment,
            store,
            execution_role_arn,
            timeout,
            endpoint_name,
            progress,
        )
    return provision_claude(provider, spec, environment, store)


def is_openai(provider: Any) -> bool:
    try:
        openai_client(provider)
    except TypeError:
        return False
    return True


def is_gemini(provider: Any) -> bool:
    try:
        gemini_client(provider)
    except TypeError:
        return False
    return True


def is_agentcore(provider: Any) -> bool:
    try:
        agentcore_client(provider)
    except TypeError:
        return False
    return True


# -- teardown -----------------------------------------------------------------------------


def teardown(
    provider: Any,
    handle_or_spec: Handle | AgentSpec | Mapping[str, Any],
    *,
    store: Store | None = None,
    environment: EnvironmentSpec | None = None,
    execution_role_arn: str | None = None,
) -> None:
    """Archive the Claude agent, or delete the OpenAI or Gemini agent or the AgentCore
    harness, and forget it in the store.

    Takes the handle ``provision`` returned, or the same spec (with the same ``environment``
    and, for AgentCore, ``execution_role_arn``), in which case the resource is found by its
    content-addressed name. A resource already gone counts as torn down. Claude environments
    are shared by content and outlive their agents; remove old ones with
    :func:`prune_environments`.
    """
    store = store if store is not None else default_store()
    if isinstance(handle_or_spec, AgentSpec):
        located = locate(provider, handle_or_spec, environment, execution_role_arn)
        if located is None:
            return
        resolved: Handle | None = located
    elif isinstance(
        handle_or_spec, (ClaudeAgentHandle, HarnessHandle, OpenAIAgentHandle, GeminiAgentHandle)
    ):
        resolved = handle_or_spec
    else:
        resolved = from_record(handle_or_spec)
    if resolved is None:
        raise TypeError("teardown needs a handle returned by provision, or its AgentSpec")
    try:
        if isinstance(resolved, ClaudeAgentHandle):
            claude_client(provider).archive_agent(resolved.agent_id)
        elif isinstance(resolved, OpenAIAgentHandle):
            openai_client(provider).delete_agent(resolved.agent_id)
        elif isinstance(resolved, GeminiAgentHandle):
            gemini_client(provider).delete_agent(resolved.agent_id)
        else:
            agentcore_client(provider).delete_harness(resolved.harness_id)
    except NotFoundError:
        pass
    forget(store, resolved)


def locate(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | None,
    execution_role_arn: str | None,
) -> Handle | None:
    """The live resource a spec was provisioned as, found by name at the provider."""
    if is_openai(provider):
        body = openai_agent_body(spec)
        name = compose_name(spec.name, digest8(body), OPENAI_NAMES)
        agent = find_openai_agent(openai_client(provider), name)
        return None if agent is None else OpenAIAgentHandle(str(agent["id"]), name, name[-8:])
    if is_gemini(provider):
        agent_id, agent_digest = gemini_agent_id(spec)
        if find_gemini_agent(gemini_client(provider), agent_id) is None:
            return None
        return GeminiAgentHandle(agent_id, agent_id, agent_digest)
    if is_agentcore(provider):
        body = harness_body(spec, environment, (execution_role_arn or "").strip())
        name = compose_name(spec.name, digest8(body), AGENTCORE_NAMES)
        client = agentcore_client(provider)
        match = next((h for h in client.list_harnesses() if h.get("harnessName") == name), None)
        if match is None:
            return None
        return HarnessHandle(str(match["arn"]), str(match["harnessId"]), name, name[-8:])
    from req_managed_agents.providers.claude import ClaudeManagedAgentsBedrock

    kind = "claude"
    if isinstance(provider, ClaudeManagedAgentsBedrock):
        kind, body = "claude-bedrock", bedrock_agent_body(spec, execution_role_arn)
    else:
        body = claude_agent_body(spec, environment or DEFAULT_CLAUDE_ENVIRONMENT)
    name = compose_name(spec.name, digest8(body), CLAUDE_NAMES)
    agents = claude_client(provider).list_agents()
    match = next((a for a in agents if a.get("name") == name and not a.get("archived_at")), None)
    if match is None:
        return None
    return ClaudeAgentHandle(str(match["id"]), "", name, name[-8:], kind=kind)
