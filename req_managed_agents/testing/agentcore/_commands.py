"""Commands for the AgentCore emulator: InvokeAgentRuntimeCommand's runner and its stream.

A command runner is called as ``runner(command, timeout)`` and returns a
:class:`CommandOutput`; the default one, :class:`_ShellRunner`, runs ``/bin/sh -c`` in a
private working directory. :func:`_stream_command` runs a command and streams what it
reports: ``contentStart``, the stdout then the stderr in ``contentDelta`` pieces, and
``contentStop`` with the exit code and ``COMPLETED`` or ``TIMED_OUT``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from req_managed_agents.testing.agentcore._wire import _event, _exception, _write_last

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Callable

    from req_managed_agents.testing.server import ChunkedStream

logger = logging.getLogger(__name__)

_MAX_COMMAND_TIMEOUT = 3600  # seconds; the model documents it but does not constrain it
_DEFAULT_COMMAND_TIMEOUT = 300.0
_OUTPUT_PIECE = 8 * 1024  # bytes of UTF-8 per contentDelta


@dataclass(frozen=True)
class CommandRecord:
    """A well-formed InvokeAgentRuntimeCommand request; ``arn`` is the one in its path."""

    arn: str
    runtime_session_id: str
    command: str
    timeout: int | None


@dataclass(frozen=True)
class CommandOutput:
    """What a command runner returns; ``timed_out`` reports ``TIMED_OUT`` to the client."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    timed_out: bool = False


def _utf8_pieces(text: str, limit: int) -> Iterator[str]:
    """``text`` cut into pieces of at most ``limit`` UTF-8 bytes, never inside a character."""
    data = text.encode()
    start = 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # a continuation byte
            end -= 1
        yield data[start:end].decode()
        start = end


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # it ended on its own
            os.killpg(process.pid, signal.SIGKILL)


class _ShellRunner:
    """The default command runner: ``/bin/sh -c`` in a private working directory.

    Each command is its own process group, so a timeout (or closing the emulator) kills what
    the shell started too, instead of leaving it running with the output pipes open.
    """

    def __init__(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="agentcore-emulator-")
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def __call__(self, command: str, timeout: float | None) -> CommandOutput:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": self.workdir,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        with self._lock:
            if self._closed:
                raise RuntimeError("the emulator is closed")
            process = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self._running.add(process)
        try:
            limit = _DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout
            stdout, stderr = process.communicate(timeout=limit)
            return CommandOutput(stdout, stderr, process.returncode)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            stdout, stderr = process.communicate()
            return CommandOutput(stdout, stderr, -1, timed_out=True)
        finally:
            with self._lock:
                self._running.discard(process)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            running = list(self._running)
        for process in running:
            _kill_group(process)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _stream_command(
    stream: ChunkedStream,
    runner: Callable[[str, float | None], CommandOutput],
    command: str,
    timeout: int | None,
) -> None:
    """Run ``command`` and stream its output, as chunk events, on an open stream."""
    if not stream.write(_event("chunk", {"contentStart": {}})):
        return
    try:
        output = runner(command, None if timeout is None else float(timeout))
    except Exception as error:
        logger.exception("the command runner raised")
        message = f"the command failed to run: {error!r}"
        _write_last(stream, _exception("internalServerException", message))
        return
    for name, data in (("stdout", output.stdout), ("stderr", output.stderr)):
        for piece in _utf8_pieces(data.decode("utf-8", errors="replace"), _OUTPUT_PIECE):
            if not stream.write(_event("chunk", {"contentDelta": {name: piece}})):
                return
    status = "TIMED_OUT" if output.timed_out else "COMPLETED"
    stop = {"contentStop": {"exitCode": output.exit_code, "status": status}}
    _write_last(stream, _event("chunk", stop))
