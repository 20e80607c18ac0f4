"""A harness of the AgentCore emulator: its control-plane record, its versions, the status
script it walks through (one step per GetHarness), its endpoints, how its deletion ends and
the turn script it plays."""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any, Literal

from req_managed_agents.testing.agentcore._wire import _AwsError
from req_managed_agents.testing.server import utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.agentcore._converse import ConverseTurn

# How a deletion ends: the harness is gone, it turns DELETE_FAILED, or it stays DELETING.
Deletion = Literal["gone", "failed", "stuck"]

_SUMMARY_KEYS = ("harnessId", "harnessName", "arn", "status", "createdAt", "updatedAt")
_VERSION_KEYS = (*_SUMMARY_KEYS[:3], "harnessVersion", *_SUMMARY_KEYS[3:])


def _harness_not_found(which: str) -> _AwsError:
    return _AwsError(404, "ResourceNotFoundException", f"Harness not found: {which}")


class _Harness:
    """A harness's control-plane record plus its status script and its turn script."""

    def __init__(
        self,
        record: dict[str, Any],
        statuses: tuple[str, ...],
        script: tuple[ConverseTurn, ...],
        order: int,
    ) -> None:
        self.record = record
        self.statuses = statuses
        self.position = 0
        self.script = script
        self.order = order
        self.deleting_observed: int | None = None  # None until deleted
        self.deletion: Deletion = "gone"
        self.delete_failed = False
        self.versions = [copy.deepcopy(record)]  # every version's record, oldest first
        self.endpoints: dict[str, _Endpoint] = {}  # by name, in creation order
        self.default_deleted = False  # the DEFAULT endpoint was deleted, not yet created
        self.ready_since: float | None = None  # when its status first read READY
        self._note_ready()

    @property
    def id(self) -> str:
        return str(self.record["harnessId"])

    @property
    def status(self) -> str:
        if self.delete_failed:
            return "DELETE_FAILED"
        return "DELETING" if self.deleting_observed is not None else self.statuses[self.position]

    def _note_ready(self) -> None:
        if self.ready_since is None and self.status == "READY":
            self.ready_since = time.monotonic()

    def start_deleting(self) -> None:
        self.deleting_observed = 0
        self.delete_failed = False
        self.record["updatedAt"] = utc_timestamp()

    def deletion_over(self) -> None:
        """Its deletion did not make it gone: it failed, or it is stuck for good."""
        if self.deletion == "failed":
            self.deleting_observed = None
            self.delete_failed = True
            self.record["updatedAt"] = utc_timestamp()

    def view(self) -> dict[str, Any]:
        return {**copy.deepcopy(self.record), "status": self.status}

    def summary(self) -> dict[str, Any]:
        view = self.view()
        return {key: view[key] for key in _SUMMARY_KEYS}

    def version_view(self, number: int) -> dict[str, Any]:
        """An earlier version as GetHarness shows it; the latest one has the live status."""
        if number == len(self.versions):
            return self.view()
        return {**copy.deepcopy(self.versions[number - 1]), "status": "READY"}

    def set_statuses(self, statuses: tuple[str, ...]) -> None:
        self.statuses = statuses
        self.position = 0
        self.record["updatedAt"] = utc_timestamp()

    def advance(self) -> None:
        if self.deleting_observed is None and self.position < len(self.statuses) - 1:
            self.position += 1
            self.record["updatedAt"] = utc_timestamp()
            self._note_ready()


class _Endpoint:
    """An endpoint's record and the statuses it walks through."""

    def __init__(self, record: dict[str, Any], statuses: tuple[str, ...]) -> None:
        self.record = record
        self.statuses = statuses
        self.position = 0
        self.deleting = False

    @property
    def status(self) -> str:
        return "DELETING" if self.deleting else self.statuses[self.position]

    def view(self) -> dict[str, Any]:
        view = {**copy.deepcopy(self.record), "status": self.status}
        if self.status == "READY":
            view["liveVersion"] = view.get("targetVersion", "1")
        return view

    def walk(self, statuses: tuple[str, ...]) -> None:
        self.statuses, self.position = statuses, 0
        self.record["updatedAt"] = utc_timestamp()

    def advance(self) -> None:
        if not self.deleting and self.position < len(self.statuses) - 1:
            self.position += 1
            self.record["updatedAt"] = utc_timestamp()
