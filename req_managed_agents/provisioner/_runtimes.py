"""Language runtimes installed with mise: the bootstrap script, the agent's instructions, and
the hosts a network-limited environment must allow.

Managed environments come with a fixed toolbox; declared runtimes are installed on first use
by a script the agent runs once. The script is POSIX ``sh``, deterministic (part of the
environment's identity via its runtimes) and idempotent: mise is installed only if missing,
and the shell profile is extended only once.
"""

from __future__ import annotations

from collections.abc import Sequence

from req_managed_agents.provisioner._specs import Runtime

__all__ = ["bootstrap_script", "required_hosts", "system_prompt_block"]

MISE_INSTALLER = "https://mise.jdx.dev/install.sh"
_PROFILE_MARKER = "# mise activate-rma"
_MISE_HOSTS = (
    "mise.jdx.dev",
    "mise-versions.jdx.dev",
    "github.com",
    "objects.githubusercontent.com",
)
# Where mise fetches some languages from beyond GitHub.
_LANGUAGE_HOSTS: dict[str, tuple[str, ...]] = {
    "erlang": ("repo.hex.pm", "builds.hex.pm"),
    "elixir": ("repo.hex.pm", "builds.hex.pm"),
    "node": ("nodejs.org",),
    "go": ("go.dev", "dl.google.com"),
}


def bootstrap_script(runtimes: Sequence[Runtime]) -> str:
    """A POSIX shell script installing ``runtimes`` with mise; safe to run more than once."""
    if not runtimes:
        return ""
    uses = "\n".join(f"mise use --global '{r.lang}@{r.version}'" for r in runtimes)
    return f"""#!/bin/sh
# Installs {_describe(runtimes)} with mise; safe to run again.
set -eu
export LC_ALL=C.UTF-8 LANG=C.UTF-8
export PATH="$HOME/.local/bin:$HOME/.local/share/mise/shims:$PATH"
if ! command -v mise >/dev/null 2>&1; then
  curl -fsSL {MISE_INSTALLER} | sh
fi
{uses}
mise install
if ! grep -qF '{_PROFILE_MARKER}' "$HOME/.bashrc" 2>/dev/null; then
  cat >> "$HOME/.bashrc" <<'RMA_PROFILE'
{_PROFILE_MARKER}
export PATH="$HOME/.local/bin:$HOME/.local/share/mise/shims:$PATH"
export LC_ALL=C.UTF-8 LANG=C.UTF-8
RMA_PROFILE
fi
"""


def system_prompt_block(runtimes: Sequence[Runtime]) -> str:
    """Instructions for the agent's system prompt: what to run once, before what."""
    if not runtimes:
        return ""
    return (
        "## Runtime bootstrap\n\n"
        f"This environment declares {_describe(runtimes)}. They are not preinstalled: before "
        "the first command that needs one, run the script below once with `sh` (running it "
        "again is safe but wasteful). It installs mise and the runtimes and adds them to "
        "`PATH` in `~/.bashrc`.\n\n"
        f"```sh\n{bootstrap_script(runtimes)}```\n"
    )


def required_hosts(runtimes: Sequence[Runtime]) -> list[str]:
    """The hosts the script downloads from, sorted (empty when nothing is declared)."""
    if not runtimes:
        return []
    hosts = set(_MISE_HOSTS)
    for runtime in runtimes:
        hosts.update(_LANGUAGE_HOSTS.get(runtime.lang, ()))
    return sorted(hosts)


def _describe(runtimes: Sequence[Runtime]) -> str:
    return ", ".join(f"{r.lang} {r.version}" for r in runtimes)
