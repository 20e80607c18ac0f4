"""Agent and environment configurations resolved into what the API answers.

A request names only what it changes; the API answers with every field resolved (the
defaults the SDK's docstrings give: service tier ``auto``, text format ``text`` at
``medium`` verbosity, subagents disabled, 6 concurrent subagents once enabled, blocking
compaction, no experimental features). A saved agent's tools are ``persisted`` tools; a
session's agent has session tools, which show no credentials (an MCP server's
``authorization``, headers and environment variables are never answered back) and no
``tool_search`` (the SDK's session tool union has no such member, so the session keeps it
out of the answer). Whether a body is well-formed is ``_params``'s job; what its values
mean together (unique tool names, a network policy that adds up) is checked here.
"""

from __future__ import annotations

import copy
from typing import Any

from req_managed_agents.testing.openai._schema import invalid_value
from req_managed_agents.testing.openai._wire import invalid
from req_managed_agents.testing.server import new_id

# Maximum concurrent subagents when multi-agent is enabled without a number.
_DEFAULT_CONCURRENT_SUBAGENTS = 6


def agent_settings(body: dict[str, Any], current: dict[str, Any] | None = None) -> dict[str, Any]:
    """The resolved settings of an agent: ``current`` (a saved agent's, when updating or
    overriding) changed by ``body``. Omitted fields keep their value; null resets one."""
    settings = copy.deepcopy(current) if current is not None else _default_settings()
    for key, value in body.items():
        if key == "compaction":
            settings["compaction"] = {"async": bool((value or {}).get("async"))}
        elif key == "experimental":  # merged by key
            settings["experimental"] = {**settings["experimental"], **value}
        elif key == "multi_agent":
            settings["multi_agent"] = _multi_agent(value)
        elif key == "reasoning":
            reasoning = value or {}
            settings["reasoning"] = {
                "effort": reasoning.get("effort"),
                "summary": reasoning.get("summary"),
            }
        elif key == "service_tier":
            settings["service_tier"] = value or "auto"
        elif key == "text":
            text = value or {}
            settings["text"] = {
                "format": copy.deepcopy(text.get("format") or {"type": "text"}),
                "verbosity": text.get("verbosity") or "medium",
            }
        elif key == "tools":
            settings["tools"] = resolved_tools(value or [], path="tools")
        elif key == "metadata":
            settings["metadata"] = dict(value or {})
        else:  # model, name, instructions: as given (null clears)
            settings[key] = value
    return settings


def _default_settings() -> dict[str, Any]:
    return {
        "instructions": None,
        "metadata": {},
        "multi_agent": {"enabled": False, "max_concurrent_subagents": None},
        "name": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "auto",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tools": [],
        "compaction": {"async": False},
        "experimental": {"time_awareness": False},
    }


def _multi_agent(value: dict[str, Any] | None) -> dict[str, Any]:
    if not value or not value["enabled"]:
        return {"enabled": False, "max_concurrent_subagents": None}
    limit = value.get("max_concurrent_subagents", _DEFAULT_CONCURRENT_SUBAGENTS)
    return {"enabled": True, "max_concurrent_subagents": limit}


def resolved_tools(tools: list[dict[str, Any]], *, path: str) -> list[dict[str, Any]]:
    """Tools as the API answers them, in the persisted shape (credentials kept here and
    dropped by :func:`session_tools`); two functions or MCP servers of one name are a 400."""
    seen: set[tuple[str, str]] = set()
    resolved = []
    for index, tool in enumerate(tools):
        kind = tool["type"]
        name = tool.get("name") or tool.get("server_label")
        if name is not None:
            if (kind, name) in seen:
                raise invalid_value(f"{path}[{index}]", f"the {kind} name '{name}' is not unique.")
            seen.add((kind, name))
        resolved.append(_resolved_tool(tool))
    return resolved


