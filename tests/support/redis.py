"""A private ``redis-server`` for the tests that need one: a process without persistence, in
its own folder, on a free loopback port, never a system server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

__all__ = ["RedisServer", "free_port", "redis_binary"]

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
