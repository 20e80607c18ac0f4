"""The shared HTTP layer's streaming details, over real loopback sockets."""

from __future__ import annotations

import http.server
import threading
import zlib
from collections.abc import Iterator

import pytest
import requests
import urllib3.response

from req_managed_agents._http import read_chunks
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import ClaudeEmulator

BODY = b'event: agent.message\ndata: {"type":"agent.message","id":"e1"}\n\n'


class GzipStream(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        compressor = zlib.compressobj(wbits=31)
        data = compressor.compress(BODY) + compressor.flush()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def gzip_server() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), GzipStream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest.mark.skipif(
    not hasattr(urllib3.response.HTTPResponse, "read1"),
    reason="urllib3 1.26 streams are read under its decoder; we ask for identity there",
)
def test_a_compressed_stream_is_still_decoded(gzip_server: str) -> None:
    response = requests.get(gzip_server, stream=True, timeout=5)
    decoder = SSEDecoder()
    events = [event for chunk in read_chunks(response, 5) for event in decoder.feed(chunk)]
    assert [event.json()["id"] for event in events] == ["e1"]


def test_streams_ask_for_uncompressed_bytes() -> None:
    with (
        ClaudeEmulator() as emulator,
        emulator.provider() as provider,
    ):
        session_id = provider.client.create_session(
            emulator.add_agent(), emulator.add_environment()
        )["id"]
        response = provider.client.open_event_stream(session_id, idle_timeout=5)
        response.close()
        stream_request = next(r for r in emulator.requests if r.path.endswith("/events/stream"))
    assert stream_request.headers["accept-encoding"] == "identity"
    assert stream_request.headers["accept"] == "text/event-stream"
