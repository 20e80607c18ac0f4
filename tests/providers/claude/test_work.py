"""``ClaudeClient``'s work-queue methods, over real sockets against the emulator: a worker's
whole round (poll, acknowledge, claim, serve the session with the item's sessions token,
stop), what it refuses before sending, the bounded long poll, leases that run out, the
errors it reports, and which failures it retries."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

from req_managed_agents import telemetry
from req_managed_agents._redact import Secret, redact
from req_managed_agents.errors import (
    APIError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    TransportError,
)
from req_managed_agents.providers.claude import ClaudeBedrockClient, ClaudeClient
from req_managed_agents.providers.claude.api._work import (
    HEARTBEAT_PRECONDITION_FAILED,
    NO_HEARTBEAT,
    lease_state,
    sessions_token,
)
from req_managed_agents.testing import ClaudeEmulator, Turn, call

SELF_HOSTED = {"type": "self_hosted"}


class World:
    """An emulator with a self-hosted environment and an agent; ``client`` holds the API
    key, ``worker`` the environment key (sharing its pool)."""

    def __init__(self, emulator: ClaudeEmulator, **client_options: Any) -> None:
        self.emulator = emulator
        self.environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
        self.agent_id = emulator.add_agent()
        options = {"timeout": 30.0, "max_retries": 0, **client_options}
        self.client = ClaudeClient(Secret(emulator.api_key), base_url=emulator.base_url, **options)
        self.key = emulator.environment_key(self.environment_id)
        self.worker = self.client.with_bearer(self.key)

    def new_session(self) -> str:
        return str(self.client.create_session(self.agent_id, self.environment_id)["id"])

    def claim(self) -> tuple[dict[str, Any], ClaudeClient, dict[str, Any]]:
        """Poll, acknowledge and claim an item: it, the client acting as it, the heartbeat."""
        item = self.worker.poll_work(self.environment_id)
        assert item is not None
        self.worker.ack_work(self.environment_id, item["id"])
        serving = self.worker.for_work_item(item)
        beat = serving.heartbeat_work(
            self.environment_id, item["id"], expected_last_heartbeat=NO_HEARTBEAT
        )
        return item, serving, beat

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def world() -> Iterator[Callable[..., World]]:
    started: list[tuple[ClaudeEmulator, World]] = []

    def start(*script: Turn | str, lease_ttl: int = 300, **client_options: Any) -> World:
        emulator = ClaudeEmulator(list(script), ping_interval=0.2, lease_ttl=lease_ttl)
        started.append((emulator, World(emulator, **client_options)))
        return started[-1][1]

    yield start
    for emulator, made in started:
        made.close()
        emulator.close()


def idle(emulator: ClaudeEmulator, session_id: str, count: int = 1) -> None:
    def idled() -> bool:
        return sum(e["type"] == "session.status_idle" for e in emulator.events(session_id)) >= count

    assert emulator.wait_until(idled)


def test_a_worker_round_with_the_environment_key_and_the_items_token(world: Any) -> None:
    script = [
        Turn(server_tool_calls=[call("bash", command="uname")]),
        Turn(lambda r: f"It is {r[0]}."),
    ]
    w = world(*script)
    assert w.worker.poll_work(w.environment_id) is None
    session_id = w.new_session()
    item, serving, beat = w.claim()
    assert item["data"] == {"type": "session", "id": session_id}
    assert (beat["state"], beat["lease_extended"], beat["ttl_seconds"]) == ("active", True, 300)

    assert serving.get_session(session_id)["id"] == session_id  # as the session
    serving.send_events(
        session_id, [{"type": "user.message", "content": [{"type": "text", "text": "os?"}]}]
    )
    idle(w.emulator, session_id)
    use = next(e for e in serving.list_events(session_id) if e["type"] == "agent.tool_use")
    assert (use["name"], use["input"]) == ("bash", {"command": "uname"})
    result = {
        "type": "user.tool_result",
        "tool_use_id": use["id"],
        "content": [{"type": "text", "text": "Linux"}],
        "is_error": False,
    }
    echo = serving.send_events(session_id, [result])["data"][0]
    assert echo["tool_use_id"] == use["id"]
    idle(w.emulator, session_id, 2)
    texts = [
        e["content"][0]["text"]
        for e in serving.list_events(session_id)
        if e["type"] == "agent.message"
    ]
    assert texts == ["It is Linux."]

    again = serving.heartbeat_work(
        w.environment_id,
        item["id"],
        expected_last_heartbeat=beat["last_heartbeat"],
        desired_ttl_seconds=30,
    )
    assert again["ttl_seconds"] == 30
    assert w.client.get_work(w.environment_id, item["id"])["state"] == "active"
    tagged = w.client.update_work(
        w.environment_id, item["id"], metadata={"host": "a", "gone": None}
    )
    assert tagged["metadata"] == {"host": "a"}
    assert [i["id"] for i in w.worker.list_work(w.environment_id)] == [item["id"]]
    stats = w.client.get_work_stats(w.environment_id)
    assert (stats["type"], stats["depth"], stats["pending"]) == ("work_queue_stats", 0, 0)
    assert serving.stop_work(w.environment_id, item["id"], force=True)["state"] == "stopped"
    with pytest.raises(ConflictError):
        w.worker.stop_work(w.environment_id, item["id"])
    with pytest.raises(AuthenticationError):  # a stopped item's token speaks for nothing
        serving.get_session(session_id)


def test_the_token_speaks_only_for_its_own_session(world: Any) -> None:
    w = world()
    mine = w.new_session()
    other = w.new_session()
    item, serving, _ = w.claim()
    assert item["data"]["id"] == mine
    with pytest.raises(AuthenticationError):
        serving.get_session(other)
    with pytest.raises(AuthenticationError):
        serving.list_agents()
    with pytest.raises(AuthenticationError):
        w.client.poll_work(w.environment_id)  # the API key does not poll
    forged = w.client.with_bearer("sesstok_forged-token-value")
    with pytest.raises(AuthenticationError) as refused:
        forged.get_session(mine)
    assert "sesstok_forged" not in str(refused.value)


def test_bad_input_is_refused_before_anything_is_sent(world: Any) -> None:
    w = world()
    env = w.environment_id
    refusals: list[Callable[[], Any]] = [
        lambda: w.worker.poll_work(env, block_ms=0),
        lambda: w.worker.poll_work(env, block_ms=1000),
        lambda: w.worker.poll_work(env, block_ms=True),
        lambda: w.worker.poll_work(env, block_ms="5"),  # type: ignore[arg-type]
        lambda: w.worker.poll_work(env, reclaim_older_than_ms=0),
        lambda: w.worker.poll_work(env, worker_id=" padded"),
        lambda: w.worker.poll_work(env, worker_id="tab\there"),
        lambda: w.worker.poll_work(""),
        lambda: w.worker.ack_work(env, ".."),
        lambda: w.worker.ack_work(env, 7),  # type: ignore[arg-type]
        lambda: w.worker.heartbeat_work(env, "work_1", expected_last_heartbeat=""),
        lambda: w.worker.heartbeat_work(env, "work_1", desired_ttl_seconds=0),
        lambda: w.worker.stop_work(env, "work_1", force="yes"),  # type: ignore[arg-type]
        lambda: w.client.update_work(env, "work_1", metadata={"k": 1}),  # type: ignore[dict-item]
        lambda: w.client.update_work(env, "work_1", metadata={"": "v"}),
        lambda: w.client.update_work(env, "work_1", metadata={str(i): "v" for i in range(17)}),
        lambda: w.client.update_work(env, "work_1", metadata=["k"]),  # type: ignore[arg-type]
        lambda: w.client.with_bearer(""),
        lambda: w.client.with_bearer("two words"),
        lambda: w.client.for_work_item({"id": "work_1", "secret": None}),
        lambda: w.client.for_work_item({"secret": "not base64 json!"}),
    ]
    before = len(w.emulator.requests)
    for refusal in refusals:
        with pytest.raises(ConfigurationError):
            refusal()
    assert len(w.emulator.requests) == before


def test_the_long_poll_is_held_by_the_server_and_bounded_by_the_client(world: Any) -> None:
    w = world(timeout=0.3)  # shorter than the block: the read timeout must cover both
    started = time.monotonic()
    assert w.worker.poll_work(w.environment_id, block_ms=600) is None
    assert 0.6 <= time.monotonic() - started < 1.5
    stall = threading.Event()
    w.emulator.before_requests("GET", r".*/work/poll", lambda: stall.wait(1.0))
    started = time.monotonic()
    with pytest.raises(TransportError):  # a server silent past block and timeout: given up
        w.worker.poll_work(w.environment_id, block_ms=100)
    assert time.monotonic() - started < 0.9
    stall.set()


def test_a_poll_is_retried_and_a_lost_ack_is_left_to_the_worker(world: Any) -> None:
    w = world(max_retries=2)
    w.new_session()
    w.emulator.fail_requests("GET", r".*/work/poll", 503, times=2)
    item = w.worker.poll_work(w.environment_id)
    assert item is not None  # idempotent: retried through two 503s
    ack = rf".*/work/{item['id']}/ack"
    w.emulator.reset_requests("POST", ack, after_acting=True)
    with pytest.raises(TransportError):
        w.worker.ack_work(w.environment_id, item["id"])  # not sent twice: it may have landed
    acks = [r for r in w.emulator.requests if r.path.endswith("/ack")]
    assert len(acks) == 1
    with pytest.raises(ConflictError):
        w.worker.ack_work(w.environment_id, item["id"])
    serving = w.worker.for_work_item(item)  # the claim tells whether the ack landed
    beat = serving.heartbeat_work(
        w.environment_id, item["id"], expected_last_heartbeat=NO_HEARTBEAT
    )
    assert beat["state"] == "active"
    w.emulator.fail_requests("POST", r".*/stop", 503, retry_after=0)  # refused up front
    assert serving.stop_work(w.environment_id, item["id"], force=True)["state"] == "stopped"


def test_a_lost_lease_is_a_412_whose_state_the_worker_can_read(world: Any) -> None:
    w = world(lease_ttl=1)
    w.new_session()
    item, serving, beat = w.claim()
    time.sleep(1.2)  # no heartbeat within the ttl: the item is queued again
    with pytest.raises(AuthenticationError):  # its sessions token went with the lease
        serving.heartbeat_work(w.environment_id, item["id"])
    with pytest.raises(APIError) as lost:  # the environment key learns why
        w.worker.heartbeat_work(
            w.environment_id, item["id"], expected_last_heartbeat=beat["last_heartbeat"]
        )
    assert lost.value.status_code == 412
    assert lost.value.error_type == HEARTBEAT_PRECONDITION_FAILED
    assert lease_state(lost.value) == {
        "last_heartbeat": None,
        "lease_extended": False,
        "state": "queued",
        "ttl_seconds": 1,
    }
    again = w.worker.poll_work(w.environment_id)
    assert again is not None
    assert again["id"] == item["id"]
    assert lease_state(ConflictError(409, "conflict_error", "x")) is None
    assert lease_state(ValueError("x")) is None


def test_a_concurrent_claim_loses_to_the_first(world: Any) -> None:
    w = world()
    w.new_session()
    item, serving, beat = w.claim()
    with pytest.raises(APIError) as second:
        serving.heartbeat_work(w.environment_id, item["id"], expected_last_heartbeat=NO_HEARTBEAT)
    state = lease_state(second.value)
    assert state is not None
    assert state["last_heartbeat"] == beat["last_heartbeat"]


def test_a_polled_secret_and_its_token_never_show(world: Any) -> None:
    w = world()
    w.new_session()
    item = w.worker.poll_work(w.environment_id)  # registers both with the redactor
    assert item is not None
    secret = item["secret"]
    token = json.loads(base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4)))
    assert secret not in redact(f"secret={secret}")
    assert token["sessions_token"] not in redact(f"token={token['sessions_token']}")
    assert token["sessions_token"] not in repr(w.worker.for_work_item(item))


def test_sessions_token_reads_padded_and_unpadded_secrets() -> None:
    payload = json.dumps({"sessions_token": "tok-123456789"}).encode()
    padded = base64.urlsafe_b64encode(payload).decode()
    token = sessions_token(padded)
    assert token is not None
    assert token.reveal() == "tok-123456789"
    unpadded = sessions_token(padded.rstrip("="))
    assert unpadded is not None
    assert unpadded.reveal() == "tok-123456789"
    for no_token in (None, "", "%%%", base64.urlsafe_b64encode(b'{"other": 1}').decode()):
        assert sessions_token(no_token) is None


def test_work_requests_carry_their_ids_in_telemetry(world: Any) -> None:
    w = world()
    w.new_session()
    seen: list[dict[str, Any]] = []
    detach = telemetry.attach(
        lambda name, _m, meta: seen.append(meta), prefix="req_managed_agents.request.stop"
    )
    try:
        item = w.worker.poll_work(w.environment_id, telemetry_metadata={"worker": "w1"})
        assert item is not None
        w.worker.ack_work(w.environment_id, item["id"], telemetry_metadata={"work_id": "mine"})
    finally:
        detach()
    assert seen[0]["environment_id"] == w.environment_id
    assert seen[0]["worker"] == "w1"
    assert seen[1]["work_id"] == item["id"]  # the library's key wins


def test_bedrock_has_no_work_queue() -> None:
    client = ClaudeBedrockClient(
        Secret("k" * 20), base_url="https://bedrock.test", timeout=1, max_retries=0
    )
    try:
        for name in ("poll_work", "ack_work", "with_bearer", "for_work_item", "get_work_stats"):
            with pytest.raises(ConfigurationError, match="self-hosted"):
                getattr(client, name)("env_1")
    finally:
        client.close()