def _resolved_tool(tool: dict[str, Any]) -> dict[str, Any]:
    kind = tool["type"]
    if kind == "function":
        resolved = {
            "defer_loading": tool.get("defer_loading", False),
            "description": tool["description"],
            "name": tool["name"],
            "parameters": copy.deepcopy(tool["parameters"]),
            "type": "function",
        }
        if "async" in tool:
            resolved["async"] = tool["async"]
        return resolved
    if kind == "programmatic_tool_calling":
        return {"enabled": tool.get("enabled", True), "type": kind}
    if kind == "mcp":
        return {
            "allowed_tools": copy.deepcopy(tool.get("allowed_tools")),
            "connection_origin": tool.get("connection_origin") or "service",
            "credential_id": tool.get("credential_id"),
            "request_metadata": copy.deepcopy(tool.get("request_metadata") or {}),
            "required": tool.get("required", False),
            "server_label": tool["server_label"],
            "transport": copy.deepcopy(tool["transport"]),  # trimmed by the views below
            "type": kind,
        }
    if kind == "web_search":
        location = tool.get("location")
        return {
            "allowed_domains": copy.deepcopy(tool.get("allowed_domains")),
            "context_size": tool.get("context_size") or "medium",
            "location": None
            if location is None
            else {k: location.get(k) for k in ("city", "country", "region", "timezone")},
            "mode": tool.get("mode") or "live",
            "type": kind,
        }
    if kind == "computer_use":
        return {"include_screenshots": tool.get("include_screenshots", False), "type": kind}
    return {"type": kind}  # tool_search, automations


def persisted_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A saved agent's tools as answered: an HTTP MCP server shows its (non-secret) headers."""
    answered = []
    for tool in tools:
        if tool["type"] == "mcp":
            tool = {**tool, "transport": _transport(tool["transport"], headers=True)}
        answered.append(tool)
    return answered


def session_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's tools as answered: no credentials, no ``tool_search``."""
    answered = []
    for tool in tools:
        if tool["type"] == "tool_search":
            continue
        if tool["type"] == "mcp":
            tool = {**tool, "transport": _transport(tool["transport"], headers=False)}
        answered.append(tool)
    return answered


def _transport(transport: dict[str, Any], *, headers: bool) -> dict[str, Any]:
    if transport["type"] == "http":
        shown: dict[str, Any] = {"server_url": transport["server_url"], "type": "http"}
        if headers:
            shown["headers"] = dict(transport.get("headers") or {})
        return shown
    return {
        "args": list(transport.get("args") or []),
        "command": transport["command"],
        "cwd": transport["cwd"],
        "env_vars": list(transport.get("env_vars") or []),
        "type": "stdio",
    }


# Hosted-environment features the emulator cannot provide; given non-empty, they are a 400.
_UNSUPPORTED_HOSTED = ("environment_id", "environment_template_id")
_UNSUPPORTED_HOSTED_LISTS = ("files", "plugins", "setup_commands", "skills")


def environment(body: dict[str, Any], base_url: str) -> dict[str, Any]:
    """A session's environment as the API answers it, given the ``environment`` param."""
    kind = body["type"]
    if kind == "none":
        return {"type": "none"}
    environment_id = new_id("env")
    directories = list(body.get("capability_directories") or [])
    if kind == "self_hosted":
        workspace = body["workspace_directory"]
        if not workspace.startswith("/"):
            raise invalid_value("environment.workspace_directory", "must be an absolute path.")
        return {
            "id": environment_id,
            "capability_directories": directories,
            "remote_url": f"{base_url.replace('http', 'ws', 1)}/environments/{environment_id}",
            "type": kind,
            "workspace_directory": workspace,
        }
    for key in (*_UNSUPPORTED_HOSTED, *(k for k in _UNSUPPORTED_HOSTED_LISTS if body.get(k))):
        if key in body:
            raise invalid(
                f"'environment.{key}' is not supported by this emulator.",
                param=f"environment.{key}",
                code="unsupported_parameter",
            )
    packages = body.get("packages") or {}
    return {
        "id": environment_id,
        "capability_directories": directories,
        "files": [],
        "network": _network(body.get("network")),
        "packages": {k: list(packages.get(k) or []) for k in ("npm", "python", "system")},
        "plugins": [],
        "skills": [],
        "type": kind,
        "container_size": body.get("container_size", "medium"),
        "desktop": {"enabled": bool((body.get("desktop") or {}).get("enabled"))},
    }


def _network(network: dict[str, Any] | None) -> dict[str, Any]:
    """The effective network policy; without one, the environment has no network access."""
    if network is None:
        return {"access": "disabled", "allowed_domains": []}
    allowed = list(network.get("allowed_domains") or [])
    blocked = list(network.get("blocked_domains") or [])
    if blocked and (network["access"] != "restricted" or allowed):
        raise invalid_value(
            "environment.network.blocked_domains",
            "needs access 'restricted' and cannot be combined with allowed_domains.",
        )
    return {"access": network["access"], "allowed_domains": allowed}
