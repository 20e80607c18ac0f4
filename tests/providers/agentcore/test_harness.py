"""Harness CRUD and ``create_harness_and_wait`` against the AgentCore emulator (loopback).

What a user relies on: a harness comes back ``READY`` or a named error says why not, within
the budget; a harness we created and could not bring up is deleted; listing sees every
harness; a create is idempotent through its client token.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import ConfigurationError, ManagedAgentsError, Tools, run_to_completion
from req_managed_agents.errors import (
    ConflictError,
    HarnessDeletingError,
    HarnessFailedError,
    HarnessNotReadyError,
    HarnessReadyTimeoutError,
    HarnessUnknownStatusError,
    NotFoundError,
)
from req_managed_agents.providers.agentcore import (
    AgentCoreClient,
    create_harness_and_wait,
    wait_until_ready,
)
from req_managed_agents.testing import AgentCoreEmulator

pytest.importorskip("botocore")

ROLE = "arn:aws:iam::123456789012:role/harness"
CLIENT_TOKEN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){32,255}")


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emulator:
        yield emulator


@pytest.fixture
def client(emulator: AgentCoreEmulator) -> Iterator[AgentCoreClient]:
    with emulator.provider(timeout=5) as provider:
        yield provider.client


def body(name: str) -> dict[str, Any]:
    return {"harnessName": name, "executionRoleArn": ROLE}


def calls(emulator: AgentCoreEmulator, method: str, path: str) -> list[Any]:
    return [r for r in emulator.requests if r.method == method and r.path == path]


def creates(emulator: AgentCoreEmulator) -> list[Any]:
    return calls(emulator, "POST", "/harnesses")


# --- create_harness_and_wait ----------------------------------------------------------------


def test_a_creating_harness_is_returned_once_ready(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    emulator.harness_statuses(["CREATING", "CREATING", "READY"])
    harness = create_harness_and_wait(client, body("ready"), timeout=10, poll_interval=0.05)
    assert harness["status"] == "READY"
    assert harness["harnessName"] == "ready"
    assert [h["harnessId"] for h in emulator.harnesses()] == [harness["harnessId"]]
    assert len(calls(emulator, "GET", f"/harnesses/{harness['harnessId']}")) == 2
    assert not [r for r in emulator.requests if r.method == "DELETE"], "nothing rolled back"


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        ("CREATE_FAILED", HarnessFailedError),
        ("DELETING", HarnessDeletingError),
        ("WARMING_UP", HarnessUnknownStatusError),
    ],
)
def test_a_harness_that_cannot_become_ready_fails_at_once_and_is_deleted(
    client: AgentCoreClient,
    emulator: AgentCoreEmulator,
    status: str,
    error_class: type[HarnessNotReadyError],
) -> None:
    emulator.harness_statuses(["CREATING", status])
    started = time.monotonic()
    with pytest.raises(error_class) as caught:
        create_harness_and_wait(client, body("doomed"), timeout=30, poll_interval=0.05)
    assert time.monotonic() - started < 5, "a final status ends the wait at once"
    assert len(creates(emulator)) == 1
    harness_id = caught.value.harness_id
    assert harness_id.startswith("doomed-")
    assert caught.value.status == status
    assert caught.value.polls == 1
    assert len(calls(emulator, "DELETE", f"/harnesses/{harness_id}")) == 1
    assert [h["status"] for h in emulator.harnesses()] in ([], ["DELETING"])


def test_a_never_ready_harness_times_out_within_the_budget_and_is_deleted(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    emulator.harness_statuses(["CREATING"])
    budget = 1.0
    started = time.monotonic()
    with pytest.raises(HarnessReadyTimeoutError) as caught:
        create_harness_and_wait(client, body("slow"), timeout=budget)
    elapsed = time.monotonic() - started
    assert budget <= elapsed < budget + 0.5, elapsed
    assert caught.value.status == "CREATING"
    assert caught.value.polls >= 2
    assert isinstance(caught.value, TimeoutError)
    harness_id = caught.value.harness_id
    assert len(calls(emulator, "DELETE", f"/harnesses/{harness_id}")) == 1
    assert [h["status"] for h in emulator.harnesses()] in ([], ["DELETING"])


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", r"/harnesses/[^/]+"), ("POST", "/harnesses")],
    ids=["get", "create"],
)
def test_a_throttled_control_plane_does_not_overrun_the_budget(
    client: AgentCoreClient, emulator: AgentCoreEmulator, method: str, path: str
) -> None:
    emulator.harness_statuses(["CREATING"])
    emulator.fail_requests(method, path, 503, retry_after=1.5)
    budget = 0.5
    started = time.monotonic()
    with pytest.raises(ManagedAgentsError):
        create_harness_and_wait(client, body("throttled"), timeout=budget)
    elapsed = time.monotonic() - started
    assert [h["status"] for h in emulator.harnesses()] in ([], ["DELETING"])
    assert elapsed < budget + 0.5, f"a {budget} s budget took {elapsed:.2f} s"


# --- CRUD ---------------------------------------------------------------------------------


def test_list_harnesses_follows_next_token_to_the_last_page(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    for number in range(205):
        emulator.add_harness(name=f"h{number:03d}")
    listed = client.list_harnesses()
    assert [h["harnessId"] for h in listed] == [h["harnessId"] for h in emulator.harnesses()]
    assert len({h["harnessId"] for h in listed}) == 205
    pages = calls(emulator, "GET", "/harnesses")
    assert len(pages) == 3, "the service caps a page at 100"
    assert [page.query.get("maxResults") for page in pages] == [["100"]] * 3
    tokens = [page.query.get("nextToken", [None])[0] for page in pages]
    assert tokens[0] is None
    assert None not in tokens[1:]
    assert tokens[1] != tokens[2]
    assert emulator.signature_failures == [], "paging tokens in the query are signed right"


def test_list_harnesses_with_none_is_empty(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    """The emulator answers ``{}`` here, as the live service does: no ``harnesses``."""
    assert client.list_harnesses() == []


def test_get_and_delete_round_trip(client: AgentCoreClient, emulator: AgentCoreEmulator) -> None:
    created = client.create_harness(body("roundtrip"))
    harness_id = created["harnessId"]
    fetched = client.get_harness(harness_id)
    assert (fetched["arn"], fetched["harnessName"]) == (created["arn"], "roundtrip")
    assert fetched["executionRoleArn"] == ROLE
    deleted = client.delete_harness(harness_id)
    assert deleted["harness"]["status"] == "DELETING"
    assert client.get_harness(harness_id)["status"] == "DELETING"
    with pytest.raises(NotFoundError) as caught:
        client.get_harness(harness_id)
    assert caught.value.error_type == "ResourceNotFoundException"
    assert emulator.harnesses() == []


def test_a_create_carries_a_fresh_client_token(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    client.create_harness(body("first"))
    client.create_harness(body("second"))
    tokens = [request.body["clientToken"] for request in creates(emulator)]
    assert all(CLIENT_TOKEN.fullmatch(token) for token in tokens), tokens
    assert tokens[0] != tokens[1]


def test_a_repeat_with_the_same_client_token_returns_the_same_harness(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    token = "retry-of-the-same-create-0123456789abcdef"
    first = client.create_harness({**body("once"), "clientToken": token})
    again = client.create_harness({**body("once"), "clientToken": token})
    assert again["harnessId"] == first["harnessId"]
    assert len(emulator.harnesses()) == 1
    assert [request.body["clientToken"] for request in creates(emulator)] == [token, token]


def test_a_retried_create_resends_its_client_token(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    emulator.fail_requests("POST", "/harnesses", 500)
    harness = client.create_harness(body("retried"))
    first, second = creates(emulator)
    assert first.body["clientToken"] == second.body["clientToken"]
    assert [h["harnessId"] for h in emulator.harnesses()] == [harness["harnessId"]]


# --- asynchronous deletion ------------------------------------------------------------------


def test_a_repeated_delete_of_a_deleting_harness_is_a_conflict(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    harness_id = client.create_harness(body("twice"))["harnessId"]
    client.delete_harness(harness_id)
    with pytest.raises(ConflictError):
        client.delete_harness(harness_id)


@pytest.mark.parametrize(("outcome", "final"), [("failed", "DELETE_FAILED"), ("stuck", "DELETING")])
def test_a_scripted_deletion_fails_or_sticks(
    client: AgentCoreClient, emulator: AgentCoreEmulator, outcome: Any, final: str
) -> None:
    harness_id = client.create_harness(body("scripted"))["harnessId"]
    emulator.script_deletion("scripted", outcome)
    client.delete_harness(harness_id)
    statuses = [client.get_harness(harness_id)["status"] for _ in range(4)]
    assert statuses == ["DELETING", final, final, final]
    if outcome == "failed":
        client.delete_harness(harness_id)  # a failed deletion may be tried again
        assert client.get_harness(harness_id)["status"] == "DELETING"


# --- endpoints ------------------------------------------------------------------------------


def test_endpoint_crud_round_trip(client: AgentCoreClient, emulator: AgentCoreEmulator) -> None:
    harness = create_harness_and_wait(client, body("ends"), timeout=10, poll_interval=0.05)
    harness_id = harness["harnessId"]
    created = client.create_harness_endpoint(harness_id, "canary", description="the canary")
    assert (created["endpointName"], created["status"]) == ("canary", "CREATING")
    assert created["arn"] == f"{harness['arn']}/harness-endpoint/canary"
    assert CLIENT_TOKEN.fullmatch(
        calls(emulator, "POST", created_path(harness_id))[0].body["clientToken"]
    )
    assert client.get_harness_endpoint(harness_id, "canary")["status"] == "CREATING"
    ready = client.get_harness_endpoint(harness_id, "canary")
    assert (ready["status"], ready["liveVersion"]) == ("READY", "1")
    names = [e["endpointName"] for e in client.list_harness_endpoints(harness_id)]
    assert names == ["DEFAULT", "canary"]
    client.update_harness(harness_id, {"maxTokens": 100})
    assert client.get_harness(harness_id)["status"] == "READY"
    updated = client.update_harness_endpoint(harness_id, "canary", target_version="2")
    assert (updated["status"], updated["targetVersion"]) == ("UPDATING", "2")
    with pytest.raises(ConflictError):
        client.update_harness_endpoint(harness_id, "canary", description="again")
    client.get_harness_endpoint(harness_id, "canary")
    assert client.get_harness_endpoint(harness_id, "canary")["liveVersion"] == "2"
    assert client.delete_harness_endpoint(harness_id, "canary")["status"] == "DELETING"
    with pytest.raises(ConflictError):
        client.delete_harness_endpoint(harness_id, "canary")
    client.get_harness_endpoint(harness_id, "canary")
    with pytest.raises(NotFoundError):
        client.get_harness_endpoint(harness_id, "canary")
    assert emulator.signature_failures == []


def created_path(harness_id: str) -> str:
    return f"/harnesses/{harness_id}/endpoints"


def test_endpoint_names_are_checked_before_any_request(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    for call in (
        lambda: client.get_harness_endpoint("h-0123456789", "no-dash"),
        lambda: client.create_harness_endpoint("h-0123456789", "9lives"),
        lambda: client.delete_harness_endpoint("h-0123456789", ""),
        lambda: create_harness_and_wait(client, body("never"), endpoint_name="a/b"),
    ):
        with pytest.raises(ConfigurationError, match="endpoint name"):
            call()
    assert emulator.requests == []


def test_invoking_before_the_default_endpoint_exists_is_refused_as_live(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    """The gap a READY-only wait fell into: the harness is READY, its endpoint is not."""
    emulator.delay_default_endpoints(60)
    arn = emulator.add_harness(name="fresh")
    with emulator.provider(timeout=5) as provider, pytest.raises(NotFoundError) as caught:
        run_to_completion(provider, "hi", handler=Tools(), harness_arn=arn, invoke_retries=0)
    assert "Endpoint DEFAULT not found" in str(caught.value)
    with pytest.raises(NotFoundError):
        client.get_harness_endpoint(arn.rsplit("/", 1)[-1], "DEFAULT")


def test_the_endpoint_wait_counts_its_polls_and_fails_at_a_failed_endpoint(
    client: AgentCoreClient, emulator: AgentCoreEmulator
) -> None:
    harness = create_harness_and_wait(client, body("both"), timeout=10, poll_interval=0.05)
    harness_id = harness["harnessId"]
    emulator.delay_default_endpoints(0.3)
    client.create_harness_endpoint(harness_id, "slow")
    ready = wait_until_ready(
        client, harness_id, deadline=time.monotonic() + 5, poll_interval=0.05, endpoint_name="slow"
    )
    assert ready["harnessId"] == harness_id
    with pytest.raises(HarnessReadyTimeoutError) as caught:
        wait_until_ready(
            client,
            harness_id,
            deadline=time.monotonic() + 0.3,
            poll_interval=0.05,
            endpoint_name="missing",
        )
    assert (caught.value.phase, caught.value.endpoint_name) == ("endpoint", "missing")
    assert caught.value.polls >= 3, "one harness poll, then the endpoint's"
    assert not calls(emulator, "DELETE", f"/harnesses/{harness_id}"), "a wait never deletes"
