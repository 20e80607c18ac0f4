"""examples/django, served the way a user serves it, against an emulator this test owns.

The site runs in a subprocess, so its Django settings never meet the ones other tests
configure in this process: Django's own threaded WSGI server (the one ``runserver`` uses,
a thread per request) or, for the async views, Django's ASGI application driven by hand.
The subprocess reads the environment the site's settings read, as a deployment would, and
builds the provider the default way. Its urllib3 and Python warnings go to a log file the
tests read back.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from threading import Barrier
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn, call

pytest.importorskip("django")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "django"
CLIENTS = 16
POOL_FULL = "Connection pool is full"

# After django.setup() (the import of the WSGI application), which replaces the handlers of
# the loggers the site's LOGGING names: our capture must come last to stay.
CAPTURE = """
import logging, sys, warnings
capture = logging.StreamHandler(sys.stderr)
capture.setFormatter(logging.Formatter("captured %(name)s %(levelname)s: %(message)s"))
for name in ("urllib3", "py.warnings"):
    logging.getLogger(name).addHandler(capture)
    logging.getLogger(name).setLevel(logging.WARNING)
logging.captureWarnings(True)
warnings.simplefilter("default")
"""

WSGI_SERVER = f"""
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from agentsite.wsgi import application
{CAPTURE}
server = ThreadedWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
server.set_app(application)
print(server.server_port, flush=True)
server.serve_forever()
"""

# The ASGI application, driven as an ASGI server would: a run answered in JSON, then a
# stream whose client disconnects once the first text event has arrived.
ASGI_DRIVER = f"""
import asyncio, json
from agentsite.asgi import application
{CAPTURE}

def scope(method, path, query=b""):
    return {{
        "type": "http", "asgi": {{"version": "3.0"}}, "http_version": "1.1",
        "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": query, "root_path": "", "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80),
    }}

async def call(scope, body=b"", disconnect_after=None):
    chunks, gone, asked = [], asyncio.Event(), []
    async def receive():
        if not asked:
            asked.append(True)
            return {{"type": "http.request", "body": body, "more_body": False}}
        await gone.wait()
        return {{"type": "http.disconnect"}}
    async def send(message):
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if disconnect_after and disconnect_after in b"".join(chunks):
                gone.set()
    await asyncio.wait_for(application(scope, receive, send), 60)
    return b"".join(chunks).decode()

async def main():
    body = await call(scope("POST", "/async/ask"), json.dumps({{"prompt": "Weather?"}}).encode())
    print(body, flush=True)
    body = await call(
        scope("GET", "/async/stream", b"q=Weather"), disconnect_after=b"event: text"
    )
    print(json.dumps({{"body": body}}), flush=True)

asyncio.run(main())
"""


def squared(inputs: list[str]) -> str:
    """The scripted answer to "What is N squared?", so every prompt has its own answer."""
    found = re.search(r"\d+", inputs[0])
    n = int(found.group()) if found else -1
    return f"{n} squared is {n * n}"


# Three turns with a pause before each: a run is still going whenever a client leaves.
WEATHER = [
    Turn(text="Checking Paris.", tool_calls=[call("get_weather", city="Paris")], delay=0.3),
    Turn(text="Now Rome.", tool_calls=[call("get_weather", city="Rome")], delay=0.3),
    Turn(text=lambda results: f"Rome: {results[0]}", delay=0.3),
]


def site_environment(emulator: ClaudeEmulator, agent_id: str) -> dict[str, str]:
    """What a deployment sets for the site; the pool size is left to the library."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="agentsite.settings",
        DJANGO_DEBUG="0",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        ANTHROPIC_API_KEY=emulator.api_key,
        ANTHROPIC_BASE_URL=emulator.base_url,
        CLAUDE_AGENT_ID=agent_id,
        CLAUDE_ENVIRONMENT_ID=emulator.add_environment(),
        NO_PROXY="127.0.0.1,localhost",  # a proxy in the test's environment must not see this
    )
    return env


@contextmanager
def site_process(code: str, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[str]]:
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=EXAMPLE,  # python -c puts the working directory on sys.path
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        yield process
    finally:
        process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()


@contextmanager
def wsgi_site(emulator: ClaudeEmulator, agent_id: str, log: Path) -> Iterator[int]:
    """The site behind Django's threaded WSGI server; yields its port."""
    with site_process(WSGI_SERVER, site_environment(emulator, agent_id), log) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip().isdigit(), f"the server did not start:\n{log.read_text()}"
        yield int(line)


