"""The control plane of the AgentCore emulator: the harness registry and its routes.

CreateHarness (idempotent by ``clientToken``; names are unique), GetHarness (the latest
version, or ``?harnessVersion=N``), ListHarnesses (paged by ``nextToken``), UpdateHarness,
ListHarnessVersions and DeleteHarness, and the endpoint routes (``_endpoints``). A harness
walks through a script of statuses, one step per GetHarness (default ``CREATING`` then
``READY``); a deleted one answers as ``DELETING`` to ``delete_after`` observations
(GetHarness or ListHarnesses), then is gone, or turns ``DELETE_FAILED`` or stays
``DELETING`` if its deletion was scripted so; deleting a ``DELETING`` harness again is a
``ConflictException``. ListHarnesses leaves ``harnesses`` out when there are none, as the
live service does.
Each harness has a runtime behind it, whose ARN InvokeAgentRuntimeCommand addresses.

UpdateHarness (``PATCH``) takes only a ``READY`` harness (anything else is a
``ConflictException``): the members it names replace the harness's, ``environment`` is
merged into the runtime's settings, and ``environmentArtifact``, ``authorizerConfiguration``
and ``memory`` come wrapped as ``{"optionalValue": ...}`` (an empty wrapper clears them).
The update makes version N+1 (``harnessVersion``, a string) and the harness walks
``UPDATING`` then ``READY``; a retry with the same ``clientToken`` changes nothing more.
ListHarnessVersions pages through the versions, newest first.
"""

from __future__ import annotations

import copy
import re
import secrets
import string
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._endpoints import EndpointRoutes
from req_managed_agents.testing.agentcore._harness import (
    _VERSION_KEYS,
    _Harness,
    _harness_not_found,
)
from req_managed_agents.testing.agentcore._shapes import _checked_body
from req_managed_agents.testing.agentcore._wire import _AwsError, _invalid
from req_managed_agents.testing.server import query_value, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.agentcore._converse import ConverseTurn
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import Exchange, Route

