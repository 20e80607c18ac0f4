"""Interactions: one hop of an agent's work, created (streamed or not), read, resumed,
cancelled and deleted. The API lists none.

A create takes only the fields ``google-genai``'s request types declare
(:data:`AGENT_CREATE_FIELDS`, :data:`MODEL_CREATE_FIELDS`): anything else is refused here,
before it is sent, as the SDK's facade refuses it. Every create makes a new interaction -
answers to function calls too, chained by ``previous_interaction_id`` - and is not safe to
repeat once it may have landed (see :mod:`._core`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents.providers._api import body_of
from req_managed_agents.providers.gemini.api._core import ClientCore, Json, id_value, segment

__all__ = [
    "AGENT_CREATE_FIELDS",
    "MODEL_CREATE_FIELDS",
    "InteractionsAPI",
    "checked_labels",
    "create_body",
]

# CreateAgentInteraction's fields (google-genai 3.6.1, createagentinteraction.py).
AGENT_CREATE_FIELDS = frozenset(
    {
        "agent",
        "agent_config",
        "background",
        "continuation_token",
        "environment",
        "input",
        "labels",
        "previous_interaction_id",
        "response_format",
        "response_mime_type",
        "response_modalities",
        "safety_settings",
        "service_tier",
        "store",
        "stream",
        "system_instruction",
        "tools",
        "webhook_config",
    }
)
# CreateModelInteraction's own fields (the rest are the agent form's, less agent_config).
_MODEL_ONLY = frozenset({"model", "generation_config", "cached_content"})
MODEL_CREATE_FIELDS = (AGENT_CREATE_FIELDS - {"agent", "agent_config", "environment"}) | _MODEL_ONLY
_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


def checked_labels(labels: object) -> dict[str, str]:
    """Labels as the API takes them: keys of lowercase letters, digits, ``_`` and ``-``
    starting with a letter, values of the same, each at most 63 characters."""
    if not isinstance(labels, Mapping):
        raise ValueError(f"labels must be a mapping, got {type(labels).__name__}")
    for key, value in labels.items():
        if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key):
            raise ValueError(f"label key {key!r} must match [a-z][a-z0-9_-]{{0,62}}")
        if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
            raise ValueError(f"label {key!r}: value {value!r} must match [a-z0-9_-]{{0,63}}")
    return dict(labels)


def create_body(body: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    """A create's body, its fields checked against the request types: the agent form
    (``agent`` required) or the model form (``model`` required), never both."""
    merged = body_of(body, fields)
    agent_form = "agent" in merged or "agent_config" in merged
    if agent_form and set(merged) & _MODEL_ONLY:
        raise ValueError("an interaction names an agent or a model, not both")
    declared = AGENT_CREATE_FIELDS if agent_form else MODEL_CREATE_FIELDS
    unknown = sorted(set(merged) - declared)
    if unknown:
        raise ValueError(f"a create interaction request declares no {', '.join(unknown)}")
    id_value("agent" if agent_form else "model", merged.get("agent" if agent_form else "model"))
    if merged.get("labels") is not None:
        merged["labels"] = checked_labels(merged["labels"])
    if merged.get("previous_interaction_id") is not None:
        id_value("previous_interaction_id", merged["previous_interaction_id"])
    return {key: value for key, value in merged.items() if value is not None}


class InteractionsAPI(ClientCore):
    """Interactions (``/{version}/interactions``)."""

    def create_interaction(
        self,
        body: Mapping[str, Any] | None = None,
        /,
        *,
        telemetry_metadata: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Json:
        """``POST /interactions``, answered with the interaction (use ``background=True``
        for one that runs on after the answer). Retried only while nothing can have been
        made; every field is checked against the request types first."""
        created = create_body(body, fields)
        if created.get("stream"):
            raise ValueError("stream a create with stream_interaction")
        return self._json(
            "POST",
            "/interactions",
            idempotent=False,
            body=created,
            telemetry_metadata=telemetry_metadata,
            required=("id", "status"),
        )

    def stream_interaction(
        self,
        body: Mapping[str, Any],
        *,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> requests.Response:
        """``POST /interactions`` with ``stream: true``: the open SSE response, whose first
        event (``interaction.created``) names the new interaction. Retried only while
        nothing can have been made."""
        created = create_body(body, {"stream": True})
        return self._http.request(
            "POST",
            "/interactions",
            idempotent=False,
            json=created,
            stream=True,
            read_timeout=idle_timeout,
            cancelled=cancelled,
            headers={"accept": "text/event-stream"},
            telemetry_metadata=telemetry_metadata,
        )

    def get_interaction(
        self,
        interaction_id: str,
        *,
        include_input: bool | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> Json:
        """One interaction: its status, steps (its input among them), usage."""
        params: dict[str, Any] = {"stream": "false"}
        if include_input is not None:
            params["include_input"] = "true" if include_input else "false"
        return self._get(
            f"/interactions/{segment(interaction_id)}",
            params=params,
            telemetry_metadata=telemetry_metadata,
            required=("id", "status"),
        )

    def open_interaction_stream(
        self,
        interaction_id: str,
        *,
        last_event_id: str | None = None,
        idle_timeout: float,
        cancelled: threading.Event | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
    ) -> requests.Response:
        """``GET /interactions/{id}?stream=true``: the interaction's events as SSE, from the
        one after ``last_event_id`` when given (a resume)."""
        params: dict[str, Any] = {"stream": "true"}
        if last_event_id is not None:
            params["last_event_id"] = id_value("last_event_id", last_event_id)
        return self._http.request(
            "GET",
            f"/interactions/{segment(interaction_id)}",
            idempotent=True,
            params=params,
            stream=True,
            read_timeout=idle_timeout,
            cancelled=cancelled,
            headers={"accept": "text/event-stream"},
            telemetry_metadata=telemetry_metadata,
        )

    def cancel_interaction(
        self, interaction_id: str, *, telemetry_metadata: Mapping[str, Any] | None = None
    ) -> Json:
        """``POST /interactions/{id}/cancel``: stop a running interaction (retried:
        cancelling twice leaves the same state); answered with the interaction."""
        return self._json(
            "POST",
            f"/interactions/{segment(interaction_id)}/cancel",
            idempotent=True,
            telemetry_metadata=telemetry_metadata,
            required=("status",),
        )

    def delete_interaction(self, interaction_id: str) -> Json:
        """Delete an interaction (answered ``{}``)."""
        return self._delete(f"/interactions/{segment(interaction_id)}", required=())
