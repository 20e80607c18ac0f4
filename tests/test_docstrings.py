"""Every public name says what it is for: the API reference is the docstrings."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

PUBLIC_MODULES = [
    "req_managed_agents",
    "req_managed_agents.errors",
    "req_managed_agents.model",
    "req_managed_agents.tools",
    "req_managed_agents.drivers",
    "req_managed_agents.stores",
    "req_managed_agents.display",
    "req_managed_agents.toolset",
    "req_managed_agents.worker",
    "req_managed_agents.providers",
    "req_managed_agents.providers.claude",
    "req_managed_agents.providers.agentcore",
    "req_managed_agents.provisioner",
    "req_managed_agents.artifacts",
    "req_managed_agents.testing",
    "req_managed_agents.telemetry",
    "req_managed_agents.sse",
    "req_managed_agents.eventstream",
]


def public_names() -> list[tuple[str, str, Any]]:
    names = []
    for module_name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name in getattr(module, "__all__", ()):
            names.append((module_name, name, getattr(module, name)))
    return names


def undocumented(value: Any) -> list[str]:
    """The undocumented parts of a public class or function (aliases and data pass)."""
    if inspect.isclass(value):
        missing = [] if inspect.getdoc(value) else ["(class)"]
        for attribute, member in vars(value).items():
            if attribute.startswith("_") or not callable(member):
                continue
            if inspect.isfunction(member) and not member.__doc__:
                missing.append(attribute)
        return missing
    if inspect.isfunction(value) and not value.__doc__:
        return ["(function)"]
    return []


@pytest.mark.parametrize(
    ("module", "name", "value"),
    public_names(),
    ids=lambda v: v if isinstance(v, str) else None,  # stable across processes (no addresses)
)
def test_a_public_name_is_documented(module: str, name: str, value: Any) -> None:
    assert undocumented(value) == [], f"{module}.{name}"