def post_json(port: int, path: str, payload: Any) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", path, json.dumps(payload), {"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def sse_events(body: str) -> list[tuple[str, Any]]:
    """``(event, data)`` of each frame (comments skipped)."""
    found = re.findall(r"^event: (\w+)\ndata: (.*)$", body, flags=re.MULTILINE)
    return [(name, json.loads(data)) for name, data in found]


def event_types(emulator: ClaudeEmulator, session_id: str) -> list[str]:
    return [event["type"] for event in emulator.events(session_id)]


def test_sixteen_clients_at_once_each_get_their_own_answer(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    # No answer is given before all sixteen runs have reached the service: one after
    # another, the first would wait here in vain and its turn would fail.
    all_runs_open = Barrier(CLIENTS, timeout=120)

    def answer_once_all_are_open(inputs: list[str]) -> str:
        all_runs_open.wait()
        return squared(inputs)

    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent([Turn(text=answer_once_all_are_open)])
        with wsgi_site(emulator, agent_id, log) as port, ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(
                pool.map(
                    lambda n: post_json(port, "/ask", {"prompt": f"What is {n} squared?"}),
                    range(CLIENTS),
                )
            )
    for n, (status, body) in enumerate(answers):
        assert status == 200, body
        assert body["terminal"] == "end_turn"
        assert body["text"] == f"{n} squared is {n * n}"
    assert len({body["session_id"] for _, body in answers}) == CLIENTS
    assert not all_runs_open.broken
    assert POOL_FULL not in log.read_text()


def test_the_stream_view_sends_the_run_as_server_sent_events(tmp_path: Path) -> None:
    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent(WEATHER)
        with wsgi_site(emulator, agent_id, tmp_path / "server.log") as port:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
            try:
                connection.request("GET", "/stream?q=Weather%20in%20Rome%3F")
                response = connection.getresponse()
                content_type = response.getheader("content-type")
                body = response.read().decode()
            finally:
                connection.close()
        events = sse_events(body)
        assert content_type == "text/event-stream"
        assert body.startswith(": stream open\n\n")
        texts: dict[str, str] = {}
        for name, data in events:
            if name == "text":
                texts[data["message"]] = texts.get(data["message"], "") + data["text"]
        assert list(texts.values()) == [
            "Checking Paris.",
            "Now Rome.",
            "Rome: 18 degrees and sunny in Rome",
        ]
        tools = [data["input"]["city"] for name, data in events if name == "tool"]
        assert tools == ["Paris", "Rome"]
        name, done = events[-1]
        assert name == "done"
        assert done["terminal"] == "end_turn"
        assert "user.interrupt" not in event_types(emulator, done["session_id"])


def test_a_client_leaving_mid_stream_interrupts_the_remote_turn(tmp_path: Path) -> None:
    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent(WEATHER)
        with wsgi_site(emulator, agent_id, tmp_path / "server.log") as port:
            client = socket.create_connection(("127.0.0.1", port), timeout=15)
            try:
                client.sendall(b"GET /stream?q=Weather HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                received = b""
                while b"event: text" not in received:
                    chunk = client.recv(65536)
                    assert chunk, received
                    received += chunk
            finally:
                # A reset, not a FIN: the server's next write fails at once.
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
            (session_id,) = emulator.session_ids()
            assert emulator.wait_until(
                lambda: "user.interrupt" in event_types(emulator, session_id), timeout=30
            ), event_types(emulator, session_id)
        # The run stopped there: the last turn never played.
        texts = [e.get("content") for e in emulator.events(session_id)]
        assert not any("Rome: " in json.dumps(text) for text in texts)


def test_the_async_views_answer_and_stop_on_disconnect_under_asgi(tmp_path: Path) -> None:
    log = tmp_path / "asgi.log"
    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent(WEATHER)
        env = site_environment(emulator, agent_id)
        with site_process(ASGI_DRIVER, env, log) as process:
            assert process.stdout is not None
            ask = json.loads(process.stdout.readline() or "null")
            assert ask is not None, log.read_text()
            stream = json.loads(process.stdout.readline() or "null")
            assert stream is not None, log.read_text()
            asked, streamed = emulator.session_ids()
            assert emulator.wait_until(
                lambda: "user.interrupt" in event_types(emulator, streamed), timeout=30
            ), event_types(emulator, streamed)
    assert ask == {
        "session_id": asked,
        "terminal": "end_turn",
        "text": "Rome: 18 degrees and sunny in Rome",
        "usage": {"input_tokens": 30, "output_tokens": 15},
    }
    assert "user.interrupt" not in event_types(emulator, asked)
    # It streamed (text before the run ended) and stopped there, not after a whole run.
    assert "event: text" in stream["body"]
    assert "event: done" not in stream["body"]
    assert "StreamingHttpResponse must consume" not in log.read_text()
