"""Where ``bash`` runs: inside a bubblewrap (``bwrap``) sandbox, or unconfined.

The sandbox shows the command the system read-only (``/usr`` and the ``/bin``/``/lib``
links or directories, a short list from ``/etc`` - no ``/etc/shadow``, no home
directories), the working directory read-write at its own path, and a fresh ``/tmp``,
``/proc`` and ``/dev``; nothing else is writable. It unshares every namespace - the
network too, unless ``network=True`` - drops every capability (bwrap run by root keeps
them otherwise), dies with its parent and starts a new session, so the command cannot
type into our terminal. Whether bwrap works is found by running it once (containers
often forbid the user namespaces it needs); ``"auto"`` falls back to running unconfined.
:func:`choose_sandbox` says why (``Sandbox.unconfined_because``); telling a person is its
caller's part, once: a toolset built alone warns, a worker logs once for all its sessions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

from req_managed_agents.errors import ConfigurationError

__all__ = [
    "SANDBOXES",
    "Sandbox",
    "UnsandboxedWarning",
    "choose_sandbox",
    "shell_path",
    "unconfined_message",
]

SANDBOXES = ("auto", "bwrap", "none")
PROBE_TIMEOUT = 10.0
"""How long the one trial run of bwrap may take."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""Where the shell and bwrap are looked for, whatever ``PATH`` the host process has."""
SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Shown read-only as they are on the host: a directory bound, a link recreated."""
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates",
    "ca-certificates.conf",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki",
    "resolv.conf",
    "ssl",
    "timezone",
)
"""What of ``/etc`` the sandbox shows: name lookups, certificates, the dynamic linker."""
NAMESPACE_REFUSALS = ("namespace", "uid map", "unshare")
"""Words of bwrap's complaint when the system refuses it a user namespace (a container
without them, ``kernel.unprivileged_userns_clone=0``, Ubuntu's AppArmor restriction)."""


class UnsandboxedWarning(RuntimeWarning):
    """``bash`` of an :class:`~req_managed_agents.toolset.AgentToolset` runs unconfined: the
    agent's commands can read and write whatever this process can, and reach the network."""


@dataclass(frozen=True)
class Sandbox:
    """The mode in effect (``"bwrap"`` or ``"none"``), the words that put a command into it
    (empty when unconfined) and, unconfined, why."""

    mode: Literal["bwrap", "none"]
    prefix: tuple[str, ...]
    unconfined_because: str = ""


def shell_path() -> str:
    """bash where the system keeps it, else ``/bin/sh``."""
    return shutil.which("bash", path=SYSTEM_PATH) or "/bin/sh"


def choose_sandbox(sandbox: str, workdir: str, *, network: bool) -> Sandbox:
    """The sandbox ``sandbox`` asks for, tried once; see the module docs for ``"auto"``."""
    if sandbox not in SANDBOXES:
        raise ConfigurationError(f"sandbox must be one of {', '.join(SANDBOXES)}, not {sandbox!r}")
    if sandbox == "none":
        return Sandbox("none", (), "sandbox='none' was asked for")
    prefix, problem = _bwrap_prefix(workdir, network=network)
    if problem is None:
        return Sandbox("bwrap", prefix)
    if sandbox == "bwrap":
        raise ConfigurationError(f"sandbox='bwrap' cannot be used: {problem}")
    return Sandbox("none", (), problem)


def unconfined_message(who: str, why: str) -> str:
    """What a person is told, once, when ``who`` runs bash unconfined ``why``."""
    return (
        f"{who} runs bash UNCONFINED because {why}: the agent's commands can read and write "
        "anything this process can, and reach the network. Confine it with bubblewrap where "
        "user namespaces are allowed, or run this process inside a container or VM you are "
        "willing to lose."
    )


def bwrap_arguments(bwrap: str, workdir: str, *, network: bool) -> list[str]:
    """The bwrap command line that confines a command to ``workdir`` (see the module)."""
    argv = [bwrap, "--ro-bind", "/usr", "/usr"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for name in ETC_ENTRIES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--bind", workdir, workdir, "--chdir", workdir, "--remount-ro", "/"]
    argv += ["--unshare-all", *(["--share-net"] if network else [])]
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--"]
    return argv


def _bwrap_prefix(workdir: str, *, network: bool) -> tuple[tuple[str, ...], str | None]:
    """bwrap's command line for ``workdir`` and ``None``, or why it cannot be used."""
    bwrap = shutil.which("bwrap", path=SYSTEM_PATH)
    if bwrap is None:
        return (), "bwrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
    prefix = tuple(bwrap_arguments(bwrap, workdir, network=network))
    try:
        trial = subprocess.run(
            [*prefix, shell_path(), "-c", "true"],
            env={"PATH": SYSTEM_PATH},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return (), f"a trial run did not finish within {PROBE_TIMEOUT:g}s"
    except OSError as exc:
        return (), f"bwrap could not be started ({exc.strerror or 'error'})"
    if trial.returncode != 0:
        said = trial.stderr.decode("utf-8", errors="replace").strip().splitlines()
        reason = said[-1][:200] if said else f"exit status {trial.returncode}"
        if any(word in reason.lower() for word in NAMESPACE_REFUSALS):
            return (), (
                f"bwrap is installed but this system refuses it the user namespaces it needs "
                f"({reason}; allow them with sysctl kernel.unprivileged_userns_clone=1 or, on "
                "Ubuntu 24.04 and later, an AppArmor profile for bwrap)"
            )
        return (), f"a trial run of bwrap failed: {reason}"
    return prefix, None
