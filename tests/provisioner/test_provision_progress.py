"""``provision(..., progress=)``: a harness coming up is reported at each poll, on the
calling thread, phase by phase; a callback that raises ends the wait as Ctrl-C would, and
the harness this call created is deleted again."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from req_managed_agents import BedrockAgentCore
from req_managed_agents.model import Progress
from req_managed_agents.provisioner import AgentSpec, MemoryStore, provision
from req_managed_agents.testing import AgentCoreEmulator

ROLE = "arn:aws:iam::123456789012:role/HarnessRole"
SPEC = AgentSpec(name="progress-agent", system_prompt="", model="us.anthropic.claude-x")


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emulator:
        emulator.harness_statuses(["CREATING"] * 3 + ["READY"])
        emulator.delay_default_endpoints(0.3)
        yield emulator


@pytest.fixture
def provider(emulator: AgentCoreEmulator) -> Iterator[BedrockAgentCore]:
    with emulator.provider(timeout=5) as provider:
        yield provider


def test_each_poll_of_a_harness_coming_up_is_reported_then_that_it_is_ready(
    provider: BedrockAgentCore,
) -> None:
    heard: list[tuple[Progress, threading.Thread]] = []
    handle = provision(
        provider,
        SPEC,
        store=MemoryStore(),
        execution_role_arn=ROLE,
        progress=lambda p: heard.append((p, threading.current_thread())),
    )
    *reports, last = [p for p, _ in heard]
    assert last.what == f"endpoint DEFAULT of harness {handle.harness_id} is READY"
    assert {thread for _, thread in heard} == {threading.current_thread()}
    harness = [p for p in reports if p.what.startswith("waiting for harness")]
    endpoint = [p for p in reports if p.what.startswith("waiting for endpoint DEFAULT")]
    assert harness, reports
    assert endpoint, reports
    assert reports == harness + endpoint
    assert all(handle.harness_id in p.what for p in reports)
    assert all("(CREATING)" in p.what for p in harness)
    polls = [p.done for p in reports]  # every poll counted, the READY ones too
    assert polls[0] == 1
    assert polls == sorted(set(polls))
    assert all(p.unit == "poll" and p.total is None for p in reports)
    elapsed = [p.elapsed for p in reports]
    assert elapsed == sorted(elapsed)


def test_a_progress_callback_that_raises_ends_the_wait_and_rolls_back(
    emulator: AgentCoreEmulator, provider: BedrockAgentCore
) -> None:
    class Enough(Exception):
        pass

    def impatient(progress: Progress) -> None:
        raise Enough(progress.what)

    with pytest.raises(Enough, match="CREATING"):
        provision(provider, SPEC, store=MemoryStore(), execution_role_arn=ROLE, progress=impatient)
    deletes = [r for r in emulator.requests if r.method == "DELETE"]
    assert len(deletes) == 1  # the harness this call created is not left behind
