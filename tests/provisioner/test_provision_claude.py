"""Provisioning against the Claude emulator: idempotence, recovery, the environment lifecycle."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import ClaudeManagedAgents, Tools, run_to_completion
from req_managed_agents.errors import (
    EnvironmentArchivedError,
    PartialPruneError,
    ProvisioningError,
    ServerError,
    UnknownTagError,
)
from req_managed_agents.provisioner import (
    AgentSpec,
    EnvironmentSpec,
    FileStore,
    MemoryStore,
    Runtime,
    ensure_environment,
    provision,
    prune_environments,
    resolve,
    tag,
    teardown,
)
from req_managed_agents.testing import ClaudeEmulator, Turn
from tests.support.api import Api, ok

SPEC = AgentSpec(name="support", system_prompt="Be brief.", model="claude-sonnet-4-6")


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator([Turn(text="hello")], unique_names=True, ping_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: ClaudeEmulator) -> Iterator[ClaudeManagedAgents]:
    with emulator.provider(timeout=5) as p:
        yield p


def creates(emulator: ClaudeEmulator, path: str) -> int:
    return sum(1 for r in emulator.requests if r.method == "POST" and r.path == path)


def calls_since(emulator: ClaudeEmulator, start: int) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in emulator.requests[start:]]


def confirmations(handle: Any) -> list[tuple[str, str]]:
    """The requests a provision answered from the store makes: one GET per resource."""
    return [
        ("GET", f"/v1/environments/{handle.environment_id}"),
        ("GET", f"/v1/agents/{handle.agent_id}"),
    ]


def test_repeat_provision_confirms_each_stored_resource_with_one_get(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    first = provision(provider, SPEC, store=store)
    requests_after_first = len(emulator.requests)
    second = provision(provider, SPEC, store=store)
    assert second == first
    assert calls_since(emulator, requests_after_first) == confirmations(first), "no list/create"
    assert creates(emulator, "/v1/agents") == 1
    assert creates(emulator, "/v1/environments") == 1
    assert first.name.startswith("support_")
    assert len(first.name) == len("support_") + 8


def test_a_lost_store_finds_the_existing_resources_by_name(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    first = provision(provider, SPEC, store=MemoryStore())
    again = provision(provider, SPEC, store=MemoryStore())
    assert again == first
    assert creates(emulator, "/v1/agents") == 1


def test_changed_content_is_a_new_agent_and_the_handle_drives_a_session(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    first = provision(provider, SPEC, store=store)
    changed = provision(
        provider,
        AgentSpec(name="support", system_prompt="Be thorough.", model="claude-sonnet-4-6"),
        store=store,
    )
    assert changed.agent_id != first.agent_id
    assert changed.environment_id == first.environment_id, "same environment content is shared"
    result = run_to_completion(provider, "hi", handler=Tools(), agent=changed, timeout=10)
    assert result.text == "hello"


def test_agent_body_carries_tools_and_a_bare_model_id(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    tools = Tools()

    @tools.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    spec = AgentSpec(
        name="tools", system_prompt="x", model="anthropic:claude-sonnet-4-6", tools=tools
    )
    provision(provider, spec, store=MemoryStore())
    body = next(r.body for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents")
    assert body["model"] == "claude-sonnet-4-6"
    assert body["tools"] == [{"type": "custom", **tools.schemas()[0]}]


def test_teardown_archives_the_agent_and_forgets_it(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    handle = provision(provider, SPEC, store=store)
    teardown(provider, handle, store=store)
    assert provider.client.get_agent(handle.agent_id)["archived_at"]
    with pytest.raises(ProvisioningError, match="taken by an archived"):
        provision(provider, SPEC, store=store)  # this emulator keeps archived names taken


def test_provision_after_teardown_creates_a_fresh_agent_where_names_may_repeat() -> None:
    with (
        ClaudeEmulator([Turn(text="hi")]) as emulator,
        emulator.provider() as provider,
    ):
        store = MemoryStore()
        first = provision(provider, SPEC, store=store)
        teardown(provider, first, store=store)
        second = provision(provider, SPEC, store=store)
    assert second.agent_id != first.agent_id
    assert second.name == first.name


def test_teardown_by_spec_finds_the_agent_by_name(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    handle = provision(provider, SPEC, store=MemoryStore())
    teardown(provider, SPEC, store=MemoryStore())
    assert provider.client.get_agent(handle.agent_id)["archived_at"]


def test_two_processes_provisioning_at_once_make_one_resource(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    store_path = tmp_path / "store.json"
    script = textwrap.dedent(
        f"""
        import json, sys
        from req_managed_agents import ClaudeManagedAgents
        from req_managed_agents.provisioner import AgentSpec, FileStore, provision
        provider = ClaudeManagedAgents({emulator.api_key!r}, base_url={emulator.base_url!r})
        spec = AgentSpec(name="support", system_prompt="Be brief.", model="claude-sonnet-4-6")
        handle = provision(provider, spec, store=FileStore({str(store_path)!r}))
        print(json.dumps([handle.agent_id, handle.environment_id]))
        """
    )
    children = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert all(child.returncode == 0 for child in children)
    assert len({output.strip() for output in outputs}) == 1, outputs
    assert creates(emulator, "/v1/agents") == 1
    assert creates(emulator, "/v1/environments") == 1
    stored = json.loads(store_path.read_text())
    assert sum(1 for key in stored if key.startswith("provision:")) == 2


def test_ensure_environment_merges_runtime_hosts_and_returns_the_bootstrap(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    spec = EnvironmentSpec(
        {"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["api.example.com"]}},
        runtimes=[Runtime("python", "3.12.4")],
    )
    handle = ensure_environment(provider, spec, name="data", store=MemoryStore())
    body = next(
        r.body for r in emulator.requests if r.method == "POST" and r.path == "/v1/environments"
    )
    hosts = body["config"]["networking"]["allowed_hosts"]
    assert hosts[0] == "api.example.com"
    assert "mise.jdx.dev" in hosts
    assert "runtimes" not in body["config"]
    assert handle.bootstrap is not None
    assert "mise use --global 'python@3.12.4'" in handle.bootstrap.script
    assert handle.name == f"data_{handle.digest}"


def test_an_archived_environment_name_is_a_named_error(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    spec = EnvironmentSpec({"type": "cloud"})
    handle = ensure_environment(provider, spec, name="old", store=MemoryStore())
    provider.client.archive_environment(handle.environment_id)
    with pytest.raises(EnvironmentArchivedError) as caught:
        ensure_environment(provider, spec, name="old", store=MemoryStore())
    assert caught.value.name == handle.name


def versions(provider: ClaudeManagedAgents, base: str, count: int, store: Any) -> list[Any]:
    handles = []
    for i in range(count):
        spec = EnvironmentSpec({"type": "cloud", "packages": {"pip": [f"pkg{i}"]}})
        handles.append(ensure_environment(provider, spec, name=base, store=store))
        time.sleep(0.002)  # distinct created_at
    return handles


def test_tag_resolve_and_prune_keep_the_newest_and_the_tagged(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    data = versions(provider, "data", 5, store)
    other = versions(provider, "data_analysis", 2, store)
    tag("data", "prod", data[0], store=store)
    assert resolve("data:prod", store=store).environment_id == data[0].environment_id
    result = prune_environments(provider, "data", keep=2, store=store)
    assert result.archived == (data[1].name, data[2].name)
    assert set(result.kept) == {data[4].name, data[3].name, data[0].name}
    live = {e["name"] for e in provider.client.list_environments()}
    assert {h.name for h in other} <= live, "another base is never touched"
    assert resolve("data:prod", store=store).name == data[0].name


def test_resolve_never_falls_back(provider: ClaudeManagedAgents, emulator: ClaudeEmulator) -> None:
    store = MemoryStore()
    versions(provider, "web", 1, store)
    with pytest.raises(UnknownTagError):
        resolve("web:prod", store=store)
    with pytest.raises(ValueError, match="base:tag"):
        resolve("web", store=store)


def test_prune_needs_keep_and_reports_partial_failure(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    handles = versions(provider, "batch", 3, store)
    with pytest.raises(TypeError):
        prune_environments(provider, "batch", store=store)  # type: ignore[call-arg]
    emulator.fail_requests(
        "POST", rf"/v1/environments/{handles[1].environment_id}/archive", 400, times=1
    )
    with pytest.raises(PartialPruneError) as caught:
        prune_environments(provider, "batch", keep=0, store=store)
    assert caught.value.archived == (handles[0].name,)
    assert caught.value.failed_name == handles[1].name


def test_file_store_survives_between_runs(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "handles.json"
    first = provision(provider, SPEC, store=FileStore(path))
    requests_before = len(emulator.requests)
    second = provision(provider, SPEC, store=FileStore(path))
    assert second == first
    assert calls_since(emulator, requests_before) == confirmations(first)


def test_a_409_on_create_recovers_the_resource_by_name(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    from req_managed_agents.provisioner._claude import (
        DEFAULT_CLAUDE_ENVIRONMENT,
        claude_agent_body,
    )
    from req_managed_agents.provisioner._identity import CLAUDE_NAMES, compose_name, digest8

    name = compose_name(
        SPEC.name, digest8(claude_agent_body(SPEC, DEFAULT_CLAUDE_ENVIRONMENT)), CLAUDE_NAMES
    )
    rival: list[str] = []
    # Another client creates the same agent between our lookup and our create.
    emulator.before_requests(
        "POST", "/v1/agents", lambda: rival.append(emulator.add_agent(name=name))
    )
    handle = provision(provider, SPEC, store=MemoryStore())
    assert handle.agent_id == rival[0]
    conflicts = [r for r in emulator.requests if r.method == "POST" and r.path == "/v1/agents"]
    assert len(conflicts) == 1, "one create, answered 409, then recovered by listing"


def test_a_409_on_environment_create_recovers_by_name(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    spec = EnvironmentSpec({"type": "cloud", "networking": {"type": "unrestricted"}})
    from req_managed_agents.provisioner import digest8

    name = f"shared_{digest8(spec.identity())}"
    rival: list[str] = []
    emulator.before_requests(
        "POST", "/v1/environments", lambda: rival.append(emulator.add_environment(name=name))
    )
    handle = ensure_environment(provider, spec, name="shared", store=MemoryStore())
    assert handle.environment_id == rival[0]


def test_teardown_by_spec_also_forgets_the_cached_handle() -> None:
    with (
        ClaudeEmulator([Turn(text="hi")]) as emulator,
        emulator.provider() as provider,
    ):
        store = MemoryStore()
        first = provision(provider, SPEC, store=store)
        teardown(provider, SPEC, store=store)
        second = provision(provider, SPEC, store=store)
        assert second.agent_id != first.agent_id, "not the archived agent from the cache"
        result = run_to_completion(provider, "hi", handler=Tools(), agent=second, timeout=10)
        assert result.text == "hi"


# --- a store that went stale behind provisioning's back ----------------------------------------


def test_a_stored_environment_is_confirmed_with_one_get(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    spec = EnvironmentSpec({"type": "cloud"})
    environment = ensure_environment(provider, spec, name="data", store=store)
    agent = provision(provider, SPEC, environment=environment, store=store)
    start = len(emulator.requests)
    assert ensure_environment(provider, spec, name="data", store=store) == environment
    assert calls_since(emulator, start) == [
        ("GET", f"/v1/environments/{environment.environment_id}")
    ]
    start = len(emulator.requests)
    assert provision(provider, SPEC, environment=environment, store=store) == agent
    assert calls_since(emulator, start) == [("GET", f"/v1/agents/{agent.agent_id}")]


def test_an_agent_archived_behind_the_stores_back_is_created_anew(tmp_path: Path) -> None:
    path = tmp_path / "store.json"
    with (
        ClaudeEmulator([Turn(text="fresh")]) as emulator,
        emulator.provider(timeout=5) as provider,
    ):
        first = provision(provider, SPEC, store=FileStore(path))
        provider.client.archive_agent(first.agent_id)
        second = provision(provider, SPEC, store=FileStore(path))
        assert second.agent_id != first.agent_id
        assert (second.name, second.environment_id) == (first.name, first.environment_id)
        assert creates(emulator, "/v1/agents") == 2
        assert first.agent_id not in path.read_text(), "every record of the old agent is gone"
        start = len(emulator.requests)
        assert provision(provider, SPEC, store=FileStore(path)) == second, "the store holds it"
        assert calls_since(emulator, start) == confirmations(second)
        result = run_to_completion(provider, "hi", handler=Tools(), agent=second, timeout=10)
    assert result.text == "fresh"


def test_an_archived_agent_whose_name_is_kept_is_a_named_error_not_the_stale_handle(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator, tmp_path: Path
) -> None:
    path = tmp_path / "store.json"
    first = provision(provider, SPEC, store=FileStore(path))
    provider.client.archive_agent(first.agent_id)
    with pytest.raises(ProvisioningError, match="taken by an archived"):
        provision(provider, SPEC, store=FileStore(path))  # this emulator keeps archived names
    assert first.agent_id not in path.read_text()


def test_an_environment_deleted_behind_the_stores_back_is_created_anew(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    first = provision(provider, SPEC, store=store)
    with Api(emulator) as api:
        ok(api.delete(f"/v1/environments/{first.environment_id}"))
    second = provision(provider, SPEC, store=store)
    assert second.environment_id != first.environment_id
    assert second.agent_id == first.agent_id, "the live agent is found by name and kept"
    assert creates(emulator, "/v1/environments") == 2
    assert creates(emulator, "/v1/agents") == 1
    start = len(emulator.requests)
    assert provision(provider, SPEC, store=store) == second, "the store holds the new one"
    assert calls_since(emulator, start) == confirmations(second)
    result = run_to_completion(provider, "hi", handler=Tools(), agent=second, timeout=10)
    assert result.text == "hello"


def test_an_environment_archived_behind_the_stores_back_is_a_named_error(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    spec = EnvironmentSpec({"type": "cloud"})
    handle = ensure_environment(provider, spec, name="data", store=store)
    tag("data", "prod", handle, store=store)
    provider.client.archive_environment(handle.environment_id)
    for _ in range(2):  # forgotten on the first call, so the second looks it up again
        with pytest.raises(EnvironmentArchivedError, match="exists but is archived") as caught:
            ensure_environment(provider, spec, name="data", store=store)
        assert caught.value.name == handle.name
    with pytest.raises(UnknownTagError, match="no longer tracked"):
        resolve("data:prod", store=store)


def test_provision_with_an_archived_environment_names_it(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    store = MemoryStore()
    first = provision(provider, SPEC, store=store)
    provider.client.archive_environment(first.environment_id)
    with pytest.raises(EnvironmentArchivedError, match=r"support_env_[0-9a-f]{8}"):
        provision(provider, SPEC, store=store)


@pytest.mark.parametrize("resource", ["environments", "agents"])
def test_a_failing_confirmation_propagates_and_keeps_the_store(
    emulator: ClaudeEmulator, tmp_path: Path, resource: str
) -> None:
    path = tmp_path / "store.json"
    with emulator.provider(timeout=5, max_retries=0) as provider:
        first = provision(provider, SPEC, store=FileStore(path))
        stored = path.read_bytes()
        resource_id = first.environment_id if resource == "environments" else first.agent_id
        emulator.fail_requests("GET", rf"/v1/{resource}/{resource_id}", 500)
        start = len(emulator.requests)
        with pytest.raises(ServerError):
            provision(provider, SPEC, store=FileStore(path))
        assert path.read_bytes() == stored, "an error that proves nothing evicts nothing"
        assert all(method == "GET" for method, _ in calls_since(emulator, start))
        assert provision(provider, SPEC, store=FileStore(path)) == first
    assert creates(emulator, "/v1/agents") == 1
    assert creates(emulator, "/v1/environments") == 1
