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
from functools import partial
from typing import Any, cast

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._confirm import Asker, local_confirmation, local_elicitation
from req_managed_agents.drivers._deferral import (
    Deferral,
    TurnAnswers,
    TurnDeferred,
    waiting_turn,
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
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, run_tools
from req_managed_agents.errors import (
    AmbiguousRunError,
    UnfinishedToolCallError,
    UnresolvedRequiresActionError,
)
from req_managed_agents.model._stream import ToolCallFinished, ToolCallStarted, TurnEnded
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    Deny,
    Elicitation,
    ElicitationAnswer,
    Outcome,
    PendingDecision,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
)
from req_managed_agents.providers._base import Conversation
from req_managed_agents.tools._handler import Handler

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
        self.asker = Asker(handler, settings)
        #: Where questions left for a person wait (set by a session with ``decisions=``).
        self.deferral: Deferral | None = None

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
        if prompt is None and outcome is None:
            resumed = waiting_turn(self.deferral, conversation.info.session_id, resumed)
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
                try:
                    turn = self._answer(conversation, turn, run, stop)
                except TurnDeferred as waiting:  # nothing was sent: the turn waits
                    run.pending = waiting.pending
                    tokens = [decision.token for decision in waiting.pending]
                    return run.result("requires_action", {"type": "deferred", "tokens": tokens})
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
        info, asker = conversation.info, self.asker
        answers = TurnAnswers(self.deferral, info.session_id)
        elicited: list[tuple[Elicitation, ElicitationAnswer]] = []
        for elicitation in dict.fromkeys(turn.elicitations):
            asked = partial(asker.elicitation, elicitation, info, stop)
            answer = answers.ask("elicitation", elicitation, asked)
            if answer is not None:
                elicited.append((elicitation, cast("ElicitationAnswer", answer)))
        decisions: list[tuple[ToolUse, Decision]] = []
        for tool_use in _unique(turn.confirmations):
            decide = partial(asker.confirmation, tool_use, turn, info, run, stop)
            decision = answers.ask("confirmation", tool_use, decide)
            if decision is not None:
                decisions.append((tool_use, cast("Decision", decision)))
        results = self._execute(conversation, tool_uses, run, stop, answers) if tool_uses else []
        answers.results(tool_uses, results)
        answers.stop_if_waiting()
        _before_input(run)
        sent = conversation.send_tool_results(tool_uses, results, decisions, elicited)
        answers.settle()
        return sent

    def _execute(
        self,
        conversation: Conversation,
        tool_uses: Sequence[ToolUse],
        run: Run,
        stop: threading.Event,
        turn_answers: TurnAnswers,
    ) -> list[ToolResult]:
        """Results for ``tool_uses``: one the decisions store holds (or waits for) first,
        then one the ledger recorded; a call that started before and never finished is
        handled by the ``on_unfinished`` policy; the rest run now, each claimed on its own
        thread right before it starts."""
        session_id = conversation.info.session_id
        ledger, policy = self.ledger, self.settings.on_unfinished
        timeout = self.settings.tool_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        answers: dict[str, ToolResult] = {}
        new: list[ToolUse] = []
        takeovers: dict[str, LedgerEntry] = {}
        granted: dict[str, Decision] = {}
        for tool_use in tool_uses:
            found = ledger.entry(session_id, tool_use.id)
            decided = turn_answers.lookup(tool_use.id)
            if decided is not None:
                result = _decided(tool_use, decided, turn_answers)
                if result is not None:
                    answers[tool_use.id] = result
                    waits = isinstance(decided, PendingDecision)
                    if found is not None and not found.finished and not waits:
                        ledger.finish(session_id, tool_use.id, result, over=found)
                    continue
                granted[tool_use.id] = Allow()  # a person allowed it: it runs now
                if found is not None and not found.finished:
                    takeovers[tool_use.id] = found
                    new.append(tool_use)
                    continue
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
                confirm=local_confirmation(self.handler, self.settings.confirm, granted),
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


def _decided(tool_use: ToolUse, decided: Any, turn_answers: TurnAnswers) -> ToolResult | None:
    """A local call's answer from the decisions store: its result, its denial, or a
    placeholder while it waits; None when a person allowed it to run now."""
    if isinstance(decided, PendingDecision):
        turn_answers.wait_on(decided)
        return ToolResult(tool_use.id, "waits for a decision", is_error=True)
    if isinstance(decided, ToolResult):
        return replace(decided, tool_use_id=tool_use.id)
    if isinstance(decided, Deny):
        why = f": {decided.message}" if decided.message else ""
        return ToolResult(tool_use.id, f"the call was denied{why}; it was not run", is_error=True)
    if isinstance(decided, Allow):
        return None
    kind = type(decided).__name__
    return ToolResult(tool_use.id, f"a decision answered this call with {kind}", is_error=True)


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
