"""What an :class:`~req_managed_agents.worker.EnvironmentWorker` is told, checked once.

Every argument is checked before anything is sent, and a bad one is a
:class:`~req_managed_agents.ConfigurationError` naming it: a worker is a long-running
process, and it should fail at its start rather than on its first work item.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from req_managed_agents._redact import Secret, get_logger
from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
from req_managed_agents.drivers._options import ConfirmPolicy
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers.claude._bedrock import ClaudeManagedAgentsBedrock
from req_managed_agents.providers.claude._provider import ClaudeManagedAgents
from req_managed_agents.providers.claude.api._core import segment
from req_managed_agents.tools._handler import Handler
from req_managed_agents.toolset import DEFAULT_SHELL_LIMITS, AgentToolset, ShellLimits
from req_managed_agents.toolset._sandbox import SANDBOXES, unconfined_message
from req_managed_agents.transport._config import credential, required_setting

__all__ = ["ENVIRONMENT_KEY_VARIABLE", "ToolsetFactory", "WorkerSettings", "check_settings"]

ENVIRONMENT_KEY_VARIABLE = "ANTHROPIC_ENVIRONMENT_KEY"
"""Where the environment key comes from when none is passed (as the official SDK reads it)."""

ToolsetFactory = Callable[[Path], Handler]
"""Makes the handler of the built-in tools for one session, given the session's folder."""

_log = get_logger(__name__)
_WORKER_ID = re.compile(r"[!-~]{1,128}")
_UNFINISHED = ("error", "rerun", "raise")
_CONFIRM = ("raise", "allow", "deny")


@dataclass(frozen=True)
class WorkerSettings:
    """A worker's checked arguments (see :class:`EnvironmentWorker` for each)."""

    provider: ClaudeManagedAgents
    environment_id: str
    environment_key: Secret
    workdir: Path
    handler: Handler | None
    toolset: ToolsetFactory
    sandbox: str | None  # where the default toolset's bash runs; None with toolset=
    max_sessions: int
    ledger: ToolLedger
    on_unfinished: UnfinishedPolicy
    idle_grace: float
    worker_id: str
    tool_timeout: float | None
    confirm: ConfirmPolicy


def check_settings(
    provider: object,
    environment_id: object,
    *,
    environment_key: object,
    handler: object,
    workdir: object,
    toolset: object,
    sandbox: object,
    network: object,
    limits: object,
    max_sessions: object,
    ledger: object,
    on_unfinished: object,
    idle_grace: object,
    worker_id: object,
    tool_timeout: object,
    confirm: object,
) -> WorkerSettings:
    """The settings, or a :class:`ConfigurationError` naming the first bad argument."""
    if isinstance(provider, ClaudeManagedAgentsBedrock):
        raise ConfigurationError(
            "provider: Claude on Amazon Bedrock has no self-hosted environments; "
            "pass a ClaudeManagedAgents"
        )
    if not isinstance(provider, ClaudeManagedAgents):
        raise ConfigurationError(
            f"provider must be a ClaudeManagedAgents, not {type(provider).__name__}"
        )
    if not isinstance(environment_id, str) or not environment_id:
        raise ConfigurationError("environment_id must be a non-empty string")
    try:
        segment(environment_id)
    except ValueError as exc:
        raise ConfigurationError(f"environment_id: {exc}") from None
    if environment_key is not None and not isinstance(environment_key, str):
        raise ConfigurationError("environment_key must be a string")
    what = "environment key"
    key = credential(required_setting(environment_key, ENVIRONMENT_KEY_VARIABLE, what), what)
    if handler is not None and not isinstance(handler, Handler):
        raise ConfigurationError(
            f"handler must have handle_tool_call(name, input, context), "
            f"not be a {type(handler).__name__}"
        )
    folder = _workdir(workdir)
    factory, mode = _toolset(toolset, folder, sandbox, network, limits)
    if ledger is not None and not isinstance(ledger, ToolLedger):
        raise ConfigurationError(f"ledger must be a ToolLedger, not {type(ledger).__name__}")
    if on_unfinished not in _UNFINISHED:
        raise ConfigurationError(
            f"on_unfinished must be one of {_UNFINISHED}, not {on_unfinished!r}"
        )
    if confirm not in _CONFIRM:
        raise ConfigurationError(f"confirm must be one of {_CONFIRM}, not {confirm!r}")
    return WorkerSettings(
        provider=provider,
        environment_id=environment_id,
        environment_key=Secret(key),
        workdir=folder,
        handler=handler,
        toolset=factory,
        sandbox=mode,
        max_sessions=_count("max_sessions", max_sessions),
        ledger=ledger if isinstance(ledger, ToolLedger) else ToolLedger(),
        on_unfinished=cast("UnfinishedPolicy", on_unfinished),
        idle_grace=_seconds("idle_grace", idle_grace, zero=True),
        worker_id=_worker_id(worker_id),
        tool_timeout=None if tool_timeout is None else _seconds("tool_timeout", tool_timeout),
        confirm=cast("ConfirmPolicy", confirm),
    )


