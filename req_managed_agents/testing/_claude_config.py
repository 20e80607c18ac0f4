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
returns a fresh resolved value (never the caller's objects).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import _invalid

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Callable

    # Finds an agent at a version (None: the latest); raises the API's error when it cannot.
    AgentLookup = Callable[[str, "int | None"], "Mapping[str, Any]"]

BUILTIN_TOOLS = ("bash", "edit", "read", "write", "glob", "grep", "web_fetch", "web_search")
_TOOL_EXTRAS = {
    "web_fetch": frozenset(
        {"allowed_domains", "blocked_domains", "max_content_tokens", "url_sources"}
    ),
    "web_search": frozenset({"allowed_domains", "blocked_domains", "user_location"}),
}
_POLICIES = ("always_allow", "always_ask", "auto")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_SPEEDS = ("standard", "fast")
_CUSTOM_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_TOOLS = 256
_MAX_MCP_SERVERS = 20
_MAX_ROSTER = 20
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


# --- tools ----------------------------------------------------------------------------------


def _policy(value: Any, where: str, default: str) -> dict[str, str]:
    if value is None:
        return {"type": default}
    kind = _object(value, where, {"type"}).get("type")
    if kind not in _POLICIES:
        raise _invalid(f"{where}.type: Input should be one of {', '.join(_POLICIES)}")
    return {"type": kind}


def _default_config(value: Any, where: str, policy: str) -> dict[str, Any]:
    spec = _object(value, where, {"enabled", "permission_policy"}) if value is not None else {}
    return {
        "enabled": _bool(spec.get("enabled"), f"{where}.enabled", True),
        "permission_policy": _policy(
            spec.get("permission_policy"), f"{where}.permission_policy", policy
        ),
    }


def _url_source(value: Any, where: str) -> Any:
    """``"all"`` and ``"none"`` are shorthands for ``{"type": ...}``."""
    if isinstance(value, str):
        if value not in ("all", "none"):
            raise _invalid(f"{where}: Input should be 'all', 'none' or an object")
        return {"type": value}
    return copy.deepcopy(value)


def _tool_config(
    spec: Mapping[str, Any], where: str, defaults: Mapping[str, Any], name: str
) -> dict[str, Any]:
    resolved: dict[str, Any] = {
        "name": name,
        "enabled": _bool(spec.get("enabled"), f"{where}.enabled", defaults["enabled"]),
        "permission_policy": _policy(
            spec.get("permission_policy"),
            f"{where}.permission_policy",
            defaults["permission_policy"]["type"],
        ),
    }
    for key in sorted(_TOOL_EXTRAS.get(name, frozenset())):
        if spec.get(key) is None:
            continue
        if key == "url_sources":
            sources = _object(
                spec[key],
                f"{where}.url_sources",
                {"client_tool_results", "server_tool_results", "user_input"},
            )
            resolved[key] = {
                k: _url_source(v, f"{where}.url_sources.{k}") for k, v in sources.items()
            }
        else:
            resolved[key] = copy.deepcopy(spec[key])
    return resolved


def _builtin_toolset(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    _object(spec, where, {"type", "default_config", "configs"})
    defaults = _default_config(
        spec.get("default_config"), f"{where}.default_config", "always_allow"
    )
    given: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(_list(spec.get("configs"), f"{where}.configs")):
        at = f"{where}.configs[{index}]"
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in BUILTIN_TOOLS:
            raise _invalid(f"{at}.name: Input should be one of {', '.join(BUILTIN_TOOLS)}")
        _object(
            entry, at, {"name", "type", "enabled", "permission_policy", *_TOOL_EXTRAS.get(name, ())}
        )
        if entry.get("type", name) != name:
            raise _invalid(f"{at}.type: must equal the tool's name {name!r}")
        if name in given:
            raise _invalid(f"{at}.name: {name!r} is configured twice")
        given[name] = entry
    configs = []
    for name in BUILTIN_TOOLS:
        config = _tool_config(given.get(name, {}), f"{where}.configs", defaults, name)
        configs.append({"name": name, "type": name, **config})
    return {"type": "agent_toolset_20260401", "default_config": defaults, "configs": configs}


def _mcp_toolset(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    _object(spec, where, {"type", "mcp_server_name", "default_config", "configs"})
    server = _string(spec.get("mcp_server_name"), f"{where}.mcp_server_name")
    defaults = _default_config(spec.get("default_config"), f"{where}.default_config", "always_ask")
    configs: list[dict[str, Any]] = []
    for index, entry in enumerate(_list(spec.get("configs"), f"{where}.configs")):
        at = f"{where}.configs[{index}]"
        _object(entry, at, {"name", "enabled", "permission_policy"})
        name = _string(entry.get("name"), f"{at}.name")
        if any(c["name"] == name for c in configs):
            raise _invalid(f"{at}.name: {name!r} is configured twice")
        configs.append(_tool_config(entry, at, defaults, name))
    return {
        "type": "mcp_toolset",
        "mcp_server_name": server,
        "default_config": defaults,
        "configs": configs,
    }


def _custom_tool(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    _object(spec, where, {"type", "name", "description", "input_schema"})
    name = spec.get("name")
    if not isinstance(name, str) or not _CUSTOM_TOOL_NAME.fullmatch(name):
        raise _invalid(f"{where}.name: 1 to 128 letters, digits, '_' or '-'")
    if name.startswith(("mcp__", "ant__")) or name in BUILTIN_TOOLS:
        raise _invalid(f"{where}.name: {name!r} is reserved")
    description = spec.get("description")
    if not isinstance(description, str):
        raise _invalid(f"{where}.description: Field required (a string)")
    schema = spec.get("input_schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise _invalid(f"{where}.input_schema.type: Input should be 'object'")
    return {
        "type": "custom",
        "name": name,
        "description": description,
        "input_schema": copy.deepcopy(schema),
    }


def resolved_tools(tools: Any, mcp_servers: Any, where: str = "") -> tuple[list[Any], list[Any]]:
    """An agent's ``tools`` and ``mcp_servers``, checked against each other and resolved."""
    servers: list[dict[str, str]] = []
    for index, entry in enumerate(_list(mcp_servers, f"{where}mcp_servers")):
        at = f"{where}mcp_servers[{index}]"
        _object(entry, at, {"type", "name", "url"})
        if entry.get("type") != "url":
            raise _invalid(f"{at}.type: Input should be 'url'")
        name = _string(entry.get("name"), f"{at}.name")
        if len(name) > 255 or any(s["name"] == name for s in servers):
            raise _invalid(f"{at}.name: names are unique and at most 255 characters")
        servers.append({"type": "url", "name": name, "url": _string(entry.get("url"), f"{at}.url")})
    if len(servers) > _MAX_MCP_SERVERS:
        raise _invalid(f"{where}mcp_servers: at most {_MAX_MCP_SERVERS} servers")
    resolved: list[dict[str, Any]] = []
    builders = {
        "agent_toolset_20260401": _builtin_toolset,
        "mcp_toolset": _mcp_toolset,
        "custom": _custom_tool,
    }
    entries = _list(tools, f"{where}tools")
    if len(entries) > _MAX_TOOLS:
        raise _invalid(f"{where}tools: at most {_MAX_TOOLS} tools")
    for index, entry in enumerate(entries):
        at = f"{where}tools[{index}]"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind not in builders:
            raise _invalid(f"{at}.type: Input should be one of {', '.join(builders)}")
        tool = builders[kind](entry, at)
        if any(
            t["type"] == kind
            and t.get("name", t.get("mcp_server_name"))
            == tool.get("name", tool.get("mcp_server_name"))
            for t in resolved
        ):
            raise _invalid(f"{at}: the same tool or toolset is declared twice")
        resolved.append(tool)
    used = {t["mcp_server_name"] for t in resolved if t["type"] == "mcp_toolset"}
    declared = {s["name"] for s in servers}
    if used - declared:
        raise _invalid(
            f"{where}tools: mcp_toolset names undeclared server {min(used - declared)!r}"
        )
    if declared - used:
        raise _invalid(
            f"{where}mcp_servers: {min(declared - used)!r} is not referenced by an mcp_toolset"
        )
    return resolved, servers


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


# --- multiagent -----------------------------------------------------------------------------


def _roster_agent(
    entry: Any, where: str, own: tuple[str, int], lookup: AgentLookup
) -> dict[str, Any]:
    """A roster entry as an ``{"type": "agent", "id", "version"}`` reference."""
    if isinstance(entry, str):
        entry = {"type": "agent", "id": entry}
    kind = entry.get("type") if isinstance(entry, dict) else None
    if kind == "self":
        _object(entry, where, {"type"})
        return {"type": "agent", "id": own[0], "version": own[1]}
    if kind != "agent":
        raise _invalid(f"{where}.type: Input should be 'agent' or 'self'")
    _object(entry, where, {"type", "id", "version"})
    version = entry.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise _invalid(f"{where}.version: Input should be a valid integer")
    agent = lookup(_string(entry.get("id"), f"{where}.id"), version)
    if agent.get("multiagent") is not None:
        raise _invalid(f"{where}: a roster agent cannot itself be multiagent")
    return {"type": "agent", "id": agent["id"], "version": agent["version"]}


def _members(value: Any, where: str, own: tuple[str, int], lookup: AgentLookup) -> list[Any]:
    entries = _list(value, where)
    if len(entries) > _MAX_ROSTER:
        raise _invalid(f"{where}: at most {_MAX_ROSTER} agents")
    return [_roster_agent(e, f"{where}[{i}]", own, lookup) for i, e in enumerate(entries)]


def _switch(
    value: Any,
    where: str,
    stored: Mapping[str, Any] | None,
    enabled: Callable[[Mapping[str, Any], Mapping[str, Any] | None], dict[str, Any]],
    default: str,
    extra: frozenset[str],
) -> dict[str, Any]:
    """One member of a ``multiagent_20261001`` configuration: enabled or disabled. A value
    of the stored member's type is merged into it; null takes the default."""
    if value is None:
        value = {"type": default}
    kind = _object(value, where, {"type", *extra}).get("type")
    if kind == "disabled":
        _object(value, where, {"type"})
        return {"type": "disabled"}
    if kind != "enabled":
        raise _invalid(f"{where}.type: Input should be 'enabled' or 'disabled'")
    same = stored if stored is not None and stored.get("type") == "enabled" else None
    return enabled(value, same)


def resolved_multiagent(
    value: Any,
    own: tuple[str, int],
    lookup: AgentLookup,
    stored: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """A ``coordinator`` roster or a ``multiagent_20261001`` configuration, resolved. ``own``
    is the agent's id and version (what ``self`` names); ``stored`` the value an update
    merges into."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "coordinator":
        _object(value, "multiagent", {"type", "agents"})
        agents: list[Any] = []
        for index, entry in enumerate(_list(value.get("agents"), "multiagent.agents")):
            at = f"multiagent.agents[{index}]"
            if isinstance(entry, dict) and entry.get("type") == "advisor":
                _object(entry, at, {"type", "model"})
                agents.append({"type": "advisor", "model": _string(entry.get("model"), at)})
            else:
                agents.append(_roster_agent(entry, at, own, lookup))
        if not 1 <= len(agents) <= _MAX_ROSTER:
            raise _invalid(f"multiagent.agents: 1 to {_MAX_ROSTER} entries")
        return {"type": "coordinator", "agents": agents}
    if kind != "multiagent_20261001":
        raise _invalid("multiagent.type: Input should be 'coordinator' or 'multiagent_20261001'")
    _object(value, "multiagent", {"type", "advisor", "subagents", "workflows"})
    previous = stored if stored is not None and stored.get("type") == kind else {}

    def advisor(spec: Mapping[str, Any], same: Mapping[str, Any] | None) -> dict[str, Any]:
        model = spec.get("model", (same or {}).get("model"))
        return {"type": "enabled", "model": _string(model, "multiagent.advisor.model")}

    def team(where: str) -> Callable[[Mapping[str, Any], Mapping[str, Any] | None], dict[str, Any]]:
        def enabled(spec: Mapping[str, Any], same: Mapping[str, Any] | None) -> dict[str, Any]:
            inline = spec.get("inline_agents", (same or {}).get("inline_agents"))
            inline_kind = (inline or {"type": "enabled"}).get("type")
            if inline_kind not in ("enabled", "disabled"):
                raise _invalid(f"{where}.inline_agents.type: 'enabled' or 'disabled'")
            if "predefined_agents" in spec or same is None:
                members = _members(
                    spec.get("predefined_agents"), f"{where}.predefined_agents", own, lookup
                )
            else:
                members = copy.deepcopy(same["predefined_agents"])
            if inline_kind == "disabled" and not members:
                raise _invalid(f"{where}: with inline agents disabled, name a predefined agent")
            return {
                "type": "enabled",
                "inline_agents": {"type": inline_kind},
                "predefined_agents": members,
            }

        return enabled

    resolved: dict[str, Any] = {"type": kind}
    members = (
        ("advisor", advisor, "disabled", frozenset({"model"})),
        (
            "subagents",
            team("multiagent.subagents"),
            "enabled",
            frozenset({"inline_agents", "predefined_agents"}),
        ),
        (
            "workflows",
            team("multiagent.workflows"),
            "enabled",
            frozenset({"inline_agents", "predefined_agents"}),
        ),
    )
    for key, enabled, default, extra in members:
        if key not in value and key in previous:
            resolved[key] = copy.deepcopy(previous[key])
        else:
            resolved[key] = _switch(
                value.get(key), f"multiagent.{key}", previous.get(key), enabled, default, extra
            )
    return resolved


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
