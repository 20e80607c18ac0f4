"""Permission for a local tool call: the run's answer to a tool that asks before acting.

A provider-run tool asks by pausing the turn (the loop's confirmations); a local tool - an
MCP server's destructive tool - asks on its own thread, through ``ToolContext.confirm``,
right before it would act. Both get the same answer: the handler's ``handle_confirmation``
if it has one, else the session's ``confirm=`` policy. A local call cannot pause the turn,
so ``"raise"`` denies it with a message saying how to allow it; the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable

from req_managed_agents.drivers._options import ConfirmPolicy
from req_managed_agents.model._vocabulary import Allow, Decision, Deny, ToolUse
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    Handler,
    ToolContext,
    describe_exception,
)

__all__ = ["DENIED_BY_POLICY", "bad_hook", "local_confirmation"]

DENIED_BY_POLICY = "denied by the session's confirm='deny' policy"


def bad_hook(answer: object) -> str:
    """Why a hook's answer that is neither ``Allow`` nor ``Deny`` denies the call."""
    return (
        f"the confirmation hook returned {type(answer).__name__}, not Allow or Deny; "
        "denied to be safe"
    )


def local_confirmation(
    handler: Handler, policy: ConfirmPolicy
) -> Callable[[ToolUse, ToolContext], Decision]:
    """The ``ToolContext.confirm`` of a run with ``handler`` and ``confirm=policy``. It runs
    on the tool call's own thread, so the call's ``tool_timeout`` bounds the hook too."""
    confirmer = handler if isinstance(handler, ConfirmationHandler) else None

    def confirm(tool_use: ToolUse, context: ToolContext) -> Decision:
        if confirmer is None:
            if policy == "allow":
                return Allow()
            if policy == "deny":
                return Deny(DENIED_BY_POLICY)
            return Deny(
                f"tool {tool_use.name!r} of the MCP server {tool_use.mcp_server!r} asks for "
                "confirmation and nothing can give it: define handle_confirmation on the "
                "handler or pass confirm='allow' or 'deny'"
            )
        try:
            answer = confirmer.handle_confirmation(tool_use, context)
        except Exception as exc:
            return Deny(f"the confirmation hook failed: {describe_exception(exc)}")
        # Typed as object: a hook's return value is not trusted.
        checked: object = answer
        return checked if isinstance(checked, (Allow, Deny)) else Deny(bad_hook(checked))

    return confirm
