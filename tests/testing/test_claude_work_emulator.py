"""The Claude emulator's self-hosted environments over plain HTTP: the long poll, leases that
expire, who may call what, the built-in sandbox calls, and faults on the work routes."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest
import requests

from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call
from tests.support.api import Api, error_of, ok, tool_result, user_message

SELF_HOSTED = {"type": "self_hosted"}


class Caller:
    """Plain HTTP with one bearer credential, as a worker sends it."""

    def __init__(self, emulator: ClaudeEmulator, token: str) -> None:
        self.base = emulator.base_url
        self.http = requests.Session()
        self.http.headers.update(
            {
                "authorization": f"Bearer {token}",
                "anthropic-version": "2023-06-01",
                "anthropic-beta": "managed-agents-2026-04-01",
            }
        )

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.http.get(self.base + path, params=params, timeout=30)

    def post(self, path: str, body: Any = None, **params: Any) -> requests.Response:
        return self.http.post(self.base + path, json=body, params=params, timeout=30)


class Hosted:
    """An emulator with a self-hosted environment, an agent, and callers holding the API
    key and the environment key."""

    def __init__(self, emulator: ClaudeEmulator, opened: list[Any]) -> None:
        self.emulator = emulator
        self.environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
        self.agent_id = emulator.add_agent()
        self.api = Api(emulator)
        self.key = emulator.environment_key(self.environment_id)
        self.worker = Caller(emulator, self.key)
        self._opened = opened
        opened += [self.api.http, self.worker.http]

    @property
    def work(self) -> str:
        return f"/v1/environments/{self.environment_id}/work"

    def new_session(self, **body: Any) -> str:
        answer = self.api.post(
            "/v1/sessions", {"agent": self.agent_id, "environment_id": self.environment_id, **body}
        )
        return str(ok(answer)["id"])

    def poll(self, **params: Any) -> Any:
        return ok(self.worker.get(f"{self.work}/poll", **params))

    def claim(self) -> tuple[dict[str, Any], Caller]:
        """Poll an item, acknowledge it and claim its lease; the caller acting as it."""
        item = self.poll()
        assert item is not None
        ok(self.worker.post(f"{self.work}/{item['id']}/ack"))
        serving = self.as_item(item)
        ok(
            serving.post(
                f"{self.work}/{item['id']}/heartbeat", expected_last_heartbeat="NO_HEARTBEAT"
            )
        )
        return item, serving

    def as_item(self, item: dict[str, Any]) -> Caller:
        caller = Caller(self.emulator, sessions_token(item["secret"]))
        self._opened.append(caller.http)
        return caller

    def state(self, work_id: str) -> str:
        return next(i["state"] for i in self.emulator.work_items() if i["id"] == work_id)


def sessions_token(secret: str) -> str:
    payload = json.loads(base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4)))
    return str(payload["sessions_token"])


@pytest.fixture
def hosted() -> Iterator[Callable[..., Hosted]]:
    opened: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> Hosted:
        emulator = ClaudeEmulator(*args, ping_interval=0.2, **kwargs)
        opened.append(emulator)
        return Hosted(emulator, opened)

    yield start
    for thing in reversed(opened):
        thing.close()


# --- environments ---------------------------------------------------------------------------


def test_a_self_hosted_config_is_type_alone_and_the_type_never_changes(hosted: Any) -> None:
    world = hosted()
    api = world.api
    with pytest.raises(ValueError, match="Extra inputs"):
        world.emulator.add_environment(config={"type": "self_hosted", "networking": {}})
    cloud = world.emulator.add_environment("cloud")
    for environment_id, config in ((cloud, SELF_HOSTED), (world.environment_id, {"type": "cloud"})):
        refused = error_of(api.post(f"/v1/environments/{environment_id}", {"config": config}), 400)
        assert refused["details"] == {"error_code": "invalid_config_type_change"}
    with pytest.raises(ValueError, match="not self_hosted"):
        world.emulator.environment_key(cloud)
    assert world.emulator.environment_key(world.environment_id) == world.key  # one key


# --- the poll -------------------------------------------------------------------------------


def test_an_empty_poll_waits_block_ms_and_answers_null(hosted: Any) -> None:
    world = hosted()

    def timed_poll(**params: Any) -> float:
        started = time.monotonic()
        assert world.poll(**params) is None
        return time.monotonic() - started

    # No block_ms: no wait. The fastest of three, so a loaded machine's stall on one request
    # cannot pass for a wait the emulator added (which every one of the three would show).
    assert min(timed_poll() for _ in range(3)) < 0.9
    assert timed_poll(block_ms=300) >= 0.3  # waits the whole block, then answers null
    for bad in ("0", "1000", "x"):
        error_of(world.worker.get(f"{world.work}/poll", block_ms=bad), 400)
    error_of(world.worker.get(f"{world.work}/poll", reclaim_older_than_ms="0"), 400)


def test_a_waiting_poll_takes_the_item_a_new_session_queues(hosted: Any) -> None:
    world = hosted()
    answers: list[Any] = []
    started = time.monotonic()
    polling = threading.Thread(target=lambda: answers.append(world.poll(block_ms=999)))
    polling.start()
    assert world.emulator.wait_until(lambda: world.emulator.requests)  # the poll is waiting
    session_id = world.new_session()
    polling.join(5)
    assert time.monotonic() - started < 0.9  # answered as the item came, not at block_ms
    [item] = answers
    assert item["data"] == {"type": "session", "id": session_id}
    assert item["state"] == "queued"
    assert sessions_token(item["secret"]).startswith("sesstok_")
    assert world.poll(block_ms=50) is None  # handed out: pending until acknowledged


def test_an_unacknowledged_item_is_handed_out_again_with_a_new_secret(hosted: Any) -> None:
    world = hosted()
    session_id = world.new_session()
    first = world.poll()
    assert world.poll() is None  # within the default 5 s
    again = world.poll(reclaim_older_than_ms=1)
    assert again["id"] == first["id"]
    assert again["secret"] != first["secret"]
    error_of(world.as_item(first).get(f"/v1/sessions/{session_id}"), 401)  # revoked
    ok(world.as_item(again).get(f"/v1/sessions/{session_id}"))


def test_the_stats_count_the_queue_and_the_workers(hosted: Any) -> None:
    world = hosted()
    empty = ok(world.api.get(f"{world.work}/stats"))
    assert empty == {
        "type": "work_queue_stats",
        "depth": 0,
        "pending": 0,
        "oldest_queued_at": None,
        "workers_polling": 0,
    }
    world.new_session()
    world.new_session()
    ok(
        world.worker.http.get(
            world.worker.base + f"{world.work}/poll",
            headers={"anthropic-worker-id": "a"},
            timeout=30,
        )
    )
    stats = ok(world.worker.get(f"{world.work}/stats"))
    oldest = world.emulator.work_items()[0]["created_at"]
    assert (stats["depth"], stats["pending"], stats["oldest_queued_at"]) == (1, 1, oldest)
    assert stats["workers_polling"] == 1


# --- acknowledging and the lease ------------------------------------------------------------


def test_ack_heartbeat_and_stop_walk_the_states(hosted: Any) -> None:
    world = hosted()
    world.new_session()
    item = world.poll()
    ack = f"{world.work}/{item['id']}/ack"
    assert ok(world.worker.post(ack))["state"] == "starting"
    error_of(world.worker.post(ack), 409)  # a repeat
    serving = world.as_item(item)
    beat_path = f"{world.work}/{item['id']}/heartbeat"
    beat = ok(serving.post(beat_path, expected_last_heartbeat="NO_HEARTBEAT"))
    assert (beat["state"], beat["lease_extended"], beat["ttl_seconds"]) == ("active", True, 300)
    lost = error_of(serving.post(beat_path, expected_last_heartbeat="NO_HEARTBEAT"), 412)
    assert lost["details"]["error_code"] == "heartbeat_precondition_failed"
    assert lost["details"]["current_state"]["last_heartbeat"] == beat["last_heartbeat"]
    unconditional = ok(serving.post(beat_path))
    assert unconditional["last_heartbeat"] > beat["last_heartbeat"]
    assert ok(serving.post(f"{world.work}/{item['id']}/stop"))["state"] == "stopping"
    told = ok(serving.post(beat_path, expected_last_heartbeat="anything"))
    assert (told["lease_extended"], told["state"]) == (False, "stopping")
    assert (
        ok(serving.post(f"{world.work}/{item['id']}/stop", {"force": True}))["state"] == "stopped"
    )
    error_of(world.api.post(f"{world.work}/{item['id']}/stop"), 409)
    error_of(world.worker.post(f"{world.work}/{item['id']}/stop", {"force": "yes"}), 400)


def test_an_item_no_poll_handed_out_cannot_be_acknowledged(hosted: Any) -> None:
    world = hosted()
    world.new_session()
    [item] = world.emulator.work_items()
    error_of(world.worker.post(f"{world.work}/{item['id']}/ack"), 409)
    error_of(world.worker.post(f"{world.work}/work_missing/ack"), 404)


def test_an_unheartbeated_lease_runs_out_and_the_item_is_queued_again(hosted: Any) -> None:
    world = hosted(lease_ttl=1)
    session_id = world.new_session()
    item, serving = world.claim()
    time.sleep(1.2)  # no heartbeat within the ttl
    assert world.state(item["id"]) == "queued"
    refused = error_of(serving.get(f"/v1/sessions/{session_id}"), 401)  # its token is revoked
    assert sessions_token(item["secret"]) not in json.dumps(refused)
    again = world.poll()  # a restarted worker picks it up
    assert again["id"] == item["id"]
    assert again["acknowledged_at"] is None
    assert again["latest_heartbeat_at"] is None


def test_expire_lease_ends_a_lease_at_once(hosted: Any) -> None:
    world = hosted()
    world.new_session()
    item, _serving = world.claim()
    world.emulator.expire_lease(item["id"])
    assert world.state(item["id"]) == "queued"
    gone = error_of(
        world.worker.post(f"{world.work}/{item['id']}/heartbeat", expected_last_heartbeat="x"), 412
    )
    assert gone["details"]["current_state"]["state"] == "queued"
    again = world.poll()
    ok(world.worker.post(f"{world.work}/{again['id']}/ack"))
    ok(world.api.post(f"{world.work}/{again['id']}/stop"))  # graceful: stopping
    world.emulator.expire_lease(again["id"])
    assert world.state(again["id"]) == "stopped"
    with pytest.raises(KeyError):
        world.emulator.expire_lease("work_missing")


def test_a_terminated_session_tells_its_worker_to_stop(hosted: Any) -> None:
    world = hosted()
    session_id = world.new_session()
    item, serving = world.claim()
    world.emulator.terminate_session(session_id)
    told = ok(serving.post(f"{world.work}/{item['id']}/heartbeat"))
    assert (told["lease_extended"], told["state"]) == (False, "stopping")
    assert (
        ok(serving.post(f"{world.work}/{item['id']}/stop", {"force": True}))["state"] == "stopped"
    )


def test_input_to_a_session_whose_item_stopped_queues_another(hosted: Any) -> None:
    world = hosted(["One.", "Two.", "Three."])
    session_id = world.new_session()
    ok(world.api.send(session_id, user_message("hi")))
    assert len(world.emulator.work_items()) == 1  # one is still queued
    item, serving = world.claim()
    ok(serving.post(f"{world.work}/{item['id']}/stop", {"force": True}))
    ok(world.api.send(session_id, {"type": "user.interrupt"}))
    assert len(world.emulator.work_items()) == 1  # an interrupt needs no sandbox
    ok(world.api.send(session_id, user_message("again")))
    assert [i["state"] for i in world.emulator.work_items()] == ["stopped", "queued"]


def test_metadata_merges_and_the_list_pages_newest_first(hosted: Any) -> None:
    world = hosted()
    sessions = [world.new_session() for _ in range(3)]
    items = world.emulator.work_items()
    path = f"{world.work}/{items[0]['id']}"
    assert ok(world.api.post(path, {"metadata": {"a": "1", "b": "2"}}))["metadata"] == {
        "a": "1",
        "b": "2",
    }
    assert ok(world.api.post(path, {"metadata": {"a": None}}))["metadata"] == {"b": "2"}
    error_of(world.api.post(path, {}), 400)
    error_of(world.api.post(path, {"metadata": {"a": 1}}), 400)
    assert ok(world.api.get(path))["metadata"] == {"b": "2"}
    first = ok(world.worker.get(world.work, limit=2))
    rest = ok(world.worker.get(world.work, limit=2, page=first["next_page"]))
    listed = [i["data"]["id"] for i in first["data"] + rest["data"]]
    assert listed == sessions[::-1]
    assert rest["next_page"] is None
    assert all(i["secret"] is None for i in first["data"])


def test_a_cloud_environment_has_no_work_queue(hosted: Any) -> None:
    world = hosted()
    cloud = world.emulator.add_environment("cloud")
    error_of(world.api.get(f"/v1/environments/{cloud}/work/stats"), 400)
    error_of(world.api.get("/v1/environments/env_missing/work/stats"), 404)


# --- who may call what ----------------------------------------------------------------------


def test_each_credential_reaches_only_its_routes(hosted: Any) -> None:
    world = hosted()
    session_id = world.new_session()
    other_session = world.new_session()
    item, serving = world.claim()
    work = f"{world.work}/{item['id']}"
    for path in (f"{world.work}/poll", world.work):  # the API key is for operators
        error_of(world.api.get(path), 401)
    for path in (f"{work}/ack", f"{work}/heartbeat"):
        error_of(world.api.post(path), 401)
    ok(world.api.get(f"{world.work}/stats"))
    for path in (work,):  # the environment key is for the worker
        error_of(world.worker.get(path), 401)
        error_of(world.worker.post(path, {"metadata": {}}), 401)
    error_of(world.worker.get("/v1/agents"), 401)
    ok(world.worker.get(f"/v1/sessions/{session_id}"))  # its environment's sessions
    error_of(serving.get(f"{world.work}/poll"), 401)  # the token is for its own item
    error_of(serving.get("/v1/agents"), 401)
    error_of(serving.get(f"/v1/sessions/{other_session}"), 401)
    error_of(serving.post(f"/v1/sessions/{session_id}/archive"), 401)
    ok(serving.get(f"/v1/sessions/{session_id}/events"))
    ok(serving.get(f"/v1/sessions/{session_id}/threads"))
    other_env = world.emulator.add_environment("other", config=SELF_HOSTED)
    stranger = Caller(world.emulator, world.emulator.environment_key(other_env))
    try:
        error_of(stranger.get(f"{world.work}/poll"), 401)
        error_of(stranger.get(f"/v1/sessions/{session_id}"), 401)
    finally:
        stranger.http.close()
    wrong = Caller(world.emulator, "sesstok_not-a-token")
    try:
        denied = error_of(wrong.get(f"/v1/sessions/{session_id}"), 401)
        assert denied["type"] == "authentication_error"
    finally:
        wrong.http.close()
    ok(serving.post(f"{work}/stop", {"force": True}))
    error_of(serving.get(f"/v1/sessions/{session_id}"), 401)  # a stopped item's token is dead


# --- built-in sandbox calls -----------------------------------------------------------------


def test_sandbox_calls_wait_for_the_workers_results(hosted: Any) -> None:
    script = [
        Turn(
            server_tool_calls=[
                call("read", file_path="/etc/hostname"),
                ToolCall("web_fetch", {"url": "https://example.com"}, result="<html>"),
                call("grep", pattern="TODO", path="src"),
            ],
            tool_calls=[call("lookup", q="x")],
        ),
        Turn(lambda results: " | ".join(results)),
    ]
    world = hosted(script)
    session_id = world.new_session()
    _item, serving = world.claim()
    ok(serving.post(f"/v1/sessions/{session_id}/events", {"events": [user_message("go")]}))
    assert world.emulator.wait_until(
        lambda: world.emulator.events(session_id)[-1]["type"] == "session.status_idle"
    )
    events = world.emulator.events(session_id)
    uses = [e for e in events if e["type"] == "agent.tool_use"]
    assert [u["name"] for u in uses] == ["read", "web_fetch", "grep"]
    assert [e["type"] for e in events if e["type"] == "agent.tool_result"] == ["agent.tool_result"]
    custom = next(e for e in events if e["type"] == "agent.custom_tool_use")
    waiting = [uses[0]["id"], uses[2]["id"], custom["id"]]
    assert events[-1]["stop_reason"] == {"type": "requires_action", "event_ids": waiting}
    before = len(world.emulator.events(session_id))
    unknown = {"type": "user.tool_result", "tool_use_id": "sevt_missing", "content": []}
    error_of(serving.post(f"/v1/sessions/{session_id}/events", {"events": [unknown]}), 400)
    grep_result = {
        "type": "user.tool_result",
        "tool_use_id": uses[2]["id"],
        "content": [{"type": "text", "text": "a.py:1"}],
    }
    read_result = {
        "type": "user.tool_result",
        "tool_use_id": uses[0]["id"],
        "content": [{"type": "text", "text": "box"}],
        "is_error": False,
    }
    ok(serving.post(f"/v1/sessions/{session_id}/events", {"events": [grep_result]}))
    twice = error_of(
        serving.post(f"/v1/sessions/{session_id}/events", {"events": [grep_result]}), 400
    )
    assert "already answered" in twice["message"]
    assert len(world.emulator.events(session_id)) == before + 3  # the result, usage, the idle
    ok(
        serving.post(
            f"/v1/sessions/{session_id}/events",
            {"events": [read_result, tool_result(custom["id"], "42")]},
        )
    )
    assert world.emulator.wait_until(
        lambda: (
            world.emulator.events(session_id)[-1]["type"] == "session.status_idle"
            and world.emulator.events(session_id)[-1]["stop_reason"]["type"] == "end_turn"
        )
    )
    message = [e for e in world.emulator.events(session_id) if e["type"] == "agent.message"][-1]
    assert message["content"][0]["text"] == "box | a.py:1 | 42"


def test_a_sandbox_call_must_carry_the_input_the_api_sends() -> None:
    for bad in (
        call("bash"),
        call("bash", cmd="ls"),
        call("read", path="/x"),
        call("read", file_path="/x", view_range=[1, "2"]),
        call("edit", file_path="/x", old_string="a"),
        call("write", file_path="/x", content=3),
        call("glob", pattern="*", recursive=True),
    ):
        with pytest.raises(ValueError, match=f"'{bad.name}'"):
            Turn(server_tool_calls=[bad])
    Turn(
        server_tool_calls=[
            call("bash", restart=True),
            call("edit", file_path="a", old_string="x", new_string="y", replace_all=True),
        ]
    )
    Turn(server_tool_calls=[ToolCall("bash", {"anything": 1}, mcp_server="shell")])  # not built in
    Turn(tool_calls=[call("bash", cmd="ls")])  # a custom tool of that name


def test_sub_thread_sandbox_calls_are_answered_on_their_thread(hosted: Any) -> None:
    script = [
        Turn(thread="coder", server_tool_calls=[call("bash", command="make")]),
        Turn(thread="coder", text=lambda results: f"make said {results[0]}"),
    ]
    world = hosted(script)
    session_id = world.new_session()
    _item, serving = world.claim()
    ok(serving.post(f"/v1/sessions/{session_id}/events", {"events": [user_message("build")]}))
    assert world.emulator.wait_until(
        lambda: world.emulator.events(session_id)[-1]["type"] == "session.status_idle"
    )
    use = next(e for e in world.emulator.events(session_id) if e["type"] == "agent.tool_use")
    thread = use["session_thread_id"]
    assert thread != world.emulator.threads(session_id)[0]["id"]
    answer = {
        "type": "user.tool_result",
        "tool_use_id": use["id"],
        "content": [{"type": "text", "text": "ok"}],
    }
    echo = ok(serving.post(f"/v1/sessions/{session_id}/events", {"events": [answer]}))["data"][0]
    assert echo["session_thread_id"] == thread
    assert world.emulator.wait_until(
        lambda: any(
            e["type"] == "agent.message" and e["content"][0]["text"] == "make said ok"
            for e in world.emulator.events(session_id, thread)
        )
    )


# --- faults ---------------------------------------------------------------------------------


def test_request_faults_fire_on_the_work_routes(hosted: Any) -> None:
    world = hosted()
    world.new_session()
    world.emulator.fail_requests("GET", r"/v1/environments/[^/]+/work/poll", 503, retry_after=1)
    failed = world.worker.get(f"{world.work}/poll")
    assert (failed.status_code, failed.headers["retry-after"]) == (503, "1")
    assert failed.json()["error"]["type"] == "api_error"
    item = world.poll()
    ack = rf"/v1/environments/[^/]+/work/{item['id']}/ack"
    world.emulator.reset_requests("POST", ack, after_acting=False)
    with pytest.raises(requests.ConnectionError):
        world.worker.post(f"{world.work}/{item['id']}/ack")
    assert world.state(item["id"]) == "queued"  # never acted on
    world.emulator.reset_requests("POST", ack, after_acting=True)
    with pytest.raises(requests.ConnectionError):
        world.worker.post(f"{world.work}/{item['id']}/ack")
    assert world.state(item["id"]) == "starting"  # acted on, unbeknown to the worker
    error_of(world.worker.post(f"{world.work}/{item['id']}/ack"), 409)
    serving = world.as_item(item)
    claimed = ok(
        serving.post(f"{world.work}/{item['id']}/heartbeat", expected_last_heartbeat="NO_HEARTBEAT")
    )
    assert claimed["state"] == "active"  # the claim heartbeat tells the worker the ack landed
    stop = rf"/v1/environments/[^/]+/work/{item['id']}/stop"
    world.emulator.reset_requests("POST", stop, after_acting=True)
    with pytest.raises(requests.ConnectionError):
        serving.post(f"{world.work}/{item['id']}/stop", {"force": True})
    assert world.state(item["id"]) == "stopped"
    error_of(world.worker.post(f"{world.work}/{item['id']}/stop", {"force": True}), 409)
    assert world.emulator.pending_faults() == 0
