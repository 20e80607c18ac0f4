"""What one ``bash`` call may use: processes, memory, file size, open files, CPU time.

The limits are the kernel's resource limits (``setrlimit``), set soft and hard alike -
so a command cannot raise them again, unless it runs as root outside the sandbox - by
the shell itself before the command starts: the call runs ``bash -c 'ulimit ...; exec
bash -c "$1"'``, inside the sandbox when there is one. Why this way:

- ``subprocess``'s ``preexec_fn`` would run Python between ``fork`` and ``exec`` in a
  child of a process with many threads, which the Python documentation warns may
  deadlock (a lock another thread held at the fork is never released in the child).
- ``resource.prlimit`` on the child's pid after it started races it: by the time
  ``Popen`` returns, the command runs and may already have forked.
- The shell's own ``ulimit`` runs in a fresh single-threaded process, after ``exec``,
  before any of the command does, needs nothing the system lacks (bash is there, inside
  the sandbox too) and - set inside the sandbox rather than on ``bwrap`` - counts
  processes per sandbox (below).

``processes`` is ``RLIMIT_NPROC``, which the kernel counts per user, threads included.
Inside the bwrap sandbox (a user namespace of its own, Linux 5.14 or later) it counts
only the sandbox's processes: a fork flood stops at the limit while other sessions fork
on. Unconfined it counts all of the user's processes - the worker's threads and other
sessions' commands too - so a flood there stalls every session's forks until its call
ends (the call's process group is killed then). The kernel never applies it to root
(uid 0), sandboxed or not: a root worker's commands are bounded in processes only by the
call's timeout, and this module says so once in the log.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, fields

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ConfigurationError

__all__ = ["DEFAULT_SHELL_LIMITS", "ShellLimits", "shell_launch"]

logger = get_logger(__name__)

_MIB = 1024 * 1024
_GIB = 1024 * _MIB

# field: (bash's ulimit flag, the RLIMIT_ name, bytes per unit of the flag, least value)
_ULIMIT = {
    "processes": ("-u", "RLIMIT_NPROC", 1, 1),
    "address_space": ("-v", "RLIMIT_AS", 1024, _MIB),
    "file_size": ("-f", "RLIMIT_FSIZE", 1024, _MIB),  # 1024-byte blocks outside POSIX mode
    "open_files": ("-n", "RLIMIT_NOFILE", 1, 1),
    "cpu_seconds": ("-t", "RLIMIT_CPU", 1, 1),
}


@dataclass(frozen=True)
class ShellLimits:
    """The resource limits of every process a ``bash`` call starts (``None``: the one
    this process has, left alone). A limit above what this process may have is lowered
    to that.

    - ``processes``: processes and threads, the shell's own among them (counted per
      sandbox; unconfined, for the whole user; never for root - see
      :class:`~req_managed_agents.toolset.AgentToolset`).
    - ``address_space``: bytes of virtual memory each process may map (whole KiB);
      an allocation past it fails.
    - ``file_size``: the largest file a process may write, in bytes (whole KiB).
    - ``open_files``: file descriptors each process may hold.
    - ``cpu_seconds``: CPU time each process may use, then it is killed; the call's
      timeout bounds wall time, this bounds a process that escaped the call.
    """

    processes: int | None = 1024
    address_space: int | None = 8 * _GIB
    file_size: int | None = 4 * _GIB
    open_files: int | None = 4096
    cpu_seconds: int | None = 3600

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            least = _ULIMIT[field.name][3]
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                unit = " bytes" if least == _MIB else ""
                raise ConfigurationError(
                    f"ShellLimits.{field.name} must be None or a whole number of at least "
                    f"{least}{unit}, not {value!r}"
                )


DEFAULT_SHELL_LIMITS = ShellLimits()
"""The limits of ``bash`` unless told otherwise."""


def shell_launch(shell: str, limits: ShellLimits | None) -> tuple[str, ...]:
    """The words that run a command (the word after them) in ``shell`` under ``limits``."""
    if limits is not None and not isinstance(limits, ShellLimits):
        raise ConfigurationError(f"limits must be a ShellLimits or None, not {limits!r}")
    options: list[str] = []
    for name, (flag, resource_name, unit, _) in _ULIMIT.items():
        value = None if limits is None else getattr(limits, name)
        if value is not None:
            options += [flag, str(min(value, _hard_limit(resource_name)) // unit)]
    if not options:
        return (shell, "-c")
    if os.path.basename(os.path.realpath(shell)) != "bash":
        raise ConfigurationError(
            f"the shell limits need bash, and this system's shell is {shell}: install bash, "
            "or pass limits=None to run commands without them"
        )
    if limits is not None and limits.processes is not None and os.getuid() == 0:
        _warn_root_processes()
    script = (
        f"set +o posix; ulimit -HS {' '.join(options)} || "
        "{ echo 'the limits of this call could not be set' >&2; exit 126; }; "
        'exec "$0" -c "$1"'
    )
    return (shell, "-c", script, shell)


def _hard_limit(resource_name: str) -> int:
    """This process's hard limit (no command can be given more), or a huge number."""
    import resource  # POSIX only: AgentToolset refuses other systems before this

    hard = resource.getrlimit(getattr(resource, resource_name))[1]
    return 2**63 if hard == resource.RLIM_INFINITY or hard < 0 else hard


@functools.cache
def _warn_root_processes() -> None:
    logger.warning(
        "this process runs as root, whose processes the kernel never counts against a "
        "limit: ShellLimits.processes does not bound bash's processes (only each call's "
        "timeout does). Run the worker as an unprivileged user to bound them."
    )
