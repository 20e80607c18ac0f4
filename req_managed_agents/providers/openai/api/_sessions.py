"""Sessions: one agent at work in one environment, created with their options."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import requests

from req_managed_agents.providers.openai.api._core import (
    MAX_METADATA_PAIRS,
    ClientCore,
    Json,
    checked_metadata,
    id_value,
    list_params,
    segment,
)

__all__ = ["CREATE_TOKEN_KEY", "ENVIRONMENT_TYPES", "SessionsAPI", "user_input"]

# The metadata key under which a create request's token is sent.
CREATE_TOKEN_KEY = "rma_create"
# Each environment type, and the fields it cannot do without.
ENVIRONMENT_TYPES: Mapping[str, tuple[str, ...]] = {
    "none": (),
    "openai_hosted": (),
    "self_hosted": ("workspace_directory",),
}
_REVIEW_MODES = ("none", "auto_review")
_CACHE_TTLS = ("30m", "12h")


def environment_of(environment: object) -> Json:
    """The session's ``environment``: ``"none"``/``"openai_hosted"`` or a mapping of a known
    ``type`` with the fields that type needs."""
    if isinstance(environment, str):
        environment = {"type": environment}
    if not isinstance(environment, Mapping):
        raise ValueError(
            f"environment must be a mapping or a type name, got {type(environment).__name__}"
        )
    kind = environment.get("type")
    required = ENVIRONMENT_TYPES.get(kind) if isinstance(kind, str) else None
    if required is None:
        raise ValueError(
            f"environment.type must be one of {', '.join(ENVIRONMENT_TYPES)}, got {kind!r}"
        )
    for field in required:
        id_value(f"environment.{field}", environment.get(field))
    if kind == "self_hosted" and not str(environment["workspace_directory"]).startswith("/"):
        raise ValueError("environment.workspace_directory must be an absolute path")
    return dict(environment)


def user_input(text: str) -> list[Json]:
    """One user message with ``text``, as sessions take their input."""
    if not isinstance(text, str) or not text:
        raise ValueError("a session's input must be a non-empty string")
    return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]


def _spend_control(value: object) -> Json | None:
    """``{"limit": cents}`` (a positive integer, or None for no limit); a bare integer too."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = {"limit": value}
    if not isinstance(value, Mapping) or set(value) != {"limit"}:
        raise ValueError("spend_control must be {'limit': cents} or a number of cents")
    limit = value["limit"]
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"spend_control.limit must be a positive number of cents, got {limit!r}")
    return {"limit": limit}


def _session_body(
    environment: object,
    agent_id: str | None,
    agent: Mapping[str, Any] | None,
    input: str | None,
    metadata: Mapping[str, str] | None,
    spend_control: int | Mapping[str, Any] | None,
    vault_ids: Sequence[str] | None,
    review: str | None,
    prompt_cache_options: Mapping[str, Any] | None,
    create_token: str | None,
) -> Json:
    """A create's body, every option checked, tagged with a create token in its metadata
    (``create_token``, else a fresh one when the caller's metadata leaves room for it)."""
    env = environment_of(environment)
    body: Json = {"environment": env}
    if agent_id is not None:
        body["agent_id"] = id_value("agent_id", agent_id)
    if agent is not None:
        if not isinstance(agent, Mapping):
            raise ValueError(f"agent must be a mapping, got {type(agent).__name__}")
        body["agent"] = dict(agent)
    if agent_id is None and not (agent is not None and agent.get("model")):
        raise ValueError("a session needs agent_id, or an agent with a model")
    if input is not None:
        body["input"] = user_input(input)
    elif env["type"] == "none":
        raise ValueError("a session without an environment must be created with its input")
    body["metadata"] = checked_metadata(metadata) if metadata is not None else {}
    spend = _spend_control(spend_control)
    if spend is not None:
        body["spend_control"] = spend
    if vault_ids is not None:
        if not isinstance(vault_ids, (list, tuple)):
            raise ValueError(f"vault_ids must be a list, got {type(vault_ids).__name__}")
        body["vault_ids"] = [id_value(f"vault_ids[{i}]", v) for i, v in enumerate(vault_ids)]
    if review is not None:
        if review not in _REVIEW_MODES:
            raise ValueError(f"review must be one of {_REVIEW_MODES}, got {review!r}")
        body["review"] = review
    if prompt_cache_options is not None:
        ttl = prompt_cache_options.get("ttl") if isinstance(prompt_cache_options, Mapping) else None
        if ttl not in _CACHE_TTLS:
            raise ValueError("prompt_cache_options must be {'ttl': '30m' | '12h'}")
        body["prompt_cache_options"] = {"ttl": ttl}
    if len(body["metadata"]) < MAX_METADATA_PAIRS:
        token = create_token or secrets.token_hex(12)
        body["metadata"] = {**body["metadata"], CREATE_TOKEN_KEY: token}
    elif create_token is not None:
        raise ValueError(
            f"metadata: a keyed run needs one of the {MAX_METADATA_PAIRS} metadata keys for "
            f"its create token ({CREATE_TOKEN_KEY!r})"
        )
    return body


