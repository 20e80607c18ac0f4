"""``rma`` as a user runs it: ``python -m req_managed_agents`` in a child process, with the
test's environment (fixtures set it with ``monkeypatch.setenv``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Finished", "rma_process"]


@dataclass(frozen=True)
class Finished:
    """A finished ``rma`` process: its exit status, standard output and standard error."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """The one JSON object standard output holds (nothing else may be there)."""
        assert self.out.count("\n") == 1, self.out
        return json.loads(self.out)

    def error_line(self) -> str:
        """The one ``rma: MESSAGE (hint: HINT)`` line of standard error."""
        lines = self.err.splitlines()
        assert len(lines) == 1, self.err
        assert lines[0].startswith("rma: "), self.err
        assert "(hint: " in lines[0], self.err
        return lines[0]


def rma_process(*argv: str, cwd: Path | None = None, timeout: float = 60) -> Finished:
    """Run ``python -m req_managed_agents ARGV`` to its end."""
    done = subprocess.run(
        [sys.executable, "-m", "req_managed_agents", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ},
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Finished(done.returncode, done.stdout, done.stderr)
