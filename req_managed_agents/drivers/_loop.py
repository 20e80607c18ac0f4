"""The turn loop: one run of a session, on the thread that calls it.

A run sends a prompt (or works toward an outcome), then loops: whenever a turn ends in
``requires_action`` the local tools run concurrently and their results go back with the
answers to any provider tools asking permission, until the agent ends its turn, the provider
stops, or a guard halts the run. The loop owns no thread and no connection: the session
runs it on its worker thread and stops it from outside by closing the conversation's I/O and
setting ``stop``.

Each tool call id is executed at most once: the :class:`~req_managed_agents.ToolLedger`
is asked before a call runs, and a provider asking again (after a reconnect, a resume or a
lost response) gets the recorded result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._confirm import (
    DENIED_BY_POLICY,
    ELICIT_ANSWERS,
    ELICITATION_ANSWER_TYPES,
    bad_hook,
    local_confirmation,
    local_elicitation,
)
from req_managed_agents.drivers._keyed import KeyedRun
from req_managed_agents.drivers._ledger import (
    RUNNING_ELSEWHERE,
    UNFINISHED_MESSAGE,
    LedgerEntry,
    ToolLedger,
)
from req_managed_agents.drivers._options import Settings
from req_managed_agents.drivers._run import Run
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, call_bounded, run_tools
from req_managed_agents.errors import (
    AmbiguousRunError,
    ElicitationRequiredError,
    UnfinishedToolCallError,
    UnresolvedRequiresActionError,
)
from req_managed_agents.model._stream import (
    ConfirmationAnswered,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    Deny,
    Elicitation,
    ElicitationAnswer,
    ElicitationCancel,
    Outcome,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
)
from req_managed_agents.providers._base import Conversation
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
    ElicitationHandler,
    Handler,
    ToolContext,
    describe_exception,
)

__all__ = ["DEFAULT_PROMPT", "REPROMPT", "TurnLoop"]

DEFAULT_PROMPT = "Begin."
# Sent when a run with a terminal tool ends its turn without having called it.
REPROMPT = (
    "You ended your turn without calling the `{tool}` tool. Call `{tool}` now with your "
    "final answer; the task is finished only when you do."
)
_log = get_logger(__name__)

Meta = Callable[..., dict[str, Any]]
"""``meta(run, **extra)``: the telemetry metadata of an event of ``run``."""


class TurnLoop:
    """Runs turns for one session: its settings, handler and ledger, and how to tag
    telemetry; :meth:`drive` runs one run to its end."""

    def __init__(self, settings: Settings, handler: Handler, ledger: ToolLedger, meta: Meta):
        self.settings = settings
        self.handler = handler
        self.ledger = ledger
        self.meta = meta
        self._confirmer = handler if isinstance(handler, ConfirmationHandler) else None
        self._elicitor = handler if isinstance(handler, ElicitationHandler) else None

    def drive(
        self,
        conversation: Conversation,
        resumed: TurnResult | None,
        prompt: str | None,
        outcome: Outcome | None,
        run: Run,
        stop: threading.Event,
        keyed: KeyedRun | None = None,
        continued: bool = False,
    ) -> SessionResult:
        """Run until the agent is done or a guard halts; ``resumed`` is a reattached
        session's current turn (``None`` for a fresh session or a later run). A ``keyed``
        run hears of every input and turn; ``continued``, it goes on from ``resumed``, its
        prompt delivered by an earlier attempt."""
        run.keyed = keyed
        turn = resumed
        if continued:
            if turn is None:
                raise AmbiguousRunError(
                    "the keyed run's prompt was delivered, yet its session shows no turn",
                    session_id=run.session_id,
                )
            run.resume(turn)
        elif turn is not None:
            run.resume(turn)
            # A turn that gave up (retries exhausted, a refusal) leaves the session open.
            if (
                (prompt is not None or outcome is not None)
                and turn.terminal == "terminated"
                and conversation.accepts_input()
            ):
                turn = _send_input(conversation, prompt, outcome, run)
                prompt = outcome = None
                self.record(run, turn)
        else:
            turn = _send_input(conversation, prompt or DEFAULT_PROMPT, outcome, run)
            prompt = outcome = None
            self.record(run, turn)
        settings = self.settings
        while True:
            pending = prompt is not None or outcome is not None
            more_work = turn.terminal == "requires_action" or (
                pending and turn.terminal == "end_turn"
            )
            if not more_work and not self._owes_terminal_call(run, turn):
                return run.result(turn.terminal, turn.stop_reason)
            if not more_work and run.reprompts >= settings.max_reprompts:
                return run.result(
                    "terminated",
                    {"type": "no_terminal_tool", "terminal_tool": settings.terminal_tool},
                )
            # Guards stand between turns: a finished run is reported as it finished.
            halt = self._check_guard(run)
            if halt is not None:
                return run.result("terminated", {"type": "halted", "reason": halt})
            if len(run.turn_usage) >= settings.max_turns:
                return run.result(
                    "terminated", {"type": "max_turns_reached", "max_turns": settings.max_turns}
                )
            if turn.terminal == "requires_action":
                turn = self._answer(conversation, turn, run, stop)
            elif pending:
                turn = _send_input(conversation, prompt, outcome, run)
                prompt = outcome = None
            else:
                run.reprompts += 1
                _before_input(run)
                turn = conversation.send_prompt(REPROMPT.format(tool=settings.terminal_tool))
            self.record(run, turn)

    def record(self, run: Run, turn: TurnResult) -> None:
        """Take a finished turn into the run, and report it."""
        run.take(turn)
        run.turn_usage.append(turn.usage)
        if run.keyed is not None:
            run.keyed.after_turn(turn)
        telemetry.emit(
            "session.turn",
            {
                "input_tokens": turn.usage.input_tokens,
                "output_tokens": turn.usage.output_tokens,
                "tool_uses": len(turn.tool_uses),
            },
            self.meta(run, turn=len(run.turn_usage), terminal=turn.terminal),
        )
        for hook_event in turn.hook_events:
            run.emit(hook_event)
        run.emit(TurnEnded(turn, len(run.turn_usage)))

    def _owes_terminal_call(self, run: Run, turn: TurnResult) -> bool:
        """Whether the agent ended a turn of this run without the call the session requires
        (a reattached run that asked nothing owes nothing)."""
        return (
            self.settings.terminal_tool is not None
            and bool(run.turn_usage)
            and turn.terminal == "end_turn"
            and not run.called_terminal_tool()
        )

    def _check_guard(self, run: Run) -> str | None:
        guard = self.settings.turn_guard
        if guard is None or not run.turn_usage:
            return None
        verdict = guard(run.usage, len(run.turn_usage), run.session_id or "")
        return str(verdict) if verdict else None

    def _answer(
        self, conversation: Conversation, turn: TurnResult, run: Run, stop: threading.Event
    ) -> TurnResult:
        """Run the turn's tools and decide its confirmations and elicitations; send all
        answers at once. Elicitations are decided first: one that must be raised leaves no
        tool run without its result being sent."""
        tool_uses = _unique(turn.tool_uses)
        waits = bool(turn.confirmations or turn.elicitations)
        if not tool_uses and not waits:
            tool_uses = _unique(conversation.unanswered_tool_uses())
        if not tool_uses and not waits:
            raise UnresolvedRequiresActionError(turn.stop_reason, session_id=run.session_id)
        elicited = [
            (elicitation, self._elicit(elicitation, conversation, run, stop))
            for elicitation in dict.fromkeys(turn.elicitations)
        ]
        decisions = [
            (tool_use, self._decide(tool_use, turn, conversation, run, stop))
            for tool_use in _unique(turn.confirmations)
        ]
        results = self._execute(conversation, tool_uses, run, stop) if tool_uses else []
        _before_input(run)
        return conversation.send_tool_results(tool_uses, results, decisions, elicited)

    def _elicit(
        self, elicitation: Elicitation, conversation: Conversation, run: Run, stop: threading.Event
    ) -> ElicitationAnswer:
        """Answer an MCP server's request for a person: the handler's hook (bounded like a
        tool; a failure or a wrong answer cancels), else the ``elicit`` policy, which by
        default raises :class:`ElicitationRequiredError` with the link."""
        elicitor = self._elicitor
        if elicitor is None:
            policy = self.settings.elicit
            if policy == "raise":
                raise ElicitationRequiredError(elicitation, session_id=run.session_id)
            return ELICIT_ANSWERS[policy]
        context = ToolContext(elicitation.tool_use_id, conversation.info)
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
        if isinstance(answer, ELICITATION_ANSWER_TYPES):  # a hook's return value is not trusted
            return answer
        _log.warning("handle_elicitation returned %s; cancelling", type(answer).__name__)
        return ElicitationCancel()

    def _decide(
        self,
        tool_use: ToolUse,
        turn: TurnResult,
        conversation: Conversation,
        run: Run,
        stop: threading.Event,
    ) -> Decision:
        """Allow or deny one provider tool asking permission: the handler's hook, else the
        session's ``confirm`` policy. The hook is bounded like a tool: it sees
        ``ToolContext.cancelled`` when the run stops, and ``tool_timeout`` denies for it."""
        decision: Decision
        confirmer = self._confirmer
        if confirmer is not None:
            context = ToolContext(tool_use.id, conversation.info)
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
            decision = answer if isinstance(answer, (Allow, Deny)) else Deny(bad_hook(answer))
        elif self.settings.confirm == "allow":
            decision = Allow()
        elif self.settings.confirm == "deny":
            decision = Deny(DENIED_BY_POLICY)
        else:
            raise UnresolvedRequiresActionError(
                turn.stop_reason,
                session_id=run.session_id,
                reason=(
                    f"tool {tool_use.name!r} waits for permission; define "
                    "handle_confirmation on the handler or pass confirm='allow' or 'deny'"
                ),
            )
        run.emit(ConfirmationAnswered(tool_use, decision))
        return decision

    def _execute(
        self,
        conversation: Conversation,
        tool_uses: Sequence[ToolUse],
        run: Run,
        stop: threading.Event,
    ) -> list[ToolResult]:
        """Results for ``tool_uses``: a result the ledger recorded is reused; a call that
        started before and never finished is handled by the ``on_unfinished`` policy; the
        rest run now, each claimed on its own thread right before it starts."""
        session_id = conversation.info.session_id
        ledger, policy = self.ledger, self.settings.on_unfinished
        timeout = self.settings.tool_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        answers: dict[str, ToolResult] = {}
        new: list[ToolUse] = []
        takeovers: dict[str, LedgerEntry] = {}
        for tool_use in tool_uses:
            found = ledger.entry(session_id, tool_use.id)
            if found is not None and not found.finished:
                # Another worker may be running it now: wait while its lease is renewed.
                found = ledger.await_finish(session_id, found, stop=stop, deadline=deadline)
                if stop.is_set():
                    raise ToolRunCancelled
            if found is None:
                new.append(tool_use)
            elif found.result is not None:
                answers[tool_use.id] = replace(found.result, tool_use_id=tool_use.id)
            elif found.live:
                message = RUNNING_ELSEWHERE.format(owner=found.owner)
                answers[tool_use.id] = ToolResult(tool_use.id, message, is_error=True)
            elif policy == "rerun":
                takeovers[tool_use.id] = found
                new.append(tool_use)
            elif policy == "raise":
                raise UnfinishedToolCallError(tool_use, session_id=session_id)
            else:
                answers[tool_use.id] = ToolResult(tool_use.id, UNFINISHED_MESSAGE, is_error=True)
                ledger.finish(session_id, tool_use.id, answers[tool_use.id], over=found)
        if new:
            results = run_tools(
                self.handler,
                new,
                conversation.info,
                max_concurrency=self.settings.max_concurrency,
                tool_timeout=self.settings.tool_timeout,
                cancelled=stop,
                telemetry_metadata=self.meta(run),
                on_start=lambda use: run.emit(ToolCallStarted(use)),
                on_finish=lambda use, result: run.emit(ToolCallFinished(use, result)),
                guard=_LedgerGuard(ledger, session_id, takeovers),
                on_unknown=policy,
                confirm=local_confirmation(self.handler, self.settings.confirm),
                elicit=local_elicitation(self.handler, self.settings.elicit),
                on_progress=run.emit,
            )
            answers.update((use.id, result) for use, result in zip(new, results))
            run.tool_uses.extend(new)
            run.tool_results.extend(results)
        return [answers[tool_use.id] for tool_use in tool_uses]


class _LedgerGuard:
    """The ledger's part in one turn's tool calls (see :class:`CallGuard`)."""

    def __init__(
        self, ledger: ToolLedger, session_id: str, takeovers: Mapping[str, LedgerEntry]
    ) -> None:
        self.ledger = ledger
        self.session_id = session_id
        self.takeovers = takeovers

    def begin(self, tool_use: ToolUse, cancelled: threading.Event) -> ToolResult | None:
        found = self.ledger.claim(
            self.session_id, tool_use.id, over=self.takeovers.get(tool_use.id)
        )
        if found is None:
            return None  # ours to run
        if not found.finished:
            # Claimed by another worker an instant ago: its answer is this call's answer.
            found = self.ledger.await_finish(self.session_id, found, stop=cancelled) or found
        if found.result is not None:
            return replace(found.result, tool_use_id=tool_use.id)
        if found.live:
            message = RUNNING_ELSEWHERE.format(owner=found.owner)
            return ToolResult(tool_use.id, message, is_error=True)
        # Its owner stopped while it ran: it may have had its effect, so it is not run here.
        return ToolResult(tool_use.id, UNFINISHED_MESSAGE, is_error=True)

    def release(self, tool_use: ToolUse) -> None:
        self.ledger.release(self.session_id, tool_use.id)

    def leave(self, tool_use: ToolUse) -> None:
        self.ledger.leave(self.session_id, tool_use.id)

    def end(self, tool_use: ToolUse, result: ToolResult) -> None:
        self.ledger.finish(self.session_id, tool_use.id, result)


def _before_input(run: Run) -> None:
    if run.keyed is not None:
        run.keyed.before_input()


def _send_input(
    conversation: Conversation, prompt: str | None, outcome: Outcome | None, run: Run
) -> TurnResult:
    """Start a turn: work toward ``outcome`` if there is one, else answer ``prompt``."""
    _before_input(run)
    if outcome is not None:
        return conversation.define_outcome(outcome)
    return conversation.send_prompt(prompt or DEFAULT_PROMPT)


def _unique(tool_uses: Sequence[ToolUse]) -> list[ToolUse]:
    seen: set[str] = set()
    unique = []
    for tool_use in tool_uses:
        if tool_use.id not in seen:
            seen.add(tool_use.id)
            unique.append(tool_use)
    return unique
