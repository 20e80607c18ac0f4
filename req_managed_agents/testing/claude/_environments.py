"""Environments of the Claude emulator: their REST objects and routes.

Environments are created, read, updated (``config`` replaced whole, of the same ``type``:
a cloud environment cannot become self-hosted, nor the reverse), listed, archived and
deleted once no session uses them. They answer with their defaults resolved (``_config``).
With ``unique_names`` a second environment of the same name is a 409.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._config import resolved_environment_config
from req_managed_agents.testing.claude._resource import Resource
from req_managed_agents.testing.claude._wire import (
    ID,
    _check_name_free,
    _coded,
    _invalid,
    _json_object,
    _merged_metadata,
    _optional_string,
    _reject_unknown,
    _required_name,
)
from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.server import Exchange, Route

_ENVIRONMENT_FIELDS = frozenset({"name", "config", "description", "metadata", "scope"})
_SCOPES = ("organization", "account")


def _scope(value: Any) -> Any:
    if value is not None and value not in _SCOPES:
        raise _invalid("scope: Input should be 'organization' or 'account'")
    return value


class Environments(Resource):
    """The environment routes, and the environments sessions run in."""

    def __init__(self, state: ClaudeState, *, unique_names: bool) -> None:
        super().__init__(state, state.environments, "/v1/environments")
        self._unique_names = unique_names

    def routes(self) -> list[Route]:
        return [
            ("POST", "/v1/environments", self._create_environment),
            ("POST", f"/v1/environments/{ID}", self._update_environment),
            *super().routes(),
        ]

    def new_environment(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create an environment from a create body; the state's lock is held."""
        name = _required_name(body)
        _check_name_free(self._unique_names, self._state.environments, "environment", name)
        now = utc_timestamp()
        environment = {
            "id": new_id("env"),
            "type": "environment",
            "name": name,
            "description": _optional_string(body, "description") or "",
            "config": resolved_environment_config(body.get("config")),
            "metadata": _merged_metadata({}, body.get("metadata") or {}, empty_deletes=True),
            "scope": _scope(body.get("scope")),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
        }
        self._state.environments[environment["id"]] = environment
        return environment

    def usable(self, environment_id: str) -> dict[str, Any]:
        """An environment a session may be made in: a 400 ``environment_archived`` for an
        archived one (the code the SDK documents for updating one, used here alike)."""
        environment = self._state.environments.find(environment_id)
        if environment["archived_at"]:
            message = f"environment {environment_id!r} is archived"
            raise _coded("environment_archived", message)
        return environment

    def _create_environment(self, exchange: Exchange) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS)
        with self._state.condition:
            return copy.deepcopy(self.new_environment(body))

    def _update_environment(self, exchange: Exchange, environment_id: str) -> dict[str, Any]:
        body = _json_object(exchange.request)
        _reject_unknown(body, _ENVIRONMENT_FIELDS)
        with self._state.condition:
            environment = self._state.environments.find(environment_id)
            if environment["archived_at"]:
                message = "an archived environment cannot be updated"
                raise _coded("environment_archived", message)
            updated = copy.deepcopy(environment)
            for key, value in body.items():
                if key == "name":
                    if value is None:
                        continue  # null keeps the name
                    updated["name"] = _required_name(body)
                    _check_name_free(
                        self._unique_names,
                        self._state.environments,
                        "environment",
                        updated["name"],
                        environment_id,
                    )
                elif key == "config":
                    if value is not None:
                        updated["config"] = resolved_environment_config(value)
                        if updated["config"]["type"] != environment["config"]["type"]:
                            message = "config.type: an environment's type cannot change"
                            raise _coded("invalid_config_type_change", message)
                elif key == "metadata":
                    updated["metadata"] = _merged_metadata(
                        environment["metadata"], value or {}, empty_deletes=True
                    )
                elif key == "scope":
                    updated["scope"] = _scope(value)
                else:
                    updated[key] = _optional_string(body, key) or ""
            if updated != environment:
                updated["updated_at"] = utc_timestamp()
                self._state.environments[environment_id] = updated
            return copy.deepcopy(updated)

    def _deleting(self, record: dict[str, Any]) -> None:
        if any(
            not s.deleted and s.record["environment_id"] == record["id"]
            for s in self._state.sessions.values()
        ):
            raise _invalid("the environment is used by sessions; delete them first")
