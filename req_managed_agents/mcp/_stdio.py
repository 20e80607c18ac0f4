"""The stdio transport: the server is a child process speaking newline-delimited JSON-RPC
on its stdin and stdout; its stderr is its log, forwarded line by line to ``logging``.

One thread per child (``rma-mcp-<name>``) starts it and then reads both of its pipes until
they close. Starting the child on that thread matters on Linux: the child is armed with
``PR_SET_PDEATHSIG`` (SIGKILL), which fires when the *thread* that forked it ends - so the
child dies when we stop reading it, and with this process however it ends, SIGKILL
included. Elsewhere the fallback is the pipe: when this process dies its end of the
child's stdin closes, and an MCP stdio server exits at the end of its input.

The child gets a session (and process group) of its own, so a Ctrl-C at the terminal
reaches only this process, which cancels its calls and then stops the child itself; and
stopping it (stdin closed, a bounded wait, SIGTERM, SIGKILL) reaches whatever it started
in its group, such as the ``node`` behind an ``npx``.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import IO, Any

from req_managed_agents.mcp import _wire as wire
from req_managed_agents.mcp._connection import Connection
from req_managed_agents.mcp._errors import McpConnectionLost, McpServerError
from req_managed_agents.transport._json import MAX_BODY_BYTES, loads

__all__ = ["StdioTransport"]

EXIT_WAIT = 2.0
"""How long a server may take to exit on its own once its stdin is closed."""
TERMINATE_WAIT = 2.0
"""How long after SIGTERM before SIGKILL."""
MAX_LINE_BYTES = MAX_BODY_BYTES
"""The longest message a server may send: a line that grows past it ends the connection."""
STDERR_KEPT = 20
"""How many of the server's last stderr lines an error about its exit quotes."""

_PR_SET_PDEATHSIG = 1
_READ_SIZE = 65536


def _die_with_this_thread() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when its starting thread ends;
    ``None`` where there is no ``prctl``. It only calls a function bound before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return arm


class StdioTransport:
    """One child process and the thread reading it."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str | None,
        connection: Connection,
        log: logging.Logger,
    ) -> None:
        self._argv = list(argv)
        self._env = dict(env)
        self._cwd = cwd
        self._connection = connection
        self._log = log
        self._child: subprocess.Popen[bytes] | None = None
        self._spawn_error: OSError | None = None
        self._spawned = threading.Event()
        self._closing = threading.Event()
        self._write_lock = threading.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_KEPT)
        self._reader = threading.Thread(
            target=self._run, name=f"rma-mcp-{connection.server}", daemon=True
        )

    @property
    def pid(self) -> int | None:
        """The child's process id, once started."""
        return self._child.pid if self._child is not None else None

    def open(self, timeout: float) -> None:
        """Start the child (on the reader thread); raise if it cannot be started."""
        self._reader.start()
        if not self._spawned.wait(timeout):
            raise McpServerError(f"could not start {self._argv[0]!r} in time", server=self._name)
        if self._spawn_error is not None:
            raise McpServerError(
                f"could not start {self._argv[0]!r}: {self._spawn_error}", server=self._name
            )

    @property
    def _name(self) -> str:
        return self._connection.server

    def send(self, message: dict[str, Any]) -> None:
        """Write one line to the child's stdin, never blocking past the write deadline."""
        data = wire.encode_line(message)
        with self._write_lock:
            child = self._child
            if child is None or child.stdin is None or self._closing.is_set():
                raise McpConnectionLost("the server process is not running", server=self._name)
            try:
                _write_all(child.stdin, data, deadline=time.monotonic() + EXIT_WAIT * 15)
            except (OSError, ValueError) as error:
                broken = error
            else:
                return
        # A child that exited at once breaks the pipe before its reader has told why: wait
        # (bounded) for the reader, whose reason names the exit status and the last words.
        if self._reader is not threading.current_thread():
            self._reader.join(EXIT_WAIT)
        reason = self._connection.lost or f"the server process stopped reading ({broken})"
        raise McpConnectionLost(reason, server=self._name) from broken

    def abandon(self, request_id: int, notice: dict[str, Any]) -> None:
        """Send ``notifications/cancelled``."""
        self.send(notice)

    def close(self) -> None:
        """Stop the child: its stdin closed, then SIGTERM, then SIGKILL, each wait bounded."""
        self._closing.set()
        with self._write_lock:
            child = self._child
            if child is not None and child.stdin is not None:
                with suppress(OSError):
                    child.stdin.close()
        if child is not None:
            _stop(child)
        if self._reader.is_alive() and self._reader is not threading.current_thread():
            self._reader.join(EXIT_WAIT)

    def _run(self) -> None:
        try:
            self._child = subprocess.Popen(
                self._argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                start_new_session=True,
                preexec_fn=_die_with_this_thread(),  # only calls prctl, bound before the fork
                bufsize=0,
            )
        except OSError as error:
            self._spawn_error = error
            self._spawned.set()
            return
        self._spawned.set()
        child = self._child
        try:
            self._read(child)
        except Exception:
            self._log.exception("reading MCP server %r failed", self._name)
        _stop(child)
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
        if self._closing.is_set():
            reason = "the server was closed"
        else:
            reason = f"the server process exited (status {child.returncode})"
            if self._stderr:
                reason += "; its last words: " + " | ".join(self._stderr)
            self._log.warning("MCP server %r: %s", self._name, reason)
        self._connection.fail(reason)

    def _read(self, child: subprocess.Popen[bytes]) -> None:
        pending = {"out": bytearray(), "err": bytearray()}
        with selectors.DefaultSelector() as selector:
            for pipe, key in ((child.stdout, "out"), (child.stderr, "err")):
                if pipe is not None:
                    selector.register(pipe, selectors.EVENT_READ, key)
            while selector.get_map():
                for ready, _ in selector.select():
                    chunk = os.read(ready.fd, _READ_SIZE)
                    if not chunk:
                        selector.unregister(ready.fileobj)
                        continue
                    buffer = pending[ready.data]
                    buffer += chunk
                    *lines, rest = buffer.split(b"\n")
                    pending[ready.data] = bytearray(rest)
                    for line in lines:
                        self._line(ready.data, line)
                    if len(rest) > MAX_LINE_BYTES:
                        self._log.error("MCP server %r sent a line too long", self._name)
                        return

    def _line(self, stream: str, line: bytes | bytearray) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        if stream == "err":
            if text:
                self._stderr.append(text)
                self._log.info("[%s] %s", self._name, text)
            return
        if not text.strip():
            return
        try:
            message = loads(text)
        except ValueError:
            self._log.warning("MCP server %r wrote a non-JSON line: %.200s", self._name, text)
            return
        self._connection.receive(message)


def _write_all(pipe: IO[bytes], data: bytes, *, deadline: float) -> None:
    """Write ``data`` to a pipe whose reader may be stuck, giving up at ``deadline``."""
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_WRITE)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise OSError("the server has not read its input for too long")


def _stop(child: subprocess.Popen[bytes]) -> None:
    """End the child and its process group, each step's wait bounded."""
    with suppress(subprocess.TimeoutExpired):
        child.wait(EXIT_WAIT)
        with suppress(OSError):  # what it started and left behind in its group
            os.killpg(child.pid, signal.SIGKILL)
        return
    for signum, wait in ((signal.SIGTERM, TERMINATE_WAIT), (signal.SIGKILL, TERMINATE_WAIT)):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)
        with suppress(subprocess.TimeoutExpired):
            child.wait(wait)
            return
