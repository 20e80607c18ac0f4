"""The built-in agent toolset (``agent_toolset_20260401``), answered on this machine.

In a self-hosted environment the agent's ``bash``, ``read``, ``write``, ``edit``,
``glob`` and ``grep`` calls come to the client to run. :class:`AgentToolset` is the
handler a worker gives them to: it satisfies the :class:`~req_managed_agents.tools.Handler`
protocol, names the calls it answers in ``names``, and answers every call - a refused
path, a bad field, a tool it does not know - with a result, never an exception.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import ToolResult
from req_managed_agents.tools._handler import ToolContext, ToolOutput
from req_managed_agents.toolset._bash import BashTool, shell_environment
from req_managed_agents.toolset._failure import ToolFailure, describe_os_error
from req_managed_agents.toolset._files import FileTools
from req_managed_agents.toolset._limits import DEFAULT_SHELL_LIMITS, ShellLimits, shell_launch
from req_managed_agents.toolset._paths import Workdir
from req_managed_agents.toolset._sandbox import (
    UnsandboxedWarning,
    choose_sandbox,
    shell_path,
    unconfined_message,
)
from req_managed_agents.toolset._search import GREP_TIMEOUT, SearchTools

__all__ = ["AGENT_TOOL_NAMES", "DEFAULT_BASH_TIMEOUT", "DEFAULT_MAX_OUTPUT", "AgentToolset"]

logger = get_logger(__name__)

AGENT_TOOL_NAMES = frozenset({"bash", "read", "write", "edit", "glob", "grep"})
"""The tools of ``agent_toolset_20260401`` that a self-hosted environment runs."""
DEFAULT_BASH_TIMEOUT = 295.0
"""Seconds a ``bash`` call may run, as in the reference worker (a call's ``timeout_ms``
may ask for less, never more)."""
DEFAULT_MAX_OUTPUT = 100_000
"""Characters one answer may hold; what is cut says so."""
MIN_MAX_OUTPUT = 1_000
"""The smallest ``max_output``: room for a useful answer and the note that it was cut."""

_Tool = Callable[[Mapping[str, Any], ToolContext], ToolResult]


class AgentToolset:
    """Answers the built-in agent tools inside ``workdir``.

    - The file tools (``read``, ``write``, ``edit``, ``glob``, ``grep``) are confined to
      ``workdir`` by their own path walk: no absolute path elsewhere, no ``..``, no
      symbolic link that leads out, whatever the sandbox.
    - ``bash`` runs one ``bash -c`` per call in ``workdir`` with a scrubbed environment
      (``PATH``, locale, ``TERM``, ``HOME=workdir`` and ``env``), in a process group
      killed at ``bash_timeout`` seconds or when the call is cancelled. ``sandbox``
      says where: ``"bwrap"`` confines it with bubblewrap (read-only system, writable
      ``workdir``, private ``/tmp``, no network unless ``network=True``) or raises
      :class:`~req_managed_agents.ConfigurationError` saying why it cannot; ``"none"``
      runs it unconfined; ``"auto"`` (the default) uses bwrap when a trial run works,
      else runs unconfined. Unconfined, it warns once, with
      :class:`UnsandboxedWarning` saying why, unless ``warn_unconfined=False`` (for an
      owner that tells a person itself: a worker logs it once for all its sessions).
      ``sandbox`` then tells which is in effect.
    - ``limits`` bound what every process of a ``bash`` call may use - processes,
      address space, file size, open files, CPU seconds (:class:`ShellLimits`; the
      defaults unless told, ``None`` for none). The process limit is the kernel's
      per-user count: inside the sandbox it counts the sandbox's processes only, so a
      fork flood fails there while other sessions go on; unconfined it counts all of
      this user's processes; and the kernel never applies it to root. They need bash
      (a system with only ``sh`` runs with ``limits=None``).
    - ``max_output`` bounds every answer, in characters.

    Calls may come from several threads at once; the toolset holds no state between
    them (nothing persists from one ``bash`` call to the next), and ``write`` and
    ``edit`` of one file - through this toolset or any other in the process - take
    turns, so each change lands.
    """

    names: frozenset[str] = AGENT_TOOL_NAMES

    def __init__(
        self,
        workdir: str | os.PathLike[str],
        *,
        sandbox: Literal["auto", "bwrap", "none"] = "auto",
        network: bool = False,
        bash_timeout: float = DEFAULT_BASH_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        env: Mapping[str, str] | None = None,
        limits: ShellLimits | None = DEFAULT_SHELL_LIMITS,
        warn_unconfined: bool = True,
    ) -> None:
        if os.name != "posix":
            raise ConfigurationError("AgentToolset needs a POSIX system")
        if not isinstance(network, bool):
            raise ConfigurationError(f"network must be True or False, not {network!r}")
        if (
            isinstance(bash_timeout, bool)
            or not isinstance(bash_timeout, (int, float))
            or not math.isfinite(bash_timeout)
            or bash_timeout <= 0
        ):
            raise ConfigurationError(
                f"bash_timeout must be a positive number of seconds, not {bash_timeout!r}"
            )
        if (
            isinstance(max_output, bool)
            or not isinstance(max_output, int)
            or max_output < MIN_MAX_OUTPUT
        ):
            raise ConfigurationError(
                f"max_output must be an integer of at least {MIN_MAX_OUTPUT}, not {max_output!r}"
            )
        place = Workdir(workdir)
        environment = shell_environment(place.real, env)
        launch = shell_launch(shell_path(), limits)
        if not isinstance(cast(object, sandbox), str):
            raise ConfigurationError(f"sandbox must be a string, not {type(sandbox).__name__}")
        chosen = choose_sandbox(sandbox, place.real, network=network)
        if chosen.mode == "none" and warn_unconfined:
            message = unconfined_message("AgentToolset", chosen.unconfined_because)
            warnings.warn(message, UnsandboxedWarning, stacklevel=2)
        self._workdir, self._sandbox, self._network = place, chosen, network
        self._limits = limits
        files = FileTools(place, max_output)
        search = SearchTools(place, max_output, min(GREP_TIMEOUT, float(bash_timeout)))
        bash = BashTool(place.real, chosen, launch, environment, float(bash_timeout), max_output)
        self._tools: dict[str, _Tool] = {
            "bash": bash,
            "read": files.read,
            "write": files.write,
            "edit": files.edit,
            "glob": search.glob,
            "grep": search.grep,
        }

    @property
    def workdir(self) -> str:
        """The working directory, every link in it resolved."""
        return self._workdir.real

    @property
    def sandbox(self) -> Literal["bwrap", "none"]:
        """Where ``bash`` runs: ``"bwrap"`` (confined) or ``"none"`` (unconfined)."""
        return self._sandbox.mode

    @property
    def unconfined_because(self) -> str:
        """Why ``bash`` runs unconfined (``sandbox='none'`` asked for, bwrap missing, or
        refused the user namespaces it needs); empty when it is confined."""
        return self._sandbox.unconfined_because

    @property
    def network(self) -> bool:
        """Whether ``bash`` can reach the network: as asked inside the sandbox, always
        outside it."""
        return self._network or self._sandbox.mode == "none"

    @property
    def limits(self) -> ShellLimits | None:
        """The limits of every ``bash`` call's processes, as given (``None``: none)."""
        return self._limits

    def __repr__(self) -> str:
        return f"AgentToolset({self.workdir!r}, sandbox={self.sandbox!r})"

    def handle_tool_call(
        self, name: str, input: Mapping[str, Any], context: ToolContext
    ) -> ToolOutput:
        """Answer one call of a built-in tool; every failure is an ``is_error`` result."""
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(sorted(self.names))
            return _error(context, f"this toolset has no tool {name!r}; it answers {known}")
        if not isinstance(cast(object, input), Mapping):  # typed, but from JSON
            return _error(context, f"{name}: the input must be an object")
        try:
            return tool(input, context)
        except ToolFailure as failure:
            return _error(context, f"{name}: {failure}")
        except OSError as exc:
            return _error(context, f"{name}: {describe_os_error(exc)}")
        except Exception as exc:  # a defect of ours: the agent gets its type, the log the rest
            logger.warning("the %s tool failed unexpectedly", name, exc_info=True)
            return _error(context, f"{name}: failed unexpectedly ({type(exc).__name__})")


def _error(context: ToolContext, message: str) -> ToolResult:
    return ToolResult(context.tool_use_id, message, is_error=True)
