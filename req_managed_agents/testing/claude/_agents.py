"""Agents of the Claude emulator: their REST objects, their versions and their scripts.

Agents are created, read (the latest version, or ``?version=N``), updated (a real change
makes version N+1; ``version`` in the body is optimistic concurrency, a mismatch a 409),
listed (archived ones on request, by ``created_at[gte|lte]``), archived and listed by
version (newest first). They answer with their defaults resolved (``_config``). With
``unique_names`` a second agent of the same name is a 409. Each agent plays a script: the
emulator's default one unless the test gave it its own.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude import _bedrock
from req_managed_agents.testing.claude._config import (
    resolved_identity,
    resolved_model,
    resolved_skills,
)
from req_managed_agents.testing.claude._config_roster import resolved_multiagent
from req_managed_agents.testing.claude._config_tools import resolved_tools
from req_managed_agents.testing.claude._resource import Resource
from req_managed_agents.testing.claude._wire import (
    ID,
    _APIError,
    _check_name_free,
    _invalid,
    _json_object,
    _merged_metadata,
    _optional_string,
    _query_int,
    _reject_unknown,
    _required_name,
)
from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._turn import Turn
    from req_managed_agents.testing.server import Exchange, Route

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


class Agents(Resource):
    """The agent routes, and the agents sessions are created from.

    ``default_script`` is what agents created without one play.
    """

    created_bounds = ("gte", "lte")
    deletable = False

    def __init__(
        self, state: ClaudeState, *, default_script: tuple[Turn, ...], unique_names: bool
    ) -> None:
        super().__init__(state, state.agents, "/v1/agents")
        self._default_script = default_script
        self._unique_names = unique_names

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/agents", self._create_agent),
            ("POST", f"/v1/agents/{ID}", self._update_agent),
            ("GET", f"/v1/agents/{ID}/versions", self._list_agent_versions),
            *super().routes(),
        ]

    def new_agent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an agent from a checked create body; the state's lock is held."""
        name = _required_name(body)
        if "model" not in body:
            raise _invalid("model: Field required")
        _check_name_free(self._unique_names, self._state.agents, "agent", name)
        now = utc_timestamp()
        agent: dict[str, Any] = {
            "id": new_id("agent"),
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
        self._state.agents[agent["id"]] = agent
        self._state.agent_versions[agent["id"]] = [copy.deepcopy(agent)]
        self._state.agent_scripts[agent["id"]] = self._default_script
        return agent

    def agent_at(self, agent_id: str, version: int | None) -> dict[str, Any]:
        """An agent at a version (None: the latest); a 404 for an unknown one."""
        latest = self._state.agents.find(agent_id)
        if version is None:
            return latest
        versions = self._state.agent_versions[agent_id]
        if not 1 <= version <= len(versions):
            raise _APIError(404, f"agent {agent_id!r} has no version {version}")
        return versions[version - 1]

    def snapshot(self, agent: Mapping[str, Any]) -> dict[str, Any]:
        """What a session keeps of its agent: the configuration, with the agents its
        multiagent configuration names resolved to snapshots of their own."""
        snapshot = {key: copy.deepcopy(agent[key]) for key in _SNAPSHOT_KEYS}
        multiagent = copy.deepcopy(agent["multiagent"])

        def resolve(reference: Mapping[str, Any]) -> dict[str, Any]:
            if reference["type"] != "agent":
                return dict(reference)
            roster_agent = self.agent_at(reference["id"], reference["version"])
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
        bedrock = self._state.bedrock
        if "model" in body:
            if body["model"] is None:
                raise _invalid("model: cannot be cleared")
            if bedrock:
                _bedrock.check_model(body["model"])
            agent["model"] = resolved_model(body["model"], previous.get("model"))
        for key in ("system", "description"):
            if key in body:
                agent[key] = _optional_string(body, key)
        if "tools" in body or "mcp_servers" in body:
            agent["tools"], agent["mcp_servers"] = resolved_tools(
                body.get("tools", agent["tools"]),
                body.get("mcp_servers", agent["mcp_servers"]),
                bedrock=bedrock,
            )
        if "skills" in body:
            skills = _bedrock.resolved_skills if bedrock else resolved_skills
            agent["skills"] = skills(body["skills"])
        if "multiagent" in body:
            if bedrock:
                _bedrock.check_multiagent(body["multiagent"])
            own = (agent["id"], version)
            agent["multiagent"] = resolved_multiagent(
                body["multiagent"], own, self.agent_at, previous.get("multiagent")
            )
        if "metadata" in body:
            agent["metadata"] = _merged_metadata(agent["metadata"], body["metadata"] or {})
        if "execution_identity" in body:
            agent["execution_identity"] = resolved_identity(body["execution_identity"])

    def _create_agent(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS)
        if self._state.bedrock and body.get("execution_identity") is None:
            raise _invalid("execution_identity: Field required (a Bedrock agent runs as a role)")
        with self._state.condition:
            return copy.deepcopy(self.new_agent(body))

    def _get(self, exchange: Exchange, *ids: str) -> dict[str, Any]:
        version = _query_int(exchange.request, "version")
        with self._state.condition:
            return copy.deepcopy(self.agent_at(ids[-1], version))

    def _update_agent(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _AGENT_FIELDS | {"version"})
        with self._state.condition:
            agent = self._state.agents.find(agent_id)
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
                _check_name_free(
                    self._unique_names, self._state.agents, "agent", updated["name"], agent_id
                )
            if updated == agent:  # a no-op update keeps the version
                return copy.deepcopy(agent)
            updated["version"] += 1
            updated["updated_at"] = utc_timestamp()
            self._state.agents[agent_id] = updated
            self._state.agent_versions[agent_id].append(copy.deepcopy(updated))
            return copy.deepcopy(updated)

    def _list_agent_versions(self, exchange: Exchange, agent_id: str) -> dict[str, Any]:
        with self._state.condition:
            self._state.agents.find(agent_id)
            versions = list(reversed(self._state.agent_versions[agent_id]))
            return self._state.page(exchange.request, versions)

    def _archived(self, record: dict[str, Any]) -> None:
        for version in self._state.agent_versions[record["id"]]:
            version["archived_at"] = record["archived_at"]
