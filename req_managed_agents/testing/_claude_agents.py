"""Agents and environments of the Claude emulator: their REST objects and routes.

Agents are created, read (the latest version, or ``?version=N``), updated (a real change
makes version N+1; ``version`` in the body is optimistic concurrency, a mismatch a 409),
listed (archived ones on request, by ``created_at[gte|lte]``), archived and listed by
version (newest first). Environments are created, read, updated (``config`` replaced
whole), listed, archived and deleted once no session uses them. Both answer with their
defaults resolved (``claude._config``). With ``unique_names`` a second agent or environment
of the same name is a 409.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_base import _ClaudeBase
from req_managed_agents.testing._server import utc_timestamp
from req_managed_agents.testing.claude._config import (
    resolved_environment_config,
    resolved_identity,
    resolved_model,
    resolved_skills,
)
from req_managed_agents.testing.claude._config_roster import resolved_multiagent
from req_managed_agents.testing.claude._config_tools import resolved_tools
from req_managed_agents.testing.claude._wire import (
    _MAX_RESOURCE_PAGE,
    _APIError,
    _archive,
    _flag,
    _invalid,
    _json_object,
    _merged_metadata,
    _new_id,
    _not_found,
    _optional_string,
    _query_int,
    _reject_unknown,
    _required_name,
    _time_filter,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing._claude_player import Turn
    from req_managed_agents.testing._server import Exchange

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
_SCOPES = ("organization", "account")
# What a session (or a thread) keeps of the agent it runs.
_SNAPSHOT_KEYS = (
    "id",
    "type",
    "name",
    "description",
    "system",
    "model",
    "tools",
    "mcp_servers",
    "skills",
    "execution_identity",
    "version",
)


def _scope(value: Any) -> Any:
    if value is not None and value not in _SCOPES:
        raise _invalid("scope: Input should be 'organization' or 'account'")
    return value


class _AgentsAPI(_ClaudeBase):
    """The agent and environment routes, and the scripts agents play."""

    _agents: dict[str, dict[str, Any]]  # the latest version of each agent
    _agent_versions: dict[str, list[dict[str, Any]]]  # every version, oldest first
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

    def _configure(
        self,
        agent: dict[str, Any],
        body: Mapping[str, Any],
        previous: Mapping[str, Any],
        version: int,
    ) -> None:
        """Apply a create or update body to ``agent``, resolving what it sets; ``version`` is
        the one the body makes (what ``self`` in a roster names)."""
        if "name" in body:
            agent["name"] = _required_name(body)
        if "model" in body:
            if body["model"] is None:
                raise _invalid("model: cannot be cleared")
            agent["model"] = resolved_model(body["model"], previous.get("model"))
        for key in ("system", "description"):
            if key in body:
                agent[key] = _optional_string(body, key)
        if "tools" in body or "mcp_servers" in body:
            agent["tools"], agent["mcp_servers"] = resolved_tools(
                body.get("tools", agent["tools"]), body.get("mcp_servers", agent["mcp_servers"])
            )
        if "skills" in body:
            agent["skills"] = resolved_skills(body["skills"])
        if "multiagent" in body:
            own = (agent["id"], version)
            agent["multiagent"] = resolved_multiagent(
                body["multiagent"], own, self._agent_at, previous.get("multiagent")
            )
        if "metadata" in body:
            agent["metadata"] = _merged_metadata(agent["metadata"], body["metadata"] or {})
        if "execution_identity" in body:
            agent["execution_identity"] = resolved_identity(body["execution_identity"])

    def _new_agent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        if "model" not in body:
            raise _invalid("model: Field required")
        self._check_name_free(self._agents, "agent", name)
        now = utc_timestamp()
        agent: dict[str, Any] = {
            "id": _new_id("agent"),
            "type": "agent",
            "name": name,
            "description": None,
            "system": None,
            "model": None,
            "tools": [],
            "skills": [],
            "mcp_servers": [],
            "multiagent": None,
            "metadata": {},
            "execution_identity": resolved_identity(None),
            "version": 1,
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._configure(agent, body, {}, 1)
        self._agents[agent["id"]] = agent
        self._agent_versions[agent["id"]] = [copy.deepcopy(agent)]
        self._agent_scripts[agent["id"]] = self._default_script
        return agent

    def _agent(self, agent_id: str) -> dict[str, Any]:
        agent = self._agents.get(agent_id)
        if agent is None:
            raise _not_found("agent", agent_id)
        return agent

    def _agent_at(self, agent_id: str, version: int | None) -> dict[str, Any]:
        """An agent at a version (None: the latest); a 404 for an unknown one."""
        latest = self._agent(agent_id)
        if version is None:
            return latest
        versions = self._agent_versions[agent_id]
        if not 1 <= version <= len(versions):
            raise _APIError(404, f"agent {agent_id!r} has no version {version}")
        return versions[version - 1]

    def _agent_snapshot(self, agent: Mapping[str, Any]) -> dict[str, Any]:
        """What a session keeps of its agent: the configuration, with the agents its
        multiagent configuration names resolved to snapshots of their own."""
        snapshot = {key: copy.deepcopy(agent[key]) for key in _SNAPSHOT_KEYS}
        multiagent = copy.deepcopy(agent["multiagent"])

        def resolve(reference: Mapping[str, Any]) -> dict[str, Any]:
            if reference["type"] != "agent":
                return dict(reference)
            roster_agent = self._agent_at(reference["id"], reference["version"])
            return {key: copy.deepcopy(roster_agent[key]) for key in _SNAPSHOT_KEYS}

        if multiagent is not None and multiagent["type"] == "coordinator":
            multiagent["agents"] = [resolve(entry) for entry in multiagent["agents"]]
        elif multiagent is not None:
            for key in ("subagents", "workflows"):
                if multiagent[key]["type"] == "enabled":
                    members = multiagent[key]["predefined_agents"]
                    multiagent[key]["predefined_agents"] = [resolve(m) for m in members]
        snapshot["multiagent"] = multiagent
        return snapshot

    def _create_agent(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS)
        with self._condition:
            return copy.deepcopy(self._new_agent(body))

    def _get_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        version = _query_int(exchange.request, "version")
        with self._condition:
            return copy.deepcopy(self._agent_at(agent_id, version))

    def _update_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS | {"version"})
        with self._condition:
            agent = self._agent(agent_id)
            if agent["archived_at"]:
                raise _invalid("an archived agent cannot be updated")
            expected = body.get("version")
            if expected is not None and expected != agent["version"]:
                raise _APIError(
                    409, f"version {expected} is not the current version {agent['version']}"
                )
            updated = copy.deepcopy(agent)
            self._configure(updated, body, agent, agent["version"] + 1)
            if "name" in body:
                self._check_name_free(self._agents, "agent", updated["name"], agent_id)
            if updated == agent:  # a no-op update keeps the version
                return copy.deepcopy(agent)
            updated["version"] += 1
            updated["updated_at"] = utc_timestamp()
            self._agents[agent_id] = updated
            self._agent_versions[agent_id].append(copy.deepcopy(updated))
            return copy.deepcopy(updated)

    def _list_agents(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        created = _time_filter(request, bounds=("gte", "lte"))
        with self._condition:
            agents = [
                a
                for a in self._agents.values()
                if (archived or not a["archived_at"]) and created(a["created_at"])
            ]
            return self._page(
                request,
                agents,
                scope=f"agents:{archived}",
                max_limit=_MAX_RESOURCE_PAGE,
            )

    def _list_agent_versions(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        with self._condition:
            self._agent(agent_id)
            versions = list(reversed(self._agent_versions[agent_id]))
            return self._page(
                exchange.request,
                versions,
                scope=f"agent-versions:{agent_id}",
                max_limit=_MAX_RESOURCE_PAGE,
            )

    def _archive_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            agent = self._agent(agent_id)
            if _archive(agent):
                for version in self._agent_versions[agent_id]:
                    version["archived_at"] = agent["archived_at"]
            return copy.deepcopy(agent)

    # --- environments ---------------------------------------------------------------------

    def _new_environment(self, body: Mapping[str, Any]) -> dict[str, Any]:
        name = _required_name(body)
        self._check_name_free(self._environments, "environment", name)
        now = utc_timestamp()
        environment = {
            "id": _new_id("env"),
            "type": "environment",
            "name": name,
            "description": _optional_string(body, "description") or "",
            "config": resolved_environment_config(body.get("config")),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=True),
            "scope": _scope(body.get("scope")),
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
            return copy.deepcopy(self._new_environment(body))

    def _get_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        with self._condition:
            return copy.deepcopy(self._environment(environment_id))

    def _update_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS)
        with self._condition:
            environment = self._environment(environment_id)
            if environment["archived_at"]:
                raise _invalid("an archived environment cannot be updated")
            updated = copy.deepcopy(environment)
            for key, value in body.items():
                if key == "name":
                    if value is None:
                        continue  # null keeps the name
                    updated["name"] = _required_name(body)
                    self._check_name_free(
                        self._environments, "environment", updated["name"], environment_id
                    )
                elif key == "config":
                    if value is not None:
                        updated["config"] = resolved_environment_config(value)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        environment["metadata"], value or {}, empty_deletes=True
                    )
                elif key == "scope":
                    updated["scope"] = _scope(value)
                else:
                    updated[key] = _optional_string(body, key) or ""
            if updated != environment:
                updated["updated_at"] = utc_timestamp()
                self._environments[environment_id] = updated
            return copy.deepcopy(updated)

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
            _archive(environment)
            return copy.deepcopy(environment)

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
