"""Harness endpoints on the control plane: create, read, list (every page), update, delete.

An endpoint is the name an invocation's ``qualifier`` addresses; every harness gets a
``DEFAULT`` one, created after the harness itself is ``READY`` (minutes later, live). Until
it exists, ``GetHarnessEndpoint`` answers 404, which cannot be told from a misspelt name, so
names are checked here before any request.
"""

from __future__ import annotations

import re
from typing import Any

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers.agentcore.api._core import (
    ClientCore,
    client_token,
    json_bytes,
    segment,
)

__all__ = ["DEFAULT_ENDPOINT", "EndpointsAPI", "check_endpoint_name"]

DEFAULT_ENDPOINT = "DEFAULT"
# What an answer carrying an endpoint must hold: the object, with its name.
_ENDPOINT: dict[str, Any] = {"wrapped": "endpoint", "required": ("endpointName",)}
_ENDPOINT_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")


def check_endpoint_name(name: object) -> str:
    """``name`` if it is a valid endpoint name, else a :class:`ConfigurationError`."""
    if not isinstance(name, str) or not _ENDPOINT_NAME.fullmatch(name):
        raise ConfigurationError(
            f"an endpoint name is a letter then up to 47 letters, digits or '_', not {name!r}"
        )
    return name


class EndpointsAPI(ClientCore):
    """Harness endpoint CRUD on the control plane."""

    def create_harness_endpoint(
        self,
        harness_id: str,
        endpoint_name: str,
        *,
        target_version: str | None = None,
        description: str | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """``CreateHarnessEndpoint``; returns the ``endpoint`` (usually ``CREATING``).
        ``target_version`` pins a harness version (default: the latest). A ``clientToken``
        makes a retried create harmless."""
        name = {"endpointName": check_endpoint_name(endpoint_name)}
        data = json_bytes({**name, **_changes(target_version, description)})
        path = f"/harnesses/{segment(harness_id)}/endpoints"
        return self._json("POST", path, idempotent=True, data=data, deadline=deadline, **_ENDPOINT)

    def get_harness_endpoint(
        self, harness_id: str, endpoint_name: str, *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``GetHarnessEndpoint``; returns the ``endpoint`` with its ``status``."""
        path = self._endpoint_path(harness_id, endpoint_name)
        return self._get(path, deadline=deadline, **_ENDPOINT)

    def list_harness_endpoints(self, harness_id: str) -> list[dict[str, Any]]:
        """Every endpoint of a harness, following ``nextToken`` to the last page."""
        path = f"/harnesses/{segment(harness_id)}/endpoints"
        return self._list(path, member="endpoints", item_required=("endpointName",))

    def update_harness_endpoint(
        self,
        harness_id: str,
        endpoint_name: str,
        *,
        target_version: str | None = None,
        description: str | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """``UpdateHarnessEndpoint``: move it to ``target_version`` or change its
        ``description``; returns the ``endpoint``, usually ``UPDATING``."""
        data = json_bytes(_changes(target_version, description))
        path = self._endpoint_path(harness_id, endpoint_name)
        return self._json("PATCH", path, idempotent=True, data=data, deadline=deadline, **_ENDPOINT)

    def delete_harness_endpoint(
        self, harness_id: str, endpoint_name: str, *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``DeleteHarnessEndpoint``; deletion is asynchronous (it goes ``DELETING``)."""
        path = self._endpoint_path(harness_id, endpoint_name)
        params = {"clientToken": client_token()}
        return self._delete(path, params=params, deadline=deadline, **_ENDPOINT)

    def _endpoint_path(self, harness_id: str, endpoint_name: str) -> str:
        name = check_endpoint_name(endpoint_name)
        return f"/harnesses/{segment(harness_id)}/endpoints/{name}"


def _changes(target_version: str | None, description: str | None) -> dict[str, Any]:
    """The members a create or update sets, with a fresh ``clientToken`` (a retry of the
    same request is then harmless)."""
    body: dict[str, Any] = {"clientToken": client_token()}
    if target_version is not None:
        body["targetVersion"] = str(target_version)
    if description is not None:
        body["description"] = description
    return body
