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
the session runs. A session of a self-hosted environment queues a work item as it is made.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude import _bedrock
from req_managed_agents.testing.claude._config_tools import resolved_tools
from req_managed_agents.testing.claude._inputs import check_event
from req_managed_agents.testing.claude._model import _Session
from req_managed_agents.testing.claude._resources import _repository
from req_managed_agents.testing.claude._session_config import (
    _agent_reference,
    _budget,
    _overridden,
    _update_budget,
)
from req_managed_agents.testing.claude._wire import (
    _MAX_SESSION_FILES,
    SESSION_PATH,
    _flag,
    _invalid,
    _json_object,
    _merged_metadata,
    _optional_string,
    _query_choice,
    _query_int,
    _query_values,
    _reject_unknown,
    _time_filter,
)
from req_managed_agents.testing.server import new_id, query_value, utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._agents import Agents
    from req_managed_agents.testing.claude._environments import Environments
    from req_managed_agents.testing.claude._events import Events
    from req_managed_agents.testing.claude._files import Files
    from req_managed_agents.testing.claude._log import SessionLog
    from req_managed_agents.testing.claude._resources import SessionResources
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._work_items import WorkItems
    from req_managed_agents.testing.server import Exchange, Route

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
# Claude on Amazon Bedrock: no vaults; a working directory and the IAM role it runs as
# (``role_arn`` is the older name of ``execution_identity``).
_BEDROCK_SESSION_FIELDS = (_SESSION_FIELDS - {"vault_ids"}) | {
    "working_directory",
    "execution_identity",
    "role_arn",
}
_UPDATE_FIELDS = frozenset({"agent", "budget", "metadata", "title", "vault_ids"})
_STATUSES = ("rescheduling", "running", "idle", "terminated")
_INITIAL_EVENTS = ("user.message", "user.define_outcome")
_MAX_INITIAL_EVENTS = 50


