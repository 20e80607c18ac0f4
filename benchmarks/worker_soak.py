"""A worker serving many short sessions ends with the memory and disk it started with
(run by hand; ``tests/worker/test_soak.py`` runs a smaller count of it).

    .venv/bin/python benchmarks/worker_soak.py                  # 2000 sessions, both ledgers
    .venv/bin/python benchmarks/worker_soak.py --sessions 300 --ledger file --json

An :class:`EnvironmentWorker` runs in a process of its own (traced with ``tracemalloc``)
against the Claude emulator in this one. Each session: created, prompted, one custom tool call
answered with 10 kB, the agent's closing text, then archived - so the worker sees it end and
stops its item. ``--ledger memory`` is the worker's default ledger; ``--ledger file`` a
``FileStore`` beside the workdir. After ``--warmup`` sessions the worker's traced memory, its
RSS and the disk (the ledger's records folder, the workdir) are measured; again after the
other sessions. Printed: the time per session and how much each figure grew.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

RESULT = "x" * 10_000
PROMPT = {"type": "user.message", "content": [{"type": "text", "text": "fetch it"}]}


# -- the worker's process -----------------------------------------------------------------


def serve(base_url: str, environment_id: str, workdir: str, ledger: str) -> None:
    """The child: a worker with a 10 kB tool, measured on ``measure``, stopped on ``stop``
    (its environment key comes in ``ANTHROPIC_ENVIRONMENT_KEY``)."""
    tracemalloc.start()
    # sandbox="none" is asked for: its warning, once per session, is not news here.
    logging.getLogger("req_managed_agents").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    from req_managed_agents import ToolLedger, Tools
    from req_managed_agents.providers import ClaudeManagedAgents
    from req_managed_agents.stores import FileStore
    from req_managed_agents.worker import EnvironmentWorker

    tools = Tools()

    @tools.tool
    def fetch() -> str:
        """Ten kilobytes of answer."""
        return RESULT

    provider = ClaudeManagedAgents(api_key="unused", base_url=base_url)
    worker = EnvironmentWorker(
        provider,
        environment_id,
        workdir=workdir,
        handler=tools,
        sandbox="none",
        max_sessions=8,
        idle_grace=60.0,
        ledger=ToolLedger(FileStore(ledger)) if ledger != "memory" else None,
    )
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), name="soak-worker", daemon=True)
    thread.start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "measure":
            gc.collect()
            gc.collect()
            print(json.dumps({"traced": tracemalloc.get_traced_memory()[0], "rss": _rss()}))
            sys.stdout.flush()
        elif line.strip() == "stop":
            break
    stop.set()
    thread.join(60)
    provider.close()


def _rss() -> int:
    """Resident memory in bytes (Linux), else 0."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


# -- this process: the emulator and the sessions --------------------------------------------


def disk(path: Path) -> dict[str, int]:
    """Entries (files and folders) under ``path`` and the bytes of its files."""
    entries = size = 0
    for folder, folders, files in os.walk(path):
        entries += len(folders) + len(files)
        size += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    return {"entries": entries, "bytes": size}


