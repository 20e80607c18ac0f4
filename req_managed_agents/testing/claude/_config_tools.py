"""How the Claude emulator resolves an agent's ``tools`` and ``mcp_servers``.

A built-in toolset gets its ``default_config`` and one resolved entry in ``configs`` per
built-in tool; an MCP toolset its own defaults (``always_ask``); a custom tool is checked
(a name the API does not reserve, an object input schema). Both lists are checked against
each other: every MCP server is used by a toolset, and every toolset names a declared server.

On Bedrock (``bedrock=True``) the MCP servers are AgentCore Gateways (``gateway_arn``), the
built-in toolset has no ``web_fetch``/``web_search``, and a memory toolset
(``memory_toolset_20261030``) gives the agent its memory tools.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._config import _bool, _list, _object, _string
from req_managed_agents.testing.claude._wire import _invalid

if TYPE_CHECKING:
    from collections.abc import Mapping

BUILTIN_TOOLS = ("bash", "edit", "read", "write", "glob", "grep", "web_fetch", "web_search")
_BEDROCK_BUILTIN_TOOLS = BUILTIN_TOOLS[:6]  # no web tools on Bedrock
MEMORY_TOOLS = (
    "memory_list",
    "memory_read",
    "memory_search",
    "memory_write",
    "memory_str_replace",
    "memory_append",
    "memory_delete",
)
_TOOL_EXTRAS = {
    "web_fetch": frozenset(
        {"allowed_domains", "blocked_domains", "max_content_tokens", "url_sources"}
    ),
    "web_search": frozenset({"allowed_domains", "blocked_domains", "user_location"}),
}
_POLICIES = ("always_allow", "always_ask", "auto")
_CUSTOM_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_TOOLS = 256
_MAX_MCP_SERVERS = 20
_GATEWAY_ARN = re.compile(r"arn:aws[a-z-]*:bedrock-agentcore:[a-z0-9-]+:\d{12}:gateway/\S+")


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


def _toolset(
    spec: Mapping[str, Any], where: str, kind: str, names: tuple[str, ...]
) -> dict[str, Any]:
    """A toolset of named tools: every one of ``names`` gets a resolved config."""
    _object(spec, where, {"type", "default_config", "configs"})
    defaults = _default_config(
        spec.get("default_config"), f"{where}.default_config", "always_allow"
    )
    given: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(_list(spec.get("configs"), f"{where}.configs")):
        at = f"{where}.configs[{index}]"
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in names:
            raise _invalid(f"{at}.name: Input should be one of {', '.join(names)}")
        _object(
            entry, at, {"name", "type", "enabled", "permission_policy", *_TOOL_EXTRAS.get(name, ())}
        )
        if entry.get("type", name) != name:
            raise _invalid(f"{at}.type: must equal the tool's name {name!r}")
        if name in given:
            raise _invalid(f"{at}.name: {name!r} is configured twice")
        given[name] = entry
    configs = []
    for name in names:
        config = _tool_config(given.get(name, {}), f"{where}.configs", defaults, name)
        configs.append({"name": name, "type": name, **config})
    return {"type": kind, "default_config": defaults, "configs": configs}


def _builtin_toolset(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    return _toolset(spec, where, "agent_toolset_20260401", BUILTIN_TOOLS)


def _bedrock_builtin_toolset(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    return _toolset(spec, where, "agent_toolset_20260401", _BEDROCK_BUILTIN_TOOLS)


def _memory_toolset(spec: Mapping[str, Any], where: str) -> dict[str, Any]:
    return _toolset(spec, where, "memory_toolset_20261030", MEMORY_TOOLS)


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


def resolved_tools(
    tools: Any, mcp_servers: Any, where: str = "", *, bedrock: bool = False
) -> tuple[list[Any], list[Any]]:
    """An agent's ``tools`` and ``mcp_servers``, checked against each other and resolved."""
    # A server's kind and the field that locates it: a URL, or on Bedrock a gateway's ARN.
    server_type, locator = ("aws_agentcore_gateway", "gateway_arn") if bedrock else ("url", "url")
    servers: list[dict[str, str]] = []
    for index, entry in enumerate(_list(mcp_servers, f"{where}mcp_servers")):
        at = f"{where}mcp_servers[{index}]"
        _object(entry, at, {"type", "name", locator})
        if entry.get("type") != server_type:
            raise _invalid(f"{at}.type: Input should be {server_type!r}")
        name = _string(entry.get("name"), f"{at}.name")
        if len(name) > 255 or any(s["name"] == name for s in servers):
            raise _invalid(f"{at}.name: names are unique and at most 255 characters")
        location = _string(entry.get(locator), f"{at}.{locator}")
        if bedrock and not _GATEWAY_ARN.fullmatch(location):
            raise _invalid(f"{at}.gateway_arn: must be the ARN of an AgentCore gateway")
        servers.append({"type": server_type, "name": name, locator: location})
    if len(servers) > _MAX_MCP_SERVERS:
        raise _invalid(f"{where}mcp_servers: at most {_MAX_MCP_SERVERS} servers")
    resolved: list[dict[str, Any]] = []
    builders = {
        "agent_toolset_20260401": _bedrock_builtin_toolset if bedrock else _builtin_toolset,
        "mcp_toolset": _mcp_toolset,
        "custom": _custom_tool,
    }
    if bedrock:
        builders["memory_toolset_20261030"] = _memory_toolset
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
