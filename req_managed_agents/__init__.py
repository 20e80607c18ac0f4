"""req_managed_agents: a synchronous client for managed agent runtimes.

The provider (Claude Managed Agents, on Anthropic's API or Amazon Bedrock; Bedrock AgentCore
Harness; OpenAI's Agents API) runs the agent loop; your
custom tools run here, on your machine. The provider only ever sees each tool's name,
description, input schema and the text it returned.

Names that need ``requests`` or the drivers load on first use, so ``import
req_managed_agents`` stays cheap in scripts, notebooks and web workers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported for its effect: it registers the notebook renderers the value types call.
from req_managed_agents.display import _notebook  # noqa: F401
from req_managed_agents.display._progress_line import ProgressLine
from req_managed_agents.errors import (
    AmbiguousRunError,
    APIError,
    ArtifactError,
    ArtifactNotFoundError,
    AuthenticationError,
    BadRequestError,
    CommandFailedError,
    ConfigurationError,
    ConflictError,
    ElicitationRequiredError,
    EnvironmentArchivedError,
    EnvironmentNameConflictError,
    EventStreamError,
    EventTooLargeError,
    HarnessDeletingError,
    HarnessFailedError,
    HarnessNotReadyError,
    HarnessReadyTimeoutError,
    HarnessUnknownStatusError,
    IdleTimeoutError,
    InvalidArtifactNameError,
    InvocationOutcomeUnknownError,
    LedgerError,
    MalformedResponseError,
    ManagedAgentsError,
    MissingDependencyError,
    NotFoundError,
    PartialPruneError,
    ProviderStreamError,
    ProvisioningError,
    RateLimitError,
    ServerError,
    SessionError,
    SessionTimeoutError,
    StreamError,
    StreamReconnectError,
    TransportError,
    UnfinishedToolCallError,
    UnknownTagError,
    UnresolvedRequiresActionError,
)
from req_managed_agents.model._progress import Progress, ProgressCallback
from req_managed_agents.model._stream import (
    ConfirmationAnswered,
    MessageDone,
    StreamItem,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents.model._vocabulary import (
    Allow,
    Artifact,
    ContentBlock,
    Decision,
    Deny,
    Document,
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationCancel,
    ElicitationDecline,
    HookEvent,
    Image,
    Outcome,
    SessionInfo,
    SessionResult,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    ElicitationHandler,
    EventHandler,
    Handler,
    ToolContext,
)
from req_managed_agents.tools._registry import Tool, Tools

__version__ = "0.1.0.dev0"

if TYPE_CHECKING:
    from req_managed_agents.drivers._api import run_to_completion
    from req_managed_agents.drivers._batch import BatchItem, BatchOutcome, read_prompts, run_batch
    from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
    from req_managed_agents.drivers._options import ConfirmPolicy, SessionOptions, TurnGuard
    from req_managed_agents.drivers._session import Session
    from req_managed_agents.providers import (
        BedrockAgentCore,
        ClaudeManagedAgents,
        ClaudeManagedAgentsBedrock,
        CommandResult,
        OpenAIAgents,
    )
    from req_managed_agents.provisioner import (
        AgentSpec,
        EnvironmentSpec,
        FileStore,
        MemoryStore,
        ensure_environment,
        provision,
        teardown,
    )
    from req_managed_agents.toolset import AgentToolset, UnsandboxedWarning
    from req_managed_agents.worker import EnvironmentWorker, WorkItemReport

# Public name -> module that defines it, imported on first attribute access (these pull in
# ``requests`` and the drivers, which an import of the package alone should not pay for).
_LAZY: dict[str, str] = {
    "AgentSpec": "req_managed_agents.provisioner",
    "EnvironmentSpec": "req_managed_agents.provisioner",
    "FileStore": "req_managed_agents.stores",
    "MemoryStore": "req_managed_agents.stores",
    "ensure_environment": "req_managed_agents.provisioner",
    "provision": "req_managed_agents.provisioner",
    "teardown": "req_managed_agents.provisioner",
    "BedrockAgentCore": "req_managed_agents.providers",
    "ClaudeManagedAgents": "req_managed_agents.providers",
    "ClaudeManagedAgentsBedrock": "req_managed_agents.providers",
    "CommandResult": "req_managed_agents.providers",
    "OpenAIAgents": "req_managed_agents.providers",
    "AgentToolset": "req_managed_agents.toolset",
    "UnsandboxedWarning": "req_managed_agents.toolset",
    "EnvironmentWorker": "req_managed_agents.worker",
    "WorkItemReport": "req_managed_agents.worker",
    "BatchItem": "req_managed_agents.drivers._batch",
    "BatchOutcome": "req_managed_agents.drivers._batch",
    "read_prompts": "req_managed_agents.drivers._batch",
    "run_batch": "req_managed_agents.drivers._batch",
    "ConfirmPolicy": "req_managed_agents.drivers._options",
    "Session": "req_managed_agents.drivers._session",
    "ToolLedger": "req_managed_agents.drivers._ledger",
    "UnfinishedPolicy": "req_managed_agents.drivers._ledger",
    "TurnGuard": "req_managed_agents.drivers._options",
    "SessionOptions": "req_managed_agents.drivers._options",
    "run_to_completion": "req_managed_agents.drivers._api",
}

__all__ = [
    "APIError",
    "AgentSpec",
    "AgentToolset",
    "Allow",
    "AmbiguousRunError",
    "Artifact",
    "ArtifactError",
    "ArtifactNotFoundError",
    "AuthenticationError",
    "BadRequestError",
    "BatchItem",
    "BatchOutcome",
    "BedrockAgentCore",
    "ClaudeManagedAgents",
    "ClaudeManagedAgentsBedrock",
    "CommandFailedError",
    "CommandResult",
    "ConfigurationError",
    "ConfirmPolicy",
    "ConfirmationAnswered",
    "ConfirmationHandler",
    "ConflictError",
    "ContentBlock",
    "Decision",
    "Deny",
    "Document",
    "Elicitation",
    "ElicitationAccept",
    "ElicitationAnswer",
    "ElicitationCancel",
    "ElicitationDecline",
    "ElicitationHandler",
    "ElicitationRequiredError",
    "EnvironmentArchivedError",
    "EnvironmentNameConflictError",
    "EnvironmentSpec",
    "EnvironmentWorker",
    "EventHandler",
    "EventStreamError",
    "EventTooLargeError",
    "FileStore",
    "Handler",
    "HarnessDeletingError",
    "HarnessFailedError",
    "HarnessNotReadyError",
    "HarnessReadyTimeoutError",
    "HarnessUnknownStatusError",
    "HookEvent",
    "IdleTimeoutError",
    "Image",
    "InvalidArtifactNameError",
    "InvocationOutcomeUnknownError",
    "LedgerError",
    "MalformedResponseError",
    "ManagedAgentsError",
    "MemoryStore",
    "MessageDone",
    "MissingDependencyError",
    "NotFoundError",
    "OpenAIAgents",
    "Outcome",
    "PartialPruneError",
    "Progress",
    "ProgressCallback",
    "ProgressLine",
    "ProviderStreamError",
    "ProvisioningError",
    "RateLimitError",
    "ServerError",
    "Session",
    "SessionError",
    "SessionInfo",
    "SessionOptions",
    "SessionResult",
    "SessionTimeoutError",
    "StreamError",
    "StreamItem",
    "StreamReconnectError",
    "Terminal",
    "TextDelta",
    "TextReset",
    "Tool",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolLedger",
    "ToolResult",
    "ToolUse",
    "Tools",
    "TransportError",
    "TurnEnded",
    "TurnGuard",
    "TurnResult",
    "UnfinishedPolicy",
    "UnfinishedToolCallError",
    "UnknownTagError",
    "UnresolvedRequiresActionError",
    "UnsandboxedWarning",
    "Usage",
    "WorkItemReport",
    "__version__",
    "ensure_environment",
    "provision",
    "read_prompts",
    "run_batch",
    "run_to_completion",
    "teardown",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
