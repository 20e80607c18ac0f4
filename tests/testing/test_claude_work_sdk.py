"""The work queue of the Claude emulator's self-hosted environments, driven by the official
``anthropic`` SDK: every answer (and every error's details) must fit its models strictly, its
reference worker must serve a session end to end, and the project's client must send what
the SDK sends."""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Iterator
from typing import Any, Callable

import pytest

anthropic = pytest.importorskip("anthropic")

from anthropic.lib.environments import EnvironmentWorker  # noqa: E402
from anthropic.lib.environments._poller import sessions_token_from_secret  # noqa: E402
from anthropic.lib.tools import beta_async_tool  # noqa: E402
from anthropic.types.beta.environments import (  # noqa: E402
    BetaHeartbeatPreconditionFailedError,
    BetaHeartbeatPreconditionFailedErrorDetails,
)
from anthropic.types.shared import ErrorResponse  # noqa: E402

from req_managed_agents._redact import Secret  # noqa: E402
from req_managed_agents.providers.claude._client import ClaudeClient  # noqa: E402
from req_managed_agents.testing import ClaudeEmulator, Turn, call  # noqa: E402
from tests.support.api import user_message  # noqa: E402
from tests.support.sdk import StrictAnthropic, _StrictAnswers, check_strictly, wire_shape  # noqa: E402

SELF_HOSTED = {"type": "self_hosted"}


class StrictAsyncAnthropic(_StrictAnswers, anthropic.AsyncAnthropic):
    """The SDK's async client, checking each answer strictly (its copies too)."""


def strict(emulator: ClaudeEmulator, **credential: Any) -> StrictAnthropic:
    credential = credential or {"api_key": emulator.api_key}
    return StrictAnthropic(
        base_url=emulator.base_url,
        max_retries=0,
        timeout=10,
        _strict_response_validation=True,
        **({"api_key": None} | credential),
    )


@pytest.fixture
def hosted() -> Iterator[Callable[..., tuple[ClaudeEmulator, str, str, StrictAnthropic]]]:
    """Start emulators, each with a self-hosted environment, an agent and an SDK client
    holding the API key; close them all afterwards."""
    opened: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> tuple[ClaudeEmulator, str, str, StrictAnthropic]:
        emulator = ClaudeEmulator(*args, ping_interval=0.2, **kwargs)
        opened.append(emulator)
        environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
        client = strict(emulator)
        opened.append(client)
        return emulator, environment_id, emulator.add_agent(), client

    yield start
    for thing in reversed(opened):
        thing.close()


