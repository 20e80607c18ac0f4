"""Provisioning AgentCore harnesses against the emulator: idempotent, recovering, rolled back."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from req_managed_agents import BedrockAgentCore, ConfigurationError, Tools, run_to_completion
from req_managed_agents.errors import HarnessFailedError, HarnessReadyTimeoutError, ServerError
from req_managed_agents.provisioner import (
    AgentSpec,
    EnvironmentSpec,
    HarnessHandle,
    MemoryStore,
    provision,
    teardown,
)
from req_managed_agents.provisioner._harness import HARNESS_ENVIRONMENT_MEMBERS, harness_body
from req_managed_agents.provisioner._identity import AGENTCORE_NAMES, compose_name, digest8
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn

ROLE = "arn:aws:iam::123456789012:role/HarnessRole"
SPEC = AgentSpec(name="conformance-agent", system_prompt="Be brief.", model="us.anthropic.claude-x")
ENVIRONMENT = EnvironmentSpec(
    {
        "environment": {
            "agentCoreRuntimeEnvironment": {
                "filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}]
            }
        }
    }
)


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator([ConverseTurn(text="ready")]) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: AgentCoreEmulator) -> Iterator[BedrockAgentCore]:
    with emulator.provider(timeout=5) as provider:
        yield provider


def creates(emulator: AgentCoreEmulator) -> int:
    return sum(1 for r in emulator.requests if r.method == "POST" and r.path == "/harnesses")


def calls_since(emulator: AgentCoreEmulator, start: int) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in emulator.requests[start:]]


def test_provision_waits_for_ready_and_repeats_with_one_get(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    emulator.harness_statuses(["CREATING", "CREATING", "READY"])
    store = MemoryStore()
    handle = provision(
        provider, SPEC, environment=ENVIRONMENT, store=store, execution_role_arn=ROLE, timeout=10
    )
    assert isinstance(handle, HarnessHandle)
    assert handle.name.startswith("conformance_agent_")
    assert len(handle.name) <= 40
    requests = len(emulator.requests)
    assert (
        provision(provider, SPEC, environment=ENVIRONMENT, store=store, execution_role_arn=ROLE)
        == handle
    )
    assert calls_since(emulator, requests) == [("GET", f"/harnesses/{handle.harness_id}")]
    body = next(r.body for r in emulator.requests if r.method == "POST" and r.path == "/harnesses")
    assert body["environment"] == ENVIRONMENT.config["environment"], "passed verbatim"
    assert body["executionRoleArn"] == ROLE
    result = run_to_completion(provider, "hi", handler=Tools(), harness=handle, timeout=10)
    assert result.text == "ready"


def test_a_lost_store_adopts_the_existing_harness(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    first = provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE)
    second = provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE)
    assert second == first
    assert creates(emulator) == 1


def test_a_409_on_create_adopts_the_rival_harness(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    name = compose_name(SPEC.name, digest8(harness_body(SPEC, None, ROLE)), AGENTCORE_NAMES)
    rival: list[str] = []
    emulator.before_requests(
        "POST", "/harnesses", lambda: rival.append(emulator.add_harness(name=name))
    )
    handle = provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE)
    assert handle.harness_arn == rival[0]


def test_a_harness_that_fails_is_deleted_and_reported(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    emulator.harness_statuses(["CREATING", "CREATE_FAILED"])
    store = MemoryStore()
    with pytest.raises(HarnessFailedError):
        provision(provider, SPEC, store=store, execution_role_arn=ROLE, timeout=10)
    assert [r for r in emulator.requests if r.method == "DELETE"], "rolled back"
    assert not [h for h in emulator.harnesses() if h.get("status") != "DELETING"]


def test_a_blank_execution_role_is_rejected_before_any_request(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    with pytest.raises(ConfigurationError, match="execution_role_arn"):
        provision(provider, SPEC, store=MemoryStore(), execution_role_arn="  ")
    assert emulator.requests == []


def test_teardown_deletes_the_harness_and_forgets_it(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    store = MemoryStore()
    handle = provision(provider, SPEC, store=store, execution_role_arn=ROLE)
    teardown(provider, handle, store=store)
    assert any(r.method == "DELETE" and handle.harness_id in r.path for r in emulator.requests)
    creates_before = creates(emulator)
    provision(provider, SPEC, store=store, execution_role_arn=ROLE)
    assert creates(emulator) == creates_before + 1, "the store no longer holds the old handle"


def test_long_names_are_fitted_to_the_harness_rules(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    spec = AgentSpec(name="9 very-long name " * 5, system_prompt="x", model="m")
    handle = provision(provider, spec, store=MemoryStore(), execution_role_arn=ROLE)
    assert handle.name[0].isalpha()
    assert len(handle.name) <= 40
    assert handle.name.endswith(f"_{handle.digest}")


# --- a store that went stale behind provisioning's back ----------------------------------------


@pytest.mark.parametrize("delete_after", [0, 1, 3], ids=["gone", "deleting", "slowly deleting"])
def test_a_harness_deleted_behind_the_stores_back_is_created_anew(delete_after: int) -> None:
    with (
        AgentCoreEmulator([ConverseTurn(text="fresh")], delete_after=delete_after) as emulator,
        emulator.provider(timeout=5) as provider,
    ):
        store = MemoryStore()
        first = provision(provider, SPEC, store=store, execution_role_arn=ROLE)
        provider.client.delete_harness(first.harness_id)
        second = provision(provider, SPEC, store=store, execution_role_arn=ROLE, timeout=20)
        assert second.harness_id != first.harness_id
        assert second.name == first.name
        assert creates(emulator) == 2
        start = len(emulator.requests)
        assert provision(provider, SPEC, store=store, execution_role_arn=ROLE) == second
        assert calls_since(emulator, start) == [("GET", f"/harnesses/{second.harness_id}")]
        result = run_to_completion(provider, "hi", handler=Tools(), harness=second, timeout=10)
    assert result.text == "fresh"


def test_a_stored_harness_that_is_updating_is_waited_on_and_kept(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    store = MemoryStore()
    handle = provision(provider, SPEC, store=store, execution_role_arn=ROLE)
    emulator.harness_statuses(["UPDATING", "UPDATING", "UPDATING", "READY"], name=handle.name)
    assert provision(provider, SPEC, store=store, execution_role_arn=ROLE, timeout=10) == handle
    assert [h["status"] for h in emulator.harnesses()] == ["READY"]
    assert creates(emulator) == 1


def test_a_failing_confirmation_propagates_and_keeps_the_store(
    emulator: AgentCoreEmulator,
) -> None:
    store = MemoryStore()
    with emulator.provider(timeout=5, max_retries=0) as provider:
        first = provision(provider, SPEC, store=store, execution_role_arn=ROLE)
        emulator.fail_requests("GET", f"/harnesses/{re.escape(first.harness_id)}", 500)
        start = len(emulator.requests)
        with pytest.raises(ServerError):
            provision(provider, SPEC, store=store, execution_role_arn=ROLE)
        assert calls_since(emulator, start) == [("GET", f"/harnesses/{first.harness_id}")]
        assert provision(provider, SPEC, store=store, execution_role_arn=ROLE) == first
    assert creates(emulator) == 1


def test_an_environment_object_goes_under_the_environment_member(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    runtime = {"filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}]}
    environment = EnvironmentSpec({"agentCoreRuntimeEnvironment": runtime})
    provision(provider, SPEC, environment=environment, store=MemoryStore(), execution_role_arn=ROLE)
    body = next(r.body for r in emulator.requests if r.method == "POST" and r.path == "/harnesses")
    assert body["environment"] == {"agentCoreRuntimeEnvironment": runtime}
    assert "agentCoreRuntimeEnvironment" not in body


def test_an_environment_config_mixing_both_forms_is_refused() -> None:
    config = {"agentCoreRuntimeEnvironment": {}, "environmentVariables": {"A": "1"}}
    with pytest.raises(ValueError, match="nest it under 'environment'"):
        harness_body(SPEC, EnvironmentSpec(config), ROLE)


def test_the_environment_members_we_know_are_the_models() -> None:
    botocore_session = pytest.importorskip("botocore.session")
    model = botocore_session.get_session().get_service_model("bedrock-agentcore-control")
    shape = model.operation_model("CreateHarness").input_shape.members["environment"]
    assert set(shape.members) == HARNESS_ENVIRONMENT_MEMBERS


# --- the endpoint a harness is invoked at -------------------------------------------------


def test_provision_waits_for_the_default_endpoint_and_the_first_run_succeeds(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    """Live, the DEFAULT endpoint became READY minutes after its harness; until then an
    InvokeHarness fails. Provisioning returns only once both are READY."""
    emulator.delay_default_endpoints(3.0)
    started = time.monotonic()
    handle = provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE, timeout=20)
    waited = time.monotonic() - started
    assert 3.0 <= waited < 10, waited
    assert handle.endpoint_name == "DEFAULT"
    endpoint_gets = [
        r
        for r in emulator.requests
        if r.method == "GET" and r.path == f"/harnesses/{handle.harness_id}/endpoints/DEFAULT"
    ]
    assert len(endpoint_gets) >= 2, "404 (not created yet) was waited through"
    result = run_to_completion(provider, "hi", handler=Tools(), harness=handle, timeout=10)
    assert result.text == "ready"
    (invocation,) = [r for r in emulator.requests if r.path == "/harnesses/invoke"]
    assert invocation.query["qualifier"] == ["DEFAULT"], "the driver invokes that endpoint"


def test_an_endpoint_that_never_comes_names_the_endpoint_phase_and_the_harness_is_deleted(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    emulator.delay_default_endpoints(None)
    with pytest.raises(HarnessReadyTimeoutError) as caught:
        provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE, timeout=1.5)
    error = caught.value
    assert error.phase == "endpoint"
    assert error.endpoint_name == "DEFAULT"
    assert error.status is None
    assert error.polls >= 2
    assert 1.0 <= error.elapsed < 3.0
    message = str(error)
    assert message.startswith(f"endpoint DEFAULT of harness {error.harness_id}")
    assert "not created yet" in message
    assert f"{error.polls} polls" in message
    assert [(r.method, r.path) for r in emulator.requests if r.method == "DELETE"] == [
        ("DELETE", f"/harnesses/{error.harness_id}")
    ], "the harness this call created is rolled back"


def test_an_adopted_harness_whose_endpoint_never_comes_is_not_deleted(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    name = compose_name(SPEC.name, digest8(harness_body(SPEC, None, ROLE)), AGENTCORE_NAMES)
    emulator.add_harness(name=name)
    emulator.delay_default_endpoints(None)
    with pytest.raises(HarnessReadyTimeoutError) as caught:
        provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE, timeout=1.0)
    assert caught.value.phase == "endpoint"
    assert not [r for r in emulator.requests if r.method == "DELETE"], "never one it adopted"
    assert [h["harnessName"] for h in emulator.harnesses()] == [name]


def test_a_named_endpoint_is_waited_on_and_invoked(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    handle = provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE)
    client = provider.client
    client.create_harness_endpoint(handle.harness_id, "live")
    store = MemoryStore()
    live = provision(provider, SPEC, store=store, execution_role_arn=ROLE, endpoint_name="live")
    assert (live.harness_id, live.endpoint_name) == (handle.harness_id, "live")
    assert client.get_harness_endpoint(handle.harness_id, "live")["status"] == "READY"
    run_to_completion(provider, "hi", handler=Tools(), harness=live, timeout=10)
    (invocation,) = [r for r in emulator.requests if r.path == "/harnesses/invoke"]
    assert invocation.query["qualifier"] == ["live"]


@pytest.mark.parametrize("name", ["", "1st", "has-dash", "x" * 49, "DEFAULT\n"])
def test_an_invalid_endpoint_name_is_refused_before_any_request(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, name: str
) -> None:
    with pytest.raises(ConfigurationError, match="endpoint name"):
        provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE, endpoint_name=name)
    assert emulator.requests == []
