"""The Claude environment lifecycle: ensure (build if absent), tag, resolve, prune.

An environment's name is ``<base>_<digest8>``: the base says what it is for, the digest what
it contains. ``ensure_environment`` returns the existing environment of that name or creates
it, so the same spec always lands on the same environment, across processes and machines.
Tags give digests stable names (``resolve("data:prod")``) and protect them from pruning.

Store keys: ``provision:<hash>`` (the handle, per provider endpoint), ``digest:<base>:<d8>``
(the handle, for ``resolve``), ``tag:<base>:<tag>`` (a digest8) and ``tags:<base>`` (the
list of a base's tags, so pruning can see them without a key scan).

A stored handle is confirmed with one ``GET`` of its environment before it is returned. One
archived or deleted elsewhere (``archived_at`` set, or 404) is forgotten the way
:func:`prune_environments` forgets what it archives - its ``provision:`` and ``digest:``
records go, tags stay and :func:`resolve` reports them untracked - and the name is looked up
again: a deleted environment is created anew, an archived name is
:class:`EnvironmentArchivedError` (the API never reuses it). Any other error of that ``GET``
(network, 5xx, auth) propagates and leaves the store as it was: only proof that a record is
stale removes it, and a provider that cannot answer a ``GET`` could not run a session either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from req_managed_agents.errors import (
    ConflictError,
    EnvironmentArchivedError,
    EnvironmentNameConflictError,
    ManagedAgentsError,
    NotFoundError,
    PartialPruneError,
    UnknownTagError,
)
from req_managed_agents.provisioner._identity import (
    CLAUDE_NAMES,
    compose_name,
    digest,
    digest8,
    split_name,
)
from req_managed_agents.provisioner._runtimes import (
    bootstrap_script,
    required_hosts,
    system_prompt_block,
)
from req_managed_agents.provisioner._specs import EnvironmentSpec
from req_managed_agents.provisioner._targets import claude_client, default_store
from req_managed_agents.stores import Store
from req_managed_agents.stores._base import store_lock

__all__ = [
    "Bootstrap",
    "EnvironmentHandle",
    "PruneResult",
    "ensure_environment",
    "is_live",
    "prune_environments",
    "resolve",
    "tag",
    "wire_config",
]

_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}\Z")


@dataclass(frozen=True)
class Bootstrap:
    """How an agent installs the environment's declared runtimes."""

    script: str
    instructions: str


@dataclass(frozen=True)
class EnvironmentHandle:
    """A provisioned environment. ``bootstrap`` is derived from the spec, never stored."""

    environment_id: str
    name: str
    digest: str
    bootstrap: Bootstrap | None = None

    def record(self) -> dict[str, str]:
        """The handle as the store keeps it."""
        return {"environment_id": self.environment_id, "name": self.name, "digest": self.digest}

    @classmethod
    def from_record(cls, record: Any, bootstrap: Bootstrap | None = None) -> EnvironmentHandle:
        if not isinstance(record, Mapping) or not all(
            isinstance(record.get(k), str) for k in ("environment_id", "name", "digest")
        ):
            raise ValueError(f"not an environment record: {record!r}")
        return cls(record["environment_id"], record["name"], record["digest"], bootstrap)


@dataclass(frozen=True)
class PruneResult:
    """Names archived (oldest first) and names kept (newest first, then tagged ones)."""

    archived: tuple[str, ...]
    kept: tuple[str, ...]


def wire_config(spec: EnvironmentSpec) -> dict[str, Any]:
    """The ``config`` sent to the API: the spec's own, plus the runtime download hosts in
    ``networking.allowed_hosts`` when networking is limited (else the install would fail)."""
    config = dict(spec.config)
    networking = config.get("networking")
    if spec.runtimes and isinstance(networking, Mapping) and networking.get("type") == "limited":
        hosts = list(networking.get("allowed_hosts") or [])
        for host in required_hosts(spec.runtimes):
            if host not in hosts:
                hosts.append(host)
        config["networking"] = {**networking, "allowed_hosts": hosts}
    return config


def _bootstrap(spec: EnvironmentSpec) -> Bootstrap | None:
    if not spec.runtimes:
        return None
    return Bootstrap(bootstrap_script(spec.runtimes), system_prompt_block(spec.runtimes))


def is_live(get: Callable[[str], Mapping[str, Any]], resource_id: str) -> bool:
    """Whether a stored Claude agent or environment still serves (one ``GET``): not when it
    is archived or answers 404. Other errors propagate, so a failed check evicts nothing."""
    try:
        resource = get(resource_id)
    except NotFoundError:
        return False
    return not resource.get("archived_at")


def _check_base(base: str) -> None:
    if not base or ":" in base:
        raise ValueError(f"an environment base name must be non-empty without ':', got {base!r}")
    if len(base) > CLAUDE_NAMES.max_length - 9:
        raise ValueError(f"environment base {base!r} is too long to carry a digest")


