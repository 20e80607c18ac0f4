"""How the Claude emulator resolves an agent's ``multiagent`` configuration.

A ``coordinator`` roster or a ``multiagent_20261001`` configuration (an advisor, subagents
and workflows, each enabled or disabled) names each agent at a version: ``self`` names the
agent at the version the create or update makes, and a roster agent cannot itself be
multiagent. An update merges into the stored configuration.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._config import _list, _object, _string
from req_managed_agents.testing.claude._wire import _invalid

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Callable

    # Finds an agent at a version (None: the latest); raises the API's error when it cannot.
    AgentLookup = Callable[[str, "int | None"], "Mapping[str, Any]"]

_MAX_ROSTER = 20


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
