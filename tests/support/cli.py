"""Helpers for driving ``rma`` in-process and checking how it fails."""

from __future__ import annotations

import json
from typing import Any

import pytest

from req_managed_agents.cli import _main as _cli

__all__ = ["fails", "one_error_line", "rma"]


def rma(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    """Exit status and standard output (parsed when it is JSON)."""
    code = _cli.main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith(("{", "[")) else out


def fails(capsys: pytest.CaptureFixture[str], status: int, *argv: str) -> str:
    """Run ``rma argv``, which must fail with ``status`` and exactly one ``rma:`` line
    carrying a hint; return that line."""
    code = _cli.main(list(argv))
    captured = capsys.readouterr()
    return one_error_line(code, status, captured.err)


def one_error_line(code: int, status: int, err: str) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rma: "), err
    assert "(hint: " in lines[0], err
    assert code == status, err
    return lines[0]
