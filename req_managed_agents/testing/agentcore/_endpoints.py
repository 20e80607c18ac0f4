"""Harness endpoints in the AgentCore emulator: the DEFAULT one each harness gets, the ones
CreateHarnessEndpoint makes, and their routes.

As on the live service, a harness's ``DEFAULT`` endpoint is not there when the harness turns
``READY``: GetHarnessEndpoint answers 404 until ``endpoint_delay`` seconds later (the
state's; None: never), and then it is ``READY``. A created endpoint walks ``CREATING`` then
``READY``, an updated one ``UPDATING`` then ``READY``, one step per GetHarnessEndpoint; a
deleted one answers ``DELETING`` once, then is gone. Create and update need a ``READY``
harness and a ``READY`` endpoint (else ``ConflictException``); names are unique per harness.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._harness import _Endpoint
from req_managed_agents.testing.agentcore._shapes import _checked_body
from req_managed_agents.testing.agentcore._wire import _AwsError, _invalid
from req_managed_agents.testing.server import utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.agentcore._harness import _Harness
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import Exchange, Route

DEFAULT_ENDPOINT = "DEFAULT"
_CREATE_STATUSES = ("CREATING", "READY")
_UPDATE_STATUSES = ("UPDATING", "READY")
_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,47}")


def _new_endpoint(harness: _Harness, name: str, statuses: tuple[str, ...]) -> _Endpoint:
    now = utc_timestamp()
    record = {
        "harnessId": harness.id,
        "harnessName": harness.record["harnessName"],
        "endpointName": name,
        "arn": f"{harness.record['arn']}/harness-endpoint/{name}",
        "createdAt": now,
        "updatedAt": now,
        "targetVersion": harness.record["harnessVersion"],
    }
    endpoint = _Endpoint(record, statuses)
    harness.endpoints[name] = endpoint
    return endpoint


def find_endpoint(state: AgentCoreState, harness: _Harness, name: str) -> _Endpoint | None:
    """The endpoint of that name, if it exists yet (the DEFAULT one appears
    ``endpoint_delay`` seconds after the harness is READY); the state's lock is held."""
    endpoint = harness.endpoints.get(name)
    if endpoint is not None or name != DEFAULT_ENDPOINT or harness.default_deleted:
        return endpoint
    delay = state.endpoint_delay
    if harness.ready_since is None or delay is None:
        return None
    if time.monotonic() < harness.ready_since + delay:
        return None
    return _new_endpoint(harness, name, ("READY",))


def endpoint_not_found(harness: _Harness, name: str) -> _AwsError:
    """The 404 for an endpoint a harness does not have (yet)."""
    return _AwsError(
        404, "ResourceNotFoundException", f"Endpoint {name} not found for harness {harness.id}"
    )


class EndpointRoutes:
    """CreateHarnessEndpoint, GetHarnessEndpoint, ListHarnessEndpoints,
    UpdateHarnessEndpoint and DeleteHarnessEndpoint, checked against ``control_model``."""

    def __init__(self, state: AgentCoreState, control_model: Any) -> None:
        self._state = state
        self._model = control_model

    def routes(self) -> list[Route]:
        one = "([^/]+)"
        return [
            ("POST", f"/harnesses/{one}/endpoints", self._create),
            ("GET", f"/harnesses/{one}/endpoints", self._list),
            ("GET", f"/harnesses/{one}/endpoints/{one}", self._get),
            ("PATCH", f"/harnesses/{one}/endpoints/{one}", self._update),
            ("DELETE", f"/harnesses/{one}/endpoints/{one}", self._delete),
        ]

    def _endpoint(self, harness_id: str, name: str) -> tuple[_Harness, _Endpoint]:
        if not _NAME.fullmatch(name):
            raise _invalid([("endpointName", f"Member must satisfy pattern {_NAME.pattern}")])
        harness = self._state.harnesses.find(harness_id)
        endpoint = find_endpoint(self._state, harness, name)
        if endpoint is None:
            raise endpoint_not_found(harness, name)
        return harness, endpoint

    def _create(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        body = _checked_body(self._model, "CreateHarnessEndpoint", exchange.request)
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            name = body["endpointName"]
            token = body.get("clientToken")
            if token in self._state.endpoint_tokens and name in harness.endpoints:
                return 201, {"endpoint": harness.endpoints[name].view()}  # a retried create
            if harness.status != "READY":
                raise _AwsError(409, "ConflictException", f"Harness {harness_id} is not READY")
            if find_endpoint(self._state, harness, name) is not None:
                raise _AwsError(409, "ConflictException", f"Endpoint {name} already exists")
            endpoint = _new_endpoint(harness, name, _CREATE_STATUSES)
            _target(harness, endpoint, body)
            if token:
                self._state.endpoint_tokens.add(token)
            return 201, {"endpoint": endpoint.view()}

    def _get(self, exchange: Exchange, harness_id: str, name: str) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            harness, endpoint = self._endpoint(harness_id, name)
            view = endpoint.view()
            if endpoint.deleting:
                del harness.endpoints[name]
                harness.default_deleted |= name == DEFAULT_ENDPOINT
            else:
                endpoint.advance()
            return 200, {"endpoint": view}

    def _list(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            find_endpoint(self._state, harness, DEFAULT_ENDPOINT)  # listed once it exists
            keyed = [(order, e.view()) for order, e in enumerate(harness.endpoints.values())]
            return 200, self._state.page(exchange.request, keyed, "endpoints")

    def _update(self, exchange: Exchange, harness_id: str, name: str) -> tuple[int, dict[str, Any]]:
        body = _checked_body(self._model, "UpdateHarnessEndpoint", exchange.request)
        with self._state.condition:
            harness, endpoint = self._endpoint(harness_id, name)
            token = body.get("clientToken")
            if token and token in self._state.endpoint_tokens:
                return 200, {"endpoint": endpoint.view()}
            if harness.status != "READY" or endpoint.status != "READY":
                raise _AwsError(409, "ConflictException", f"Endpoint {name} is {endpoint.status}")
            _target(harness, endpoint, body)
            endpoint.walk(_UPDATE_STATUSES)
            if token:
                self._state.endpoint_tokens.add(token)
            return 200, {"endpoint": endpoint.view()}

    def _delete(self, exchange: Exchange, harness_id: str, name: str) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            _, endpoint = self._endpoint(harness_id, name)
            if endpoint.deleting:
                raise _AwsError(409, "ConflictException", f"Endpoint {name} is DELETING")
            endpoint.deleting = True
            endpoint.record["updatedAt"] = utc_timestamp()
            return 200, {"endpoint": endpoint.view()}


def _target(harness: _Harness, endpoint: _Endpoint, body: dict[str, Any]) -> None:
    version = body.get("targetVersion")
    if version is not None:
        if int(version) > len(harness.versions):
            raise _AwsError(
                404, "ResourceNotFoundException", f"Harness {harness.id} has no version {version}"
            )
        endpoint.record["targetVersion"] = version
    if "description" in body:
        endpoint.record["description"] = body["description"]
