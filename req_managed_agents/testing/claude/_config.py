"""How the Claude emulator resolves the configuration a client sends into what the API answers.

The service never echoes a request body: it answers with every default filled in, and the
official SDK's models require those defaults. A model id becomes ``{"id", "speed"}``; a
built-in toolset gets its ``default_config`` and one resolved entry in ``configs`` per
built-in tool; an MCP toolset its own defaults (``always_ask``); a skill without a version
pins ``"latest"``; a multiagent roster names each agent at a version; an agent without an
``execution_identity`` runs as the service account; a cloud environment gets its
``packages`` lists and its networking defaults. What the API refuses is refused here with
its 400: unknown fields, tool names it forbids, MCP servers no toolset uses (or toolsets
naming no server), a limited network with packages but no package managers.

Each function takes the request's value and the ``where`` prefix of its error messages, and
returns a fresh resolved value (never the caller's objects). This module resolves models,
skills, execution identities and environments, and holds the checks the others share; tools
and MCP servers are resolved in ``_config_tools``, multiagent rosters in ``_config_roster``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import _invalid

if TYPE_CHECKING:
    from collections.abc import Mapping

_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_SPEEDS = ("standard", "fast")
_MANAGERS = ("apt", "cargo", "gem", "go", "npm", "pip")
_ROLE_ARN = re.compile(r"arn:aws[a-z-]*:iam::[0-9]{12}:role/.+")


def _object(value: Any, where: str, allowed: frozenset[str] | set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _invalid(f"{where}: Input should be an object")
    for key in value:
        if key not in allowed:
            raise _invalid(f"{where}.{key}: Extra inputs are not permitted")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid(f"{where}: Input should be a valid list")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _invalid(f"{where}: Field required (a non-empty string)")
    return value


def _bool(value: Any, where: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _invalid(f"{where}: Input should be a valid boolean")
    return value


# --- models ---------------------------------------------------------------------------------


def resolved_model(model: Any, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A model as the API answers it. On an update the ``effort`` of an unchanged model id
    is kept when the new value omits it; a new id starts from its defaults."""
    if isinstance(model, str) and model:
        model = {"id": model}
    spec = _object(model, "model", {"id", "effort", "speed", "inference_geo"})
    resolved: dict[str, Any] = {"id": _string(spec.get("id"), "model.id")}
    effort = spec.get("effort")
    if isinstance(effort, str):
        effort = {"type": effort}
    if effort is None and previous is not None and previous.get("id") == resolved["id"]:
        effort = previous.get("effort")
    if effort is not None:
        level = _object(effort, "model.effort", {"type"}).get("type")
        if level not in _EFFORTS:
            raise _invalid(f"model.effort: Input should be one of {', '.join(_EFFORTS)}")
        resolved["effort"] = {"type": level}
    speed = spec.get("speed") or "standard"
    if speed not in _SPEEDS:
        raise _invalid("model.speed: Input should be 'standard' or 'fast'")
    resolved["speed"] = speed
    if spec.get("inference_geo") is not None:
        resolved["inference_geo"] = _string(spec["inference_geo"], "model.inference_geo")
    return resolved


def resolved_skills(skills: Any, where: str = "skills") -> list[dict[str, str]]:
    """Skills pinned to a version: one that names none pins ``"latest"``."""
    resolved = []
    for index, entry in enumerate(_list(skills, where)):
        at = f"{where}[{index}]"
        _object(entry, at, {"type", "skill_id", "version"})
        if entry.get("type") not in ("anthropic", "custom"):
            raise _invalid(f"{at}.type: Input should be 'anthropic' or 'custom'")
        version = entry.get("version")
        resolved.append(
            {
                "type": entry["type"],
                "skill_id": _string(entry.get("skill_id"), f"{at}.skill_id"),
                "version": "latest" if version is None else _string(version, f"{at}.version"),
            }
        )
    return resolved


def resolved_identity(value: Any) -> dict[str, str]:
    """Who the agent's runs act as: the service account unless an AWS role is named."""
    if value is None:
        return {"type": "service_account"}
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "service_account":
        _object(value, "execution_identity", {"type"})
        return {"type": kind}
    if kind == "aws_role":
        _object(value, "execution_identity", {"type", "role_arn"})
        arn = value.get("role_arn")
        if not isinstance(arn, str) or len(arn) > 2048 or not _ROLE_ARN.fullmatch(arn):
            raise _invalid("execution_identity.role_arn: must be an IAM role ARN")
        return {"type": kind, "role_arn": arn}
    raise _invalid("execution_identity.type: Input should be 'service_account' or 'aws_role'")


# --- environments ---------------------------------------------------------------------------


def resolved_environment_config(config: Any) -> dict[str, Any]:
    """An environment ``config`` with its defaults: a cloud one gets every package manager's
    list and ``unrestricted`` networking (a limited network allows nothing by default)."""
    if config is None:
        config = {"type": "cloud"}
    kind = config.get("type") if isinstance(config, dict) else None
    if kind == "self_hosted":
        _object(config, "config", {"type"})
        return {"type": "self_hosted"}
    if kind != "cloud":
        raise _invalid("config.type: Input should be 'cloud' or 'self_hosted'")
    _object(config, "config", {"type", "networking", "packages"})
    packages_spec = config.get("packages") or {}
    _object(packages_spec, "config.packages", {"type", *_MANAGERS})
    if packages_spec.get("type", "packages") != "packages":
        raise _invalid("config.packages.type: Input should be 'packages'")
    packages: dict[str, Any] = {"type": "packages"}
    for manager in _MANAGERS:
        names = _list(packages_spec.get(manager), f"config.packages.{manager}")
        if not all(isinstance(n, str) and n for n in names):
            raise _invalid(f"config.packages.{manager}: package names are non-empty strings")
        packages[manager] = list(names)
    networking_spec = config.get("networking") or {"type": "unrestricted"}
    network = networking_spec.get("type") if isinstance(networking_spec, dict) else None
    if network == "unrestricted":
        _object(networking_spec, "config.networking", {"type"})
        networking: dict[str, Any] = {"type": "unrestricted"}
    elif network == "limited":
        where = "config.networking"
        _object(
            networking_spec,
            where,
            {"type", "allowed_hosts", "allow_package_managers", "allow_mcp_servers"},
        )
        hosts = _list(networking_spec.get("allowed_hosts"), f"{where}.allowed_hosts")
        if not all(isinstance(h, str) and re.fullmatch(r"(\*\.)?[A-Za-z0-9.-]+", h) for h in hosts):
            raise _invalid(f"{where}.allowed_hosts: bare host names, no scheme, port or path")
        networking = {
            "type": "limited",
            "allowed_hosts": list(hosts),
            "allow_package_managers": _bool(
                networking_spec.get("allow_package_managers"),
                f"{where}.allow_package_managers",
                False,
            ),
            "allow_mcp_servers": _bool(
                networking_spec.get("allow_mcp_servers"), f"{where}.allow_mcp_servers", False
            ),
        }
        if any(packages[m] for m in _MANAGERS) and not networking["allow_package_managers"]:
            raise _invalid(
                "config.packages: a limited network needs allow_package_managers to install them"
            )
    else:
        raise _invalid("config.networking.type: Input should be 'unrestricted' or 'limited'")
    return {"type": "cloud", "networking": networking, "packages": packages}
