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
        return self._create("/v1/environments", body_of(body, fields), "name", "an environment")

    def get_environment(self, environment_id: str) -> Json:
        """An environment and its resolved config."""
        return self._get(f"/v1/environments/{segment(environment_id)}")

    def update_environment(
        self, environment_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Change the fields ``body`` names (``POST``); a metadata value of null deletes it."""
        return self._update(f"/v1/environments/{segment(environment_id)}", body_of(body, fields))

    def list_environments(self, **params: Any) -> list[Json]:
        """Every environment (all pages)."""
        return self._list("/v1/environments", query_params(params))

    def archive_environment(self, environment_id: str) -> Json:
        """Make an environment read-only; sessions already using it go on."""
        return self._archive(f"/v1/environments/{segment(environment_id)}")

    def delete_environment(self, environment_id: str) -> Json:
        """Delete an environment; the API refuses while a session still references it."""
        return self._delete(f"/v1/environments/{segment(environment_id)}")
