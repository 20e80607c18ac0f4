"""Running one child process to an end that is always ours to choose.

The child gets a process group of its own. The caller's thread reads its output and
watches the clock and the call's ``cancelled`` event; at the deadline, on cancellation,
and as soon as the child itself exits, the whole group is killed, so nothing the command
started in the background outlives the call (a process that makes a session of its own
escapes the group; inside the bwrap sandbox the PID namespace catches it too). The group
is killed before the child is reaped, so its id cannot have passed to another process.
Output beyond ``max_output`` characters per stream is read and dropped, never stored.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import IO

from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["Completed", "run"]

WATCH = RetryPolicy.poll(0.05, first=0.002)
"""How often a running child's deadline and cancellation are checked (while it is quiet)."""
DRAIN_WAIT = 1.0
"""How long output is still read after the group was killed, for a straggler that escaped."""

_READ_SIZE = 65536


@dataclass
class _Stream:
    """What one pipe said, up to ``limit`` bytes kept; the rest is counted."""

    limit: int
    kept: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        room = max(0, self.limit - len(self.kept))
        self.kept += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Completed:
    """How a child ended. ``returncode`` is negative for a signal (as ``subprocess``
    reports it); ``timed_out`` and ``cancelled`` say that we ended it."""

    stdout: str
    stderr: str
    returncode: int
    timed_out: bool
    cancelled: bool
    dropped: int


def run(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    cancelled: threading.Event,
    max_output: int,
    pass_fds: Sequence[int] = (),
) -> Completed:
    """Run ``argv`` until it exits, ``timeout`` seconds pass or ``cancelled`` is set."""
    # max_output characters are at most four bytes each
    streams = {"out": _Stream(4 * max_output), "err": _Stream(4 * max_output)}
    timed_out = was_cancelled = False
    with (
        subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            pass_fds=tuple(pass_fds),
        ) as child,
        selectors.DefaultSelector() as selector,
    ):
        _watch(selector, child.stdout, streams["out"])
        _watch(selector, child.stderr, streams["err"])
        deadline = time.monotonic() + timeout
        quiet = 0
        try:
            while not _has_exited(child):
                if cancelled.is_set():
                    was_cancelled = True
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                waited = min(WATCH.delay(quiet), left)
                quiet = 0 if _read_ready(selector, waited) else quiet + 1
        finally:
            _kill_group(child)  # on any way out, Ctrl-C included
        drain_until = time.monotonic() + DRAIN_WAIT
        while selector.get_map() and time.monotonic() < drain_until:
            _read_ready(selector, drain_until - time.monotonic())
        returncode = child.wait()
    return Completed(
        streams["out"].text(),
        streams["err"].text(),
        returncode,
        timed_out,
        was_cancelled,
        streams["out"].dropped + streams["err"].dropped,
    )


def _watch(selector: selectors.BaseSelector, pipe: IO[bytes] | None, stream: _Stream) -> None:
    if pipe is not None:
        selector.register(pipe, selectors.EVENT_READ, stream)


def _read_ready(selector: selectors.BaseSelector, wait: float) -> bool:
    """Read what the pipes hold, waiting up to ``wait`` seconds; whether any came."""
    if not selector.get_map():
        time.sleep(max(0.0, wait))
        return False
    ready = selector.select(max(0.0, wait))
    for key, _ in ready:
        chunk = os.read(key.fd, _READ_SIZE)
        if chunk:
            key.data.add(chunk)
        else:
            selector.unregister(key.fileobj)
    return bool(ready)


def _has_exited(child: subprocess.Popen[bytes]) -> bool:
    """Whether ``child`` ended, leaving it unreaped so its group id stays reserved."""
    if child.returncode is not None:
        return True
    if sys.platform != "linux":  # reap: a group id reused before the kill is the risk left
        try:
            child.wait(timeout=0)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        return os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