_DEFAULT_STATUSES = ("CREATING", "READY")
_UPDATE_STATUSES = ("UPDATING", "READY")
# UpdateHarness members that come as ``{"optionalValue": ...}``: empty clears them.
_OPTIONAL_MEMBERS = ("environmentArtifact", "authorizerConfiguration", "memory")
_HARNESS_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,39}")
_ALNUM = string.ascii_letters + string.digits
_DEFAULT_MODEL = {"bedrockModelConfig": {"modelId": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}


def _alnum(length: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


class ControlPlane:
    """The control-plane routes, and the harnesses they make.

    ``control_model`` is botocore's bedrock-agentcore-control service model; ``region`` and
    ``account_id`` go into the ARNs; ``default_script`` is what harnesses created without one
    play; a deleted harness is gone after ``delete_after`` observations.
    """

    def __init__(
        self,
        state: AgentCoreState,
        control_model: Any,
        *,
        region: str,
        account_id: str,
        default_script: tuple[ConverseTurn, ...],
        delete_after: int,
    ) -> None:
        self._state = state
        self._control_model = control_model
        self._region = region
        self._account_id = account_id
        self._default_script = default_script
        self._delete_after = delete_after

    def routes(self) -> list[Route]:
        one = "([^/]+)"
        return [
            ("POST", "/harnesses", self._create_harness),
            ("GET", "/harnesses", self._list_harnesses),
            ("GET", f"/harnesses/{one}", self._get_harness),
            ("PATCH", f"/harnesses/{one}", self._update_harness),
            ("GET", f"/harnesses/{one}/versions", self._list_harness_versions),
            ("DELETE", f"/harnesses/{one}", self._delete_harness),
            *EndpointRoutes(self._state, self._control_model).routes(),
        ]

    def new_harness(
        self,
        body: Mapping[str, Any],
        statuses: tuple[str, ...],
        script: tuple[ConverseTurn, ...] | None = None,
    ) -> _Harness:
        """Make a harness of a checked create ``body`` that walks ``statuses`` and plays
        ``script`` (None: the default one); the state's lock is held."""
        name = body["harnessName"]
        harness_id = f"{name}-{_alnum(10)}"
        runtime_id = f"harness_{name}-{_alnum(10)}"
        prefix = f"arn:aws:bedrock-agentcore:{self._region}:{self._account_id}"
        asked = body.get("environment", {}).get("agentCoreRuntimeEnvironment", {})
        runtime = {
            "agentRuntimeArn": f"{prefix}:runtime/{runtime_id}",
            "agentRuntimeName": f"harness_{name}",
            "agentRuntimeId": runtime_id,
            "lifecycleConfiguration": {
                "idleRuntimeSessionTimeout": 900,
                "maxLifetime": 28800,
                **asked.get("lifecycleConfiguration", {}),
            },
            "networkConfiguration": asked.get("networkConfiguration", {"networkMode": "PUBLIC"}),
        }
        if "filesystemConfigurations" in asked:
            runtime["filesystemConfigurations"] = asked["filesystemConfigurations"]
        now = utc_timestamp()
        record: dict[str, Any] = {
            "harnessId": harness_id,
            "arn": f"{prefix}:harness/{harness_id}",
            "createdAt": now,
            "updatedAt": now,
            "model": _DEFAULT_MODEL,
            "systemPrompt": [],
            "tools": [],
            "skills": [],
            "allowedTools": ["*"],
            "truncation": {"strategy": "sliding_window"},
            "harnessVersion": "1",
        }
        echoed = self._control_model.shape_for("Harness").members
        record.update({key: value for key, value in body.items() if key in echoed})
        record["environment"] = {"agentCoreRuntimeEnvironment": runtime}
        self._state.created += 1
        scripted = self._default_script if script is None else script
        harness = _Harness(copy.deepcopy(record), statuses, scripted, self._state.created)
        self._state.harnesses[harness_id] = harness
        self._state.condition.notify_all()
        return harness

    def _observed(self, harness: _Harness) -> bool:
        """Count a GET or LIST seeing a deleted harness; False (and gone) once it has had its
        ``delete_after`` sightings, unless its deletion was scripted to fail or stick."""
        if harness.deleting_observed is None:
            return True
        harness.deleting_observed += 1
        if harness.deleting_observed <= self._delete_after:
            return True
        if harness.deletion != "gone":
            harness.deletion_over()
            return True
        del self._state.harnesses[harness.id]
        self._state.condition.notify_all()
        return False

    def _create_harness(self, exchange: Exchange) -> tuple[int, dict[str, Any]]:
        body = _checked_body(self._control_model, "CreateHarness", exchange.request)
        with self._state.condition:
            token = body.get("clientToken")
            earlier = self._state.harnesses.get(self._state.client_tokens.get(token or "", ""))
            if earlier is not None:  # a retry of a create that succeeded
                return 201, {"harness": earlier.view()}
            name = body["harnessName"]
            if self._state.named(name) is not None:
                raise _AwsError(409, "ConflictException", f"A harness named {name} already exists")
            statuses = (
                self._state.next_statuses.pop(name, None)
                or self._state.next_statuses.pop(None, None)
                or _DEFAULT_STATUSES
            )
            harness = self.new_harness(body, statuses, self._default_script)
            if token:
                self._state.client_tokens[token] = harness.id
            return 201, {"harness": harness.view()}

    def _get_harness(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        version = query_value(exchange.request, "harnessVersion")
        if version is not None and not re.fullmatch(r"[1-9][0-9]{0,4}", version):
            raise _invalid([("harnessVersion", "Member must satisfy regular expression pattern")])
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            if not self._observed(harness):
                raise _harness_not_found(harness_id)
            if version is not None and int(version) < len(harness.versions):
                return 200, {"harness": harness.version_view(int(version))}
            if version is not None and int(version) > len(harness.versions):
                raise _harness_not_found(f"{harness_id} version {version}")
            harness.advance()
            return 200, {"harness": harness.view()}

    def _update_harness(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        body = _checked_body(self._control_model, "UpdateHarness", exchange.request)
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            token = body.get("clientToken")
            if token and self._state.update_tokens.get(token) == harness_id:
                return 200, {"harness": harness.view()}  # a retry of an update that landed
            if harness.status != "READY":
                raise _AwsError(
                    409, "ConflictException", f"Harness {harness_id} is {harness.status}"
                )
            record = harness.record
            for key, value in body.items():
                if key == "clientToken":
                    continue
                if key in _OPTIONAL_MEMBERS:
                    if "optionalValue" in value:
                        record[key] = copy.deepcopy(value["optionalValue"])
                    else:
                        record.pop(key, None)
                elif key == "environment":
                    runtime = record["environment"]["agentCoreRuntimeEnvironment"]
                    runtime.update(copy.deepcopy(value.get("agentCoreRuntimeEnvironment", {})))
                else:
                    record[key] = copy.deepcopy(value)
            record["harnessVersion"] = str(len(harness.versions) + 1)
            harness.set_statuses(_UPDATE_STATUSES)  # also stamps updatedAt
            harness.versions.append(copy.deepcopy(record))
            if token:
                self._state.update_tokens[token] = harness_id
            self._state.condition.notify_all()
            return 200, {"harness": harness.view()}

    def _list_harness_versions(
        self, exchange: Exchange, harness_id: str
    ) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            newest_first = range(len(harness.versions), 0, -1)
            keyed = [
                (-number, {key: harness.version_view(number)[key] for key in _VERSION_KEYS})
                for number in newest_first
            ]
            return 200, self._state.page(exchange.request, keyed, "harnessVersions")

    def _list_harnesses(self, exchange: Exchange) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            live = sorted(self._state.harnesses.values(), key=lambda h: h.order)
            keyed = [(h.order, h.summary()) for h in live if self._observed(h)]
            page = self._state.page(exchange.request, keyed, "harnesses")
            if not page["harnesses"]:
                del page["harnesses"]  # the live service's answer when there are none
            return 200, page

    def _delete_harness(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        with self._state.condition:
            harness = self._state.harnesses.find(harness_id)
            if harness.deleting_observed is not None:  # as live: a repeat may answer 409
                raise _AwsError(409, "ConflictException", f"Harness {harness_id} is DELETING")
            harness.start_deleting()
            view = harness.view()
            if self._delete_after == 0:
                self._observed(harness)
            return 200, {"harness": view}
