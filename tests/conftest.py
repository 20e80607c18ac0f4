"""Fixtures shared by the whole suite: a private ``redis-server`` (for the Redis store, the
ledger and the README's examples), started once per test session on a free loopback port,
never a system one, and stopped at the end."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_START_TIMEOUT = 10.0


class RedisServer:
    """One ``redis-server`` process without persistence, in its own folder."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.folder = folder
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, port: int | None = None) -> None:
        """Start on ``port`` (a fresh free one when None); wait until it answers PING."""
        for _ in range(3):  # a free port may be taken between choosing and binding it
            self.port = port or free_port()
            log = self.folder / f"redis-{self.port}.log"
            options = {
                "--port": str(self.port),
                "--bind": "127.0.0.1",
                "--save": "",  # no snapshots and no append-only file: nothing outlives it
                "--appendonly": "no",
                "--dir": str(self.folder),
            }
            with log.open("ab") as output:
                self.process = subprocess.Popen(
                    [self.binary, *(word for pair in options.items() for word in pair)],
                    cwd=self.folder,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            if self._answers(self.process):
                return
            self.stop()
            if port is not None:
                break
        raise RuntimeError(f"redis-server did not start: {log.read_text(errors='replace')}")

    def _answers(self, process: subprocess.Popen[bytes]) -> bool:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1.0)
        deadline = time.monotonic() + _START_TIMEOUT
        try:
            while process.poll() is None and time.monotonic() < deadline:
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def redis_binary() -> str:
    """The redis-server binary, or a skip saying what is missing."""
    pytest.importorskip("redis", reason="the redis package is absent: pip install '.[redis]'")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    return binary


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(redis_binary(), tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def redis_prefix() -> str:
    """A namespace no other test uses, so tests share the server without a FLUSHDB."""
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def lone_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server of the test's own, for tests that stop or restart it."""
    server = RedisServer(redis_binary(), tmp_path)
    server.start()
    yield server
    server.stop()
