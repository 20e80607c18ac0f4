"""A harness of the AgentCore emulator: its control-plane record, its versions, the status
script it walks through (one step per GetHarness) and the turn script it plays."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._wire import _AwsError
from req_managed_agents.testing.server import utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing.agentcore._converse import ConverseTurn

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
        self.versions = [copy.deepcopy(record)]  # every version's record, oldest first

    @property
    def id(self) -> str:
        return str(self.record["harnessId"])

    @property
    def status(self) -> str:
        return "DELETING" if self.deleting_observed is not None else self.statuses[self.position]

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