class Sessions:
    """The session routes; sessions are made of the other resources' objects."""

    def __init__(
        self,
        state: ClaudeState,
        log: SessionLog,
        *,
        agents: Agents,
        environments: Environments,
        resources: SessionResources,
        files: Files,
        events: Events,
        work: WorkItems,
    ) -> None:
        self._state = state
        self._work = work
        self._log = log
        self._agents = agents
        self._environments = environments
        self._resources = resources
        self._files = files
        self._events = events

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/sessions", self._create_session),
            ("GET", "/v1/sessions", self._list_sessions),
            ("GET", SESSION_PATH, self._get_session),
            ("POST", SESSION_PATH, self._update_session),
            ("POST", f"{SESSION_PATH}/archive", self._archive_session),
            ("DELETE", SESSION_PATH, self._delete_session),
        ]

    def _vault_ids(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _invalid("vault_ids: Input should be a list of vault ids")
        for vault_id in value:
            if self._state.vaults.find(vault_id)["archived_at"]:
                raise _invalid(f"vault_ids: vault {vault_id!r} is archived")
        return list(dict.fromkeys(value))

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
                self._state.files.__contains__,
                where="initial_events",
            )
        return events

    def _create_session(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        bedrock = self._state.bedrock
        _reject_unknown(body, _BEDROCK_SESSION_FIELDS if bedrock else _SESSION_FIELDS)
        agent_id, version, overrides = _agent_reference(body.get("agent"))
        environment_id = body.get("environment_id")
        if not isinstance(environment_id, str):
            raise _invalid("environment_id: Field required")
        resources = body.get("resources") or []
        if not isinstance(resources, list):
            raise _invalid("resources: Input should be a valid list")
        if len(resources) > _MAX_SESSION_FILES:
            raise _invalid(f"resources: a session can have at most {_MAX_SESSION_FILES} files")
        with self._state.condition:
            agent = self._agents.agent_at(agent_id, version)
            if self._state.agents.find(agent_id)["archived_at"]:
                raise _invalid(f"agent {agent_id!r} is archived")
            bedrock_fields = _bedrock.session_fields(body, agent) if bedrock else {}
            if bedrock:  # a sandbox the emulator does not keep: a cloud one
                environment: dict[str, Any] = {"config": {"type": "cloud"}}
            else:
                environment = self._environments.usable(environment_id)
            snapshot = self._agents.snapshot(agent)
            _overridden(snapshot, overrides, bedrock=bedrock)
            if bedrock:
                _bedrock.check_resource_counts(resources)
            # All checked before anything is made, so a bad entry leaves no stray copies.
            attached: list[tuple[str, Any]] = []
            for index, spec in enumerate(resources):
                where = f"resources[{index}]."
                kind = spec.get("type") if isinstance(spec, dict) else None
                if bedrock and kind in _bedrock.SANDBOX_RESOURCE_TYPES:
                    resource = _bedrock.sandbox_resource(spec, where, snapshot["tools"])
                    attached.append(("sandbox", resource))
                elif bedrock and kind != "memory_store":  # files and repos are Claude API's
                    raise _invalid(
                        f"{where}type: Input should be 'memory_store', "
                        + ", ".join(f"'{name}'" for name in sorted(_bedrock.SANDBOX_RESOURCE_TYPES))
                    )
                elif kind == "github_repository":
                    attached.append(("repository", _repository(spec, where)))
                elif kind == "memory_store":
                    attached.append(("memory", self._resources.memory_resource(spec, where)))
                else:
                    attached.append(("file", self._resources.file_resource(spec, where)))
            now = utc_timestamp()
            record: dict[str, Any] = {
                "id": new_id("sesn"),
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
            if bedrock:
                del record["vault_ids"], record["deployment_id"]
                record.update(bedrock_fields)
            self_hosted = environment["config"]["type"] == "self_hosted"
            session = _Session(
                record,
                self._state.agent_scripts[agent_id],
                self_hosted=self_hosted,
                bedrock=bedrock,
            )
            initial = self._initial_events(body.get("initial_events"), session)
            self._state.sessions[record["id"]] = session
            self._work.queue(session)  # a self-hosted environment's sandbox must serve it
            for index, (kind, value) in enumerate(attached):
                if kind == "file":
                    self._resources.mount(session, *value)
                elif kind == "repository":
                    resource, token = value
                    if token is not None:
                        self._state.tokens[resource["id"]] = token
                    record["resources"].append(resource)
                elif kind == "sandbox":
                    record["resources"].append(_bedrock.placed(value, record, index))
                else:
                    record["resources"].append(value)
            answer = session.view()  # initial events are not in the answer
            for event in initial:
                self._events.accept(session, event)
            return answer

    def _get_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            return self._state.sessions.find(session_id).view()

    def _update_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _UPDATE_FIELDS)
        if body.get("vault_ids") is not None:
            raise _invalid("vault_ids: updating a session's vaults is not yet supported")
        with self._state.condition:
            session = self._state.sessions.find(session_id)
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
                    bedrock=self._state.bedrock,
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
                _update_budget(session, body["budget"], changes)
            if changes:
                record["updated_at"] = utc_timestamp()
                self._log.append(session, {"type": "session.updated", **changes})
            return session.view()

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
        with self._state.condition:
            records = [
                s.view()
                for s in self._state.sessions.values()
                if not s.deleted
                and (archived or not s.record["archived_at"])
                and (not statuses or s.status in statuses)
                and agent_id in (None, s.record["agent"]["id"])
                and agent_version in (None, s.record["agent"]["version"])
                and created(s.record["created_at"])
                and deployment_id in (None, s.record.get("deployment_id"))
                and (
                    store_id is None
                    or any(r.get("memory_store_id") == store_id for r in s.record["resources"])
                )
            ]
            if order == "desc":
                records.reverse()
            return self._state.page(
                request,
                records,
                with_prev=True,
            )

    def _archive_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be archived; interrupt it first")
            if not session.record["archived_at"]:
                session.record["archived_at"] = utc_timestamp()
                self._log.set_status(session, "terminated")
            return session.view()

    def _delete_session(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            if session.status == "running":
                raise _invalid("a running session cannot be deleted; interrupt it first")
            session.deleted = True
            self._log.append(session, {"type": "session.deleted"})
            self._files.delete_session_files(session)
        return {"id": session_id, "type": "session_deleted"}
