"""The work queue of a self-hosted environment: what a worker on the user's machines calls.

A session in an environment of ``config.type: "self_hosted"`` queues a *work item*. A worker
long-polls for it (:meth:`WorkAPI.poll_work`), acknowledges it (``queued`` -> ``starting``),
claims and keeps its lease with heartbeats (``starting`` -> ``active``; about every
``min(ttl / 2, 30 s)``), serves the session, and stops it (``stopping`` -> ``stopped``).

Three credentials meet here, each a bearer token (``Authorization: Bearer``, as the official
SDK sends them; :meth:`WorkAPI.with_bearer` makes such a client):

* the *environment key*, the worker's standing credential: poll, acknowledge, list;
* the item's *sessions token*, carried in the opaque ``secret`` a poll hands out (URL-safe
  base64 of JSON, :func:`sessions_token`): heartbeats, stop, and the session's own calls
  (its events, stream and history) - :meth:`WorkAPI.for_work_item` is that client;
* the API key, for operators: retrieve, update metadata, queue statistics, stop.

Retries: a poll, a read, a list and a metadata update are idempotent; acknowledging,
stopping and a conditional heartbeat are not (a repeat would meet the state its own lost
first attempt left: a 409, or a 412 naming the heartbeat it recorded), so they are retried
only when the server provably did not act. A refused heartbeat is an :class:`APIError` with
``status_code`` 412 and ``error_type`` :data:`HEARTBEAT_PRECONDITION_FAILED`;
:func:`lease_state` reads the lease the server holds from it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from typing_extensions import Self

from req_managed_agents._redact import Secret, register_secret
from req_managed_agents.errors import APIError, ConfigurationError
from req_managed_agents.providers.claude.api._core import (
    ClientCore,
    Json,
    checked_metadata,
    segment,
)
from req_managed_agents.transport._config import credential
from req_managed_agents.transport._json import check_fields, excerpt, loads, malformed

__all__ = [
    "HEARTBEAT_PRECONDITION_FAILED",
    "MAX_BLOCK_MS",
    "NO_HEARTBEAT",
    "WorkAPI",
    "lease_state",
    "sessions_token",
]

# The longest a poll may be held open on the server (the API takes 1-999 ms).
MAX_BLOCK_MS = 999
# What a first heartbeat expects, to claim a lease nobody has heartbeated yet.
NO_HEARTBEAT = "NO_HEARTBEAT"
# The error code of a heartbeat refused because the lease moved on (HTTP 412).
HEARTBEAT_PRECONDITION_FAILED = "heartbeat_precondition_failed"


def _id(field: str, value: str) -> str:
    try:
        return segment(value)
    except ValueError as exc:
        raise ConfigurationError(f"{field}: {exc}") from None


def _count(field: str, value: object, low: int, high: int | None = None) -> int:
    """An integer option within its bounds (a bool is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{field} must be an integer, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise ConfigurationError(f"{field} must be an integer {bounds}, got {value}")
    return value


def _text(field: str, value: object) -> str:
    """A value sent in a header or query: printable ASCII, nothing around it."""
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"{field} must be a non-empty string")
    if value != value.strip() or not all(" " <= char <= "~" for char in value):
        raise ConfigurationError(f"{field} must be printable ASCII with no surrounding spaces")
    return value


def _metadata_patch(metadata: object) -> dict[str, str | None]:
    """A metadata patch: a string upserts its key, None deletes it."""
    try:
        return checked_metadata(metadata, patch=True)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def _work_path(environment_id: str, work_id: str | None = None) -> str:
    path = f"/v1/environments/{_id('environment_id', environment_id)}/work"
    return path if work_id is None else f"{path}/{_id('work_id', work_id)}"


def _tags(
    telemetry_metadata: Mapping[str, Any] | None, environment_id: str, work_id: str | None = None
) -> dict[str, Any]:
    tags = {**(telemetry_metadata or {}), "environment_id": environment_id}
    if work_id is not None:
        tags["work_id"] = work_id
    return tags


def sessions_token(secret: str | None) -> Secret | None:
    """The sessions token a work item's ``secret`` carries, or None when it carries none.

    The secret is URL-safe base64 (padding optional) of a JSON object whose
    ``sessions_token`` authenticates the item's heartbeats, stop and session calls. Both are
    registered with the redactor, so no message or log line can show them.
    """
    if not isinstance(secret, str) or not secret:
        return None
    register_secret(secret)
    try:
        payload = loads(base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4)))
    except (ValueError, binascii.Error):
        return None
    token = payload.get("sessions_token") if isinstance(payload, dict) else None
    return Secret(token) if isinstance(token, str) and token else None


