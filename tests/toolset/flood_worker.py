"""A worker process that floods one session's bash with forks and checks that the rest
goes on (run by test_fork_flood.py; prints one JSON line).

It caps itself before anything forks, so a defect cannot flood the machine: run by root
(whose processes the kernel never counts against ``RLIMIT_NPROC``) it first becomes a
user of its own, unused by anything else, then limits that user's processes; run by
anyone else, it limits them to what the user runs now plus a margin. The flood command
bounds itself too.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from req_managed_agents import ConfigurationError, ToolContext, ToolResult
from req_managed_agents.model import SessionInfo
from req_managed_agents.toolset import AgentToolset, ShellLimits, UnsandboxedWarning

OUTER_MARGIN = 256
"""Processes this worker's user may add, whatever the toolset's own limit does."""
FLOOD_BOUND = 2000
"""Forks the flood command stops at by itself."""
SPARE_UID_BASE = 1_900_000_000
WAIT = 120.0

FLOOD = f"""
import os, sys, time
forked = 0
try:
    while forked < {FLOOD_BOUND}:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError as exc:
    print(f"forked {{forked}}, then: {{exc.strerror}}", flush=True)
    open("full", "w").close()
    deadline = time.monotonic() + {WAIT}
    while not os.path.exists("release") and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(3)
print(f"forked all {{forked}}", flush=True)
"""


def tasks_of(uid: int) -> int:
    """Processes and threads whose real user is ``uid`` now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            count += int(fields["Threads"])
    return count


def _call(toolset: AgentToolset, command: str, timeout_ms: int = 60_000) -> ToolResult:
    context = ToolContext("toolu_1", SessionInfo("sesn_1", "test"), threading.Event())
    result = toolset.handle_tool_call(
        "bash", {"command": command, "timeout_ms": timeout_ms}, context
    )
    assert isinstance(result, ToolResult)
    return result


def _wait_for(path: Path, unless: threading.Thread) -> bool:
    deadline = time.monotonic() + WAIT
    while not path.exists() and unless.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return path.exists()


def main(sandbox: str, python: str) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="rma-flood-"))
    if os.getuid() == 0:
        spare = SPARE_UID_BASE + os.getpid()
        os.chown(base, spare, spare)
        os.setgroups([])
        os.setgid(spare)
        os.setuid(spare)
    uid = os.getuid()
    if uid == 0:
        return {"error": "still root: the flood would not be bounded"}
    cap = tasks_of(uid) + OUTER_MARGIN
    resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))
    try:
        # unconfined, the limit counts all of the user's processes: give room above them
        limit = 64 if sandbox == "bwrap" else tasks_of(uid) + 64
        toolsets = []
        for name in ("flooded", "other"):
            (base / name).mkdir()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UnsandboxedWarning)
                try:
                    toolsets.append(
                        AgentToolset(
                            base / name, sandbox=sandbox, limits=ShellLimits(processes=limit)
                        )
                    )
                except ConfigurationError as exc:
                    return {"skip": f"bwrap cannot run as uid {uid}: {exc}"}
        flooded, other = toolsets
        outcome: dict[str, object] = {"limit": limit}
        flood_result: list[ToolResult] = []
        flood = threading.Thread(
            target=lambda: flood_result.append(
                _call(flooded, f"{python} -c '{FLOOD}'", timeout_ms=int(WAIT * 1000))
            )
        )
        started = time.monotonic()
        flood.start()
        outcome["full"] = _wait_for(base / "flooded" / "full", unless=flood)
        if sandbox == "bwrap":  # unconfined, every session of this user waits for the flood
            during = _call(other, "echo $(echo one) | cat; ls / >/dev/null && echo two")
            outcome["other"] = [during.content, during.is_error]
        try:
            spawned = subprocess.run(["true"], check=False, timeout=WAIT).returncode == 0
        except OSError as exc:  # what a flood of the whole user does to the worker
            spawned = False
            outcome["worker_spawn_error"] = str(exc)
        outcome["worker_spawned"] = spawned
        (base / "flooded" / "release").touch()
        flood.join(WAIT)
        outcome["seconds"] = time.monotonic() - started
        outcome["flood"] = [flood_result[0].content, flood_result[0].is_error]
        after = _call(flooded, "echo $(echo again)")
        outcome["after"] = [after.content, after.is_error]
        return outcome
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])), flush=True)
