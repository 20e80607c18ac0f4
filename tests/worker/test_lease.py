"""A work item's lease against the emulator: claiming (acknowledge, first heartbeat), the
heartbeat cadence, what ends a lease (the item stopping, a 412, a refused token, failures
until it runs out), transient failures retried, and a heartbeat whose answer was lost."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import pytest

from req_managed_agents.providers.claude import ClaudeClient
from req_managed_agents.testing import Turn
from req_managed_agents.worker._lease import ClaimFailed, Lease, stop_item
from tests.worker.conftest import WORK, Hosted


class Claim:
    """A polled item of a new session, and a lease over it that records how it ended."""

    def __init__(self, world: Hosted) -> None:
        self.world = world
        self.session_id = world.session(world.agent([Turn(text="hi")]), prompt=None)
        item = world.queue.poll_work(world.environment_id)
        assert item is not None
        self.work_id = str(item["id"])
        self.client: ClaudeClient = world.queue.for_work_item(item)
        self.ends: list[tuple[str, str]] = []
        self.lease = Lease(
            world.queue,
            self.client,
            world.environment_id,
            self.work_id,
            on_end=lambda end, reason: self.ends.append((end, reason)),
            tags={},
        )

    def state(self) -> str:
        (item,) = self.world.items_of(self.session_id)
        return str(item["state"])

    def heartbeats(self) -> int:
        path = f"/v1/environments/{self.world.environment_id}/work/{self.work_id}/heartbeat"
        return sum(r.path == path for r in self.world.emulator.requests)

    def take_over(self) -> None:
        """Another holder heartbeats the item (as a worker with the key could)."""
        (item,) = self.world.items_of(self.session_id)
        self.world.queue.heartbeat_work(
            self.world.environment_id,
            self.work_id,
            expected_last_heartbeat=item["latest_heartbeat_at"],
        )


@pytest.fixture
def claim(hosted: Callable[..., Hosted]) -> Callable[..., Claim]:
    made: list[Claim] = []

    def make(**options: Any) -> Claim:
        made.append(Claim(hosted(**options)))
        return made[-1]

    yield make  # type: ignore[misc]
    for each in made:
        each.lease.release()


def test_claiming_acknowledges_then_heartbeats_and_keeps_the_lease_past_its_ttl(
    claim: Callable[..., Claim],
) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    assert held.state() == "active"
    assert held.lease.ttl == 2
    started = time.monotonic()
    time.sleep(3.2)
    # About every ttl / 2 = 1 s: the claim's own heartbeat, then three more.
    assert 3 <= held.heartbeats() <= 5, held.heartbeats()
    assert held.state() == "active", "the lease outlived its ttl"
    assert held.ends == []
    held.lease.release()
    count = held.heartbeats()
    time.sleep(1.3)
    assert held.heartbeats() == count, "no heartbeat after the release"
    assert time.monotonic() - started < 6


def test_an_item_that_is_stopping_ends_the_lease_as_shutdown(claim: Callable[..., Claim]) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    held.world.provider.client.stop_work(held.world.environment_id, held.work_id, force=False)
    assert held.world.emulator.wait_until(lambda: held.ends, 3)
    assert held.ends[0][0] == "shutdown"
    assert held.lease.end == "shutdown"


def test_a_heartbeat_refused_with_412_loses_the_lease(claim: Callable[..., Claim]) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    held.take_over()
    assert held.world.emulator.wait_until(lambda: held.ends, 3)
    assert held.ends == [("lost", "another worker holds its lease (412)")]
    assert held.state() == "active"  # the other holder's now


def test_a_heartbeat_whose_answer_was_lost_is_adopted_once(
    claim: Callable[..., Claim], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="req_managed_agents.worker._lease")
    held = claim(lease_ttl=2)
    held.lease.claim()
    emulator = held.world.emulator
    emulator.reset_requests("POST", rf"{WORK}/{held.work_id}/heartbeat", after_acting=True)
    count = held.heartbeats()
    assert emulator.wait_until(lambda: held.heartbeats() >= count + 3, 5)
    assert emulator.pending_faults() == 0
    assert held.ends == [], "the 412 after the lost answer was ours, not a takeover"
    assert "its lease is still ours" in caplog.text
    # A 412 with no ambiguous failure before it is a takeover.
    held.take_over()
    assert emulator.wait_until(lambda: held.ends, 3)
    assert held.ends[0][0] == "lost"


def test_transient_heartbeat_failures_are_retried_while_the_lease_lasts(
    claim: Callable[..., Claim],
) -> None:
    held = claim(lease_ttl=3)
    held.lease.claim()
    emulator = held.world.emulator
    # Retried after about 0.25 s, then 0.5 s: well within the 1.5 s left of the lease.
    emulator.fail_requests("POST", rf"{WORK}/{held.work_id}/heartbeat", 503, times=2)
    assert emulator.wait_until(lambda: emulator.pending_faults() == 0, 5)
    count = held.heartbeats()
    assert emulator.wait_until(lambda: held.heartbeats() > count, 3)
    assert held.ends == []
    assert held.state() == "active"


def test_failures_until_the_lease_would_run_out_lose_it(claim: Callable[..., Claim]) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    held.world.emulator.fail_requests("POST", rf"{WORK}/{held.work_id}/heartbeat", 503, times=99)
    started = time.monotonic()
    assert held.world.emulator.wait_until(lambda: held.ends, 5)
    assert held.ends[0][0] == "lost"
    assert "in time" in held.ends[0][1]
    assert time.monotonic() - started < 2.5


def test_a_refused_token_loses_the_lease(claim: Callable[..., Claim]) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    held.world.emulator.expire_lease(held.work_id)  # queued again, its token revoked
    assert held.world.emulator.wait_until(lambda: held.ends, 3)
    assert held.ends == [("lost", "its token was refused (401)")]
    assert held.state() == "queued"


def test_an_item_acknowledged_by_another_worker_is_not_claimed(
    claim: Callable[..., Claim],
) -> None:
    held = claim()
    held.world.queue.ack_work(held.world.environment_id, held.work_id)
    with pytest.raises(ClaimFailed) as failed:
        held.lease.claim()
    assert failed.value.stop is False
    assert held.state() == "starting"


@pytest.mark.parametrize("landed", [True, False], ids=["answer_lost", "never_arrived"])
def test_an_acknowledgement_that_failed_ambiguously_is_sorted_out(
    claim: Callable[..., Claim], landed: bool
) -> None:
    held = claim()
    emulator = held.world.emulator
    emulator.reset_requests("POST", rf"{WORK}/{held.work_id}/ack", after_acting=landed)
    held.lease.claim()
    assert held.state() == "active"
    acks = [r for r in emulator.requests if r.path.endswith(f"{held.work_id}/ack")]
    assert len(acks) == 2  # the second met a 409 (landed) or took the item (not landed)


def test_an_acknowledgement_that_never_got_an_answer_is_settled_by_the_heartbeat(
    claim: Callable[..., Claim],
) -> None:
    held = claim()
    held.world.emulator.reset_requests(
        "POST", rf"{WORK}/{held.work_id}/ack", after_acting=True, times=5
    )
    held.lease.claim()
    assert held.state() == "active"


def test_an_item_whose_session_ended_before_the_claim_is_stopped_not_served(
    claim: Callable[..., Claim],
) -> None:
    held = claim()
    held.world.emulator.terminate_session(held.session_id)
    with pytest.raises(ClaimFailed) as failed:
        held.lease.claim()
    assert failed.value.stop is True
    assert held.lease.end == "shutdown"
    tags: dict[str, Any] = {}
    assert stop_item(held.client, held.world.environment_id, held.work_id, tags)
    assert held.state() == "stopped"
    # Stopped, its token is revoked: a second stop does nothing and raises nothing.
    assert not stop_item(held.client, held.world.environment_id, held.work_id, tags)
    assert held.state() == "stopped"


def test_stopping_retries_transient_failures_and_gives_up_on_a_token_not_ours(
    claim: Callable[..., Claim],
) -> None:
    held = claim(lease_ttl=2)
    held.lease.claim()
    held.lease.release()
    world = held.world
    world.emulator.fail_requests("POST", rf"{WORK}/{held.work_id}/stop", 503, times=2)
    assert stop_item(held.client, world.environment_id, held.work_id, {})
    assert held.state() == "stopped"
    other = Claim(world)
    other.lease.claim()
    other.lease.release()
    world.emulator.expire_lease(other.work_id)
    assert not stop_item(other.client, world.environment_id, other.work_id, {})
    assert other.state() == "queued", "a revoked token stops nothing"
