"""Agents and environments of the Claude emulator: their REST objects and routes.

Create, get, update (agents keep a version that only a real change bumps), list (archived
ones on request) and archive; environments can also be deleted once no session uses them.
The API answers with defaults filled in: a model id becomes an object, an environment
without a config is cloud with unrestricted networking. With ``unique_names`` a second
agent or environment of the same name is a 409.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import (
    _MAX_RESOURCE_PAGE,
    _APIError,
    _flag,
    _invalid,
    _json_object,
    _new_id,
    _not_found,
    _reject_unknown,
    _required_name,
)
from req_managed_agents.testing._claude_base import _ClaudeBase
from req_managed_agents.testing._server import utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing._claude_player import Turn
    from req_managed_agents.testing._server import Exchange

_DEFAULT_ENVIRONMENT_CONFIG: dict[str, Any] = {
    "type": "cloud",
    "networking": {"type": "unrestricted"},
}

_AGENT_FIELDS = frozenset(
    {
        "name",
        "model",
        "system",
        "description",
        "tools",
        "mcp_servers",
        "skills",
        "multiagent",
        "metadata",
        "execution_identity",
    }
)
_ENVIRONMENT_FIELDS = frozenset({"name", "config", "description", "metadata", "scope"})
_LIST_FIELDS = ("tools", "mcp_servers", "skills")  # null clears them to []


def _resolved_model(model: Any) -> dict[str, Any]:
    """The API always answers the model as an object with its defaults filled in."""
    if isinstance(model, str) and model:
        return {"id": model, "speed": "standard"}
    if isinstance(model, dict) and isinstance(model.get("id"), str):
        resolved = {"speed": "standard", **model}
        if isinstance(resolved.get("effort"), str):
            resolved["effort"] = {"type": resolved["effort"]}
        return resolved
    raise _invalid("model: must be a model id or an object with an id")


def _resolved_config(config: Any) -> dict[str, Any]:
    if config is None:
        return copy.deepcopy(_DEFAULT_ENVIRONMENT_CONFIG)
    if not isinstance(config, dict) or config.get("type") not in ("cloud", "self_hosted"):
        raise _invalid("config: must be an object whose type is 'cloud' or 'self_hosted'")
    resolved = copy.deepcopy(config)
    if resolved["type"] == "cloud":
        resolved.setdefault("networking", {"type": "unrestricted"})
    return resolved


def _merged_metadata(current: Mapping[str, str], patch: Any, *, empty_deletes: bool) -> Any:
    if not isinstance(patch, dict):
        raise _invalid("metadata: must be an object")
    merged = dict(current)
    for key, value in patch.items():
        if value is None or (empty_deletes and value == ""):
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


class _AgentsAPI(_ClaudeBase):
    """The agent and environment routes, and the scripts agents play."""

    _agents: dict[str, dict[str, Any]]
    _agent_scripts: dict[str, tuple[Turn, ...]]
    _default_script: tuple[Turn, ...]  # of agents created without one
    _environments: dict[str, dict[str, Any]]
    _unique_names: bool

    # --- agents ---------------------------------------------------------------------------

    def _check_name_free(
        self, records: Mapping[str, Mapping[str, Any]], kind: str, name: str, own_id: str = ""
    ) -> None:
        if self._unique_names and any(
            r["name"] == name and r["id"] != own_id for r in records.values()
        ):
            raise _APIError(409, f"an {kind} named {name!r} already exists")

    def _new_agent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        if "model" not in body:
            raise _invalid("model: Field required")
        self._check_name_free(self._agents, "agent", name)
        now = utc_timestamp()
        agent = {
            "id": _new_id("agent"),
            "type": "agent",
            "name": name,
            "description": body.get("description"),
            "system": body.get("system"),
            "model": _resolved_model(body["model"]),
            "tools": body.get("tools") or [],
            "skills": body.get("skills") or [],
            "mcp_servers": body.get("mcp_servers") or [],
            "multiagent": body.get("multiagent"),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=False),
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._agents[agent["id"]] = agent
        self._agent_scripts[agent["id"]] = self._default_script
        return agent

    def _agent(self, agent_id: str) -> dict[str, Any]:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise _not_found("agent", agent_id)
        return agent

    def _create_agent(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS)
        with self._condition:
            return dict(self._new_agent(body))

    def _get_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        with self._condition:
            return dict(self._agent(agent_id))

    def _update_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS | {"version"})
        with self._condition:
            agent = self._agent(agent_id)
            if agent["archived_at"]:
                raise _invalid("an archived agent cannot be updated")
            if "version" in body and body["version"] != agent["version"]:
                raise _APIError(
                    409, f"version {body['version']} is not the current version {agent['version']}"
                )
            updated = dict(agent)
            for key, value in body.items():
                if key == "name":
                    updated["name"] = _required_name(body)
                    self._check_name_free(self._agents, "agent", updated["name"], agent_id)
                elif key == "model":
                    updated["model"] = _resolved_model(value)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        agent["metadata"], value, empty_deletes=False
                    )
                elif key in _LIST_FIELDS:
                    updated[key] = value or []
                elif key != "version":
                    updated[key] = value
            if updated != agent:  # a no-op update keeps the version
                updated["version"] = agent["version"] + 1
                updated["updated_at"] = utc_timestamp()
                self._agents[agent_id] = updated
            return dict(updated)

    def _list_agents(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        with self._condition:
            agents = [a for a in self._agents.values() if archived or not a["archived_at"]]
            return self._page(
                request, agents, scope=f"agents:{archived}", max_limit=_MAX_RESOURCE_PAGE
            )

    def _archive_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            agent = self._agent(agent_id)
            if not agent["archived_at"]:
                agent["archived_at"] = agent["updated_at"] = utc_timestamp()
            return dict(agent)

    # --- environments ---------------------------------------------------------------------

    def _new_environment(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        self._check_name_free(self._environments, "environment", name)
        now = utc_timestamp()
        environment = {
            "id": _new_id("env"),
            "type": "environment",
            "name": name,
            "description": body.get("description") or "",
            "config": _resolved_config(body.get("config")),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=True),
            "scope": body.get("scope"),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._environments[environment["id"]] = environment
        return environment

    def _environment(self, environment_id: str) -> dict[str, Any]:
        environment = self._environments.get(environment_id)
        if environment is None:
            raise _not_found("environment", environment_id)
        return environment

    def _create_environment(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS)
        with self._condition:
            return dict(self._new_environment(body))

    def _get_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._condition:
            return dict(self._environment(environment_id))

    def _update_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS - {"scope"})
        with self._condition:
            environment = self._environment(environment_id)
            if environment["archived_at"]:
                raise _invalid("an archived environment cannot be updated")
            updated = dict(environment)
            for key, value in body.items():
                if key == "name":
                    updated["name"] = _required_name(body)
                    self._check_name_free(
                        self._environments, "environment", updated["name"], environment_id
                    )
                elif key == "config":
                    updated["config"] = _resolved_config(value)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        environment["metadata"], value, empty_deletes=True
                    )
                else:
                    updated[key] = value
            if updated != environment:
                updated["updated_at"] = utc_timestamp()
                self._environments[environment_id] = updated
            return dict(updated)

    def _list_environments(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        with self._condition:
            environments = [
                e for e in self._environments.values() if archived or not e["archived_at"]
            ]
            return self._page(
                request,
                environments,
                scope=f"environments:{archived}",
                max_limit=_MAX_RESOURCE_PAGE,
            )

    def _archive_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            environment = self._environment(environment_id)
            if not environment["archived_at"]:
                environment["archived_at"] = environment["updated_at"] = utc_timestamp()
            return dict(environment)

    def _delete_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._condition:
            self._environment(environment_id)
            if any(
                not s.deleted and s.record["environment_id"] == environment_id
                for s in self._sessions.values()
            ):
                raise _invalid("the environment is used by sessions; delete them first")
            del self._environments[environment_id]
        return {"id": environment_id, "type": "environment_deleted"}
