"""The ``bash`` tool: one ``bash -c`` per call, in the workdir, with a scrubbed environment.

Each call starts a fresh shell in the working directory (inside the sandbox when there
is one, under the limits of :mod:`._limits`), so nothing - a ``cd``, a variable, a
background job - carries over from one call to the next, and ``restart`` has nothing to
restart. The shell's environment is built, not inherited: ``PATH``, the locale,
``TERM=dumb``, ``HOME`` set to the working directory, and the toolset's ``env`` extras;
no credential of this process reaches it.

The answer follows the reference toolset: stdout then stderr (stderr first when the
command failed, since the reason is usually there), terminal escapes removed; a command
that exits non-zero, times out or is cancelled is an error, and the text ends with why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import ToolResult
from req_managed_agents.tools._handler import ToolContext
from req_managed_agents.toolset import _process
from req_managed_agents.toolset._failure import ToolFailure
from req_managed_agents.toolset._inputs import optional_flag, optional_integer, optional_text
from req_managed_agents.toolset._sandbox import SYSTEM_PATH, Sandbox

__all__ = ["BashTool", "shell_environment"]

INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""What the shell takes from this process's environment: nothing that holds a secret."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def shell_environment(workdir: str, extras: Mapping[str, str] | None) -> dict[str, str]:
    """The shell's whole environment (see the module docs); ``extras`` win."""
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.setdefault("PATH", SYSTEM_PATH)
    env.update({"HOME": workdir, "TERM": "dumb"})
    if extras is not None:
        if not isinstance(extras, Mapping):
            raise ConfigurationError(f"env must be a mapping, not {type(extras).__name__}")
        for name, value in extras.items():
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                raise ConfigurationError(f"env has a name that is not a variable name: {name!r}")
            if not isinstance(value, str) or "\x00" in value:
                raise ConfigurationError(f"env[{name!r}] must be a string without NUL bytes")
            env[name] = value
    return env


@dataclass(frozen=True)
class BashTool:
    """``bash`` over one workdir and sandbox; ``launch`` are the words that run a
    command in the shell under its limits (:func:`._limits.shell_launch`), ``timeout``
    caps every call, in seconds."""

    workdir: str
    sandbox: Sandbox
    launch: tuple[str, ...]
    env: Mapping[str, str]
    timeout: float
    max_output: int

    def __call__(self, input: Mapping[str, Any], context: ToolContext) -> ToolResult:
        """Answer a ``bash`` call."""
        command = optional_text(input, "command")
        restart = optional_flag(input, "restart")
        timeout_ms = optional_integer(input, "timeout_ms")
        if not command:
            if restart:
                return ToolResult(context.tool_use_id, "bash session restarted")
            raise ToolFailure("command is required")
        if "\x00" in command:
            raise ToolFailure("command contains a NUL byte")
        timeout = self.timeout
        if timeout_ms is not None and timeout_ms > 0:
            timeout = min(timeout, timeout_ms / 1000)
        try:
            done = _process.run(
                [*self.sandbox.prefix, *self.launch, command],
                cwd=self.workdir,
                env=self.env,
                timeout=timeout,
                cancelled=context.cancelled,
                max_output=self.max_output,
            )
        except OSError as exc:
            raise ToolFailure(
                f"the shell could not be started ({exc.strerror or 'error'})"
            ) from None
        return self._answer(done, timeout, context.tool_use_id)

    def _answer(self, done: _process.Completed, timeout: float, tool_use_id: str) -> ToolResult:
        failed = done.returncode != 0 or done.timed_out or done.cancelled
        stdout, stderr = _ANSI.sub("", done.stdout), _ANSI.sub("", done.stderr)
        first, second = (stderr, stdout) if failed else (stdout, stderr)
        text = "\n".join(part.rstrip("\n") for part in (first, second) if part.strip("\n"))
        if len(text) > self.max_output or done.dropped:
            text = (
                text[: self.max_output] + f"\n\n... [output truncated at {self.max_output} "
                "characters; redirect it to a file and read parts of it]"
            )
        text = text or "(no output)"
        if done.cancelled:
            text += "\n[cancelled: the command and everything it started were stopped]"
        elif done.timed_out:
            text += f"\n[command timed out after {timeout:g}s; it was stopped]"
        elif done.returncode < 0:
            text += f"\n[killed by signal {-done.returncode}]"
        elif done.returncode > 0:
            text += f"\n[exit code {done.returncode}]"
        return ToolResult(tool_use_id, text, is_error=failed)
