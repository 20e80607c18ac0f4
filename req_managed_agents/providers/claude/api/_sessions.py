"""Sessions (created with their options) and the resources mounted in them."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from req_managed_agents.providers.claude.api._core import (
    MAX_METADATA_PAIRS,
    ClientCore,
    Json,
    as_list,
    body_of,
    checked_metadata,
    id_value,
    positive_version,
    query_params,
    segment,
)

__all__ = ["CREATE_TOKEN_KEY", "SessionsAPI"]

# The metadata key under which a create request's token is sent, and how far back in time
# the sessions are looked through for it (the server's clock may differ from ours).
CREATE_TOKEN_KEY = "rma_create"
CREATE_CLOCK_SKEW = timedelta(minutes=10)

_AGENT_REFERENCE_TYPES = ("agent", "agent_with_overrides")

# What a session may be created with (the API's own limit on their number).
_INITIAL_EVENT_TYPES = frozenset({"user.message", "user.define_outcome"})
_MAX_INITIAL_EVENTS = 50


def _initial_events(events: Any) -> list[Json]:
    checked = []
    for i, event in enumerate(as_list("initial_events", events)):
        if not isinstance(event, Mapping) or event.get("type") not in _INITIAL_EVENT_TYPES:
            raise ValueError(
                f"initial_events[{i}] must be a user.message or user.define_outcome event"
            )
        checked.append(dict(event))
    if not checked or len(checked) > _MAX_INITIAL_EVENTS:
        raise ValueError(f"initial_events holds 1 to {_MAX_INITIAL_EVENTS} events")
    return checked


def _agent_reference(agent: object) -> str | Json:
    """The session's ``agent``: an id, or a ``{"type": "agent" | "agent_with_overrides"}``
    mapping whose ``id`` and ``version`` (when given) are checked."""
    if isinstance(agent, str):
        return id_value("agent", agent)
    if not isinstance(agent, Mapping):
        raise ValueError(f"agent must be an agent id or a mapping, got {type(agent).__name__}")
    if agent.get("type") not in _AGENT_REFERENCE_TYPES:
        raise ValueError(
            f"agent.type must be 'agent' or 'agent_with_overrides', got {agent.get('type')!r}"
        )
    id_value("agent.id", agent.get("id"))
    if "version" in agent:
        positive_version("agent.version", agent["version"])
    return dict(agent)


def _resource(field: str, resource: object, kinds: Mapping[str, str]) -> Json:
    """One session resource, of a known ``type`` and with the field that type needs."""
    if not isinstance(resource, Mapping):
        raise ValueError(f"{field} must be a mapping, got {type(resource).__name__}")
    kind = resource.get("type")
    required = kinds.get(kind) if isinstance(kind, str) else None
    if required is None:
        known = ", ".join(repr(k) for k in kinds)
        raise ValueError(f"{field}.type must be one of {known}, got {kind!r}")
    id_value(f"{field}.{required}", resource.get(required))
    return dict(resource)


class SessionsAPI(ClientCore):
    """Sessions (created with their options) and the resources mounted in them."""

    # What a session can mount, and the field each kind cannot do without.
    _resource_kinds: ClassVar[Mapping[str, str]] = {
        "file": "file_id",
        "github_repository": "url",
        "memory_store": "memory_store_id",
    }

    def create_session(
        self,
        agent: str | Mapping[str, Any],
        environment_id: str,
        *,
        vault_ids: Sequence[str] | None = None,
        resources: Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, str] | None = None,
        title: str | None = None,
        budget: Mapping[str, Any] | None = None,
        initial_events: Sequence[Mapping[str, Any]] | None = None,
        working_directory: str | None = None,
        execution_identity: Mapping[str, Any] | None = None,
        create_token: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """Create a session (``POST /v1/sessions``).

        On Amazon Bedrock, ``environment_id`` is a sandbox ARN, ``working_directory`` is the
        absolute path the built-in tools start in and ``execution_identity`` is the IAM role
        the session runs as (``{"type": "aws_role", "role_arn": ...}``); the public API
        takes neither.

        ``agent`` is an agent id (its latest version), ``{"type": "agent", "id", "version"}``
        (a pinned version) or ``{"type": "agent_with_overrides", "id", ...}``. ``resources``
        are mounted into the container (``file``, ``github_repository``, ``memory_store``);
        ``vault_ids`` lend the agent stored credentials; ``budget`` caps its spending;
        ``initial_events`` (``user.message``, ``user.define_outcome``, at most 50) start work
        at once - then read what they cause from the history, since no stream was attached
        yet. Options left at ``None`` are not sent; each is checked here so that a mistake is
        a :class:`ValueError` naming it.

        A create whose answer was lost (a reset, a timeout, a 5xx, a bare 429) may have made it:
        each request carries a random token in the session's metadata under ``rma_create``
        (when the caller's metadata leaves room for it), so the sessions created since are
        looked through for it before the create is sent again. The run then goes on with the
        session the lost answer named, and no second one is left behind. So it does after an
        answer that cannot be used (:class:`MalformedResponseError`, raised when no session
        carries the token): the service may have made the session it could not describe.
        ``create_token`` chooses the token (a keyed run's, which a later process finds the
        session by, with :meth:`find_created_session`); the metadata must then leave room
        for it.
        """
        self._check_session(environment_id, vault_ids, working_directory)
        body: Json = {
            "agent": _agent_reference(agent),
            "environment_id": id_value("environment_id", environment_id),
        }
        if vault_ids is not None:
            body["vault_ids"] = [
                id_value(f"vault_ids[{i}]", v)
                for i, v in enumerate(as_list("vault_ids", vault_ids))
            ]
        if resources is not None:
            body["resources"] = [
                _resource(f"resources[{i}]", r, self._resource_kinds)
                for i, r in enumerate(as_list("resources", resources))
            ]
        if metadata is not None:
            body["metadata"] = checked_metadata(metadata)
        token = create_token or secrets.token_hex(12)
        if len(body.get("metadata", {})) < MAX_METADATA_PAIRS:
            body["metadata"] = {**body.get("metadata", {}), CREATE_TOKEN_KEY: token}
        elif create_token is not None:
            raise ValueError(
                f"metadata: a keyed run needs one of the {MAX_METADATA_PAIRS} metadata keys "
                f"for its create token ({CREATE_TOKEN_KEY!r})"
            )
        if title is not None:
            if not isinstance(title, str):
                raise ValueError(f"title must be a string, got {type(title).__name__}")
            body["title"] = title
        if budget is not None:
            if not isinstance(budget, Mapping):
                raise ValueError(f"budget must be a mapping, got {type(budget).__name__}")
            body["budget"] = dict(budget)
        if initial_events is not None:
            body["initial_events"] = _initial_events(initial_events)
        if working_directory is not None:
            if not isinstance(working_directory, str) or not working_directory.startswith("/"):
                raise ValueError(
                    f"working_directory must be an absolute path, not {working_directory!r}"
                )
            body["working_directory"] = working_directory
        if execution_identity is not None:
            body["execution_identity"] = execution_identity_of(execution_identity)
        tagged = body.get("metadata", {}).get(CREATE_TOKEN_KEY) == token
        since = datetime.now(timezone.utc) - CREATE_CLOCK_SKEW
        return self._create_or_find(
            lambda: self._json(
                "POST",
                "/v1/sessions",
                idempotent=False,
                body=body,
                telemetry_metadata=telemetry_metadata,
            ),
            (lambda: self.find_created_session(token, since, telemetry_metadata))
            if tagged
            else None,
        )

    def _check_session(
        self, environment_id: str, vault_ids: Sequence[str] | None, working_directory: str | None
    ) -> None:
        """What a session cannot be created with here, beyond each option's own checks
        (Amazon Bedrock refuses more)."""

    def find_created_session(
        self,
        token: str,
        since: datetime,
        telemetry_metadata: Mapping[str, Any] | None = None,
        *,
        agent_id: str | None = None,
    ) -> Json | None:
        """The session a create request carrying ``token`` made at ``since`` or later (allow
        for the clocks' skew), if it made one: the sessions created since (of ``agent_id``,
        when given) are looked through for it, newest first. Where a listing leaves out the
        sessions' metadata (Amazon Bedrock's does), each is read whole."""
        params = query_params({"created_at_gte": since, "order": "desc", "agent_id": agent_id})
        for session in self._pages("/v1/sessions", params, telemetry_metadata=telemetry_metadata):
            if "metadata" not in session:  # every listed session has its id (checked)
                session = self.get_session(
                    str(session["id"]), telemetry_metadata=telemetry_metadata
                )
            metadata = session.get("metadata")
            if isinstance(metadata, Mapping) and metadata.get(CREATE_TOKEN_KEY) == token:
                return session
        return None

    def get_session(
        self, session_id: str, *, telemetry_metadata: Mapping[str, Any] | None = None
    ) -> Json:
        """A session: status, agent snapshot, resources, usage."""
        path = f"/v1/sessions/{segment(session_id)}"
        return self._get(path, telemetry_metadata=telemetry_metadata)

    def update_session(
        self, session_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change ``title``, ``metadata`` (null deletes a key), ``budget`` or the agent's
        ``tools``/``mcp_servers`` (an idle session only) with ``POST /v1/sessions/{id}``."""
        return self._update(f"/v1/sessions/{segment(session_id)}", body_of(body, fields))

    def list_sessions(self, **params: Any) -> list[Json]:
        """Every session (all pages), newest first unless ``order="asc"``; ``statuses=[...]``
        and ``created_at_gte=`` etc. filter."""
        return self._list("/v1/sessions", query_params(params))

    def archive_session(self, session_id: str) -> Json:
        """Block new events but keep the history; a running session must be interrupted first."""
        return self._archive(f"/v1/sessions/{segment(session_id)}")

    def delete_session(self, session_id: str) -> Json:
        """Delete a session with its events, sandbox and output files."""
        return self._delete(f"/v1/sessions/{segment(session_id)}")

    def attach_file(self, session_id: str, file_id: str, mount_path: str | None = None) -> Json:
        """Mount an uploaded file into a session (read-only, under ``/mnt/session/uploads``)."""
        body: Json = {"type": "file", "file_id": file_id}
        if mount_path is not None:
            body["mount_path"] = mount_path
        path = f"/v1/sessions/{segment(session_id)}/resources"
        return self._json("POST", path, idempotent=False, body=body)

    def list_session_resources(self, session_id: str) -> list[Json]:
        """The resources (mounted files, repositories) attached to a session."""
        return self._list(f"/v1/sessions/{segment(session_id)}/resources")

    def delete_session_resource(self, session_id: str, resource_id: str) -> Json:
        """Detach a resource from a session."""
        return self._delete(f"/v1/sessions/{segment(session_id)}/resources/{segment(resource_id)}")


def execution_identity_of(value: Any) -> Json:
    """An ``{"type": "aws_role", "role_arn": ...}`` execution identity, checked; a role ARN
    alone is accepted and wrapped."""
    if isinstance(value, str):
        value = {"type": "aws_role", "role_arn": value}
    if not isinstance(value, Mapping) or value.get("type") != "aws_role":
        raise ValueError(
            "execution_identity must be {'type': 'aws_role', 'role_arn': ...} or a role ARN"
        )
    role = value.get("role_arn")
    if not isinstance(role, str) or not re.fullmatch(r"arn:aws[a-z-]*:iam::\d{12}:role/\S+", role):
        raise ValueError(f"execution_identity role_arn must be an IAM role ARN, not {role!r}")
    if set(value) - {"type", "role_arn"}:
        raise ValueError("execution_identity takes only type and role_arn")
    return {"type": "aws_role", "role_arn": role}
