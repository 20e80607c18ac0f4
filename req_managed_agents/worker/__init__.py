"""The worker of a Claude self-hosted environment: it runs the agent's sandbox on this
machine.

A session in an environment of ``config.type: "self_hosted"`` queues a work item; an
:class:`EnvironmentWorker` polls for it, claims it, keeps its lease, serves the session's
tool calls - the built-in ``bash``/``read``/``write``/``edit``/``glob``/``grep`` in the
session's own folder, custom tools through the user's handler - exactly once each (the tool
ledger), and stops the item when the session is done. ``rma worker`` runs one.
"""

from req_managed_agents.worker._activity import ACTIVITY_POLL
from req_managed_agents.worker._item import RUN_RETRY, ItemOutcome, WorkItemReport
from req_managed_agents.worker._lease import ACK_RETRY, HEARTBEAT_RETRY, STOP_RETRY
from req_managed_agents.worker._settings import ENVIRONMENT_KEY_VARIABLE, ToolsetFactory
from req_managed_agents.worker._worker import (
    EMPTY_POLL,
    POLL_RETRY,
    RELEASE_TIMEOUT,
    SLOT_POLL,
    EnvironmentWorker,
)

__all__ = [
    "ACK_RETRY",
    "ACTIVITY_POLL",
    "EMPTY_POLL",
    "ENVIRONMENT_KEY_VARIABLE",
    "HEARTBEAT_RETRY",
    "POLL_RETRY",
    "RELEASE_TIMEOUT",
    "RUN_RETRY",
    "SLOT_POLL",
    "STOP_RETRY",
    "EnvironmentWorker",
    "ItemOutcome",
    "ToolsetFactory",
    "WorkItemReport",
]