class Soak:
    """The emulator, the worker's process, and sessions driven through them."""

    def __init__(self, root: Path, ledger: str) -> None:
        from req_managed_agents.testing import ClaudeEmulator, Turn, call

        self.emulator = ClaudeEmulator(ping_interval=0.5)
        self.provider = self.emulator.provider()
        self.environment_id = self.emulator.add_environment("soak", config={"type": "self_hosted"})
        self.agent = self.emulator.add_agent([Turn(tool_calls=[call("fetch")]), Turn(text="ok")])
        self.workdir = root / "work"
        self.ledger_records = root / "ledger.json.records"
        where = str(root / "ledger.json") if ledger == "file" else "memory"
        key = self.emulator.environment_key(self.environment_id)
        command = [sys.executable, __file__, "--child", self.emulator.base_url]
        command += [self.environment_id, str(self.workdir), where]
        self.child = subprocess.Popen(
            command,
            env={**os.environ, "ANTHROPIC_ENVIRONMENT_KEY": key},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.child.stdout is not None
        assert self.child.stdout.readline().strip() == "ready"

    def run(self, sessions: int, parallel: int = 8, timeout: float = 900.0) -> None:
        """Serve ``sessions`` sessions, ``parallel`` at a time, each to its item's stop."""
        client = self.provider.client
        deadline = time.monotonic() + timeout
        live: list[str] = []
        ended: set[str] = set()
        started = 0
        while started < sessions or live:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(live)} sessions still live after {timeout:g} s")
            while started < sessions and len(live) < parallel:
                session_id = str(client.create_session(self.agent, self.environment_id)["id"])
                client.send_events(session_id, [PROMPT])
                live.append(session_id)
                started += 1
            states = self._item_states() if ended else {}
            for session_id in list(live):
                if session_id not in ended and self._answered(session_id):
                    client.archive_session(session_id)
                    ended.add(session_id)
                elif session_id in ended and states.get(session_id) == {"stopped"}:
                    live.remove(session_id)
                    ended.discard(session_id)
            time.sleep(0.01)

    def _answered(self, session_id: str) -> bool:
        events = self.emulator.events(session_id)
        return bool(events) and events[-1].get("stop_reason", {}).get("type") == "end_turn"

    def _item_states(self) -> dict[str, set[str]]:
        """The states of each session's work items."""
        states: dict[str, set[str]] = {}
        for item in self.emulator.work_items(self.environment_id):
            states.setdefault(item["data"]["id"], set()).add(item["state"])
        return states

    def measure(self) -> dict[str, Any]:
        assert self.child.stdin is not None
        assert self.child.stdout is not None
        self.child.stdin.write("measure\n")
        self.child.stdin.flush()
        memory = json.loads(self.child.stdout.readline())
        return {
            **memory,
            "ledger": disk(self.ledger_records),
            "workdir": disk(self.workdir),
        }

    def close(self) -> None:
        if self.child.poll() is None:
            assert self.child.stdin is not None
            self.child.stdin.write("stop\n")
            self.child.stdin.flush()
            self.child.wait(90)
        self.provider.close()
        self.emulator.close()


def soak(sessions: int, warmup: int, ledger: str) -> dict[str, Any]:
    """Serve ``warmup`` sessions, measure, serve ``sessions`` more, measure again."""
    with tempfile.TemporaryDirectory(prefix="rma-soak-") as folder:
        run = Soak(Path(folder), ledger)
        try:
            run.run(warmup)
            before = run.measure()
            started = time.monotonic()
            run.run(sessions)
            seconds = time.monotonic() - started
            after = run.measure()
        finally:
            run.close()
    return {
        "ledger": ledger,
        "sessions": sessions,
        "seconds": round(seconds, 2),
        "per_session_ms": round(1000 * seconds / sessions, 2),
        "before": before,
        "after": after,
        "traced_growth": after["traced"] - before["traced"],
        "rss_growth": after["rss"] - before["rss"],
    }


def _show(figures: dict[str, Any]) -> None:
    before, after = figures["before"], figures["after"]
    print(
        f"ledger={figures['ledger']}: {figures['sessions']} sessions in {figures['seconds']} s "
        f"({figures['per_session_ms']} ms each)\n"
        f"  traced memory {before['traced']:,} -> {after['traced']:,} B "
        f"({figures['traced_growth']:+,} B, {figures['traced_growth'] / figures['sessions']:+.1f}"
        " B per session)\n"
        f"  RSS {before['rss']:,} -> {after['rss']:,} B ({figures['rss_growth']:+,} B)\n"
        f"  ledger records folder {before['ledger']} -> {after['ledger']}\n"
        f"  workdir {before['workdir']} -> {after['workdir']}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        serve(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--ledger", choices=["memory", "file", "both"], default="both")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    args = parser.parse_args()
    for ledger in ["memory", "file"] if args.ledger == "both" else [args.ledger]:
        figures = soak(args.sessions, args.warmup, ledger)
        print(json.dumps(figures)) if args.json else _show(figures)


if __name__ == "__main__":
    main()
