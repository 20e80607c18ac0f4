"""Ledger states as a crashed process leaves them, made by a real process that dies."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_CLAIM_AND_DIE = textwrap.dedent(
    """
    import os, signal, sys
    from req_managed_agents import FileStore, ToolLedger

    path, session_id, tool_use_id = sys.argv[1:]
    assert ToolLedger(FileStore(path)).claim(session_id, tool_use_id) is None
    os.kill(os.getpid(), signal.SIGKILL)  # mid-call, its lease never renewed again
    """
)


def claim_and_die(store_path: Path, session_id: str, tool_use_id: str) -> None:
    """Claim a call in a FileStore ledger from a process that is then SIGKILLed."""
    child = subprocess.run(
        [sys.executable, "-c", _CLAIM_AND_DIE, str(store_path), session_id, tool_use_id],
        timeout=60,
        check=False,
    )
    assert child.returncode == -9, f"the claiming process ended with {child.returncode}"