def test_every_work_answer_fits_the_sdk_strictly(hosted: Any) -> None:
    emulator, environment_id, agent, client = hosted()
    key = emulator.environment_key(environment_id)
    with strict(emulator, auth_token=key) as worker:
        work = worker.beta.environments.work
        assert work.poll(environment_id, block_ms=1) is None

        session = client.beta.sessions.create(agent=agent, environment_id=environment_id)
        item = work.poll(environment_id, block_ms=50, anthropic_worker_id="w-1")
        assert item is not None
        assert (item.state, item.data.type, item.data.id) == ("queued", "session", session.id)
        assert item.secret is not None
        stats = client.beta.environments.work.stats(environment_id)
        assert (stats.depth, stats.pending, stats.workers_polling) == (0, 1, 1)
        assert stats.oldest_queued_at == item.created_at

        acked = work.ack(item.id, environment_id=environment_id)
        assert (acked.state, acked.secret) == ("starting", None)
        token = sessions_token_from_secret(item.secret)
        assert token is not None
        with strict(emulator, auth_token=token.get_secret_value()) as serving:
            beat = serving.beta.environments.work.heartbeat(
                item.id, environment_id=environment_id, expected_last_heartbeat="NO_HEARTBEAT"
            )
            assert (beat.state, beat.lease_extended, beat.ttl_seconds) == ("active", True, 300)
            again = serving.beta.environments.work.heartbeat(
                item.id,
                environment_id=environment_id,
                expected_last_heartbeat=beat.last_heartbeat,
                desired_ttl_seconds=60,
            )
            assert again.ttl_seconds == 60
            assert again.last_heartbeat > beat.last_heartbeat
            with pytest.raises(BetaHeartbeatPreconditionFailedError) as lost:
                serving.beta.environments.work.heartbeat(
                    item.id, environment_id=environment_id, expected_last_heartbeat="NO_HEARTBEAT"
                )
            body = lost.value.body
            details = check_strictly(
                BetaHeartbeatPreconditionFailedErrorDetails,
                body["error"].pop("details"),
                "412 details",
            )
            check_strictly(ErrorResponse, body, "412")
            assert details.current_state.last_heartbeat == again.last_heartbeat
            assert (details.current_state.state, details.current_state.lease_extended) == (
                "active",
                False,
            )

            fetched = client.beta.environments.work.retrieve(item.id, environment_id=environment_id)
            assert (fetched.state, fetched.secret) == ("active", None)
            assert fetched.started_at == beat.last_heartbeat
            assert fetched.latest_heartbeat_at == again.last_heartbeat
            tagged = client.beta.environments.work.update(
                item.id, environment_id=environment_id, metadata={"host": "a", "rack": "7"}
            )
            assert tagged.metadata == {"host": "a", "rack": "7"}
            untagged = client.beta.environments.work.update(
                item.id, environment_id=environment_id, metadata={"host": None}
            )
            assert untagged.metadata == {"rack": "7"}
            assert [w.id for w in work.list(environment_id, limit=1)] == [item.id]

            stopping = serving.beta.environments.work.stop(item.id, environment_id=environment_id)
            assert (stopping.state, stopping.stopped_at) == ("stopping", None)
            told = serving.beta.environments.work.heartbeat(
                item.id, environment_id=environment_id, expected_last_heartbeat="stale"
            )
            assert (told.lease_extended, told.state) == (False, "stopping")
            stopped = serving.beta.environments.work.stop(
                item.id, environment_id=environment_id, force=True
            )
            assert stopped.state == "stopped"
            assert stopped.stop_requested_at == stopping.stop_requested_at
        with pytest.raises(anthropic.ConflictError):
            client.beta.environments.work.stop(item.id, environment_id=environment_id)
        final = work.heartbeat(item.id, environment_id=environment_id)
        assert (final.lease_extended, final.state) == (False, "stopped")


def test_a_new_message_wakes_a_session_whose_item_stopped(hosted: Any) -> None:
    emulator, environment_id, agent, client = hosted(["One.", "Two."])
    session = client.beta.sessions.create(agent=agent, environment_id=environment_id)
    client.beta.sessions.events.send(session.id, events=[user_message("hi")])  # item is open
    [first] = emulator.work_items(environment_id)
    client.beta.environments.work.stop(first["id"], environment_id=environment_id)
    client.beta.sessions.events.send(session.id, events=[user_message("again")])
    items = emulator.work_items(environment_id)
    assert [i["state"] for i in items] == ["stopped", "queued"]
    assert items[1]["data"]["id"] == session.id


def test_sandbox_calls_reach_the_sdk_worker_and_its_results_the_next_turn(hosted: Any) -> None:
    """The SDK's own reference worker polls, claims, heartbeats, answers the agent's
    ``bash`` call through the item's sessions token, and stops the item, all in strict mode."""
    script = [
        Turn(server_tool_calls=[call("bash", command="echo hi")]),
        Turn(lambda results: f"The shell said {results[0]}."),
    ]
    emulator, environment_id, agent, client = hosted(script)
    key = emulator.environment_key(environment_id)
    session = client.beta.sessions.create(agent=agent, environment_id=environment_id)
    client.beta.sessions.events.send(session.id, events=[user_message("go")])

    @beta_async_tool(name="bash")
    async def bash(command: str) -> str:
        """Pretend to run a command."""
        return f"'{command}'"

    async def serve() -> None:
        sdk = StrictAsyncAnthropic(
            base_url=emulator.base_url,
            api_key=emulator.api_key,
            max_retries=0,
            _strict_response_validation=True,
        )
        worker = EnvironmentWorker(
            sdk,
            environment_id=environment_id,
            environment_key=key,
            tools=[bash],
            workdir=tempfile.gettempdir(),
            memory_sync_interval=None,
            max_idle=0.2,
        )
        task = asyncio.ensure_future(worker.run())
        for _ in range(200):
            if [i["state"] for i in emulator.work_items(environment_id)] == ["stopped"]:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await sdk.close()

    asyncio.run(serve())
    messages = [e for e in emulator.events(session.id) if e["type"] == "agent.message"]
    assert messages[-1]["content"][0]["text"] == "The shell said 'echo hi'."
    result = next(e for e in emulator.events(session.id) if e["type"] == "user.tool_result")
    assert result["content"] == [{"type": "text", "text": "'echo hi'"}]
    assert [i["state"] for i in emulator.work_items(environment_id)] == ["stopped"]
    streams = [r for r in emulator.requests if r.path.endswith(f"{session.id}/events/stream")]
    assert streams, "the worker never opened the session's stream"
    for request in streams:  # as the session, with the item's sessions token
        assert "x-api-key" not in request.headers
        assert request.headers["authorization"] not in (f"Bearer {key}", None)


