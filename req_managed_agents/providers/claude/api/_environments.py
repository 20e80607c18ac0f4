"""Environments: where a session's sandbox runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers.claude.api._core import (
    ClientCore,
    Json,
    body_of,
    query_params,
    segment,
)

__all__ = ["EnvironmentsAPI"]


class EnvironmentsAPI(ClientCore):
    """Environments: where a session's sandbox runs."""

    def create_environment(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/environments`` with ``name`` and an optional ``config``."""
        body = body_of(body, fields)
        if not body.get("name"):
            raise ValueError("an environment needs a name")
        return self._json("POST", "/v1/environments", idempotent=False, body=dict(body))

    def get_environment(self, environment_id: str) -> Json:
        """An environment and its resolved config."""
        return self._json("GET", f"/v1/environments/{segment(environment_id)}", idempotent=True)

    def update_environment(
        self, environment_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change the fields ``body`` names (``POST``); a metadata value of null deletes it."""
        body = body_of(body, fields)
        path = f"/v1/environments/{segment(environment_id)}"
        return self._json("POST", path, idempotent=True, body=dict(body))

    def list_environments(self, **params: Any) -> list[Json]:
        """Every environment (all pages)."""
        return self._list_all("/v1/environments", query_params(params))

    def archive_environment(self, environment_id: str) -> Json:
        """Make an environment read-only; sessions already using it go on."""
        path = f"/v1/environments/{segment(environment_id)}/archive"
        return self._json("POST", path, idempotent=True, body={})

    def delete_environment(self, environment_id: str) -> Json:
        """Delete an environment; the API refuses while a session still references it."""
        path = f"/v1/environments/{segment(environment_id)}"
        return self._json("DELETE", path, idempotent=True)
