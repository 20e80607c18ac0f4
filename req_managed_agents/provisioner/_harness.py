"""Provisioning for AgentCore: a harness named by its content, brought to ``READY`` within
the caller's budget and deleted again if it never gets there."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

from req_managed_agents.errors import (
    ConfigurationError,
    ConflictError,
    HarnessDeletingError,
    NotFoundError,
    ProvisioningError,
)
from req_managed_agents.model._progress import Progress, ProgressCallback
from req_managed_agents.providers.agentcore._harness import poll_interval_for
from req_managed_agents.provisioner._environments import EnvironmentHandle
from req_managed_agents.provisioner._handles import HarnessHandle, forget, from_record, remember
from req_managed_agents.provisioner._identity import AGENTCORE_NAMES, compose_name, digest, digest8
from req_managed_agents.provisioner._runtimes import system_prompt_block
from req_managed_agents.provisioner._specs import AgentSpec, EnvironmentSpec
from req_managed_agents.provisioner._targets import agentcore_client
from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock
from req_managed_agents.transport._backoff import RetryPolicy, pause

__all__ = ["DEFAULT_HARNESS_TIMEOUT", "harness_body", "provision_harness"]

DEFAULT_HARNESS_TIMEOUT = 365.0
# A harness of the same name still being deleted is looked at again after 0.5 s, doubling
# to 2 s, until it is gone or the budget runs out.
HARNESS_GONE_POLL = RetryPolicy.poll(2.0, first=0.5)


def harness_body(
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


def provision_harness(
    provider: Any,
    spec: AgentSpec,
    environment: EnvironmentSpec | EnvironmentHandle | None,
    store: Store,
    execution_role_arn: str | None,
    timeout: float,
    endpoint_name: str,
    progress: ProgressCallback | None = None,
) -> HarnessHandle:
    from req_managed_agents.providers.agentcore import create_harness_and_wait, wait_until_ready
    from req_managed_agents.providers.agentcore.api._endpoints import check_endpoint_name

    check_endpoint_name(endpoint_name)

    if not execution_role_arn or not execution_role_arn.strip():
        raise ConfigurationError("provisioning an AgentCore harness needs execution_role_arn")
    if isinstance(environment, EnvironmentHandle):
        raise TypeError("AgentCore harnesses take an EnvironmentSpec, not a Claude environment")
    client = agentcore_client(provider)
    deadline = time.monotonic() + timeout
    body = harness_body(spec, environment, execution_role_arn.strip())
    harness_digest = digest8(body)
    name = compose_name(spec.name, harness_digest, AGENTCORE_NAMES)
    scope = ["agentcore", client.control_url, name]
    if endpoint_name != "DEFAULT":  # keys made before endpoints were waited on stay valid
        scope.append(endpoint_name)
    key = "provision:" + digest(scope)
    with store_lock(store):
        cached = from_record(store.get(key))
        if isinstance(cached, HarnessHandle) and cached.endpoint_name == endpoint_name:
            status = _harness_status(client, cached.harness_id, deadline)
            if status == "READY":
                return cached
            if status in (None, "DELETING"):
                forget(store, cached)  # deleted elsewhere: a fresh one is made below
        wait = functools.partial(wait_until_ready, endpoint_name=endpoint_name, progress=progress)
        harness = _adopt_harness(client, name, deadline, wait, progress)
        if harness is None:
            request = {"harnessName": name, **body}
            try:
                harness = create_harness_and_wait(
                    client,
                    request,
                    timeout=max(0.001, deadline - time.monotonic()),
                    endpoint_name=endpoint_name,
                    progress=progress,
                )
            except ConflictError:
                harness = _adopt_harness(client, name, deadline, wait, progress)
                if harness is None:
                    raise ProvisioningError(
                        f"harness name {name!r} conflicts but is not listed"
                    ) from None
        handle = HarnessHandle(
            str(harness["arn"]),
            str(harness["harnessId"]),
            name,
            harness_digest,
            endpoint_name=endpoint_name,
        )
        remember(store, key, handle)
    return handle


def _harness_status(client: Any, harness_id: str, deadline: float) -> str | None:
    """A stored harness's status from one ``GetHarness``; None when it is gone (404)."""
    try:
        harness = client.get_harness(harness_id, deadline=deadline)
    except NotFoundError:
        return None
    return str(harness.get("status") or "")


def _adopt_harness(
    client: Any,
    name: str,
    deadline: float,
    wait_until_ready: Any,
    progress: ProgressCallback | None,
) -> dict[str, Any] | None:
    """An existing harness of this name brought to READY, or None when there is none (a
    harness still being deleted is waited out first, since a create would conflict)."""
    polls = 0
    started = time.monotonic()
    while True:
        match = next((h for h in client.list_harnesses() if h.get("harnessName") == name), None)
        if match is None:
            return None
        status = match.get("status")
        if status == "DELETING":
            seconds = HARNESS_GONE_POLL.delay(polls)
            polls += 1
            if time.monotonic() + seconds > deadline:
                raise HarnessDeletingError(
                    str(match.get("harnessId")),
                    status,
                    elapsed=time.monotonic() - started,
                    polls=polls,
                    detail="is still being deleted and the budget ran out",
                )
            if progress is not None:
                what = f"waiting for the harness {name} being deleted to be gone"
                progress(Progress(what, time.monotonic() - started, polls, unit="poll"))
            pause(seconds)
            continue
        if not status:
            return None
        return dict(
            wait_until_ready(
                client,
                str(match["harnessId"]),
                deadline=deadline,
                poll_interval=poll_interval_for(deadline - time.monotonic()),
            )
        )
