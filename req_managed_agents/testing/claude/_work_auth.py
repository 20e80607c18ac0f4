"""Who may call what, once self-hosted environments exist: the API key, an environment's
key and a work item's sessions token.

Each is sent as ``x-api-key`` or ``Authorization: Bearer`` (the official SDK's worker sends
the latter). On the work queue of an environment (``/v1/environments/{id}/work...``):

=========================  =========  ===============  =============================
route                      API key    environment key  the item's sessions token
=========================  =========  ===============  =============================
poll, ack, list            no         yes              no
heartbeat                  no         yes              yes (its own item)
stop                       yes        yes              yes (its own item)
stats                      yes        yes              no
retrieve, update           yes        no               no
=========================  =========  ===============  =============================

A sessions token (while its item is handed out, running or stopping) and the key of the
session's environment also authorize that session's own routes: reading it, posting and
listing its events, its stream, and its threads with their events and streams. Every other
route takes the API key only. A credential refused is a 401, whose message never quotes it.

An environment's key exists from the first time a test asks for it
(``ClaudeEmulator.environment_key``): the service hands keys out in its console, not over
this API.
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import TYPE_CHECKING

from req_managed_agents.testing.claude._wire import _APIError, _coded, _invalid

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._work_items import WorkItems
    from req_managed_agents.testing.server import RecordedRequest

_WORK_PATH = re.compile(r"/v1/environments/([^/]+)/work(?:/([^/]+))?(?:/(ack|heartbeat|stop))?")
_SESSION_PATH = re.compile(
    r"/v1/sessions/([^/]+)(/events|/events/stream|/threads(?:/[^/]+(?:/events|/stream)?)?)?"
)

# Which credentials each work route takes (``api``: the API key; ``environment``: the
# environment's key; ``item``: the item's sessions token).
_WORK_ROUTES = {
    ("GET", "poll"): {"environment"},
    ("POST", "ack"): {"environment"},
    ("GET", "list"): {"environment"},
    ("POST", "heartbeat"): {"environment", "item"},
    ("POST", "stop"): {"api", "environment", "item"},
    ("GET", "stats"): {"api", "environment"},
    ("GET", "retrieve"): {"api"},
    ("POST", "update"): {"api"},
}


def _work_route(request: RecordedRequest) -> tuple[str, str, str | None] | None:
    """``(environment id, route, work id)`` of a work-queue request; None for others."""
    found = _WORK_PATH.fullmatch(request.path)
    if found is None:
        return None
    environment_id, name, action = found.groups()
    if action is not None:
        return environment_id, action, name
    if name is None:
        return environment_id, "list", None
    if name in ("poll", "stats"):
        return environment_id, name, None
    return environment_id, "retrieve" if request.method == "GET" else "update", name


class WorkCredentials:
    """Decides whether a request's credential may call its route (see the module)."""

    def __init__(self, state: ClaudeState, items: WorkItems) -> None:
        self._state = state
        self._items = items

    def environment_key(self, environment_id: str) -> str:
        """The key of a self-hosted environment, made the first time it is asked for."""
        with self._state.condition:
            environment = self._state.environments.get(environment_id)
            if environment is None:
                raise _coded("environment_not_found", f"no environment {environment_id!r}")
            if environment["config"]["type"] != "self_hosted":
                raise _invalid(f"environment {environment_id!r} is not self_hosted")
            key = self._state.environment_keys.get(environment_id)
            if key is None:
                key = f"envkey_{secrets.token_urlsafe(24)}"
                self._state.environment_keys[environment_id] = key
            return key

    def authorize(self, request: RecordedRequest, key: str | None, *, is_api_key: bool) -> None:
        """Raise the API's 401 unless ``key`` may call this request's route."""
        with self._state.condition:
            work = _work_route(request)
            if work is not None:
                self._authorize_work(request.method, *work, key=key, is_api_key=is_api_key)
                return
            if is_api_key:
                return
            found = _SESSION_PATH.fullmatch(request.path)
            if (
                found is not None
                and (request.method == "GET" or found.group(2) == "/events")
                and self._speaks_for_session(found.group(1), key)
            ):
                return
        raise _APIError(401, "invalid x-api-key")

    def _authorize_work(
        self,
        method: str,
        environment_id: str,
        route: str,
        work_id: str | None,
        *,
        key: str | None,
        is_api_key: bool,
    ) -> None:
        allowed = _WORK_ROUTES.get((method, route), {"api"})
        if is_api_key:
            if "api" in allowed:
                return
            raise _APIError(
                401, "this work queue endpoint takes the environment key, not an API key"
            )
        if "environment" in allowed and self._is_environment_key(environment_id, key):
            return
        holder = self._items.holder(key) if "item" in allowed else None
        if holder is not None and holder.id == work_id and holder.environment_id == environment_id:
            return
        raise _APIError(401, "the credential does not authorize this work queue request")

    def _is_environment_key(self, environment_id: str, key: str | None) -> bool:
        expected = self._state.environment_keys.get(environment_id)
        return (
            expected is not None
            and key is not None
            and hmac.compare_digest(expected.encode(), key.encode())
        )

    def _speaks_for_session(self, session_id: str, key: str | None) -> bool:
        """A live sessions token of this session's item, or its environment's key."""
        holder = self._items.holder(key)
        if holder is not None:
            return bool(holder.session.record["id"] == session_id)
        session = self._state.sessions.get(session_id)
        return session is not None and self._is_environment_key(
            session.record["environment_id"], key
        )