_WORK_ID = re.compile(r"work_[0-9a-f]+")


def _sdk_steps(client: Any, keyed: Any, serving: Any, environment_id: str, work_id: str) -> None:
    keyed.beta.environments.work.ack(work_id, environment_id=environment_id)
    serving.beta.environments.work.heartbeat(
        work_id, environment_id=environment_id, expected_last_heartbeat="NO_HEARTBEAT"
    )
    serving.beta.environments.work.heartbeat(
        work_id, environment_id=environment_id, desired_ttl_seconds=30
    )
    client.beta.environments.work.retrieve(work_id, environment_id=environment_id)
    client.beta.environments.work.update(
        work_id, environment_id=environment_id, metadata={"a": "b"}
    )
    list(keyed.beta.environments.work.list(environment_id))
    client.beta.environments.work.stats(environment_id)
    serving.beta.environments.work.stop(work_id, environment_id=environment_id)
    serving.beta.environments.work.stop(work_id, environment_id=environment_id, force=True)


def _project_steps(
    client: ClaudeClient,
    keyed: ClaudeClient,
    serving: ClaudeClient,
    environment_id: str,
    work_id: str,
) -> None:
    keyed.ack_work(environment_id, work_id)
    serving.heartbeat_work(environment_id, work_id, expected_last_heartbeat="NO_HEARTBEAT")
    serving.heartbeat_work(environment_id, work_id, desired_ttl_seconds=30)
    client.get_work(environment_id, work_id)
    client.update_work(environment_id, work_id, metadata={"a": "b"})
    keyed.list_work(environment_id)
    client.get_work_stats(environment_id)
    serving.stop_work(environment_id, work_id)
    serving.stop_work(environment_id, work_id, force=True)


def test_the_project_client_sends_what_the_sdk_sends(hosted: Any) -> None:
    emulator, environment_id, agent, client = hosted()
    key = emulator.environment_key(environment_id)
    project = ClaudeClient(
        Secret(emulator.api_key), base_url=emulator.base_url, timeout=10, max_retries=0
    )
    keyed_project = project.with_bearer(key)
    shapes = []
    with strict(emulator, auth_token=key) as keyed:
        for side in ("sdk", "project"):
            client.beta.sessions.create(agent=agent, environment_id=environment_id)
            mark = len(emulator.requests)
            if side == "sdk":
                item = keyed.beta.environments.work.poll(
                    environment_id, block_ms=20, reclaim_older_than_ms=100
                )
                assert item is not None
                token = sessions_token_from_secret(item.secret)
                assert token is not None
                with strict(emulator, auth_token=token.get_secret_value()) as serving:
                    _sdk_steps(client, keyed, serving, environment_id, item.id)
            else:
                polled = keyed_project.poll_work(
                    environment_id, block_ms=20, reclaim_older_than_ms=100
                )
                assert polled is not None
                serving_project = keyed_project.for_work_item(polled)
                _project_steps(
                    project, keyed_project, serving_project, environment_id, polled["id"]
                )
            shapes.append(
                [_WORK_ID.sub("<work>", repr(wire_shape(r))) for r in emulator.requests[mark:]]
            )
    project.close()
    assert len(shapes[0]) == 10  # the poll and the nine steps (the list is one page)
    assert shapes[0] == shapes[1]
    headers = [r.headers for r in emulator.requests if r.path.endswith("/poll")]
    assert all(h["authorization"] == f"Bearer {key}" and "x-api-key" not in h for h in headers)