def lease_state(error: BaseException) -> Json | None:
    """The lease as the server holds it, when ``error`` is a refused heartbeat; else None.

    A 412 ``heartbeat_precondition_failed`` means the ``expected_last_heartbeat`` sent is not
    the one stored: another worker may hold the item now, or our own earlier heartbeat
    landed and its answer was lost - either way this worker must stop serving the item.
    The state (``state``, ``last_heartbeat``, ``ttl_seconds``, ``lease_extended``) is ``{}``
    when the answer did not include it.
    """
    if not isinstance(error, APIError) or error.status_code != 412:
        return None
    if error.error_type != HEARTBEAT_PRECONDITION_FAILED:
        return None
    body = error.body if isinstance(error.body, dict) else {}
    details = body.get("error", {}).get("details") if isinstance(body.get("error"), dict) else {}
    state = details.get("current_state") if isinstance(details, dict) else None
    return dict(state) if isinstance(state, dict) else {}


class WorkAPI(ClientCore):
    """The work queue of a self-hosted environment, and the clients that act for a worker."""

    def with_bearer(self, token: str | Secret) -> Self:
        """A client like this one - same URL, timeouts, retries, betas and connection pool -
        whose every request carries ``token`` as ``Authorization: Bearer``: the environment
        key for the work queue, or an item's sessions token for its session. It shares this
        client's pool, so close this client, not it."""
        if not isinstance(token, Secret):
            if not isinstance(token, str):
                raise ConfigurationError(f"the token must be a string, not {type(token).__name__}")
            token = Secret(credential(token, "bearer token"))
        return type(self)(
            token,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self._http.retry.max_retries,
            http=self._http.session,
            anthropic_version=self.anthropic_version,
            beta=self.beta,
            files_beta=self.files_beta,
            memory_beta=self.memory_beta,
            auth_scheme="bearer",
        )

    def for_work_item(self, item: Mapping[str, Any]) -> Self:
        """The client that acts as a polled item's session: its secret's sessions token as
        the bearer. An item with no usable secret (one not from a poll) is a
        :class:`ConfigurationError`; a worker may then fall back on its environment key."""
        token = sessions_token(item.get("secret")) if isinstance(item, Mapping) else None
        if token is None:
            raise ConfigurationError(
                "the work item carries no sessions token (only a poll hands out its secret)"
            )
        return self.with_bearer(token)

    def poll_work(
        self,
        environment_id: str,
        *,
        block_ms: int | None = None,
        reclaim_older_than_ms: int | None = None,
        worker_id: str | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json | None:
        """``GET .../work/poll``: the next queued item (with its ``secret``), or None.

        ``block_ms`` (1-999) holds an empty poll open that long on the server (none: answer
        at once); the read timeout is that plus the client's own. ``reclaim_older_than_ms``
        hands out again an item polled but not acknowledged for that long (the server's
        default: 5000). ``worker_id`` (sent as ``Anthropic-Worker-ID``) counts this worker
        in the queue's statistics. Authorized by the environment key.
        """
        params: dict[str, Any] = {}
        if block_ms is not None:
            params["block_ms"] = _count("block_ms", block_ms, 1, MAX_BLOCK_MS)
        if reclaim_older_than_ms is not None:
            params["reclaim_older_than_ms"] = _count(
                "reclaim_older_than_ms", reclaim_older_than_ms, 1
            )
        headers = {}
        if worker_id is not None:
            headers["anthropic-worker-id"] = _text("worker_id", worker_id)
        path = f"{_work_path(environment_id)}/poll"
        response = self._http.request(
            "GET",
            path,
            idempotent=True,
            params=params or None,
            headers=headers or None,
            read_timeout=(block_ms or 0) / 1000 + self.timeout,
            telemetry_metadata=_tags(telemetry_metadata, environment_id),
        )
        if not response.content:
            return None
        try:
            item = loads(response.content)
            if item is None:
                return None
            sessions_token(item.get("secret") if isinstance(item, dict) else None)  # masked
            checked = check_fields(item, "the work item", required=("id",))
            if isinstance(checked.get("data"), dict):
                check_fields(checked["data"], "the work item's data")
        except ValueError as exc:
            raise malformed(
                response.status_code,
                f"GET {path}",
                f"{exc} (the answer begins {excerpt(response.content)!r})",
                response.headers.get("request-id"),
            ) from None
        return checked

    def ack_work(
        self,
        environment_id: str,
        work_id: str,
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """``POST .../work/{id}/ack``: take a polled item out of the queue (``queued`` ->
        ``starting``); its lease runs from now. A repeat is a 409. Environment key."""
        return self._json(
            "POST",
            f"{_work_path(environment_id, work_id)}/ack",
            idempotent=False,
            telemetry_metadata=_tags(telemetry_metadata, environment_id, work_id),
        )

    def heartbeat_work(
        self,
        environment_id: str,
        work_id: str,
        *,
        expected_last_heartbeat: str | None = None,
        desired_ttl_seconds: int | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """``POST .../work/{id}/heartbeat``: extend the lease (the first one, expecting
        :data:`NO_HEARTBEAT`, claims it: ``starting`` -> ``active``).

        Send back the ``last_heartbeat`` of the previous answer as ``expected_last_heartbeat``;
        a mismatch is a 412 (see :func:`lease_state`). An answer with ``lease_extended``
        false (the item is stopping or stopped) tells the worker to stop serving.
        ``desired_ttl_seconds`` asks for a lease of that length. The item's sessions token.
        """
        params: dict[str, Any] = {}
        if expected_last_heartbeat is not None:
            params["expected_last_heartbeat"] = _text(
                "expected_last_heartbeat", expected_last_heartbeat
            )
        if desired_ttl_seconds is not None:
            params["desired_ttl_seconds"] = _count("desired_ttl_seconds", desired_ttl_seconds, 1)
        return self._json(
            "POST",
            f"{_work_path(environment_id, work_id)}/heartbeat",
            idempotent=expected_last_heartbeat is None,
            params=params or None,
            telemetry_metadata=_tags(telemetry_metadata, environment_id, work_id),
            required=("last_heartbeat",),  # the lease, not the item
        )

    def stop_work(
        self,
        environment_id: str,
        work_id: str,
        *,
        force: bool | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """``POST .../work/{id}/stop``: ``force=True`` stops the item at once; otherwise a
        running item goes ``stopping`` (its worker drains, then stops it). Stopping a
        stopped item is a 409. The sessions token, the environment key or the API key."""
        body: Json = {}
        if force is not None:
            if not isinstance(force, bool):
                raise ConfigurationError(f"force must be a bool, got {type(force).__name__}")
            body["force"] = force
        return self._json(
            "POST",
            f"{_work_path(environment_id, work_id)}/stop",
            idempotent=False,
            body=body,
            telemetry_metadata=_tags(telemetry_metadata, environment_id, work_id),
        )

    def get_work(self, environment_id: str, work_id: str) -> Json:
        """``GET .../work/{id}``: one item (never its secret). The API key."""
        tags = _tags(None, environment_id, work_id)
        return self._get(_work_path(environment_id, work_id), telemetry_metadata=tags)

    def update_work(
        self, environment_id: str, work_id: str, *, metadata: Mapping[str, str | None]
    ) -> Json:
        """``POST .../work/{id}``: merge ``metadata`` into the item's (None deletes a key).
        The API key."""
        return self._json(
            "POST",
            _work_path(environment_id, work_id),
            idempotent=True,
            body={"metadata": _metadata_patch(metadata)},
            telemetry_metadata=_tags(None, environment_id, work_id),
        )

    def list_work(self, environment_id: str) -> list[Json]:
        """``GET .../work``: every work item of the environment (all pages). The
        environment key."""
        tags = _tags(None, environment_id)
        return self._list(_work_path(environment_id), telemetry_metadata=tags)

    def get_work_stats(self, environment_id: str) -> Json:
        """``GET .../work/stats``: the queue's ``depth`` (waiting), ``pending`` (polled, not
        acknowledged), ``oldest_queued_at`` and ``workers_polling`` (in the last 30 s)."""
        path, tags = f"{_work_path(environment_id)}/stats", _tags(None, environment_id)
        return self._get(path, telemetry_metadata=tags, required=("depth",))  # counts, no id
