"""The ``tools`` of an invocation: the harness's deployed tools plus the handler's.

An invocation's ``tools`` replace the harness's ("If specified, overrides the harness
default", InvokeHarness's model), so sending only the local tools would silently drop a
harness's code interpreter, browser or MCP servers. AWS's own adapter fetches the harness
and merges; so do we, once per session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers.agentcore._converse import inline_function

__all__ = ["as_tools", "merged_tools"]


def as_tools(tools: Any) -> list[dict[str, Any]]:
    """A ``Tools`` registry, neutral declarations, or AgentCore tool objects as-is."""
    declarations: Sequence[Mapping[str, Any]] = (
        tools.schemas() if hasattr(tools, "schemas") else list(tools)
    )
    return [dict(tool) if "type" in tool else inline_function(tool) for tool in declarations]


def merged_tools(
    deployed: Sequence[Mapping[str, Any]], local: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``deployed`` (from GetHarness) and then ``local``. A deployed inline function named
    like a local tool is that tool, declared once (as the local definition: a harness
    provisioned from an ``AgentSpec`` runs with the same ``Tools``); a deployed tool of any
    other kind with a local tool's name is refused, since the model could not tell them
    apart."""
    names = {tool.get("name") for tool in local}
    kept: list[dict[str, Any]] = []
    for tool in deployed:
        name = tool.get("name")
        if name not in names:
            kept.append(dict(tool))
        elif tool.get("type") != "inline_function":
            raise ConfigurationError(
                f"the harness deploys a {tool.get('type')} tool named {name!r} and a local "
                "tool has the same name; rename the local tool, or pass harness_tools=False "
                "to send only the local tools"
            )
    return [*kept, *(dict(tool) for tool in local)]
