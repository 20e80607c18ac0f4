"""Fixtures shared by the whole suite: a private ``redis-server`` (for the Redis store, the
ledger and the README's examples), started once per test session on a free loopback port,
never a system one, and stopped at the end."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.redis import RedisServer, redis_binary

# A suite started in the background by a non-interactive shell (`nohup ... &`, a cron job)
# begins with Ctrl-C ignored, and every process it starts inherits that: the tests that press
# Ctrl-C, as a terminal does for its foreground job, would meet processes deaf to it. Give
# this process (each pytest worker) the handling a terminal's job has; its children then
# start with it too.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _signal_state() -> tuple[object, ...]:
    return (
        signal.getsignal(signal.SIGINT),
        signal.getsignal(signal.SIGTERM),
        signal.pthread_sigmask(signal.SIG_BLOCK, []),
    )


@pytest.fixture(autouse=True)
def _signals_left_as_found() -> Iterator[None]:
    """Every test leaves Ctrl-C and SIGTERM as it found them: a handler or a blocked signal
    left behind breaks every later test of that process that presses Ctrl-C, and the
    children it starts inherit a blocked one."""
    before = _signal_state()
    yield
    assert _signal_state() == before, "the test left the process's signal handling changed"


# How long the threads a test started get, all together, to end on their own after it.
THREADS_END_WITHIN = 5.0


def _library_threads() -> set[threading.Thread]:
    """The library's client-side threads: every one is named ``rma-...`` (the emulators'
    are named after their class)."""
    return {thread for thread in threading.enumerate() if thread.name.startswith("rma-")}


@pytest.fixture(autouse=True)
def _library_threads_ended() -> Iterator[None]:
    """Every test ends the library threads it started (a module's fixture starts those it
    keeps before the tests, so they are not counted): one left running - a run's thread, a
    feed, a lease renewer - goes on sending requests, drawing retry jitter and sleeping in
    later tests of this process, where a ``responses`` mock counts its calls and a patched
    pause speeds its retries. Those still ending get a bounded join; only they are waited on."""
    before = _library_threads()
    yield
    deadline = time.monotonic() + THREADS_END_WITHIN
    running = []
    for thread in _library_threads() - before:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            running.append(thread.name)
    assert not running, f"the test left library threads running: {sorted(running)}"


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
