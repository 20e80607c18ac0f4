"""Answers too big to read: a body is read no further than a limit, so that no answer can
take the process's memory - a success up to ``MAX_BODY_BYTES`` (a longer one is a
:class:`~req_managed_agents.errors.MalformedResponseError`), an error's first
``ERROR_BODY_BYTES`` (its message is at the start) - and the client goes on working."""

from __future__ import annotations

import http.server
import threading
import tracemalloc
from collections.abc import Iterator

import pytest

from req_managed_agents.errors import MalformedResponseError, ServerError
from req_managed_agents.testing import ClaudeEmulator
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._bodies import ERROR_BODY_BYTES
from req_managed_agents.transport._http import HttpClient, api_error
from req_managed_agents.transport._json import MAX_BODY_BYTES


def test_a_success_over_the_limit_is_refused_in_bounded_memory() -> None:
    body = b'{"id": "agent_1", "name": "' + b"x" * MAX_BODY_BYTES + b'"}'
    with ClaudeEmulator() as emulator, emulator.provider(timeout=30, max_retries=0) as provider:
        agent = emulator.add_agent()
        emulator.answer_requests("GET", "/v1/agents/.*", body)
        tracemalloc.start()
        try:
            with pytest.raises(MalformedResponseError, match="longer than 67108864 bytes"):
                provider.client.get_agent(agent)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert provider.client.get_agent(agent)["id"] == agent  # the client goes on
    # What was read, once in pieces and once joined: never the whole answer, nor a parse.
    assert peak < 2.2 * MAX_BODY_BYTES, f"peak {peak / 2**20:.0f} MiB"


def test_an_error_with_a_huge_body_is_read_no_further_than_its_start() -> None:
    error = b'{"type": "error", "error": {"type": "api_error", "message": "overloaded"}, "x": "'
    body = error + b"x" * 20_000_000 + b'"}'
    with ClaudeEmulator() as emulator, emulator.provider(timeout=30, max_retries=0) as provider:
        agent = emulator.add_agent()
        emulator.answer_requests("GET", "/v1/agents/.*", body, status=500)
        tracemalloc.start()
        try:
            with pytest.raises(ServerError) as caught:
                provider.client.get_agent(agent)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert provider.client.get_agent(agent)["id"] == agent
    assert caught.value.status_code == 500
    assert len(str(caught.value)) < 3 * ERROR_BODY_BYTES
    assert peak < 20 * ERROR_BODY_BYTES, f"peak {peak / 2**20:.1f} MiB for a 20 MB error"


class _Sized(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b"0123456789" * 100

    def do_GET(self) -> None:
        self.send_response(200)
        if self.path == "/chunked":
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for start in range(0, len(self.body), 300):
                piece = self.body[start : start + 300]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def sized() -> Iterator[HttpClient]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = HttpClient(
        f"http://127.0.0.1:{server.server_port}",
        timeout=5,
        retry=RetryPolicy(max_retries=0),
        parse_error=lambda r: api_error(r.status_code, None, "failed", None),
        authenticate=lambda request: None,
    )
    yield client
    client.close()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/sized", "/chunked"])
def test_max_body_bounds_what_is_read_and_none_reads_it_all(sized: HttpClient, path: str) -> None:
    with pytest.raises(MalformedResponseError, match="longer than 999 bytes"):
        sized.request("GET", path, idempotent=True, max_body=999)
    assert sized.request("GET", path, idempotent=True, max_body=1000).content == _Sized.body
    assert sized.request("GET", path, idempotent=True, max_body=None).content == _Sized.body
