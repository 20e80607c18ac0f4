"""The drivers: :class:`Session` and :func:`run_to_completion`.

A run sends a prompt, then loops: whenever a turn ends in ``requires_action`` the local tools
run concurrently and their results go back, until the agent ends its turn, the provider stops,
or a guard halts the run. The loop runs on a background thread so that ``run(timeout=...)``
can stop waiting, tear the in-flight stream down and return on time, whatever the network or
a tool is doing. Each tool call id is executed at most once per session: a provider asking
again (after a reconnect, a resume or a lost response) gets the recorded result.

``run_to_completion`` is to ``Session`` what ``requests.get`` is to ``requests.Session``: open
one, run once, close it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents import telemetry
from req_managed_agents._handler import EventHandler, Handler, describe_exception
from req_managed_agents._redact import get_logger
from req_managed_agents._tool_runner import ToolRunCancelled, run_tools
from req_managed_agents._vocabulary import (
    SessionInfo,
    SessionResult,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.errors import (
    ConfigurationError,
    SessionError,
    SessionTimeoutError,
    UnresolvedRequiresActionError,
)
from req_managed_agents.providers._base import Aborted, Conversation, Provider

__all__ = ["DEFAULT_PROMPT", "Session", "TurnGuard", "run_to_completion"]

DEFAULT_PROMPT = "Begin."
# After a timeout or close, how long to wait for the worker to notice the torn-down I/O.
_WORKER_JOIN_TIMEOUT = 1.0

TurnGuard = Callable[[Usage, int, str], "str | None"]
"""``turn_guard(usage_so_far, turns, session_id)``: return a reason string to halt the run."""

_log = get_logger(__name__)


@dataclass
class _Run:
    """What one run (one prompt and the turns it causes) has gathered so far."""

    # Events of finished turns (each turn's authoritative record), and those delivered live
    # since the last turn ended; a cancelled run reports both.
    events: list[Mapping[str, Any]] = field(default_factory=list)
    live: list[Mapping[str, Any]] = field(default_factory=list)
    turn_usage: list[Usage] = field(default_factory=list)
    tool_uses: list[ToolUse] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    last_turn: TurnResult | None = None
    session_id: str | None = None

    @property
    def usage(self) -> Usage:
        return sum(self.turn_usage, Usage())

    def take_events(self, turn: TurnResult) -> None:
        """A finished turn's events replace what was seen live (which may include events of
        an attempt the provider then retried)."""
        self.events.extend(turn.events)
        self.live.clear()

    def result(self, terminal: Terminal, stop_reason: Any) -> SessionResult:
        return SessionResult(
            terminal=terminal,
            text=self.last_turn.text if self.last_turn is not None else "",
            usage=self.usage,
            turns=len(self.turn_usage),
            turn_usage=tuple(self.turn_usage),
            session_id=self.session_id,
            stop_reason=stop_reason,
            events=(*self.events, *self.live),
            tool_uses=tuple(self.tool_uses),
            tool_results=tuple(self.tool_results),
        )


class Session:
    """A provider session driven on a background thread.

    ::

        with Session(provider, handler=tools, agent_id=..., environment_id=...) as session:
            first = session.run("Summarise the report", timeout=600)
            follow_up = session.run("Now in French", timeout=600)

    ``run`` = ``start`` + ``wait``; on timeout it closes the session's stream and stops the
    worker before raising :class:`SessionTimeoutError` (the provider-side session is left
    as it is, so it can be resumed with ``session_id=``). ``cancel`` also asks the provider
    to stop the running turn. Options: ``max_turns`` per run (a run that reaches it while the
    agent still wants tools ends ``terminated``), ``max_concurrency`` and ``tool_timeout`` for
    local tools, ``turn_guard`` (see :data:`TurnGuard`), ``metadata`` (reaches handlers via
    :class:`SessionInfo`), ``telemetry_metadata``; every other keyword goes to the provider
    (``agent_id``, ``session_id``, ``harness_arn``, ...).
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
        self._provider = provider
        self._handler = handler
        self._event_handler = handler if isinstance(handler, EventHandler) else None
        self.max_turns = max_turns
        self.max_concurrency = max_concurrency
        self.tool_timeout = tool_timeout
        self._turn_guard = turn_guard
        self._metadata = dict(metadata or {})
        self._telemetry = {**self._metadata, **(telemetry_metadata or {})}
        self._connect = connect
        self._lock = threading.Lock()
        self._conversation: Conversation | None = None
        self._results: dict[str, ToolResult] = {}
        self._run: _Run | None = None
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
        with self._lock:
            if self._closed:
                raise SessionError("this session is closed")
            if self._future is not None and not self._future.done():
                raise SessionError("a run is already in progress; wait() for it first")
            self._stop = threading.Event()
            future: Future[SessionResult] = Future()
            self._future = future
            self._run = _Run(session_id=self.session_id)
            self._worker = threading.Thread(
                target=self._work,
                args=(prompt, self._run, future, self._stop),
                daemon=True,
                name="rma-session",
            )
            self._worker.start()

    def wait(self, timeout: float | None = None) -> SessionResult:
        """The running (or last) run's result; :class:`SessionTimeoutError` if it takes longer
        than ``timeout`` seconds (the run goes on; see :meth:`run` for a hard deadline)."""
        future = self._future
        if future is None:
            raise SessionError("nothing was started")
        # Wait first, then take the result: a run failing with its own TimeoutError (an idle
        # stream) must reach the caller as that error, not as this wait timing out.
        done, _ = wait_for_futures([future], timeout)
        if not done:
            raise SessionTimeoutError(
                f"the session did not finish within {timeout:g} s", session_id=self.session_id
            )
        return future.result()

    def run(self, prompt: str | None = None, timeout: float | None = None) -> SessionResult:
        """Run a prompt to completion. On timeout the stream is closed and the worker stopped
        before :class:`SessionTimeoutError` is raised; the session is closed afterwards.
        The same happens when the wait itself is cut short (Ctrl-C in a script or notebook):
        the worker and the tools are told to stop before the exception goes on."""
        self.start(prompt)
        future = self._future
        try:
            return self.wait(timeout)
        except BaseException:
            if future is not None and not future.done():
                self._shutdown(interrupt=False)
            raise

    def send_event(self, event: Mapping[str, Any]) -> None:
        """Post a raw provider event (for example a ``user.tool_confirmation``)."""
        conversation = self._conversation
        if conversation is None:
            raise SessionError("the session has not been opened yet; start a run first")
        conversation.send_event(event)

    def cancel(self) -> None:
        """Stop the current run: ask the provider to stop the turn, stop waiting for tools and
        the stream. ``wait`` then returns a ``terminated`` result with stop reason
        ``{"type": "cancelled"}``. The session is closed afterwards."""
        self._shutdown(interrupt=True)

    def close(self) -> None:
        """Stop any run (without interrupting the provider) and release connections."""
        self._shutdown(interrupt=False)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the worker -----------------------------------------------------------------------

    def _shutdown(self, *, interrupt: bool) -> None:
        with self._lock:
            self._closed = True
            conversation, worker = self._conversation, self._worker
            running = self._future is not None and not self._future.done()
        self._stop.set()
        if conversation is not None:
            # Abort first so the worker reports the cancellation, not the turn the interrupt
            # ends; the interrupt then stops the provider from working on (and billing) it.
            conversation.abort()
            if interrupt and running:
                conversation.interrupt()
        if worker is not None and worker is not threading.current_thread():
            worker.join(_WORKER_JOIN_TIMEOUT)
        if conversation is not None:
            conversation.close()

    def _work(
        self, prompt: str | None, run: _Run, future: Future[SessionResult], stop: threading.Event
    ) -> None:
        started = time.monotonic()
        try:
            result = self._drive(prompt, run, stop)
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

    def _fail(
        self, exc: BaseException, run: _Run, started: float, future: Future[SessionResult]
    ) -> None:
        telemetry.emit(
            "session.stop",
            {"duration": time.monotonic() - started},
            self._meta(run, error=describe_exception(exc), error_type=type(exc).__name__),
        )
        future.set_exception(exc)

    def _meta(self, run: _Run, **extra: Any) -> dict[str, Any]:
        conversation = self._conversation
        library = {
            "session_id": run.session_id,
            "provider": conversation.info.provider if conversation else self._provider.name,
            **extra,
        }
        return telemetry.merge_metadata(self._telemetry, library)

    def _open(self, run: _Run) -> tuple[Conversation, TurnResult | None]:
        """The session's conversation, opened on the first run; the resumed turn if any."""
        if self._conversation is not None:
            return self._conversation, None
        conversation = self._provider.open_conversation(
            self._connect,
            on_event=self._deliver,
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

    def _drive(self, prompt: str | None, run: _Run, stop: threading.Event) -> SessionResult:
        conversation, turn = self._open(run)
        telemetry.emit("session.start", {"system_time": time.time()}, self._meta(run))
        if turn is not None:
            run.last_turn = turn  # the resumed state: history, not a turn of this run
            run.take_events(turn)
            # A turn that gave up (retries exhausted, a refusal) leaves the session open.
            if (
                prompt is not None
                and turn.terminal == "terminated"
                and conversation.accepts_input()
            ):
                turn = conversation.send_prompt(prompt)
                prompt = None
                self._record(run, turn)
        else:
            turn = conversation.send_prompt(prompt or DEFAULT_PROMPT)
            prompt = None
            self._record(run, turn)
        while True:
            more_work = turn.terminal == "requires_action" or (
                prompt is not None and turn.terminal == "end_turn"
            )
            if not more_work:
                return run.result(turn.terminal, turn.stop_reason)
            # Guards stand between turns: a finished run is reported as it finished.
            halt = self._check_guard(run)
            if halt is not None:
                return run.result("terminated", {"type": "halted", "reason": halt})
            if turn.terminal == "requires_action":
                if len(run.turn_usage) >= self.max_turns:
                    return run.result(
                        "terminated", {"type": "max_turns_reached", "max_turns": self.max_turns}
                    )
                tool_uses = _unique(turn.tool_uses or conversation.unanswered_tool_uses())
                if not tool_uses:
                    raise UnresolvedRequiresActionError(turn.stop_reason, session_id=run.session_id)
                results = self._execute(conversation, tool_uses, run, stop)
                turn = conversation.send_tool_results(tool_uses, results)
            else:
                turn = conversation.send_prompt(prompt or DEFAULT_PROMPT)
                prompt = None
            self._record(run, turn)

    def _record(self, run: _Run, turn: TurnResult) -> None:
        run.last_turn = turn
        run.take_events(turn)
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

    def _check_guard(self, run: _Run) -> str | None:
        if self._turn_guard is None or not run.turn_usage:
            return None
        verdict = self._turn_guard(run.usage, len(run.turn_usage), run.session_id or "")
        return str(verdict) if verdict else None

    def _execute(
        self,
        conversation: Conversation,
        tool_uses: Sequence[ToolUse],
        run: _Run,
        stop: threading.Event,
    ) -> list[ToolResult]:
        """Results for ``tool_uses``: new calls run now, calls seen before reuse their result."""
        new = [tool_use for tool_use in tool_uses if tool_use.id not in self._results]
        if new:
            results = run_tools(
                self._handler,
                new,
                conversation.info,
                max_concurrency=self.max_concurrency,
                tool_timeout=self.tool_timeout,
                cancelled=stop,
                telemetry_metadata=self._meta(run),
            )
            for tool_use, result in zip(new, results):
                self._results[tool_use.id] = result
            run.tool_uses.extend(new)
            run.tool_results.extend(results)
        return [self._results[tool_use.id] for tool_use in tool_uses]


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
    **connect: Any,
) -> SessionResult:
    """Open a session, run ``prompt`` until the agent is done, close the session.

    Blocking; the tools of one turn run concurrently. ``connect`` is provider-specific:
    Claude takes ``agent_id``/``agent=``, ``environment_id``/``environment=`` or
    ``session_id`` (resume); AgentCore takes ``harness_arn``/``harness=``,
    ``runtime_session_id`` and its per-invocation limits. See :class:`Session`.
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
        **connect,
    ) as session:
        return session.run(prompt, timeout=timeout)
