"""A worker serving many short sessions ends with the memory and disk it started with.

This is ``benchmarks/worker_soak.py`` at a count CI can afford (by hand it serves 2000): a
real ``EnvironmentWorker`` in a process of its own against the Claude emulator, each session
one tool call answered with 10 kB, then archived. Kept per session, that answer alone would be
10 kB of memory (the default ledger) or four files (a ``FileStore`` ledger) and a folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 150  # after a warm-up of WARMUP: enough that a 10 kB-per-session leak is 1.5 MB
WARMUP = 30
PER_SESSION = 10_000  # what a kept tool result would cost


def soak(ledger: str) -> dict[str, Any]:
    script = ROOT / "benchmarks" / "worker_soak.py"
    options = ["--sessions", str(SESSIONS), "--warmup", str(WARMUP), "--ledger", ledger, "--json"]
    done = subprocess.run(
        [sys.executable, str(script), *options], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def test_the_default_ledger_keeps_no_memory_per_session() -> None:
    figures = soak("memory")
    # Memory held by the worker's process after every session ended, against the warm-up's:
    # a quarter of one kept result per session at most (it measures ~0), where keeping them
    # costs the whole.
    assert figures["traced_growth"] < SESSIONS * PER_SESSION / 4, figures
    assert figures["after"]["workdir"] == {"entries": 0, "bytes": 0}, "no session folder left"


def test_a_file_ledger_and_the_workdir_keep_no_files_per_session() -> None:
    figures = soak("file")
    before, after = figures["before"], figures["after"]
    assert after["ledger"]["entries"] <= before["ledger"]["entries"], figures
    assert after["ledger"]["bytes"] <= before["ledger"]["bytes"], figures
    assert after["workdir"] == {"entries": 0, "bytes": 0}, "no session folder left"
