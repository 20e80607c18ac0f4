"""``rma`` as a person sees it: a real process whose standard input, output and error are a
pseudo-terminal, and the bytes it draws there (carriage returns and escapes included)."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["Terminal", "plain_process"]

COLUMNS = 120


class Terminal:
    """``python -m req_managed_agents ARGV`` on a pseudo-terminal of :data:`COLUMNS` columns.

    ``screen`` is everything drawn so far, as text (the terminal turns each ``\\n`` into
    ``\\r\\n``). Reading waits on the terminal's descriptor, never on a clock alone.
    """

    def __init__(
        self, *argv: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        self._master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "req_managed_agents", *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(env if env is not None else os.environ),
            cwd=cwd,
            close_fds=True,
        )
        os.close(slave)
        self._bytes = bytearray()
        self._closed = False

    @property
    def screen(self) -> str:
        return self._bytes.decode("utf-8", errors="replace")

    def read_until(self, seen: Callable[[str], bool], timeout: float = 60.0) -> str:
        """Read until ``seen(screen)`` holds; fail with what was drawn if it never does."""
        deadline = time.monotonic() + timeout
        while not seen(self.screen):
            left = deadline - time.monotonic()
            if left <= 0 or self._closed:
                raise AssertionError(f"never drawn; the screen holds:\n{self.screen!r}")
            self._read(left)
        return self.screen

    def signal(self, number: int = signal.SIGINT) -> None:
        self.process.send_signal(number)

    def wait(self, timeout: float = 60.0) -> int:
        """Read to the end of the output; the exit status."""
        deadline = time.monotonic() + timeout
        while not self._closed:
            left = deadline - time.monotonic()
            if left <= 0:
                self.process.kill()
                raise AssertionError(f"rma did not end; the screen holds:\n{self.screen!r}")
            self._read(left)
        return self.process.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        os.close(self._master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self._master], [], [], min(timeout, 1.0))
        if not ready:
            return
        try:
            chunk = os.read(self._master, 65536)
        except OSError as error:  # Linux: EIO once every writer has closed the terminal
            if error.errno != errno.EIO:
                raise
            chunk = b""
        if chunk:
            self._bytes += chunk
        else:
            self._closed = True


def plain_process(
    *argv: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``rma ARGV`` with its output going to pipes, as under a log collector."""
    return subprocess.run(
        [sys.executable, "-m", "req_managed_agents", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env if env is not None else os.environ),
        stdin=subprocess.DEVNULL,
    )