def _workdir(workdir: object) -> Path:
    """The folder the sessions' folders go in: made (0700) if missing, links resolved."""
    if not isinstance(workdir, (str, os.PathLike)) or not str(workdir):
        raise ConfigurationError("workdir must be a path to a folder")
    path = Path(workdir).expanduser()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(f"workdir {str(path)!r}: {exc.strerror or exc}") from None
    if not path.is_dir():
        raise ConfigurationError(f"workdir {str(path)!r} is not a folder")
    return path.resolve()


def _toolset(
    toolset: object, workdir: Path, sandbox: object, network: object, limits: object
) -> tuple[ToolsetFactory, str | None]:
    """The built-in tools' maker. The default's sandbox is chosen once, here: bwrap is tried
    on the workdir (a raise for ``"bwrap"`` that cannot work), and every session's toolset
    then uses what was found. Unconfined, the worker says so once, in one log record with
    the reason: a worker is a service, and its operator reads logs (a ``warnings.warn``
    would point at a line of this library and be shown once per process, not per worker)."""
    if toolset is not None:
        if not callable(toolset):
            raise ConfigurationError("toolset must be a callable taking a session's folder")
        if sandbox != "auto" or network is not False or limits != DEFAULT_SHELL_LIMITS:
            raise ConfigurationError(
                "sandbox, network and limits shape the default toolset; with toolset= set "
                "them there"
            )
        return cast("ToolsetFactory", toolset), None
    if sandbox not in SANDBOXES:
        raise ConfigurationError(f"sandbox must be one of {SANDBOXES}, not {sandbox!r}")
    if not isinstance(network, bool):
        raise ConfigurationError(f"network must be True or False, not {network!r}")
    shell_limits = cast("ShellLimits | None", limits)  # AgentToolset checks it
    tried = AgentToolset(
        workdir,
        sandbox=cast(Any, sandbox),
        network=network,
        limits=shell_limits,
        warn_unconfined=False,
    )
    mode = tried.sandbox
    if tried.unconfined_because:
        _log.warning(unconfined_message("this worker", tried.unconfined_because))

    def default_toolset(folder: Path) -> Handler:
        return AgentToolset(
            folder, sandbox=mode, network=network, limits=shell_limits, warn_unconfined=False
        )

    return default_toolset, mode


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a whole number of at least 1, not {value!r}")
    return value


def _seconds(name: str, value: object, *, zero: bool = False) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        least = "zero or more" if zero else "more than zero"
        raise ConfigurationError(f"{name} must be a number of seconds, {least}, not {value!r}")
    return float(value)


def _worker_id(worker_id: object) -> str:
    """The id polls carry (the queue counts workers by it): unique per process by default."""
    if worker_id is None:
        host = re.sub(r"[^!-~]", "-", socket.gethostname())[:64] or "host"
        return f"{host}-{os.getpid()}-{secrets.token_hex(4)}"
    if not isinstance(worker_id, str) or not _WORKER_ID.fullmatch(worker_id):
        raise ConfigurationError(
            "worker_id must be 1 to 128 printable ASCII characters without spaces"
        )
    return worker_id
