"""Sessions: ``/v1/agents/sessions`` (create, list) and ``/v1/agents/sessions/{id}``
(retrieve, update, delete).

A session runs a saved agent (``agent_id``, with the ``agent`` fields as overrides) or an
inline one (``agent`` with a ``model``); its log starts with ``agent.session.created``. An
``input`` (a string, or user messages) starts the first turn at once; it is required with
``environment.type`` ``none`` and, for environments other than ``self_hosted``, with
``stream: true``, which answers the session's event stream from ``agent.session.created``
on instead of the session. Updating the spend limit moves a session between ``idle`` and
``budget_reached`` (each logged) as its spend falls under or reaches the limit. Deleting a
session while a step runs (``in_progress``) is a 400 ``session_in_progress`` (cancel it
first); a turn waiting for answers is cancelled, and the session's streams end. The
emulator has no vaults: any vault id is a 404.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._config import (
    agent_settings,
    environment,
    resolved_tools,
    session_tools,
)
from req_managed_agents.testing.openai._model import Session, token_usage
from req_managed_agents.testing.openai._params import METADATA, SESSION_CREATE, SESSION_UPDATE
from req_managed_agents.testing.openai._schema import invalid_value
from req_managed_agents.testing.openai._state import check_query, page
from req_managed_agents.testing.openai._wire import (
    SESSION_PATH,
    SESSIONS_PATH,
    invalid,
    not_found,
    now,
)
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.openai._log import SessionLog
    from req_managed_agents.testing.openai._player import Player
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.openai._stream import EventStream
    from req_managed_agents.testing.openai._turns import TurnFlow
    from req_managed_agents.testing.server import Exchange, Route

# The settings of a saved agent a session's agent copies.
_AGENT_FIELDS = (
    "instructions",
    "model",
    "multi_agent",
    "reasoning",
    "service_tier",
    "text",
    "tools",
    "compaction",
    "experimental",
)


class Sessions:
    """The session routes, on the shared state."""

    def __init__(
        self,
        state: OpenAIState,
        log: SessionLog,
        player: Player,
        flow: TurnFlow,
        stream: EventStream,
    ) -> None:
        self._state = state
        self._log = log
        self._player = player
        self._flow = flow
        self._stream = stream
        self.base_url = ""  # set once the server listens

    def routes(self) -> list[Route]:
        return [
            ("POST", SESSIONS_PATH, self._create),
            ("GET", SESSIONS_PATH, self._list),
            ("GET", SESSION_PATH, self._retrieve),
            ("POST", SESSION_PATH, self._update),
            ("DELETE", SESSION_PATH, self._delete),
        ]

    def _create(self, exchange: Exchange) -> dict[str, Any] | None:
        check_query(exchange.request)
        body = SESSION_CREATE(exchange.request.body, "")
        streamed = body.get("stream", False)
        if "stream_options" in body and not streamed:
            raise invalid_value("stream_options", "only allowed when stream is true.")
        kind = body["environment"]["type"]
        messages = _messages(body.get("input"))
        if not messages and (kind == "none" or (streamed and kind != "self_hosted")):
            raise invalid(
                "Missing required parameter: 'input'.",
                param="input",
                code="missing_required_parameter",
            )
        _check_vaults(body.get("vault_ids"))
        with self._state.condition:
            session = self._new_session(body)
            if messages:
                self._player.message(session, messages)
            if not streamed:
                return session.view()
        obfuscated = body.get("stream_options", {}).get("include_obfuscation", True)
        self._stream.serve(exchange, session, 0, [], obfuscated=obfuscated)
        return None

    def _new_session(self, body: dict[str, Any]) -> Session:
        agent_id = body.get("agent_id")
        overrides = body.get("agent", {})
        if agent_id is not None:
            saved = self._state.agents.find(agent_id)
            base = {key: copy.deepcopy(saved[key]) for key in _AGENT_FIELDS}
            name = saved["name"]
        elif "model" not in overrides:
            raise invalid(
                "Missing required parameter: 'agent.model'.",
                param="agent.model",
                code="missing_required_parameter",
            )
        else:
            base, name = None, None
        settings = agent_settings(overrides, base)
        settings["tools"] = session_tools(settings["tools"])
        root_agent_id = agent_id or new_id("agent")
        agent = {"id": root_agent_id, "name": name}
        agent.update((key, settings[key]) for key in _AGENT_FIELDS)
        created = now()
        record: dict[str, Any] = {
            "id": new_id("sess"),
            "object": "agent.session",
            "agent": agent,
            "created_at": created,
            "environment": environment(body["environment"], self.base_url),
            "error": None,
            "last_active_at": created,
            "metadata": dict(body.get("metadata") or {}),
            "status": "idle",
            "usage": token_usage(),
            "vault_ids": [],
            "prompt_cache_options": _prompt_cache(body.get("prompt_cache_options")),
        }
        if body.get("review") == "auto_review":
            record["review"] = "auto_review"
        spend_limit = (body.get("spend_control") or {}).get("limit")
        script = self._state.script_of(agent_id)
        session = Session(record, root_agent_id, script, spend_limit=spend_limit)
        self._state.sessions[session.id] = session
        self._log.append(session, {"type": "agent.session.created", "session": session.view()})
        return session

    def _list(self, exchange: Exchange) -> dict[str, Any]:
        request = exchange.request
        check_query(request, ("agent_id", "metadata"))
        agent_id = request.query.get("agent_id", [None])[0]
        wanted = {
            name[len("metadata[") : -1]: values[0]
            for name, values in request.query.items()
            if name.startswith("metadata[") and name.endswith("]")
        }
        METADATA(wanted, "metadata")
        with self._state.condition:
            views = [
                session.view()
                for session in self._state.sessions.values()
                if not session.deleted
                and agent_id in (None, session.root_agent_id)
                and all(session.record["metadata"].get(k) == v for k, v in wanted.items())
            ]
        return page(request, views)

    def _retrieve(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            return self._state.sessions.find(session_id).view()

    def _update(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        body = SESSION_UPDATE(exchange.request.body, "")
        _check_vaults(body.get("vault_ids"))
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            record = session.record
            agent = record["agent"]
            changes = body.get("agent", {})
            if "model" in changes:
                agent["model"] = changes["model"]
            if "effort" in changes.get("reasoning", {}):
                agent["reasoning"]["effort"] = changes["reasoning"]["effort"]
            if "service_tier" in changes:
                agent["service_tier"] = changes["service_tier"] or "auto"
            if "tools" in changes:
                tools = resolved_tools(changes["tools"] or [], path="agent.tools")
                agent["tools"] = session_tools(tools)
            if "metadata" in body:
                record["metadata"] = dict(body["metadata"] or {})
            if "prompt_cache_options" in body:
                record["prompt_cache_options"] = _prompt_cache(body["prompt_cache_options"])
            if body.get("review") == "auto_review":
                record["review"] = "auto_review"
            elif "review" in body:
                record.pop("review", None)
            if "spend_control" in body:
                session.spend_limit = (body["spend_control"] or {}).get("limit")
                self._settle_budget(session)
            return session.view()

    def _settle_budget(self, session: Session) -> None:
        """A new spend limit pauses an idle session that reached it, or frees one paused."""
        if session.status == "idle" and session.over_budget():
            self._log.set_status(session, "budget_reached")
        elif session.status == "budget_reached" and not session.over_budget():
            self._log.set_status(session, "idle")

    def _delete(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        check_query(exchange.request)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            if session.status == "in_progress":
                raise invalid(
                    "The session is running; cancel its turn before deleting it.",
                    code="session_in_progress",
                )
            self._flow.abandon(session)
            session.deleted = True
            self._log.announce(session)  # its streams end
        return {"id": session_id, "deleted": True, "object": "agent.session.deleted"}


def _messages(value: Any) -> list[dict[str, Any]]:
    """A session's initial input as user messages (a string is one message)."""
    if isinstance(value, str):
        return [{"role": "user", "content": [{"type": "input_text", "text": value}]}]
    return list(value or [])


def _prompt_cache(value: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else {"ttl": value.get("ttl", "30m")}


def _check_vaults(vault_ids: list[str] | None) -> None:
    for vault_id in vault_ids or []:
        raise not_found("vault", vault_id)
