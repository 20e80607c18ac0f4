"""What users write: the handler protocols and ``ToolContext``, the ``Tools`` registry (with
the JSON Schema it builds from type hints and the validation of a call's input against it)."""

from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    ElicitationHandler,
    EventHandler,
    Handler,
    ToolContext,
    ToolOutcomeUnknownError,
)
from req_managed_agents.tools._registry import Tool, Tools

__all__ = [
    "ConfirmationHandler",
    "ElicitationHandler",
    "EventHandler",
    "Handler",
    "Tool",
    "ToolContext",
    "ToolOutcomeUnknownError",
    "Tools",
]
