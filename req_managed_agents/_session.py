"""The drivers: :class:`Session` and :func:`run_to_completion`.

A run sends a prompt, then loops: whenever a turn ends in ``requires_action`` the local tools
run concurrently and their results go back (with the answers to any provider tools asking
permission), until the agent ends its turn, the provider stops, or a guard halts the run.
The loop runs on a background thread so that ``run(timeout=...)`` can stop waiting, tear the
in-flight stream down and return on time, whatever the network or a tool is doing. Each tool
call id is executed at most once per session: a provider asking again (after a reconnect, a
resume or a lost response) gets the recorded result.

``run_to_completion`` is to ``Session`` what ``requests.get`` is to ``requests.Session``: open
one, run once, close it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from dataclasses import replace
from typing import Any, Literal

from req_managed_agents import telemetry
from req_managed_agents._handler import (
    ConfirmationHandler,
    EventHandler,
    Handler,
    ToolContext,
    describe_exception,
)
from req_managed_agents._ledger import UNFINISHED_MESSAGE, ToolLedger, UnfinishedPolicy
from req_managed_agents._progress import Progress
from req_managed_agents._redact import get_logger
from req_managed_agents._run import DONE, Run
from req_managed_agents._stream import (
    ConfirmationAnswered,
    StreamItem,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
)
from req_managed_agents._tool_runner import ToolRunCancelled, run_tools
from req_managed_agents._tools import Tools
from req_managed_agents._vocabulary import (
    Allow,
    Decision,
    Deny,
    Outcome,
    SessionInfo,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.errors import (
    ConfigurationError,
    SessionError,
    SessionTimeoutError,
    UnfinishedToolCallError,
    UnresolvedRequiresActionError,
)
from req_managed_agents.providers._base import Aborted, Conversation, Provider

__all__ = [
    "DEFAULT_PROMPT",
    "REPROMPT",
    "ConfirmPolicy",
    "Session",
    "TurnGuard",
    "run_to_completion",
]

DEFAULT_PROMPT = "Begin."
# Sent when a run with a terminal tool ends its turn without having called it.
REPROMPT = (
    "You ended your turn without calling the `{tool}` tool. Call `{tool}` now with your "
    "final answer; the task is finished only when you do."
)
DEFAULT_MAX_REPROMPTS = 2
# After a timeout or close, how long to wait for the worker to notice the torn-down I/O.
_WORKER_JOIN_TIMEOUT = 1.0
# How long stopping waits for the provider to take the interrupt; it goes on in the
# background after that, so Ctrl-C never hangs on a slow network.
INTERRUPT_WAIT = 5.0

TurnGuard = Callable[[Usage, int, str], "str | None"]
"""``turn_guard(usage_so_far, turns, session_id)``: return a reason string to halt the run."""

ConfirmPolicy = Literal["raise", "allow", "deny"]
"""What to do with a provider tool asking permission when the handler has no
``handle_confirmation``: raise :class:`UnresolvedRequiresActionError`, allow it, or deny it."""

_CONFIRM_POLICIES = ("raise", "allow", "deny")
_DENIED_BY_POLICY = "denied by the session's confirm='deny' policy"

_log = get_logger(__name__)


class Session:
    """A provider session driven on a background thread.

    ::

        with Session(provider, handler=tools, agent_id=..., environment_id=...) as session:
            first = session.run("Summarise the report", timeout=600)
            follow_up = session.run("Now in French", timeout=600)
            for item in session.stream("And in German"):
                ...  # TextDelta, ToolCallStarted, ..., TurnEnded, then the SessionResult

    ``run`` = ``start`` + ``wait``; :meth:`stream` yields the run as it happens. Options:
    ``max_turns`` per run (a run that reaches it while the agent still wants tools ends
    ``terminated``), ``max_concurrency`` and ``tool_timeout`` for local tools, ``turn_guard``
    (see :data:`TurnGuard`), ``metadata`` (reaches handlers via :class:`SessionInfo`),
    ``telemetry_metadata``, ``on_text`` (called with each new piece of the agent's text as
    it is written; the rare rewrite of text already shown, by a retried AgentCore attempt,
    comes through as more text: :meth:`stream` reports it as a ``TextReset``), ``confirm``
    (see :data:`ConfirmPolicy`; a handler's ``handle_confirmation`` takes precedence),
    ``terminal_tool`` and ``max_reprompts`` (an ``end_turn`` that never called that tool is
    re-prompted that many times, then ends ``terminated`` with stop reason
    ``{"type": "no_terminal_tool"}``), ``outcome`` (an
    :class:`Outcome` or its fields as a mapping, Claude only: the first run works toward it
    instead of a prompt), ``interrupt_on_timeout``, ``verbose`` (show the text as it is
    written and a progress line updated in place: in a notebook, on a terminal's stderr),
    ``ledger`` (a :class:`ToolLedger` recording every tool call; over a shared store it
    keeps "each tool call runs once" across processes) and ``on_unfinished`` (see
    :data:`UnfinishedPolicy`);
    every other keyword goes to the provider
    (``agent_id``, ``session_id``, ``harness_arn``, ...).

    **Stopping.** When the caller stops waiting for a run that is still going - Ctrl-C (or a
    notebook's interrupt) inside :meth:`run`, :meth:`wait` or a :meth:`stream` loop,
    breaking out of or closing the stream, :meth:`cancel`, or leaving the ``with`` block
    (:meth:`close`) - the session stops the run everywhere: the running tools see
    ``ToolContext.cancelled`` set, the stream is closed, and the provider is asked to stop
    the remote turn (Claude: ``user.interrupt``; AgentCore: the invocation is closed and the
    runtime session stopped, which ends its conversation too). A run stopped this way
    reports ``terminated`` with stop reason ``{"type": "cancelled"}``, and the session is
    closed. The one exception is a ``timeout`` on :meth:`run` or :meth:`stream`: it closes
    the stream and stops waiting but leaves the remote turn alone, so the session can be
    resumed with ``session_id=``, unless ``interrupt_on_timeout=True``.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        handler: Handler,
        max_turns: int = 25,
        max_concurrency: int = 8,
        tool_timeout: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        turn_guard: TurnGuard | None = None,
        on_text: Callable[[str], None] | None = None,
        confirm: ConfirmPolicy = "raise",
        terminal_tool: str | None = None,
        max_reprompts: int = DEFAULT_MAX_REPROMPTS,
        outcome: Outcome | Mapping[str, Any] | None = None,
        interrupt_on_timeout: bool = False,
        verbose: bool = False,
        ledger: ToolLedger | None = None,
        on_unfinished: UnfinishedPolicy = "error",
        **connect: Any,
    ) -> None:
        if not isinstance(handler, Handler):
            raise ConfigurationError("handler must have a handle_tool_call(name, input, context)")
        if max_turns < 1:
            raise ConfigurationError("max_turns must be at least 1")
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        if tool_timeout is not None and tool_timeout <= 0:
            raise ConfigurationError("tool_timeout must be positive")
        if turn_guard is not None and not callable(turn_guard):
            raise ConfigurationError("turn_guard must be callable")
        if on_text is not None and not callable(on_text):
            raise ConfigurationError("on_text must be callable")
        if confirm not in _CONFIRM_POLICIES:
            raise ConfigurationError(f"confirm must be one of {', '.join(_CONFIRM_POLICIES)}")
        if max_reprompts < 0:
            raise ConfigurationError("max_reprompts must not be negative")
        if on_unfinished not in ("error", "rerun", "raise"):
            raise ConfigurationError("on_unfinished must be 'error', 'rerun' or 'raise'")
        _check_terminal_tool(terminal_tool, handler)
        self._provider = provider
        self._handler = handler
        self._event_handler = handler if isinstance(handler, EventHandler) else None
        self._confirmer = handler if isinstance(handler, ConfirmationHandler) else None
        self.max_turns = max_turns
        self.max_concurrency = max_concurrency
        self.tool_timeout = tool_timeout
        self.confirm = confirm
        self.terminal_tool = terminal_tool
        self.max_reprompts = max_reprompts
        self.interrupt_on_timeout = interrupt_on_timeout
        self.verbose = verbose
        self._outcome = _outcome(outcome, provider)
        self._turn_guard = turn_guard
        self._on_text = on_text
        self._metadata = dict(metadata or {})
        self._telemetry = {**self._metadata, **(telemetry_metadata or {})}
        self._connect = connect
        self._lock = threading.Lock()
        self._conversation: Conversation | None = None
        self._ledger = ledger if ledger is not None else ToolLedger()
        self.on_unfinished = on_unfinished
        self._run: Run | None = None
        self._future: Future[SessionResult] | None = None
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False

    def __repr__(self) -> str:
        return f"Session(provider={type(self._provider).__name__}, session_id={self.session_id!r})"

    @property
    def session_id(self) -> str | None:
        """The provider's session id, once the session exists."""
        conversation = self._conversation
        return conversation.info.session_id if conversation is not None else None

    @property
    def info(self) -> SessionInfo | None:
        """What handlers receive as ``SessionInfo``, once the session exists."""
        conversation = self._conversation
        return conversation.info if conversation is not None else None

    # -- public verbs -------------------------------------------------------------------

    def start(self, prompt: str | None = None) -> None:
        """Begin a run in the background; ``wait`` for its result."""
        self._start(prompt, None)

    def wait(self, timeout: float | None = None) -> SessionResult:
        """The running (or last) run's result; :class:`SessionTimeoutError` if it takes longer
        than ``timeout`` seconds (the run goes on; see :meth:`run` for a hard deadline).
        Ctrl-C while waiting stops the run (see the class docs)."""
        future = self._future
        if future is None:
            raise SessionError("nothing was started")
        # Wait first, then take the result: a run failing with its own TimeoutError (an idle
        # stream) must reach the caller as that error, not as this wait timing out.
        try:
            done, _ = wait_for_futures([future], timeout)
        except BaseException:
            if not future.done():
                self._shutdown(interrupt=True)
            raise
        if not done:
            raise SessionTimeoutError(
                f"the session did not finish within {timeout:g} s", session_id=self.session_id
            )
        return future.result()

    def run(self, prompt: str | None = None, timeout: float | None = None) -> SessionResult:
        """Run a prompt to completion. On timeout the stream is closed and the worker stopped
        before :class:`SessionTimeoutError` is raised, and the session is closed; the remote
        turn is interrupted only with ``interrupt_on_timeout``."""
        self.start(prompt)
        future = self._future
        try:
            return self.wait(timeout)
        except SessionTimeoutError:
            if future is not None and not future.done():
                self._shutdown(interrupt=self.interrupt_on_timeout)
            raise

    def stream(
        self, prompt: str | None = None, *, timeout: float | None = None
    ) -> Iterator[StreamItem]:
        """Run a prompt and yield what happens as it happens: :class:`TextDelta` (and
        :class:`TextReset`, :class:`MessageDone`), :class:`ToolCallStarted` and
        :class:`ToolCallFinished`, :class:`ConfirmationAnswered`, :class:`TurnEnded`, and
        last the :class:`SessionResult`. Each item comes once, though the provider's events
        may come more than once.

        The run starts when iteration does. Breaking out of the loop (or closing the
        generator, as a web server does when its client goes away) stops the run, remote
        turn included; ``timeout`` bounds the whole run as for :meth:`run`.
        """
        items: queue.Queue[Any] = queue.Queue()
        self._start(prompt, items)
        future = self._future
        assert future is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise SessionTimeoutError(
                        f"the session did not finish within {timeout:g} s",
                        session_id=self.session_id,
                    )
                try:
                    item = items.get(timeout=remaining)
                except queue.Empty:
                    continue
                if item is DONE:
                    break
                yield item
        except SessionTimeoutError:
            if not future.done():
                self._shutdown(interrupt=self.interrupt_on_timeout)
            raise
        except BaseException:  # Ctrl-C, or the consumer closing the generator
            if not future.done():
                self._shutdown(interrupt=True)
            raise
        yield future.result()

    def send_event(self, event: Mapping[str, Any]) -> None:
        """Post a raw provider event (for example a ``user.tool_confirmation``)."""
        conversation = self._conversation
        if conversation is None:
            raise SessionError("the session has not been opened yet; start a run first")
        conversation.send_event(event)

    def cancel(self) -> None:
        """Stop the current run (see the class docs): ``wait`` then returns a
        ``terminated`` result with stop reason ``{"type": "cancelled"}``. The session is
        closed afterwards."""
        self._shutdown(interrupt=True)

    def close(self) -> None:
        """Release the session's connections; a run still going is stopped first, remote
        turn included (see the class docs)."""
        self._shutdown(interrupt=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the worker -----------------------------------------------------------------------

    def _start(self, prompt: str | None, items: queue.Queue[Any] | None) -> None:
        with self._lock:
            if self._closed:
                raise SessionError("this session is closed")
            if self._future is not None and not self._future.done():
                raise SessionError("a run is already in progress; wait() for it first")
            outcome = self._outcome
            if outcome is not None and prompt is not None:
                raise ConfigurationError(
                    "this session's first run works toward its outcome: give no prompt (the "
                    "outcome's description says what to do)"
                )
            self._outcome = None  # defined by this run, once
            self._stop = threading.Event()
            future: Future[SessionResult] = Future()
            self._future = future
            run = Run(
                session_id=self.session_id,
                on_text=self._on_text,
                items=items,
                terminal_tool=self.terminal_tool,
                progress=Progress() if self.verbose else None,
            )
            self._run = run
            self._worker = threading.Thread(
                target=self._work,
                args=(prompt, outcome, run, future, self._stop),
                daemon=True,
                name="rma-session",
            )
            self._worker.start()

    def _shutdown(self, *, interrupt: bool) -> None:
        """Stop the run in flight (once: a run stopped on a timeout is not interrupted
        later by ``close``) and release the conversation."""
        with self._lock:
            self._closed = True
            conversation, worker = self._conversation, self._worker
            running = self._future is not None and not self._future.done()
            first = not self._stop.is_set()
            self._stop.set()
        if conversation is not None:
            # Abort first so the worker reports the cancellation, not the turn the interrupt
            # ends, and wait for it: a post already on its way lands before the interrupt,
            # which then stops the provider from working on (and billing) it.
            conversation.abort()
        if worker is not None and worker is not threading.current_thread():
            worker.join(_WORKER_JOIN_TIMEOUT)
        if conversation is not None:
            if interrupt and running and first:
                _bounded(conversation.interrupt, INTERRUPT_WAIT)
            conversation.close()

    def _work(
        self,
        prompt: str | None,
        outcome: Outcome | None,
        run: Run,
        future: Future[SessionResult],
        stop: threading.Event,
    ) -> None:
        started = time.monotonic()
        try:
            result = self._drive(prompt, outcome, run, stop)
        except BaseException as exc:
            # Stopped from outside while a call was in flight: whatever that call raised on
            # the torn-down connection, the run was cancelled.
            cancelled = isinstance(exc, (Aborted, ToolRunCancelled)) or stop.is_set()
            if not cancelled:
                self._fail(exc, run, started, future)
                return
            result = run.result("terminated", {"type": "cancelled"})
        usage = result.usage
        telemetry.emit(
            "session.stop",
            {
                "duration": time.monotonic() - started,
                "turns": result.turns,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            },
            self._meta(run, terminal=result.terminal),
        )
        future.set_result(result)
        run.finish(result)

    def _fail(
        self, exc: BaseException, run: Run, started: float, future: Future[SessionResult]
    ) -> None:
        telemetry.emit(
            "session.stop",
            {"duration": time.monotonic() - started},
            self._meta(run, error=describe_exception(exc), error_type=type(exc).__name__),
        )
        future.set_exception(exc)
        run.finish(None)

    def _meta(self, run: Run, **extra: Any) -> dict[str, Any]:
        conversation = self._conversation
        library = {
            "session_id": run.session_id,
            "provider": conversation.info.provider if conversation else self._provider.name,
            **extra,
        }
        return telemetry.merge_metadata(self._telemetry, library)

    def _open(self, run: Run) -> tuple[Conversation, TurnResult | None]:
        """The session's conversation, opened on the first run; the resumed turn if any."""
        if self._conversation is not None:
            return self._conversation, None
        conversation = self._provider.open_conversation(
            self._connect,
            on_event=self._deliver,
            on_text=self._text,
            handler_tools=self._handler.schemas() if isinstance(self._handler, Tools) else None,
            metadata=self._metadata,
            telemetry_metadata=self._telemetry,
        )
        with self._lock:
            self._conversation = conversation
            closed = self._closed
        if closed:
            conversation.close()
            raise Aborted
        run.session_id = conversation.info.session_id
        return conversation, conversation.resume()

    def _deliver(self, event: Mapping[str, Any]) -> None:
        """Every raw event: into the run's record, then to ``handle_event`` (whose errors are
        logged, never allowed to break the session)."""
        run = self._run
        if run is not None:
            run.live.append(event)
        if self._event_handler is None:
            return
        conversation = self._conversation
        info = (
            conversation.info if conversation is not None else SessionInfo("", self._provider.name)
        )
        try:
            self._event_handler.handle_event(event, info)
        except Exception as exc:
            _log.warning("handle_event raised %s; continuing", describe_exception(exc))

    def _text(self, message: str, text: str, final: bool) -> None:
        run = self._run
        if run is not None:
            run.tracker.update(message, text, final)

    def _drive(
        self, prompt: str | None, outcome: Outcome | None, run: Run, stop: threading.Event
    ) -> SessionResult:
        conversation, turn = self._open(run)
        telemetry.emit("session.start", {"system_time": time.time()}, self._meta(run))
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
                self._record(run, turn)
        else:
            turn = _send_input(conversation, prompt or DEFAULT_PROMPT, outcome)
            prompt = outcome = None
            self._record(run, turn)
        while True:
            pending = prompt is not None or outcome is not None
            more_work = turn.terminal == "requires_action" or (
                pending and turn.terminal == "end_turn"
            )
            if not more_work and not self._owes_terminal_call(run, turn):
                return run.result(turn.terminal, turn.stop_reason)
            if not more_work and run.reprompts >= self.max_reprompts:
                return run.result(
                    "terminated", {"type": "no_terminal_tool", "terminal_tool": self.terminal_tool}
                )
            # Guards stand between turns: a finished run is reported as it finished.
            halt = self._check_guard(run)
            if halt is not None:
                return run.result("terminated", {"type": "halted", "reason": halt})
            if len(run.turn_usage) >= self.max_turns:
                return run.result(
                    "terminated", {"type": "max_turns_reached", "max_turns": self.max_turns}
                )
            if turn.terminal == "requires_action":
                turn = self._answer(conversation, turn, run, stop)
            elif pending:
                turn = _send_input(conversation, prompt, outcome)
                prompt = outcome = None
            else:
                run.reprompts += 1
                turn = conversation.send_prompt(REPROMPT.format(tool=self.terminal_tool))
            self._record(run, turn)

    def _owes_terminal_call(self, run: Run, turn: TurnResult) -> bool:
        """Whether the agent ended a turn of this run without the call the session requires
        (a reattached run that asked nothing owes nothing)."""
        return (
            self.terminal_tool is not None
            and bool(run.turn_usage)
            and turn.terminal == "end_turn"
            and not run.called_terminal_tool()
        )

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
        elif self.confirm == "allow":
            decision = Allow()
        elif self.confirm == "deny":
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

    def _record(self, run: Run, turn: TurnResult) -> None:
        run.take(turn)
        run.turn_usage.append(turn.usage)
        telemetry.emit(
            "session.turn",
            {
                "input_tokens": turn.usage.input_tokens,
                "output_tokens": turn.usage.output_tokens,
                "tool_uses": len(turn.tool_uses),
            },
            self._meta(run, turn=len(run.turn_usage), terminal=turn.terminal),
        )
        run.emit(TurnEnded(turn, len(run.turn_usage)))

    def _check_guard(self, run: Run) -> str | None:
        if self._turn_guard is None or not run.turn_usage:
            return None
        verdict = self._turn_guard(run.usage, len(run.turn_usage), run.session_id or "")
        return str(verdict) if verdict else None

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
        answers: dict[str, ToolResult] = {}
        new: list[ToolUse] = []
        for tool_use in tool_uses:
            found = self._ledger.claim(session_id, tool_use.id)
            if found is None:
                new.append(tool_use)
            elif found.result is not None:
                answers[tool_use.id] = replace(found.result, tool_use_id=tool_use.id)
            elif self.on_unfinished == "rerun":
                self._ledger.restart(session_id, tool_use.id)
                new.append(tool_use)
            elif self.on_unfinished == "raise":
                raise UnfinishedToolCallError(tool_use, session_id=session_id)
            else:
                answers[tool_use.id] = ToolResult(tool_use.id, UNFINISHED_MESSAGE, is_error=True)
                self._ledger.finish(session_id, tool_use.id, answers[tool_use.id])

        def finished(tool_use: ToolUse, result: ToolResult) -> None:
            self._ledger.finish(session_id, tool_use.id, result)
            run.emit(ToolCallFinished(tool_use, result))

        if new:
            results = run_tools(
                self._handler,
                new,
                conversation.info,
                max_concurrency=self.max_concurrency,
                tool_timeout=self.tool_timeout,
                cancelled=stop,
                telemetry_metadata=self._meta(run),
                on_start=lambda use: run.emit(ToolCallStarted(use)),
                on_finish=finished,
            )
            answers.update((use.id, result) for use, result in zip(new, results))
            run.tool_uses.extend(new)
            run.tool_results.extend(results)
        return [answers[tool_use.id] for tool_use in tool_uses]


def _check_terminal_tool(name: str | None, handler: Handler) -> None:
    if name is None:
        return
    if not isinstance(name, str) or not name:
        raise ConfigurationError("terminal_tool must be a tool name")
    if isinstance(handler, Tools) and name not in handler:
        raise ConfigurationError(f"terminal_tool {name!r} is not one of the handler's tools")


def _outcome(outcome: Outcome | Mapping[str, Any] | None, provider: Provider) -> Outcome | None:
    if outcome is None:
        return None
    if not getattr(provider, "supports_outcomes", False):
        raise ConfigurationError(
            f"{getattr(provider, 'name', 'this provider')} has no outcomes; they are a "
            "Claude Managed Agents feature"
        )
    if isinstance(outcome, Outcome):
        return outcome
    if isinstance(outcome, Mapping):
        try:
            return Outcome(**outcome)
        except TypeError as exc:
            raise ConfigurationError(f"outcome: {exc}") from None
    raise ConfigurationError("outcome must be an Outcome or a mapping of its fields")


def _send_input(
    conversation: Conversation, prompt: str | None, outcome: Outcome | None
) -> TurnResult:
    """Start a turn: work toward ``outcome`` if there is one, else answer ``prompt``."""
    if outcome is not None:
        return conversation.define_outcome(outcome)
    return conversation.send_prompt(prompt or DEFAULT_PROMPT)


def _bounded(call: Callable[[], None], seconds: float) -> None:
    """Run ``call`` on a daemon thread and wait for it at most ``seconds``."""
    thread = threading.Thread(target=call, name="rma-interrupt", daemon=True)
    thread.start()
    thread.join(seconds)


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


def run_to_completion(
    provider: Provider,
    prompt: str | None = None,
    *,
    handler: Handler,
    max_turns: int = 25,
    timeout: float | None = None,
    max_concurrency: int = 8,
    tool_timeout: float | None = None,
    metadata: Mapping[str, Any] | None = None,
    telemetry_metadata: Mapping[str, Any] | None = None,
    turn_guard: TurnGuard | None = None,
    on_text: Callable[[str], None] | None = None,
    confirm: ConfirmPolicy = "raise",
    terminal_tool: str | None = None,
    max_reprompts: int = DEFAULT_MAX_REPROMPTS,
    outcome: Outcome | Mapping[str, Any] | None = None,
    interrupt_on_timeout: bool = False,
    verbose: bool = False,
    ledger: ToolLedger | None = None,
    on_unfinished: UnfinishedPolicy = "error",
    **connect: Any,
) -> SessionResult:
    """Open a session, run ``prompt`` until the agent is done, close the session.

    Blocking; the tools of one turn run concurrently; ``on_text`` sees the agent's text as it
    is written (``on_text=print`` in a script or notebook). ``connect`` is
    provider-specific: Claude takes ``agent_id``/``agent=``, ``environment_id``/
    ``environment=`` or ``session_id`` (resume); AgentCore takes ``harness_arn``/
    ``harness=``, ``runtime_session_id`` and its per-invocation limits. Every option, and
    what stops a run, is described on :class:`Session`.
    """
    with Session(
        provider,
        handler=handler,
        max_turns=max_turns,
        max_concurrency=max_concurrency,
        tool_timeout=tool_timeout,
        metadata=metadata,
        telemetry_metadata=telemetry_metadata,
        turn_guard=turn_guard,
        on_text=on_text,
        confirm=confirm,
        terminal_tool=terminal_tool,
        max_reprompts=max_reprompts,
        outcome=outcome,
        interrupt_on_timeout=interrupt_on_timeout,
        verbose=verbose,
        ledger=ledger,
        on_unfinished=on_unfinished,
        **connect,
    ) as session:
        return session.run(prompt, timeout=timeout)
