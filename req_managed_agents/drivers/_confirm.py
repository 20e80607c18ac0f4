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

import threading
from collections.abc import Callable, Mapping

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._deferral import ConfirmationDeferred
from req_managed_agents.drivers._options import ConfirmPolicy, ElicitPolicy, Settings
from req_managed_agents.drivers._run import Run
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, call_bounded
from req_managed_agents.errors import ElicitationRequiredError, UnresolvedRequiresActionError
from req_managed_agents.model._stream import ConfirmationAnswered
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    Defer,
    Deny,
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationCancel,
    ElicitationDecline,
    SessionInfo,
    ToolUse,
    TurnResult,
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
    "Asker",
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
    handler: Handler, policy: ConfirmPolicy, granted: Mapping[str, Decision] | None = None
) -> Callable[[ToolUse, ToolContext], Decision]:
    """The ``ToolContext.confirm`` of a run with ``handler`` and ``confirm=policy``. It runs
    on the tool call's own thread, so the call's ``tool_timeout`` bounds the hook too.
    ``granted`` holds the calls a person already answered (a deferred confirmation); a
    hook answering ``Defer`` (or ``"defer"``) raises :class:`ConfirmationDeferred`, and the
    call waits for a person."""
    confirmer = handler if isinstance(handler, ConfirmationHandler) else None
    given = dict(granted or {})

    def confirm(tool_use: ToolUse, context: ToolContext) -> Decision:
        if tool_use.id in given:
            return given[tool_use.id]
        if confirmer is None:
            if policy == "defer":
                raise ConfirmationDeferred()
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
        if isinstance(checked, Defer):
            raise ConfirmationDeferred(checked.reason, expires_in=checked.expires_in)
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


class Asker:
    """Asks the run's answer to a question a provider paused the turn for: the handler's
    hook (bounded like a tool: it sees ``ToolContext.cancelled`` when the run stops, and
    ``tool_timeout`` answers for it), else the session's policy. Either may answer
    :class:`Defer`: the question waits for a person (see ``drivers/_deferral.py``)."""

    def __init__(self, handler: Handler, settings: Settings) -> None:
        self.settings = settings
        self._confirmer = handler if isinstance(handler, ConfirmationHandler) else None
        self._elicitor = handler if isinstance(handler, ElicitationHandler) else None

    def elicitation(
        self, elicitation: Elicitation, info: SessionInfo, stop: threading.Event
    ) -> ElicitationAnswer | Defer:
        """An MCP server's request for a person: a failing hook or a wrong answer cancels;
        without a hook, the ``elicit`` policy, which by default raises
        :class:`ElicitationRequiredError` with the link."""
        elicitor = self._elicitor
        if elicitor is None:
            policy = self.settings.elicit
            if policy == "raise":
                raise ElicitationRequiredError(elicitation, session_id=info.session_id)
            return Defer() if policy == "defer" else ELICIT_ANSWERS[policy]
        context = ToolContext(elicitation.tool_use_id, info)
        try:
            answer = call_bounded(
                lambda context: elicitor.handle_elicitation(elicitation, context),
                context,
                timeout=self.settings.tool_timeout,
                cancelled=stop,
                name=f"rma-elicit-{elicitation.server_name}",
            )
        except ToolRunCancelled:
            raise  # the run stopped: no answer is sent
        except Exception as exc:  # a failing hook (or one out of time) cancels
            _log.warning("handle_elicitation failed (%s); cancelling", describe_exception(exc))
            return ElicitationCancel()
        if isinstance(answer, (*ELICITATION_ANSWER_TYPES, Defer)):  # a hook is not trusted
            return answer
        _log.warning("handle_elicitation returned %s; cancelling", type(answer).__name__)
        return ElicitationCancel()

    def confirmation(
        self,
        tool_use: ToolUse,
        turn: TurnResult,
        info: SessionInfo,
        run: Run,
        stop: threading.Event,
    ) -> Decision | Defer:
        """Allow or deny one provider tool asking permission (a failing or late hook
        denies); without a hook, the ``confirm`` policy, which by default raises
        :class:`UnresolvedRequiresActionError`."""
        decision: Decision | Defer
        confirmer = self._confirmer
        if confirmer is not None:
            context = ToolContext(tool_use.id, info)
            try:
                answer = call_bounded(
                    lambda context: confirmer.handle_confirmation(tool_use, context),
                    context,
                    timeout=self.settings.tool_timeout,
                    cancelled=stop,
                    name=f"rma-confirm-{tool_use.name}",
                )
            except ToolRunCancelled:
                raise  # the run stopped: no answer is sent
            except TimeoutError:
                timeout = self.settings.tool_timeout
                answer = Deny(f"the confirmation hook gave no answer within {timeout:g} s")
            except Exception as exc:
                answer = Deny(f"the confirmation hook failed: {describe_exception(exc)}")
            checked: object = answer
            decision = (
                answer if isinstance(checked, (Allow, Deny, Defer)) else Deny(bad_hook(answer))
            )
        elif self.settings.confirm in ("allow", "deny", "defer"):
            decision = _POLICY_DECISIONS[self.settings.confirm]
        else:
            raise UnresolvedRequiresActionError(
                turn.stop_reason,
                session_id=info.session_id,
                reason=(
                    f"tool {tool_use.name!r} waits for permission; define "
                    "handle_confirmation on the handler or pass confirm='allow', 'deny' or "
                    "'defer'"
                ),
            )
        if not isinstance(decision, Defer):
            run.emit(ConfirmationAnswered(tool_use, decision))
        return decision


_POLICY_DECISIONS: dict[str, Decision | Defer] = {
    "allow": Allow(),
    "deny": Deny(DENIED_BY_POLICY),
    "defer": Defer(),
}
