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
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents.drivers._ledger import UNFINISHED_MESSAGE, ToolLedger
from req_managed_agents.drivers._options import Settings
from req_managed_agents.drivers._run import Run
from req_managed_agents.drivers._tool_runner import run_tools
from req_managed_agents.errors import UnfinishedToolCallError, UnresolvedRequiresActionError
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
    Outcome,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
)
from req_managed_agents.providers._base import Conversation
from req_managed_agents.tools._handler import (
    ConfirmationHandler,
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
_DENIED_BY_POLICY = "denied by the session's confirm='deny' policy"

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

    def drive(
        self,
        conversation: Conversation,
        resumed: TurnResult | None,
        prompt: str | None,
        outcome: Outcome | None,
        run: Run,
        stop: threading.Event,
    ) -> SessionResult:
        """Run until the agent is done or a guard halts; ``resumed`` is a reattached
        session's current turn (``None`` for a fresh session or a later run)."""
        turn = resumed
        if turn is not None:
            run.resume(turn)
            # A turn that gave up (retries exhausted, a refusal) leaves the session open.
            if (
                (prompt is not None or outcome is not None)
                and turn.terminal == "terminated"
                and conversation.accepts_input()
            ):
                turn = _send_input(conversation, prompt, outcome)
                prompt = outcome = None
                self.record(run, turn)
        else:
            turn = _send_input(conversation, prompt or DEFAULT_PROMPT, outcome)
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
                turn = _send_input(conversation, prompt, outcome)
                prompt = outcome = None
            else:
                run.reprompts += 1
                turn = conversation.send_prompt(REPROMPT.format(tool=settings.terminal_tool))
            self.record(run, turn)

    def record(self, run: Run, turn: TurnResult) -> None:
        """Take a finished turn into the run, and report it."""
        run.take(turn)
        run.turn_usage.append(turn.usage)
        telemetry.emit(
            "session.turn",
            {
                "input_tokens": turn.usage.input_tokens,
                "output_tokens": turn.usage.output_tokens,
                "tool_uses": len(turn.tool_uses),
            },
            self.meta(run, turn=len(run.turn_usage), terminal=turn.terminal),
        )
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
        """Run the turn's tools and decide its confirmations; send all answers at once."""
        tool_uses = _unique(turn.tool_uses)
        if not tool_uses and not turn.confirmations:
            tool_uses = _unique(conversation.unanswered_tool_uses())
        if not tool_uses and not turn.confirmations:
            raise UnresolvedRequiresActionError(turn.stop_reason, session_id=run.session_id)
        decisions = [
            (tool_use, self._decide(tool_use, turn, conversation, run))
            for tool_use in _unique(turn.confirmations)
        ]
        results = self._execute(conversation, tool_uses, run, stop) if tool_uses else []
        return conversation.send_tool_results(tool_uses, results, decisions)

    def _decide(
        self, tool_use: ToolUse, turn: TurnResult, conversation: Conversation, run: Run
    ) -> Decision:
        """Allow or deny one provider tool asking permission: the handler's hook, else the
        session's ``confirm`` policy."""
        decision: Decision
        if self._confirmer is not None:
            context = ToolContext(tool_use.id, conversation.info)
            try:
                answer = self._confirmer.handle_confirmation(tool_use, context)
            except Exception as exc:
                answer = Deny(f"the confirmation hook failed: {describe_exception(exc)}")
            decision = answer if isinstance(answer, (Allow, Deny)) else Deny(_bad_hook(answer))
        elif self.settings.confirm == "allow":
            decision = Allow()
        elif self.settings.confirm == "deny":
            decision = Deny(_DENIED_BY_POLICY)
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
        """Results for ``tool_uses``: calls the ledger does not know run now (recorded as
        they start and finish); a recorded result is reused; a call that started before and
        never finished is handled by the ``on_unfinished`` policy."""
        session_id = conversation.info.session_id
        ledger, policy = self.ledger, self.settings.on_unfinished
        answers: dict[str, ToolResult] = {}
        new: list[ToolUse] = []
        for tool_use in tool_uses:
            found = ledger.claim(session_id, tool_use.id)
            if found is None:
                new.append(tool_use)
            elif found.result is not None:
                answers[tool_use.id] = replace(found.result, tool_use_id=tool_use.id)
            elif policy == "rerun":
                ledger.restart(session_id, tool_use.id)
                new.append(tool_use)
            elif policy == "raise":
                raise UnfinishedToolCallError(tool_use, session_id=session_id)
            else:
                answers[tool_use.id] = ToolResult(tool_use.id, UNFINISHED_MESSAGE, is_error=True)
                ledger.finish(session_id, tool_use.id, answers[tool_use.id])

        def finished(tool_use: ToolUse, result: ToolResult) -> None:
            ledger.finish(session_id, tool_use.id, result)
            run.emit(ToolCallFinished(tool_use, result))

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
                on_finish=finished,
            )
            answers.update((use.id, result) for use, result in zip(new, results))
            run.tool_uses.extend(new)
            run.tool_results.extend(results)
        return [answers[tool_use.id] for tool_use in tool_uses]


def _send_input(
    conversation: Conversation, prompt: str | None, outcome: Outcome | None
) -> TurnResult:
    """Start a turn: work toward ``outcome`` if there is one, else answer ``prompt``."""
    if outcome is not None:
        return conversation.define_outcome(outcome)
    return conversation.send_prompt(prompt or DEFAULT_PROMPT)


def _bad_hook(answer: object) -> str:
    return (
        f"the confirmation hook returned {type(answer).__name__}, not Allow or Deny; "
        "denied to be safe"
    )


def _unique(tool_uses: Sequence[ToolUse]) -> list[ToolUse]:
    seen: set[str] = set()
    unique = []
    for tool_use in tool_uses:
        if tool_use.id not in seen:
            seen.add(tool_use.id)
            unique.append(tool_use)
    return unique