def ensure_environment(
    provider: Any, spec: EnvironmentSpec, *, name: str, store: Store | None = None
) -> EnvironmentHandle:
    """The Claude environment for ``spec`` under base ``name``, created if absent.

    Looks in the store (a hit costs one ``GET`` confirming the environment is live; a stale
    one is forgotten), then for an active environment of the content-addressed name, and
    only then creates one; a create that answers 409 recovers the environment by name.
    Raises :class:`EnvironmentArchivedError` if that name exists only archived (also when
    the stored environment was archived elsewhere), and
    :class:`EnvironmentNameConflictError` if a 409 names nothing that can be listed.
    """
    if not isinstance(spec, EnvironmentSpec):
        raise TypeError("ensure_environment needs an EnvironmentSpec")
    _check_base(name)
    client = claude_client(provider)
    store = store if store is not None else default_store()
    digest_8 = digest8(spec.identity())
    env_name = compose_name(name, digest_8, CLAUDE_NAMES)
    key = "provision:" + digest(["environment", client.base_url, name, digest_8])
    bootstrap = _bootstrap(spec)
    # The cached path takes no lock: a lookup and one GET must never wait for (or hold up)
    # another process's provision. The lock guards only the create.
    live = _live_record(client, store, key, bootstrap, store.get(key))
    if live is not None:
        return live
    with store_lock(store):
        again = store.get(key)  # another process may have made it while we waited
        live = _live_record(client, store, key, bootstrap, again) if again else None
        if live is not None:
            return live
        found = _find(client, env_name)
        if found is None:
            try:
                found = client.create_environment({"name": env_name, "config": wire_config(spec)})
            except ConflictError:
                found = _find(client, env_name)
                if found is None:
                    raise EnvironmentNameConflictError(env_name) from None
        handle = EnvironmentHandle(str(found["id"]), env_name, digest_8, bootstrap)
        store.put(key, handle.record())
        store.put(f"digest:{name}:{digest_8}", handle.record())
    return handle


def _live_record(
    client: Any, store: Store, key: str, bootstrap: Bootstrap | None, cached: Any
) -> EnvironmentHandle | None:
    """The stored environment if it is still live; a stale or unreadable record is
    forgotten (as a prune forgets) and ``None`` returned."""
    if cached is None:
        return None
    try:
        stored = EnvironmentHandle.from_record(cached, bootstrap)
    except ValueError:
        store.delete(key)  # an unreadable record: rebuild it
        return None
    if is_live(client.get_environment, stored.environment_id):
        return stored
    store.delete(key)  # archived or deleted elsewhere
    store.delete_value(stored.record())
    return None


def _find(client: Any, env_name: str) -> dict[str, Any] | None:
    """The active environment named ``env_name``; archived-only names are an error."""
    matches = [
        e for e in client.list_environments(include_archived=True) if e.get("name") == env_name
    ]
    active = [e for e in matches if not e.get("archived_at")]
    if active:
        return dict(active[0])
    if matches:
        raise EnvironmentArchivedError(env_name)
    return None


def _base_of(env: Mapping[str, Any]) -> str | None:
    parts = split_name(str(env.get("name", "")))
    return parts[0] if parts else None


def tag(base: str, tag: str, handle: EnvironmentHandle | str, *, store: Store) -> None:
    """Point ``base:tag`` at an environment (a handle or its digest8); re-tagging moves it."""
    _check_base(base)
    if not _TAG.match(tag):
        raise ValueError(f"tag {tag!r} must be 1-128 letters, digits, '.', '_', ':' or '-'")
    digest_8 = handle.digest if isinstance(handle, EnvironmentHandle) else handle
    if not re.fullmatch(r"[0-9a-f]{8}", digest_8 or ""):
        raise ValueError(f"{digest_8!r} is not a digest8")
    with store_lock(store):
        if store.get(f"digest:{base}:{digest_8}") is None:
            raise UnknownTagError(f"{base}:{tag} (digest {digest_8} was never ensured here)")
        store.put(f"tag:{base}:{tag}", digest_8)
        tags = list(store.get(f"tags:{base}") or [])
        if tag not in tags:
            store.put(f"tags:{base}", [*tags, tag])


def resolve(ref: str, *, store: Store) -> EnvironmentHandle:
    """The environment a ``"base:tag"`` reference points at; never falls back to another."""
    base, separator, tag_name = ref.partition(":")
    if not separator or not base or not tag_name:
        raise ValueError(f"an environment reference looks like 'base:tag', got {ref!r}")
    digest_8 = store.get(f"tag:{base}:{tag_name}")
    if not isinstance(digest_8, str):
        raise UnknownTagError(ref)
    record = store.get(f"digest:{base}:{digest_8}")
    if record is None:
        raise UnknownTagError(f"{ref} (its digest {digest_8} is no longer tracked)")
    return EnvironmentHandle.from_record(record)


def prune_environments(
    provider: Any, base: str, *, keep: int, store: Store | None = None
) -> PruneResult:
    """Archive old versions of ``base``: keep the newest ``keep`` and every tagged one.

    Only names that are exactly ``<base>_<8 hex>`` count, so base ``data`` never touches
    ``data_analysis_...``. Versions are archived oldest first; a failure stops the prune with
    :class:`PartialPruneError` saying what was archived before it.
    """
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError("keep must be a non-negative integer")
    _check_base(base)
    client = claude_client(provider)
    store = store if store is not None else default_store()
    tagged = {store.get(f"tag:{base}:{t}") for t in store.get(f"tags:{base}") or []}
    versions = [
        env
        for env in client.list_environments()
        if not env.get("archived_at") and _base_of(env) == base
    ]
    versions.sort(key=lambda env: (str(env.get("created_at", "")), str(env["name"])), reverse=True)
    kept = [env["name"] for env in versions[:keep]]
    doomed = []
    for env in versions[keep:]:
        if str(env["name"])[-8:] in tagged:
            kept.append(env["name"])
        else:
            doomed.append(env)
    archived: list[str] = []
    for env in reversed(doomed):
        try:
            client.archive_environment(env["id"])
        except ManagedAgentsError as exc:
            raise PartialPruneError(archived, env["name"], exc) from exc
        archived.append(env["name"])
        digest_8 = str(env["name"])[-8:]
        record = store.get(f"digest:{base}:{digest_8}")
        store.delete(f"digest:{base}:{digest_8}")
        if record is not None:
            store.delete_value(record)
    return PruneResult(tuple(archived), tuple(kept))
