"""The drivers: ``Session`` and ``run_to_completion`` (the turn loop on a worker thread), their
options, the tool ledger, ``run_batch``, and ``answer``/``pending`` for decisions a run left
for a person. They speak only the vocabulary and the provider
seam (:mod:`req_managed_agents.providers`)."""

from req_managed_agents.drivers._answer import answer, expire, pending
from req_managed_agents.drivers._api import run_to_completion
from req_managed_agents.drivers._batch import BatchItem, BatchOutcome, read_prompts, run_batch
from req_managed_agents.drivers._decision_book import AlreadyAnsweredError, DecisionNotFoundError
from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
from req_managed_agents.drivers._options import ConfirmPolicy, SessionOptions, TurnGuard
from req_managed_agents.drivers._session import Session

__all__ = [
    "AlreadyAnsweredError",
    "BatchItem",
    "BatchOutcome",
    "ConfirmPolicy",
    "DecisionNotFoundError",
    "Session",
    "SessionOptions",
    "ToolLedger",
    "TurnGuard",
    "UnfinishedPolicy",
    "answer",
    "expire",
    "pending",
    "read_prompts",
    "run_batch",
    "run_to_completion",
]
