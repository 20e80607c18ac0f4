"""req_managed_agents: a synchronous client for managed agent runtimes.

The provider (Claude Managed Agents, on Anthropic's API or Amazon Bedrock; Bedrock AgentCore
Harness; OpenAI's Agents API; Gemini Managed Agents) runs the agent loop; your custom tools
run here, on your machine. The provider only ever sees each tool's name, description, input
schema and the text it returned.

The root holds the names of a day's work; every public name is in its subpackage (``errors``,
``model``, ``tools``, ``drivers``, ...). Names that need ``requests`` or the drivers load on
first use, so ``import req_managed_agents`` stays cheap in scripts, notebooks and web workers.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

# Importing display plugs the notebook renderings and the verbose view into the vocabulary.
from req_managed_agents.display import ProgressLine
from req_managed_agents.errors import (
    APIError,
    ConfigurationError,
    ManagedAgentsError,
    SessionTimeoutError,
)
from req_managed_agents.model import (
    Allow,
    ConfirmationAnswered,
    Defer,
    Deferred,
    Deny,
    HookEvent,
    MessageDone,
    SessionResult,
    TextDelta,
    TextReset,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolResult,
    TurnEnded,
)
from req_managed_agents.tools import ToolContext, Tools

__version__ = "0.1.0.dev0"

if TYPE_CHECKING:
    from req_managed_agents.drivers import (
        Session,
        ToolLedger,
        answer,
        pending,
        run_batch,
        run_to_completion,
    )
    from req_managed_agents.providers import (
        BedrockAgentCore,
        ClaudeManagedAgents,
        ClaudeManagedAgentsBedrock,
        GeminiManagedAgents,
        OpenAIAgents,
    )
    from req_managed_agents.stores import FileStore, MemoryStore

# Public name -> the package that defines it, imported on first attribute access (these pull
# in ``requests`` and the drivers, which an import of the package alone should not pay for).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "BedrockAgentCore",
            "ClaudeManagedAgents",
            "ClaudeManagedAgentsBedrock",
            "GeminiManagedAgents",
            "OpenAIAgents",
        ),
        "req_managed_agents.providers",
    ),
    **dict.fromkeys(
        ("Session", "ToolLedger", "answer", "pending", "run_batch", "run_to_completion"),
        "req_managed_agents.drivers",
    ),
    **dict.fromkeys(("FileStore", "MemoryStore"), "req_managed_agents.stores"),
    "McpServer": "req_managed_agents.mcp",
}

# Names the root used to export, by their home now: still found here for one release,
# with a DeprecationWarning that names the home.
_MOVED: dict[str, str] = {
    name: f"req_managed_agents.{home}"
    for home, names in {
        "errors": """AmbiguousRunError ArtifactError ArtifactNotFoundError AuthenticationError
            BadRequestError CommandFailedError ConflictError ElicitationRequiredError
            EnvironmentArchivedError EnvironmentNameConflictError EventStreamError
            EventTooLargeError HarnessDeletingError HarnessFailedError HarnessNotReadyError
            HarnessReadyTimeoutError HarnessUnknownStatusError IdleTimeoutError
            InvalidArtifactNameError InvocationOutcomeUnknownError LedgerError
            MalformedResponseError MissingDependencyError NotFoundError PartialPruneError
            ProviderStreamError ProvisioningError RateLimitError ServerError SessionError
            StreamError StreamReconnectError TransportError UnfinishedToolCallError
            UnknownTagError UnresolvedRequiresActionError""",
        "model": """Artifact ContentBlock Decision Document Elicitation ElicitationAccept
            ElicitationAnswer ElicitationCancel ElicitationDecline Image Outcome Progress
            ProgressCallback SessionInfo StreamItem Terminal ToolUse TurnResult Usage""",
        "tools": "ConfirmationHandler ElicitationHandler EventHandler Handler Tool",
        "drivers": """BatchItem BatchOutcome ConfirmPolicy SessionOptions TurnGuard
            UnfinishedPolicy read_prompts""",
        "providers": "CommandResult",
        "provisioner": "AgentSpec EnvironmentSpec ensure_environment provision teardown",
        "toolset": "AgentToolset UnsandboxedWarning",
        "worker": "EnvironmentWorker WorkItemReport",
    }.items()
    for name in names.split()
}

__all__ = [
    "APIError",
    "Allow",
    "BedrockAgentCore",
    "ClaudeManagedAgents",
    "ClaudeManagedAgentsBedrock",
    "ConfigurationError",
    "ConfirmationAnswered",
    "Defer",
    "Deferred",
    "Deny",
    "FileStore",
    "GeminiManagedAgents",
    "HookEvent",
    "ManagedAgentsError",
    "McpServer",
    "MemoryStore",
    "MessageDone",
    "OpenAIAgents",
    "ProgressLine",
    "Session",
    "SessionResult",
    "SessionTimeoutError",
    "TextDelta",
    "TextReset",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolContext",
    "ToolLedger",
    "ToolResult",
    "Tools",
    "TurnEnded",
    "__version__",
    "answer",
    "pending",
    "run_batch",
    "run_to_completion",
]


def __getattr__(name: str) -> Any:
    home = _MOVED.get(name)
    if home is not None:
        warnings.warn(
            f"req_managed_agents.{name} moved: import it from {home} "
            "(the root's re-export goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(home), name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
