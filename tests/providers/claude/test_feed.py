"""The Claude event feed on its own: how it paces reconnects and reads odd frames."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import pytest

from req_managed_agents.errors import StreamReconnectError
from req_managed_agents.providers._feed import Unparseable
from req_managed_agents.providers.claude import ClaudeManagedAgents, _feed
from req_managed_agents.providers.claude._feed import EventFeed, _parse
from req_managed_agents.sse import ServerSentEvent


class PingsThenDrops(http.server.BaseHTTPRequestHandler):
    """A server that accepts the stream, sends one heartbeat, then cuts the connection."""

    protocol_version = "HTTP/1.1"
    stream_opened: ClassVar[list[float]] = []

    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith("/events/stream"):
            self.stream_opened.append(time.monotonic())
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            ping = b": ping\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ping), ping))
            self.wfile.flush()
            self.close_connection = True  # no terminating chunk: the stream broke
            return
        body = json.dumps({"data": [], "next_page": None}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def flaky_server() -> Iterator[str]:
    PingsThenDrops.stream_opened = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PingsThenDrops)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_heartbeats_alone_do_not_reset_the_reconnect_budget(
    flaky_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Delays large enough that their growth shows above a loaded machine's connect times.
    monkeypatch.setattr(_feed, "RECONNECT", _feed.RECONNECT.but(base=0.05, cap=0.4))
    with ClaudeManagedAgents("sk-ant-test-" + "k" * 20, base_url=flaky_server) as provider:
        feed = EventFeed(
            provider.client,
            "sesn_1",
            idle_timeout=5,
            deliver_history=False,
            telemetry_metadata={},
            max_reconnect_attempts=4,
        )
        feed.start()
        try:
            with pytest.raises(StreamReconnectError) as caught:
                feed.get(timeout=10)
        finally:
            feed.stop()
    assert caught.value.attempts == 5
    opened = PingsThenDrops.stream_opened
    assert len(opened) == 5, "one connection per attempt, then it gave up"
    gaps = [later - earlier for earlier, later in zip(opened, opened[1:])]
    assert gaps[-1] > 2 * gaps[0], f"the backoff grew: {gaps}"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param('{"type": "agent.mess', id="cut-short"),
        pytest.param("[" * 100_000 + "]" * 100_000, id="too-deep"),
        pytest.param('["not", "an", "object"]', id="not-an-object"),
    ],
)
def test_a_frame_that_does_not_parse_is_reported_for_a_catch_up(data: str) -> None:
    with pytest.raises(Unparseable):
        _parse(ServerSentEvent("agent.message", data, None, None))


def test_heartbeat_frames_are_not_session_events() -> None:
    assert _parse(ServerSentEvent("ping", "{}", None, None)) is None
    assert _parse(ServerSentEvent("message", '{"type": "ping"}', None, None)) is None
