"""The emulators take a load test: a thousand clients at once, in one process.

A user load-testing their web server or task queue against an emulator runs many sessions
at once, client and emulator in one process. Each session holds an event stream open, so
the emulator must accept a burst of connections (its listen backlog), keep a thousand
streams open (more file descriptors than ``select`` can watch), wake only the streams
whose session changed, and notice each client that leaves without waiting for a heartbeat.
The full run through ``Session`` is in the benchmarks
(``benchmarks/report.py --only "load test"``); here the streams are raw sockets, so the
test costs little more than the emulator's side of it.
"""

from __future__ import annotations

import resource
import selectors
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, OpenAIAgentsEmulator
from req_managed_agents.testing.server import LoopbackEmulator
from tests.support.api import Api, ok
from tests.support.openai_api import OpenAIApi

STREAMS = 1000
# Bounds on a busy two-core machine, not timings: each is many times what it takes.
_OPEN_WITHIN = 120.0
_READ_WITHIN = 120.0
# No heartbeat within the test: only watching its socket tells a stream its client left.
_QUIET = 600.0


@pytest.fixture(autouse=True)
def enough_file_descriptors() -> Iterator[None]:
    """A client and a server socket per stream, and the pools' besides."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 4 * STREAMS + 512
    if soft >= needed:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hard limit on open files ({hard}) is below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _claude_streams(emulator: ClaudeEmulator) -> tuple[list[str], Callable[[str], bytes]]:
    api = Api(emulator)
    agent, environment = emulator.add_agent(), emulator.add_environment()
    body = {"agent": agent, "environment_id": environment}
    sessions = [str(ok(api.post("/v1/sessions", body))["id"]) for _ in range(STREAMS)]
    api.http.close()
    headers = "".join(f"{name}: {value}\r\n" for name, value in api.http.headers.items())

    def request(session_id: str) -> bytes:
        path = f"/v1/sessions/{session_id}/events/stream"
        return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode()

    return sessions, request


def _openai_streams(emulator: OpenAIAgentsEmulator) -> tuple[list[str], Callable[[str], bytes]]:
    api = OpenAIApi(emulator)
    agent = emulator.add_agent()
    sessions = [api.new_session(agent) for _ in range(STREAMS)]
    api.close()
    headers = f"Authorization: Bearer {emulator.api_key}\r\nOpenAI-Beta: agents=v1\r\n"

    def request(session_id: str) -> bytes:
        path = f"/v1/agents/sessions/{session_id}/events"
        return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\n".encode()

    return sessions, request


def _burst(
    emulator: LoopbackEmulator, address: tuple[str, int], requests: list[bytes]
) -> list[socket.socket]:
    """Connect every client at once, as a load test's clients do, then send each request.

    The clients connect while the emulator's lock is held: its accept thread takes the lock
    to start each connection's thread, so none is accepted meanwhile and the kernel's
    listen queue must hold them all. A connection the queue has no room for is not
    established (its SYN is dropped, and sent again a second later).
    """
    clients = []
    with emulator._server.lifecycle.condition:
        for _ in requests:
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(address)
            clients.append(client)
        established = sum(_established(client) for client in clients)
    assert established == len(clients), f"the listen queue held {established} of {len(clients)}"
    with selectors.DefaultSelector() as selector:
        for client, request in zip(clients, requests):
            selector.register(client, selectors.EVENT_WRITE, request)
        waiting = len(clients)
        while waiting:
            ready = selector.select(_OPEN_WITHIN)
            assert ready, f"{waiting} of {len(clients)} connections never opened"
            for key, _ in ready:
                client = key.fileobj
                assert isinstance(client, socket.socket)
                selector.unregister(client)
                client.sendall(key.data)
                waiting -= 1
    return clients


def _established(client: socket.socket) -> bool:
    try:
        client.getpeername()
    except OSError:
        return False
    return True


def _read_until(clients: list[socket.socket], marker: bytes) -> dict[int, bytes]:
    """Read every client until its bytes hold ``marker``; what each one read, by index."""
    received = dict.fromkeys(range(len(clients)), b"")
    with selectors.DefaultSelector() as selector:
        for index, client in enumerate(clients):
            selector.register(client, selectors.EVENT_READ, index)
        while selector.get_map():
            ready = selector.select(_READ_WITHIN)
            assert ready, [received[i][-200:] for i in list(received)[:3]]
            for key, _ in ready:
                index = key.data
                chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                received[index] += chunk
                if marker in received[index] or not chunk:
                    selector.unregister(key.fileobj)
    return received


@pytest.mark.parametrize("flavor", ["claude", "openai"])
def test_a_thousand_concurrent_streams_each_get_their_own_sessions_events(flavor: str) -> None:
    emulator: Any
    if flavor == "claude":
        emulator = ClaudeEmulator(ping_interval=_QUIET)
        sessions, request = _claude_streams(emulator)
        marker, id_field = b"event: session.status_terminated", "id"
    else:
        emulator = OpenAIAgentsEmulator(ping_interval=_QUIET)
        sessions, request = _openai_streams(emulator)
        marker, id_field = b"event: agent.session.failed", "event_id"
    with emulator:
        address = ("127.0.0.1", int(emulator.base_url.rsplit(":", 1)[1].split("/")[0]))
        clients = _burst(emulator, address, [request(session_id) for session_id in sessions])
        try:
            opened = emulator.wait_until(
                lambda: emulator.open_stream_count() == STREAMS, _OPEN_WITHIN
            )
            assert opened, _stream_ends(emulator)
            for session_id in sessions:
                emulator.terminate_session(session_id)
            received = _read_until(clients, marker)
            missed = [sessions[i] for i, data in received.items() if marker not in data]
            assert missed == [], (len(missed), _stream_ends(emulator))
            for index, session_id in enumerate(sessions):  # its own session's event, once
                last = emulator.events(session_id)[-1][id_field]
                assert received[index].count(marker) == 1
                assert last.encode() in received[index]
        finally:
            for client in clients:
                client.close()
        assert emulator.wait_until(lambda: emulator.open_stream_count() == 0, _READ_WITHIN)


def _stream_ends(emulator: LoopbackEmulator) -> dict[str | None, int]:
    """How many streams ended, by why (None: still open)."""
    ends: dict[str | None, int] = {}
    for connection in emulator.stream_connections():
        ends[connection.end] = ends.get(connection.end, 0) + 1
    return ends
