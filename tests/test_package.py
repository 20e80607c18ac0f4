"""Packaging promises: cheap import, optional extras stay unloaded, a root of daily names
(each also in its public subpackage, the moved ones still found for a release), typed,
versioned."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

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


PUBLIC_PACKAGES = [
    "errors",
    "model",
    "tools",
    "mcp",
    "drivers",
    "providers",
    "stores",
    "provisioner",
    "artifacts",
    "toolset",
    "worker",
    "display",
]
# What the root exported before it was narrowed to the daily names, by where each lives now.
FORMER_ROOT_NAMES = {
    "errors": [
        "AmbiguousRunError",
        "AuthenticationError",
        "HarnessReadyTimeoutError",
        "IdleTimeoutError",
        "InvocationOutcomeUnknownError",
        "RateLimitError",
        "UnresolvedRequiresActionError",
    ],
    "model": ["Image", "Progress", "SessionInfo", "StreamItem", "ToolUse", "TurnResult", "Usage"],
    "tools": ["Handler", "Tool"],
    "drivers": ["BatchItem", "SessionOptions", "TurnGuard", "read_prompts"],
    "providers": ["CommandResult"],
    "provisioner": ["AgentSpec", "provision"],
    "toolset": ["AgentToolset", "UnsandboxedWarning"],
    "worker": ["EnvironmentWorker"],
}


def test_import_loads_neither_aws_nor_opentelemetry_nor_requests_nor_the_drivers() -> None:
    result = _run("import req_managed_agents")
    modules = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    heavy = {m for m in modules if m.split(".")[0] in {"boto3", "botocore", "opentelemetry"}}
    assert not heavy
    assert "requests" not in modules
    assert not {m for m in modules if m.split(".")[:2] in (["req_managed_agents", "drivers"],)}


def test_each_root_name_is_also_exported_by_its_public_subpackage() -> None:
    homes = {
        name: getattr(module, name)
        for module in map(importlib.import_module, _packages())
        for name in module.__all__
    }
    for name in set(req_managed_agents.__all__) - {"__version__"}:
        assert homes.get(name) is getattr(req_managed_agents, name), name


@pytest.mark.parametrize(
    ("home", "name"),
    [(home, name) for home, names in FORMER_ROOT_NAMES.items() for name in names],
)
def test_a_name_moved_off_the_root_still_imports_there_with_a_warning_naming_its_home(
    home: str, name: str
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"import it from req_managed_agents\.{home}\b"):
        value = getattr(req_managed_agents, name)
    assert value is getattr(importlib.import_module(f"req_managed_agents.{home}"), name)
    assert name not in req_managed_agents.__all__
    assert name not in dir(req_managed_agents)


def test_a_star_import_takes_the_daily_names_without_a_warning() -> None:
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from req_managed_agents import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(req_managed_agents.__all__)


def _packages() -> list[str]:
    return [f"req_managed_agents.{name}" for name in PUBLIC_PACKAGES]


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