class SessionsAPI(ClientCore):
    """Sessions (``/v1/agents/sessions``)."""

    def create_session(
        self,
        environment: str | Mapping[str, Any],
        *,
        agent_id: str | None = None,
        agent: Mapping[str, Any] | None = None,
        input: str | None = None,
        metadata: Mapping[str, str] | None = None,
        spend_control: int | Mapping[str, Any] | None = None,
        vault_ids: Sequence[str] | None = None,
        review: str | None = None,
        prompt_cache_options: Mapping[str, Any] | None = None,
        create_token: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """Create a session (``POST /v1/agents/sessions``).

        ``agent_id`` names a saved agent, ``agent`` overrides its fields for this session
        (or, alone, configures one: then it needs a ``model``). ``input`` is the first user
        message, which starts a turn at once; a session without an environment
        (``"none"``) must be created with it. ``spend_control`` caps spending in USD cents.
        Each option is checked here, so a mistake is a :class:`ValueError` naming it.

        A create whose answer was lost (a reset, a timeout, a 5xx, a bare 429) may have made
        the session - and started its turn. Each request carries a random token in the
        session's metadata under ``rma_create`` (when the caller's metadata leaves room), so
        the sessions are looked up by it before the create is sent again - and after an
        answer that cannot be used (:class:`MalformedResponseError`, raised when no session
        carries the token): the service may have made the session it could not describe.
        ``create_token`` chooses the token (a keyed run's, which a later process finds the
        session by, with :meth:`find_created_session`); the metadata must then leave room
        for it.
        """
        body = _session_body(
            environment,
            agent_id,
            agent,
            input,
            metadata,
            spend_control,
            vault_ids,
            review,
            prompt_cache_options,
            create_token,
        )
        return self._create_or_find(
            lambda: self._json(
                "POST",
                "/agents/sessions",
                idempotent=False,
                body=body,
                telemetry_metadata=telemetry_metadata,
            ),
            self._finder(body, telemetry_metadata),
        )

    def stream_new_session(
        self,
        environment: str | Mapping[str, Any],
        *,
        input: str,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        agent_id: str | None = None,
        agent: Mapping[str, Any] | None = None,
        metadata: Mapping[str, str] | None = None,
        spend_control: int | Mapping[str, Any] | None = None,
        vault_ids: Sequence[str] | None = None,
        review: str | None = None,
        prompt_cache_options: Mapping[str, Any] | None = None,
        create_token: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> tuple[str, requests.Response | Json]:
        """Create a session with ``input`` and stream its events from its creation on
        (``stream: true``), so that nothing of its first turn is missed; the options are
        :meth:`create_session`'s. Returns the create's token (see
        :meth:`find_created_session`) and the open streaming response - or, when the
        create's answer was lost but it made the session, that session: attach to it with
        ``open_event_stream`` and catch up from its items and turns.
        """
        body = _session_body(
            environment,
            agent_id,
            agent,
            input,
            metadata,
            spend_control,
            vault_ids,
            review,
            prompt_cache_options,
            create_token,
        )
        body["stream"] = True
        body["stream_options"] = {"include_obfuscation": False}
        made = self._create_or_find(
            lambda: self._http.request(
                "POST",
                "/agents/sessions",
                idempotent=False,
                json=body,
                stream=True,
                read_timeout=idle_timeout,
                cancelled=cancelled,
                headers={"accept": "text/event-stream"},
                telemetry_metadata=telemetry_metadata,
            ),
            self._finder(body, telemetry_metadata),
            cancelled,
        )
        return str(body["metadata"].get(CREATE_TOKEN_KEY, "")), made

    def find_created_session(
        self,
        token: str,
        agent_id: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json | None:
        """The session a create request carrying ``token`` made, if it made one (the lists
        may take a moment to show a new session)."""
        if not token:
            return None
        params: dict[str, Any] = {"order": "desc", f"metadata[{CREATE_TOKEN_KEY}]": token}
        if agent_id is not None:
            params["agent_id"] = agent_id
        for session in self._pages(
            "/agents/sessions", params, telemetry_metadata=telemetry_metadata
        ):
            metadata = session.get("metadata")
            if (
                isinstance(metadata, Mapping)
                and metadata.get(CREATE_TOKEN_KEY) == token
                and session.get("id")  # a usable id, if any (the page was checked)
            ):
                return session
        return None

    def _finder(
        self, body: Json, telemetry_metadata: Mapping[str, Any] | None
    ) -> Callable[[], Json | None] | None:
        """What looks for the session a create of ``body`` made, if its metadata carries a
        create token."""
        token = body["metadata"].get(CREATE_TOKEN_KEY)
        if token is None:
            return None
        return lambda: self.find_created_session(token, body.get("agent_id"), telemetry_metadata)

    def get_session(
        self,
        session_id: str,
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
        cancelled: threading.Event | None = None,
    ) -> Json:
        """A session: status, the actions it waits for, usage, spend. A retry's wait ends
        when ``cancelled`` is set."""
        path = f"/agents/sessions/{segment(session_id)}"
        return self._get(path, telemetry_metadata=telemetry_metadata, cancelled=cancelled)

    def update_session(
        self, session_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change ``metadata``, ``spend_control``, ``vault_ids``, ``review``,
        ``prompt_cache_options`` or the agent's ``model``/``reasoning``/``tools``."""
        if body is not None and not isinstance(body, Mapping):
            raise TypeError(f"the body must be a mapping, got {type(body).__name__}")
        changes = {**(body or {}), **fields}
        if changes.get("metadata") is not None:
            changes["metadata"] = checked_metadata(changes["metadata"])
        if "spend_control" in changes:
            changes["spend_control"] = _spend_control(changes["spend_control"])
        path = f"/agents/sessions/{segment(session_id)}"
        return self._json("POST", path, idempotent=True, body=changes)

    def list_sessions(
        self,
        *,
        agent_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        order: str | None = None,
    ) -> list[Json]:
        """Every session (all pages), newest first unless ``order="asc"``; ``agent_id`` and
        ``metadata`` (exact matches) filter."""
        params = list_params(order=order)
        if agent_id is not None:
            params["agent_id"] = id_value("agent_id", agent_id)
        for key, value in checked_metadata(metadata or {}).items():
            params[f"metadata[{key}]"] = value
        return self._list("/agents/sessions", params)

    def delete_session(self, session_id: str) -> Json:
        """Delete a session."""
        return self._delete(f"/agents/sessions/{segment(session_id)}")
