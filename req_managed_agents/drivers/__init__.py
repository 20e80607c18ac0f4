"""The drivers: ``Session`` and ``run_to_completion`` (the turn loop on a worker thread), their
options, the tool ledger and ``run_batch``. They speak only the vocabulary and the provider
seam (:mod:`req_managed_agents.providers`)."""

from req_managed_agents.drivers._api import run_to_completion
from req_managed_agents.drivers._batch import BatchItem, BatchOutcome, read_prompts, run_batch
from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
from req_managed_agents.drivers._options import ConfirmPolicy, SessionOptions, TurnGuard
from req_managed_agents.drivers._session import Session

__all__ = [
    "BatchItem",
    "BatchOutcome",
    "ConfirmPolicy",
    "Session",
    "SessionOptions",
    "ToolLedger",
    "TurnGuard",
    "UnfinishedPolicy",
    "read_prompts",
    "run_batch",
    "run_to_completion",
]
