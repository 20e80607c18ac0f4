"""The Gemini control plane over loopback against the emulator: agents, environments and
interactions as the API serves them, errors mapped with their status, string code and
request id, and creates refused before they are sent when they carry an undeclared field."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from req_managed_agents.errors import AuthenticationError, NotFoundError
from req_managed_agents.providers import GeminiManagedAgents
from req_managed_agents.testing.gemini import GeminiEmulator


@pytest.fixture
def emulator() -> Iterator[GeminiEmulator]:
    with GeminiEmulator(["Hello."], ping_interval=0.1) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: GeminiEmulator) -> Iterator[GeminiManagedAgents]:
    with GeminiManagedAgents(emulator.api_key, base_url=emulator.base_url, timeout=5) as provider:
        yield provider


def test_agents_and_environments_are_created_listed_and_deleted(
    provider: GeminiManagedAgents,
) -> None:
    client = provider.client
    agent = client.create_agent(id="helper", description="Helps.")
    assert client.get_agent("helper")["id"] == agent["id"] == "helper"
    assert [a["id"] for a in client.list_agents()] == ["helper"]
    environment = client.create_environment(mode="on_demand")
    assert client.get_environment(environment["id"])["id"] == environment["id"]
    assert [e["id"] for e in client.list_environments()] == [environment["id"]]
    assert client.delete_agent("helper") == {}
    assert client.delete_environment(environment["id"]) == {}
    assert client.list_agents() == []
    assert client.list_environments() == []


def test_an_interaction_is_created_read_and_deleted(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    client = provider.client
    made = client.create_interaction(agent=emulator.add_agent(), input="Hi.")
    assert made["status"] == "completed"
    assert client.get_interaction(made["id"])["status"] == "completed"
    assert client.delete_interaction(made["id"]) == {}
    with pytest.raises(NotFoundError) as missing:
        client.get_interaction(made["id"])
    assert missing.value.status_code == 404
    assert missing.value.error_type == "not_found"
    assert missing.value.request_id
    assert all(r.path.startswith("/v1/") for r in emulator.requests)
    assert all(r.headers.get("api-revision") == "2026-05-20" for r in emulator.requests)


def test_a_wrong_key_is_an_authentication_error_that_never_quotes_it(
    emulator: GeminiEmulator,
) -> None:
    provider = GeminiManagedAgents("AIza-wrong", base_url=emulator.base_url, max_retries=0)
    with provider, pytest.raises(AuthenticationError) as refused:
        provider.client.list_agents()
    assert "AIza-wrong" not in str(refused.value)


def test_a_create_with_a_field_the_request_types_do_not_declare_is_never_sent(
    emulator: GeminiEmulator, provider: GeminiManagedAgents
) -> None:
    with pytest.raises(ValueError, match="idempotency_key"):
        provider.client.create_interaction(agent="a", input="x", idempotency_key="k")
    assert emulator.requests == []


def test_the_key_is_read_from_google_api_key_before_gemini_api_key(
    emulator: GeminiEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", f" {emulator.api_key}\n")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-other")
    with GeminiManagedAgents(base_url=emulator.base_url, api_version="v1beta") as provider:
        assert provider.client.list_agents() == []
    assert emulator.requests[-1].path.startswith("/v1beta/")
