"""Cumulative import time of the package, best of N fresh interpreters (by hand, not in CI).

    .venv/bin/python benchmarks/import_time.py [runs]

Target: under 150 ms, with neither requests, boto3/botocore nor opentelemetry loaded.
Prints ``requests`` alone for comparison, measured the same way in the same run.
"""

from __future__ import annotations

import subprocess
import sys


def cumulative_ms(module: str) -> tuple[float, set[str]]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line.split("|") for line in result.stderr.splitlines() if line.count("|") == 2]
    loaded = {row[2].strip() for row in rows}
    total = next(int(row[1]) for row in rows if row[2].strip() == module)
    return total / 1000, loaded


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    for module in ("req_managed_agents", "requests"):
        best = min(cumulative_ms(module)[0] for _ in range(runs))
        print(f"import {module:<20} {best:7.1f} ms (best of {runs})")
    _, loaded = cumulative_ms("req_managed_agents")
    heavy = sorted(
        m for m in loaded if m.split(".")[0] in {"requests", "boto3", "botocore", "opentelemetry"}
    )
    print("heavy modules loaded:", ", ".join(heavy) or "none")


if __name__ == "__main__":
    main()
