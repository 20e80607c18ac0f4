"""Packaging promises: cheap import, optional extras stay unloaded, typed, versioned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import req_managed_agents
from req_managed_agents.cli import _main as _cli

PACKAGE_DIR = Path(req_managed_agents.__file__).parent


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_import_loads_neither_aws_nor_opentelemetry_nor_requests() -> None:
    result = _run("import req_managed_agents")
    modules = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    heavy = {m for m in modules if m.split(".")[0] in {"boto3", "botocore", "opentelemetry"}}
    assert not heavy
    assert "requests" not in modules


def test_public_names_resolve_and_are_listed() -> None:
    for name in req_managed_agents.__all__:
        assert getattr(req_managed_agents, name) is not None
    assert set(req_managed_agents.__all__) <= set(dir(req_managed_agents))


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        req_managed_agents.no_such_name  # noqa: B018 - the access itself is the test


def test_package_is_marked_typed() -> None:
    assert (PACKAGE_DIR / "py.typed").is_file()


def test_cli_prints_the_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "req_managed_agents", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"rma {req_managed_agents.__version__}"


def test_cli_without_a_command_shows_help_and_fails() -> None:
    assert _cli.main([]) == 2
