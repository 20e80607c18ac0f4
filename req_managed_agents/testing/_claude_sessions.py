"""Sessions of the Claude emulator: creation with its options, updates, lists and endings.

A session is created from an agent (its latest version, a pinned ``{"type": "agent", "id",
"version"}``, or ``agent_with_overrides``, whose fields replace the agent's for this session
only) in an environment, with optional ``resources`` (files, GitHub repositories, memory
stores), ``vault_ids``, ``metadata``, ``title``, a spend ``budget`` and ``initial_events``
(``user.message`` and ``user.define_outcome``, at most 50, checked like sent events and
played in order; they are in the history, not in the create response). An update changes
the agent's ``tools`` and ``mcp_servers`` (not while running), the ``title``, the
``metadata`` (a patch) or the ``budget`` (replaced, or removed for good with null), and logs
a ``session.updated`` naming only what changed; ``vault_ids`` cannot be updated yet, as with
the service. The list filters by status, agent (and version), creation time, memory store
and archiving, newest first unless ``order=asc``; archiving and deleting are refused while
the session runs.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_agents import _AgentsAPI
from req_managed_agents.testing._claude_base import _Session
from req_managed_agents.testing._claude_events import _EventsAPI
from req_managed_agents.testing._claude_memory import _MemoryAPI
from req_managed_agents.testing._claude_vaults import _VaultsAPI
from req_managed_agents.testing._server import query_value, utc_timestamp
from req_managed_agents.testing.claude._config import resolved_model, resolved_skills
from req_managed_agents.testing.claude._config_tools import resolved_tools
from req_managed_agents.testing.claude._inputs import check_event
from req_managed_agents.testing.claude._wire import (
    _MAX_RESOURCE_PAGE,
    _MAX_SESSION_FILES,
    _flag,
    _invalid,
    _json_object,
    _merged_metadata,
    _new_id,
    _optional_string,
    _query_choice,
    _query_int,
    _query_values,
    _reject_unknown,
    _time_filter,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing._server import Exchange

_SESSION_FIELDS = frozenset(
    {
        "agent",
        "environment_id",
        "metadata",
        "title",
        "resources",
        "vault_ids",
        "budget",
        "initial_events",
    }
)
_UPDATE_FIELDS = frozenset({"agent", "budget", "metadata", "title", "vault_ids"})
_OVERRIDES = frozenset({"model", "system", "tools", "mcp_servers", "skills"})
_STATUSES = ("rescheduling", "running", "idle", "terminated")
_INITIAL_EVENTS = ("user.message", "user.define_outcome")
_MAX_INITIAL_EVENTS = 50
_MAX_INSTRUCTIONS = 4096
_REPOSITORY_URL = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)")


def _budget(value: Any) -> dict[str, Any]:
    """A spend ceiling: ``{"type": "limit", "max_list_cost": {"amount", "currency"}}``, the
    amount in cents as a string of digits, in USD."""
    if not isinstance(value, dict) or value.get("type") != "limit":
        raise _invalid("budget.type: Input should be 'limit'")
    _reject_unknown(value, frozenset({"type", "max_list_cost"}))
    cost = value.get("max_list_cost")
    if not isinstance(cost, dict) or set(cost) != {"amount", "currency"}:
        raise _invalid("budget.max_list_cost: Field required ({amount, currency})")
    amount = cost["amount"]
    if not isinstance(amount, str) or not amount.isdigit() or int(amount) <= 0:
        raise _invalid("budget.max_list_cost.amount: whole cents, as a string of digits")
    if cost["currency"] != "USD":
        raise _invalid("budget.max_list_cost.currency: Input should be 'USD'")
    return {"type": "limit", "max_list_cost": {"amount": amount, "currency": "USD"}}


def _checkout(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    field = {"branch": "name", "commit": "sha"}.get(str(kind))
    if field is None:
        raise _invalid(f"{where}checkout.type: Input should be 'branch' or 'commit'")
    _reject_unknown(value, frozenset({"type", field}))
    if not isinstance(value.get(field), str) or not value[field]:
        raise _invalid(f"{where}checkout.{field}: Field required")
    return {"type": kind, field: value[field]}


def _repository(spec: Mapping[str, Any], where: str) -> tuple[dict[str, Any], str | None]:
    """A GitHub repository resource and its token (kept, never answered)."""
    _reject_unknown(
        spec, frozenset({"type", "url", "authorization_token", "mount_path", "checkout"})
    )
    url = spec.get("url")
    found = _REPOSITORY_URL.fullmatch(url) if isinstance(url, str) else None
    if found is None or found.group(2).endswith(".git"):
        raise _invalid(f"{where}url: https://github.com/<owner>/<repo>, without '.git'")
    token = _optional_string(spec, "authorization_token")
    mount_path = _optional_string(spec, "mount_path") or f"/workspace/{found.group(2)}"
    now = utc_timestamp()
    resource = {
        "id": _new_id("sesrsc"),
        "type": "github_repository",
        "url": url,
        "mount_path": mount_path,
        "checkout": _checkout(spec.get("checkout"), where),
        "created_at": now,
        "updated_at": now,
    }
    return resource, token


class _SessionsAPI(_EventsAPI, _AgentsAPI, _VaultsAPI, _MemoryAPI):
    """The session routes."""

    _tokens: dict[str, str]  # repository resource id -> its authorization token

    # --- creation -------------------------------------------------------------------------

    def _agent_reference(self, reference: Any) -> tuple[str, int | None, dict[str, Any]]:
        """The agent a create names: its id, the version it pins and its overrides."""
        if isinstance(reference, str) and reference:
            return reference, None, {}
        kind = reference.get("type") if isinstance(reference, dict) else None
        if kind not in ("agent", "agent_with_overrides"):
            raise _invalid("agent: Field required (an agent id, or {type, id, version})")
        overrides = _OVERRIDES if kind == "agent_with_overrides" else frozenset()
        _reject_unknown(reference, frozenset({"type", "id", "version"}) | overrides)
        agent_id = reference.get("id")
        if not isinstance(agent_id, str) or not agent_id:
            raise _invalid("agent.id: Field required")
        version = reference.get("version")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 1
        ):
            raise _invalid("agent.version: Input should be an integer of at least 1")
        return agent_id, version, {k: v for k, v in reference.items() if k in overrides}

    def _overridden(self, snapshot: dict[str, Any], overrides: Mapping[str, Any]) -> None:
        """Apply ``agent_with_overrides`` fields to a session's snapshot of its agent."""
        if "model" in overrides:
            model = resolved_model(overrides["model"])
            model.pop("effort", None)  # a model override replaces it all; effort is not taken
            snapshot["model"] = model
        if "system" in overrides:
            snapshot["system"] = _optional_string(overrides, "system")
        if "tools" in overrides or "mcp_servers" in overrides:
            snapshot["tools"], snapshot["mcp_servers"] = resolved_tools(
                overrides.get("tools", snapshot["tools"]),
                overrides.get("mcp_servers", snapshot["mcp_servers"]),
                "agent.",
            )
        if "skills" in overrides:
            snapshot["skills"] = resolved_skills(overrides["skills"], "agent.skills")

    def _vault_ids(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _invalid("vault_ids: Input should be a list of vault ids")
        for vault_id in value:
            if self._vault(vault_id)["archived_at"]:
                raise _invalid(f"vault_ids: vault {vault_id!r} is archived")
        return list(dict.fromkeys(value))

    def _memory_resource(self, spec: Mapping[str, Any], where: str) -> dict[str, Any]:
        _reject_unknown(spec, frozenset({"type", "memory_store_id", "access", "instructions"}))
        store_id = spec.get("memory_store_id")
        if not isinstance(store_id, str):
            raise _invalid(f"{where}memory_store_id: Field required")
        store = self._memory_store(store_id)
        if store["archived_at"]:
            raise _invalid(f"{where}memory_store_id: memory store {store_id!r} is archived")
        access = spec.get("access") or "read_write"
        if access not in ("read_write", "read_only"):
            raise _invalid(f"{where}access: Input should be 'read_write' or 'read_only'")
        instructions = _optional_string(spec, "instructions")
        if instructions is not None and len(instructions) > _MAX_INSTRUCTIONS:
            raise _invalid(f"{where}instructions: at most {_MAX_INSTRUCTIONS} characters")
        slug = re.sub(r"[^a-z0-9]+", "-", store["name"].lower()).strip("-") or store_id
        return {
            "type": "memory_store",
            "memory_store_id": store_id,
            "access": access,
            "instructions": instructions,
            "name": store["name"],
            "description": store["description"],
            "mount_path": f"/mnt/memory/{slug}",
        }

    def _initial_events(self, value: Any, session: _Session) -> list[dict[str, Any]]:
        events = [] if value is None else value
        if not isinstance(events, list):
            raise _invalid("initial_events: Input should be a valid list")
        if len(events) > _MAX_INITIAL_EVENTS:
            raise _invalid(f"initial_events: at most {_MAX_INITIAL_EVENTS} events")
        for index, event in enumerate(events):
            if not isinstance(event, dict) or event.get("type") not in _INITIAL_EVENTS:
                raise _invalid(
                    f"initial_events[{index}].type: 'user.message' or 'user.define_outcome'"
                )
            check_event(
                session,
                index,
                event,
                events[:index],
                self._files.__contains__,
                where="initial_events",
            )
        return events

    def _create_session(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _SESSION_FIELDS)
        agent_id, version, overrides = self._agent_reference(body.get("agent"))
        environment_id = body.get("environment_id")
        if not isinstance(environment_id, str):
            raise _invalid("environment_id: Field required")
        resources = body.get("resources") or []
        if not isinstance(resources, list):
            raise _invalid("resources: Input should be a valid list")
        if len(resources) > _MAX_SESSION_FILES:
            raise _invalid(f"resources: a session can have at most {_MAX_SESSION_FILES} files")
        with self._condition:
            agent = self._agent_at(agent_id, version)
            environment = self._environment(environment_id)
            if self._agent(agent_id)["archived_at"]:
                raise _invalid(f"agent {agent_id!r} is archived")
            if environment["archived_at"]:
                raise _invalid(f"environment {environment_id!r} is archived")
            snapshot = self._agent_snapshot(agent)
            self._overridden(snapshot, overrides)
            # All checked before anything is made, so a bad entry leaves no stray copies.
            attached: list[tuple[str, Any]] = []
            for index, spec in enumerate(resources):
                where = f"resources[{index}]."
                kind = spec.get("type") if isinstance(spec, dict) else None
                if kind == "github_repository":
                    attached.append(("repository", _repository(spec, where)))
                elif kind == "memory_store":
                    attached.append(("memory", self._memory_resource(spec, where)))
                else:
                    attached.append(("file", self._file_resource(spec, where)))
            now = utc_timestamp()
            record: dict[str, Any] = {
                "id": _new_id("sesn"),
                "type": "session",
                "status": "idle",
                "agent": snapshot,
                "environment_id": environment_id,
                "title": _optional_string(body, "title"),
                "metadata": _merged_metadata({}, body.get("metadata") or {}),
                "resources": [],
                "outcome_evaluations": [],
                "vault_ids": self._vault_ids(body.get("vault_ids")),
                "budget": None if body.get("budget") is None else _budget(body["budget"]),
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": 0,
                    },
                },
                "deployment_id": None,
                "created_at": now,
                "updated_at": now,
                "archived_at": None,
            }
            self_hosted = environment["config"]["type"] == "self_hosted"
            session = _Session(record, self._agent_scripts[agent_id], self_hosted=self_hosted)
            initial = self._initial_events(body.get("initial_events"), session)
            self._sessions[record["id"]] = session
            for kind, value in attached:
                if kind == "file":
                    self._mount(session, *value)
                elif kind == "repository":
                    resource, token = value
                    if token is not None:
                        self._tokens[resource["id"]] = token
                    record["resources"].append(resource)
                else:
                    record["resources"].append(value)
            answer = session.view()  # initial events are not in the answer
            for event in initial:
                self._accept(session, event)
            return answer

    # --- the other routes -----------------------------------------------------------------

    def _get_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            return self._live_session(session_id).view()

    def _update_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _UPDATE_FIELDS)
        if body.get("vault_ids") is not None:
            raise _invalid("vault_ids: updating a session's vaults is not yet supported")
        with self._condition:
            session = self._live_session(session_id)
            record = session.record
            if record["archived_at"] or session.status == "terminated":
                raise _invalid("an archived or terminated session cannot be updated")
            changes: dict[str, Any] = {}
            agent = body.get("agent")
            if agent is not None:
                if not isinstance(agent, dict):
                    raise _invalid("agent: Input should be an object ({tools, mcp_servers})")
                _reject_unknown(agent, frozenset({"tools", "mcp_servers"}))
                if session.status == "running":
                    raise _invalid("agent: a running session's tools cannot change; interrupt it")
                snapshot = copy.deepcopy(record["agent"])
                snapshot["tools"], snapshot["mcp_servers"] = resolved_tools(
                    agent.get("tools", snapshot["tools"]),
                    agent.get("mcp_servers", snapshot["mcp_servers"]),
                    "agent.",
                )
                if snapshot != record["agent"]:
                    record["agent"].update(snapshot)  # the primary thread shares it
                    changes["agent"] = copy.deepcopy(snapshot)
            if "title" in body:
                title = _optional_string(body, "title")
                if title != record["title"]:
                    record["title"] = changes["title"] = title
            if body.get("metadata") is not None:
                metadata = _merged_metadata(record["metadata"], body["metadata"])
                if metadata != record["metadata"]:
                    record["metadata"] = metadata
                    changes["metadata"] = copy.deepcopy(metadata)
            if "budget" in body:
                self._update_budget(session, body["budget"], changes)
            if changes:
                record["updated_at"] = utc_timestamp()
                self._append(session, {"type": "session.updated", **changes})
            return session.view()

    def _update_budget(self, session: _Session, value: Any, changes: dict[str, Any]) -> None:
        """Replace or remove a budget; one can never be added to a session without one."""
        record = session.record
        if record["budget"] is None:
            reason = "was removed" if session.budget_removed else "was created without one"
            raise _invalid(f"budget: cannot add a budget to a session that {reason}")
        if value is None:
            record["budget"] = changes["budget"] = None
            session.budget_removed = True
            return
        budget = _budget(value)  # greater than the consumed list cost, which stays at 0
        if budget != record["budget"]:
            record["budget"] = budget
            changes["budget"] = copy.deepcopy(budget)

    def _list_sessions(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        archived = _flag(request, "include_archived")
        statuses = _query_values(request, "statuses", _STATUSES)
        agent_id = query_value(request, "agent_id")
        agent_version = _query_int(request, "agent_version")
        if agent_version is not None and agent_id is None:
            raise _invalid("agent_version: only applies together with agent_id")
        created = _time_filter(request)
        deployment_id = query_value(request, "deployment_id")
        store_id = query_value(request, "memory_store_id")
        order = _query_choice(request, "order", ("asc", "desc")) or "desc"
        with self._condition:
            records = [
                s.view()
                for s in self._sessions.values()
                if not s.deleted
                and (archived or not s.record["archived_at"])
                and (not statuses or s.status in statuses)
                and agent_id in (None, s.record["agent"]["id"])
                and agent_version in (None, s.record["agent"]["version"])
                and created(s.record["created_at"])
                and deployment_id in (None, s.record["deployment_id"])
                and (
                    store_id is None
                    or any(r.get("memory_store_id") == store_id for r in s.record["resources"])
                )
            ]
            if order == "desc":
                records.reverse()
            return self._page(
                request,
                records,
                scope="sessions",
                max_limit=_MAX_RESOURCE_PAGE,
                with_prev=True,
            )

    def _archive_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._condition:
            session = self._live_session(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be archived; interrupt it first")
            if not session.record["archived_at"]:
                session.record["archived_at"] = utc_timestamp()
                self._set_status(session, "terminated")
            return session.view()

    def _delete_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._condition:
            session = self._live_session(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be deleted; interrupt it first")
            session.deleted = True
            self._append(session, {"type": "session.deleted"})
            self._delete_session_files(session)
        return {"id": session_id, "type": "session_deleted"}

    # --- repository resources -------------------------------------------------------------

    def _update_resource(
        self, exchange: Exchange, session_id: str, resource_id: str
    ) -> dict[str, Any]:
        """Rotate a repository's token: the only change a resource takes."""
        body = _json_object(exchange.request)
        _reject_unknown(body, frozenset({"authorization_token"}))
        token = body.get("authorization_token")
        if not isinstance(token, str) or not token:
            raise _invalid("authorization_token: Field required")
        with self._condition:
            resource = self._resource(self._live_session(session_id), resource_id)
            if resource["type"] != "github_repository":
                raise _invalid("only a github_repository resource's token can be updated")
            self._tokens[resource_id] = token
            resource["updated_at"] = utc_timestamp()
            return copy.deepcopy(resource)
