"""The shared HTTP layer over real loopback sockets: streaming, headers, bodies, environment."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import urllib3.response

from req_managed_agents import APIError, ConfigurationError, telemetry
from req_managed_agents._redact import redact, register_secret
from req_managed_agents.errors import StreamError, TransportError
from req_managed_agents.providers import BedrockAgentCore, ClaudeManagedAgents
from req_managed_agents.sse import SSEDecoder
from req_managed_agents.testing import AgentCoreEmulator, ClaudeEmulator
from req_managed_agents.transport._http import read_chunks, shutdown_response

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


# -- credentials that would break a header ---------------------------------------------


def test_a_pasted_api_key_loses_its_trailing_newline() -> None:
    with ClaudeEmulator() as emulator:
        provider = ClaudeManagedAgents(emulator.api_key + "\n", base_url=emulator.base_url)
        with provider:
            assert provider.client.list_agents() == []
        assert emulator.requests[-1].headers["x-api-key"] == emulator.api_key


def test_a_key_with_control_characters_inside_is_refused_without_quoting_it() -> None:
    key = "sk-ant-emu-" + "a" * 20 + "\r\nx-injected: 1"
    with pytest.raises(ConfigurationError) as caught:
        ClaudeManagedAgents(key, base_url="http://127.0.0.1:1")
    assert "a" * 20 not in str(caught.value)
    assert "Anthropic API key" in str(caught.value)


def test_a_header_http_client_would_refuse_is_a_named_error_that_quotes_no_secret() -> None:
    # Credentials from the botocore chain (a refreshed token, say) bypass the provider's checks.
    Credentials = pytest.importorskip("botocore.credentials").Credentials
    seen: list[tuple[str, dict[str, Any]]] = []
    with AgentCoreEmulator(session_token="tok-" + "z" * 30) as emulator:
        credentials = Credentials(
            emulator.access_key_id, emulator.secret_access_key, emulator.session_token + "\n"
        )
        provider = BedrockAgentCore(
            emulator.region,
            credentials=credentials,
            endpoint_url=emulator.data_url,
            control_endpoint_url=emulator.control_url,
        )
        detach = telemetry.attach(lambda name, _m, metadata: seen.append((name, metadata)))
        try:
            with provider, pytest.raises(ConfigurationError) as caught:
                provider.client.list_harnesses()
        finally:
            detach()
        assert emulator.requests == []  # refused before anything was sent
    assert "X-Amz-Security-Token" in str(caught.value)
    assert [text for text in (str(caught.value), repr(seen)) if "z" * 30 in text] == []


def test_a_header_value_given_by_the_caller_is_refused_without_quoting_it() -> None:
    with (
        ClaudeEmulator() as emulator,
        emulator.provider() as provider,
        pytest.raises(ConfigurationError) as caught,
    ):
        provider.client._http.request(
            "GET", "/v1/agents", idempotent=True, headers={"x-note": "n" * 30 + "\n"}
        )
    assert "n" * 30 not in str(caught.value)


def test_escaped_spellings_of_a_secret_are_masked() -> None:
    secret = "escaped-" + "q" * 24 + "\n"
    register_secret(secret)
    for spelling in (repr(secret), repr(secret.encode()), json.dumps(secret), secret.strip()):
        assert "q" * 24 not in redact(f"Invalid header value {spelling}")


# -- bodies that are not what they should be -------------------------------------------


class LargeNonJson(http.server.BaseHTTPRequestHandler):
    # No charset for requests to assume: Response.text would run charset detection over it
    # all (about 7 s of CPU for 60 MB).
    body = b"<html>" + b"\xe9 not json " * 100_000

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_large_non_json_body_is_reported_without_decoding_all_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_detection(response: requests.Response) -> str:
        raise AssertionError("the whole body went through charset detection")

    monkeypatch.setattr(requests.Response, "apparent_encoding", property(no_detection))
    server = http.server.HTTPServer(("127.0.0.1", 0), LargeNonJson)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        provider = ClaudeManagedAgents("sk-ant-test-" + "k" * 20, base_url=server_url(server))
        with provider, pytest.raises(APIError) as caught:
            provider.client.get_agent("agent_1")
    finally:
        server.shutdown()
        server.server_close()
    assert "expected JSON" in str(caught.value)
    assert "<html>" in str(caught.value)
    assert len(str(caught.value)) < 600


class DeepJson(http.server.BaseHTTPRequestHandler):
    body = b"[" * 200_000 + b"]" * 200_000

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_json_nesting_too_deep_to_parse_is_an_api_error() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), DeepJson)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        provider = ClaudeManagedAgents("sk-ant-test-" + "k" * 20, base_url=server_url(server))
        with provider, pytest.raises(APIError) as caught:
            provider.client.get_agent("agent_1")
    finally:
        server.shutdown()
        server.server_close()
    assert "nests too deeply" in str(caught.value)


def server_url(server: http.server.HTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_port}"


# -- the environment, as requests.get would read it --------------------------------------


def test_proxy_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    with ClaudeEmulator() as emulator:
        # The emulator serves absolute-form request targets too, so it can stand in for a
        # forward proxy; the host below does not resolve, so only the proxy can answer.
        monkeypatch.setenv("HTTP_PROXY", emulator.base_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        provider = ClaudeManagedAgents(emulator.api_key, base_url="http://claude.invalid")
        with provider:
            assert provider.client.list_agents() == []


def test_ca_bundle_variables_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/rma-test-ca.pem")
    provider = ClaudeManagedAgents("sk-ant-test-" + "k" * 20, base_url="https://127.0.0.1:9")
    with provider, pytest.raises(TransportError) as caught:
        provider.client.get_agent("agent_1")
    assert "/nonexistent/rma-test-ca.pem" in str(caught.value)


def test_twenty_concurrent_runs_on_one_provider_fit_its_pool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from req_managed_agents import run_to_completion
    from req_managed_agents.testing import Turn
    from tests.support.tools import CountingTools

    script = [Turn(text=lambda inputs: f"answer to {inputs[0]}", delay=0.3)]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        ids = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}

        def one(n: int) -> str:
            return run_to_completion(
                provider, f"q{n}", handler=CountingTools(), timeout=30, **ids
            ).text

        with caplog.at_level("WARNING", logger="urllib3"), ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, range(20)))
    assert answers == [f"answer to q{n}" for n in range(20)]
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


class HeldStream(http.server.BaseHTTPRequestHandler):
    """Sends the head of an event stream and one comment, then holds the connection open."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.write(b"5\r\n: hi\n\r\n")
        self.wfile.flush()
        self.rfile.read(1)  # until the client goes away

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_stopped_stream_keeps_its_connection_until_its_reader_lets_go() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HeldStream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/"
    session = requests.Session()
    try:
        for _ in range(20):
            response = session.get(url, stream=True, timeout=5)
            pool, held = response.raw._pool, response.raw._connection
            shutdown_response(response)  # as a stop from another thread does
            # Pooled, the connection could go to another request while still being read.
            assert held not in list(pool.pool.queue)

            def read(response: requests.Response = response) -> None:
                with contextlib.suppress(StreamError), response:
                    for _chunk in read_chunks(response, 5):
                        pass

            reader = threading.Thread(target=read)
            reader.start()
            reader.join(5)
            assert not reader.is_alive(), "the reader saw the stream end"
            idle = [conn for conn in list(pool.pool.queue) if conn is not None]
            assert len(idle) == len({id(conn) for conn in idle}), "a connection queued twice"
    finally:
        session.close()
        server.shutdown()
        server.server_close()
