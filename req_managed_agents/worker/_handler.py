"""The handler a worker gives each session: built-in calls to the toolset, the rest to the
user's handler.

In a self-hosted environment both kinds of call come back to the client: the agent's
``bash``, ``read``, ``write``, ``edit``, ``glob`` and ``grep`` (``agent.tool_use``) and its
custom tools (``agent.custom_tool_use``). The drivers see only a name, so the names of the
built-in toolset go to the toolset bound to the session's folder and every other name to the
user's handler - a custom tool cannot share a name with a built-in one. The user's
``handle_event`` and ``handle_confirmation`` hooks pass through when it has them (a hook the
router always had would take the ``confirm`` policy's place).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.model._vocabulary import Decision, SessionInfo, ToolResult, ToolUse
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    EventHandler,
    Handler,
    ToolContext,
    ToolOutput,
)
from req_managed_agents.toolset import AGENT_TOOL_NAMES

__all__ = ["ToolRouter", "route_tools"]


class ToolRouter:
    """Sends each call to the toolset or the user's handler, by name (see the module)."""

    def __init__(self, handler: Handler | None, toolset: Handler) -> None:
        self.handler = handler
        self.toolset = toolset
        self._events: EventHandler | None = handler if isinstance(handler, EventHandler) else None

    def handle_tool_call(
        self, name: str, input: Mapping[str, Any], context: ToolContext
    ) -> ToolOutput:
        """Answer one call: a built-in tool in the session's folder, else the user's tool."""
        if name in AGENT_TOOL_NAMES:
            return self.toolset.handle_tool_call(name, input, context)
        if self.handler is None:
            message = (
                f"unknown tool {name!r}: this worker runs only the built-in tools "
                f"({', '.join(sorted(AGENT_TOOL_NAMES))})"
            )
            return ToolResult(context.tool_use_id, message, is_error=True)
        return self.handler.handle_tool_call(name, input, context)

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        """Every raw event, to the user's ``handle_event`` if it has one."""
        if self._events is not None:
            self._events.handle_event(event, info)


class _ConfirmingRouter(ToolRouter):
    """A router whose user handler decides confirmations too."""

    def __init__(self, handler: Handler, confirmer: ConfirmationHandler, toolset: Handler) -> None:
        super().__init__(handler, toolset)
        self._confirmer = confirmer

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
        """The user's ``handle_confirmation``."""
        return self._confirmer.handle_confirmation(tool_use, context)


def route_tools(handler: Handler | None, toolset: Handler) -> ToolRouter:
    """The router for one session: with ``handle_confirmation`` only if the user's has it."""
    confirmer: ConfirmationHandler | None = (
        handler if isinstance(handler, ConfirmationHandler) else None
    )
    if handler is not None and confirmer is not None:
        return _ConfirmingRouter(handler, confirmer, toolset)
    return ToolRouter(handler, toolset)
