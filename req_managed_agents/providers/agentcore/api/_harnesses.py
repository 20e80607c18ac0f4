"""Harnesses on the control plane: create, read, list (every page), update, versions,
delete, and the agent runtime behind a harness."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.providers.agentcore.api._core import (
    ClientCore,
    client_token,
    json_bytes,
    segment,
)
from req_managed_agents.transport._json import checked_id, malformed

__all__ = ["HarnessesAPI"]

# What an answer carrying a harness must hold: the object, with an ARN and an id.
_HARNESS: dict[str, Any] = {"wrapped": "harness", "required": ("arn", "harnessId")}


class HarnessesAPI(ClientCore):
    """Harness CRUD on the control plane."""

    def create_harness(
        self, body: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``CreateHarness``; returns the ``harness`` object. A ``clientToken`` is added when
        absent, so a retried create cannot make a second harness. ``deadline`` (monotonic)
        bounds the call, retries included."""
        if not body.get("harnessName"):
            raise ValueError("a harness needs a harnessName")
        if not body.get("executionRoleArn"):
            raise ValueError("a harness needs an executionRoleArn")
        data = json_bytes({"clientToken": client_token(), **body})
        return self._json(
            "POST", "/harnesses", idempotent=True, data=data, deadline=deadline, **_HARNESS
        )

    def get_harness(self, harness_id: str, *, deadline: float | None = None) -> dict[str, Any]:
        """``GetHarness``; returns the ``harness`` object (with its ``status``). ``deadline``
        (monotonic) bounds the call, retries included."""
        return self._get(f"/harnesses/{segment(harness_id)}", deadline=deadline, **_HARNESS)

    def list_harnesses(self) -> list[dict[str, Any]]:
        """Every harness summary, following ``nextToken`` to the last page."""
        return self._list("/harnesses", member="harnesses", item_required=("arn", "harnessId"))

    def update_harness(
        self, harness_id: str, body: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``UpdateHarness`` (a ``PATCH`` of the members given); returns the ``harness``
        object, usually ``UPDATING``. A ``clientToken`` is added when absent, so a retry is
        harmless."""
        data = json_bytes({"clientToken": client_token(), **body})
        path = f"/harnesses/{segment(harness_id)}"
        self._forget(harness_id)
        return self._json("PATCH", path, idempotent=True, data=data, deadline=deadline, **_HARNESS)

    def list_harness_versions(self, harness_id: str) -> list[dict[str, Any]]:
        """Every version of a harness (``ListHarnessVersions``), following ``nextToken``."""
        path = f"/harnesses/{segment(harness_id)}/versions"
        return self._list(path, member="harnessVersions", item_required=())

    def delete_harness(self, harness_id: str, *, deadline: float | None = None) -> dict[str, Any]:
        """``DeleteHarness``; deletion is asynchronous (the harness goes ``DELETING``)."""
        self._forget(harness_id)
        return self._delete(f"/harnesses/{segment(harness_id)}", deadline=deadline, required=())

    def cached_harness(self, harness_arn: str) -> dict[str, Any]:
        """The harness (``GetHarness``), asked once per harness and client: what a session
        needs from it (its deployed tools, its runtime) changes only by an update, and an
        update or delete through this client drops the copy."""
        harness = self._harness_cache.get(harness_arn)
        if harness is None:
            harness = self.get_harness(harness_arn.rsplit("/", 1)[-1])
            self._harness_cache[harness_arn] = harness
        return harness

    def _forget(self, harness_id: str) -> None:
        key = harness_id.rsplit("/", 1)[-1]
        for arn in [arn for arn in self._harness_cache if arn.rsplit("/", 1)[-1] == key]:
            self._harness_cache.pop(arn, None)

    def runtime_arn(self, harness_arn: str) -> str | None:
        """The ARN of the AgentCore runtime a harness runs on (from ``GetHarness``); None if
        the harness names none, a :class:`MalformedResponseError` if it names an unusable one."""
        environment = self.cached_harness(harness_arn).get("environment")
        runtime = (
            environment.get("agentCoreRuntimeEnvironment")
            if isinstance(environment, Mapping)
            else None
        )
        arn = runtime.get("agentRuntimeArn") if isinstance(runtime, Mapping) else None
        if arn is None or arn == "":
            return None
        try:
            return checked_id(arn, "environment.agentCoreRuntimeEnvironment.agentRuntimeArn")
        except ValueError as exc:
            what = f"GET /harnesses/{harness_arn.rsplit('/', 1)[-1]}"
            raise malformed(200, what, str(exc)) from None
