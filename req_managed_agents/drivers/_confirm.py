"""The run's answers to a local tool call that asks: permission before it acts, and a
person's input while it runs.

A provider-run tool asks by pausing the turn (the loop's confirmations and elicitations); a
local tool - an MCP server's destructive tool, or one whose server asks the person a
question - asks on its own thread, through ``ToolContext.confirm`` and
``ToolContext.elicit``. Both get the answers the paused turn would: the handler's hook if
it has one, else the session's ``confirm=`` or ``elicit=`` policy. A local call cannot pause
the turn, so ``"raise"`` denies (or declines) with a message saying how to answer; the run
goes on. The call's ``tool_timeout`` bounds the hook, which runs on the call's thread.
"""

from __future__ import annotations

from collections.abc import Callable

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._options import ConfirmPolicy, ElicitPolicy
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    Deny,
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationCancel,
    ElicitationDecline,
    ToolUse,
)
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    ElicitationHandler,
    Handler,
    ToolContext,
    describe_exception,
)

__all__ = [
    "DENIED_BY_POLICY",
    "ELICITATION_ANSWER_TYPES",
    "ELICIT_ANSWERS",
    "bad_hook",
    "local_confirmation",
    "local_elicitation",
]

DENIED_BY_POLICY = "denied by the session's confirm='deny' policy"
ELICIT_ANSWERS: dict[str, ElicitationAnswer] = {
    "accept": ElicitationAccept(),
    "decline": ElicitationDecline(),
    "cancel": ElicitationCancel(),
}
"""The ``elicit=`` policies' answers (``"raise"`` has none)."""
ELICITATION_ANSWER_TYPES: tuple[type, ...] = (
    ElicitationAccept,
    ElicitationDecline,
    ElicitationCancel,
)

_log = get_logger(__name__)


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


def local_elicitation(
    handler: Handler, policy: ElicitPolicy
) -> Callable[[Elicitation, ToolContext], ElicitationAnswer]:
    """The ``ToolContext.elicit`` of a run with ``handler`` and ``elicit=policy``: a hook
    that fails or answers something else cancels, as for a provider's elicitation."""
    elicitor = handler if isinstance(handler, ElicitationHandler) else None

    def elicit(elicitation: Elicitation, context: ToolContext) -> ElicitationAnswer:
        if elicitor is None:
            if policy == "raise":
                _log.warning(
                    "the MCP server %r asks a person (%s) and nothing can answer: declined; "
                    "define handle_elicitation on the handler or pass elicit='accept', "
                    "'decline' or 'cancel'",
                    elicitation.server_name,
                    elicitation.message or "no message",
                )
                return ElicitationDecline()
            return ELICIT_ANSWERS[policy]
        try:
            answer = elicitor.handle_elicitation(elicitation, context)
        except Exception as exc:
            _log.warning("handle_elicitation failed (%s); cancelling", describe_exception(exc))
            return ElicitationCancel()
        checked: object = answer  # a hook's return value is not trusted
        if isinstance(checked, ELICITATION_ANSWER_TYPES):
            return answer
        _log.warning("handle_elicitation returned %s; cancelling", type(checked).__name__)
        return ElicitationCancel()

    return elicit
