"""The drivers' front: :class:`Session` (``run_to_completion`` in ``_api`` wraps it).

A session owns one provider conversation and runs each run's turn loop (``_loop``) on a
background thread, so that ``run(timeout=...)`` can stop waiting and return on time, whatever
the network or a tool is doing; and it owns the one stopping rule (see :class:`Session`).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from dataclasses import replace
from typing import TYPE_CHECKING, Any, overload

from req_managed_agents import telemetry
from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._decision_book import book_for
from req_managed_agents.drivers._deferral import Deferral
from req_managed_agents.drivers._keyed import KeyedRun
from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.drivers._loop import DEFAULT_PROMPT, TurnLoop
from req_managed_agents.drivers._options import SessionOptions, Settings, split_options
from req_managed_agents.drivers._run import DONE, Run, RunText
from req_managed_agents.drivers._tool_runner import ToolRunCancelled, wait_at_most
from req_managed_agents.errors import ConfigurationError, SessionError, SessionTimeoutError
from req_managed_agents.model._stream import StreamItem, run_view
from req_managed_agents.model._vocabulary import Outcome, SessionInfo, SessionResult, TurnResult
from req_managed_agents.providers._base import Aborted, Conversation, CreateToken, Opening, Provider
from req_managed_agents.tools._handler import EventHandler, Handler, describe_exception
from req_managed_agents.tools._registry import Tools

__all__ = ["INTERRUPT_WAIT", "Session"]

# After a timeout or close, how long to wait for the worker to notice the torn-down I/O.
_WORKER_JOIN_TIMEOUT = 1.0
# How long stopping waits for the interrupt to be taken (it goes on in the background).
INTERRUPT_WAIT = 5.0

_log = get_logger(__name__)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from req_managed_agents.drivers._options import AgentCoreSessionOptions as _AgentCore
    from req_managed_agents.drivers._options import ClaudeBedrockSessionOptions as _Bedrock
    from req_managed_agents.drivers._options import ClaudeSessionOptions as _Claude
    from req_managed_agents.drivers._options import GeminiSessionOptions as _Gemini
    from req_managed_agents.drivers._options import OpenAISessionOptions as _OpenAI
    from req_managed_agents.providers import BedrockAgentCore, ClaudeManagedAgents, OpenAIAgents
    from req_managed_agents.providers import ClaudeManagedAgentsBedrock as _OnBedrock
    from req_managed_agents.providers import GeminiManagedAgents as _Gemini_


class Session:
    """A provider session driven on a background thread.

    ::

        with Session(provider, handler=tools, agent_id=..., environment_id=...) as session:
            first = session.run("Summarise the report", timeout=600)
            follow_up = session.run("Now in French", timeout=600)
            for item in session.stream("And in German"):
                ...  # TextDelta, ToolCallStarted, ..., TurnEnded, then the SessionResult

    ``run`` = ``start`` + ``wait``; :meth:`stream` yields the run as it happens. The
    drivers' own options are described on :class:`SessionOptions` (``max_turns``,
    ``tool_timeout``, ``confirm``, ``ledger``, ``idempotency_key``, ...); every other
    keyword goes to the provider (``agent_id``, ``session_id``, ``harness_arn``, ...).

    **Stopping.** Ctrl-C inside :meth:`run`, :meth:`wait` or a :meth:`stream` loop, closing
    the stream, :meth:`cancel` or leaving the ``with`` block stops the run everywhere: the
    running tools see ``ToolContext.cancelled``, the stream is closed and the provider is
    asked to stop the remote turn (Claude: ``user.interrupt``, OpenAI: a cancel, each ordered
    after any input on its way; AgentCore: the invocation is closed and the runtime session
    stopped). The run reports ``terminated`` with stop reason ``{"type": "cancelled"}`` at
    once, and the session is closed. A ``timeout`` on :meth:`run` or :meth:`stream` only
    stops waiting: the remote turn goes on (resume with ``session_id=``) unless
    ``interrupt_on_timeout``; :meth:`detach` lets go of the session without stopping it.
    """

    @overload
    def __init__(
        self, provider: _OnBedrock, *, handler: Handler, **options: Unpack[_Bedrock]
    ) -> None: ...
    @overload
    def __init__(
        self, provider: ClaudeManagedAgents, *, handler: Handler, **options: Unpack[_Claude]
    ) -> None: ...
    @overload
    def __init__(
        self, provider: BedrockAgentCore, *, handler: Handler, **options: Unpack[_AgentCore]
    ) -> None: ...
    @overload
    def __init__(
        self, provider: OpenAIAgents, *, handler: Handler, **options: Unpack[_OpenAI]
    ) -> None: ...
    @overload
    def __init__(
        self, provider: _Gemini_, *, handler: Handler, **options: Unpack[_Gemini]
    ) -> None: ...
    @overload
    def __init__(
        self,
        provider: Provider,
        *,
        handler: Handler,
        connect: Mapping[str, Any] | None = None,
        **options: Unpack[SessionOptions],
    ) -> None: ...
    def __init__(
        self,
        provider: Provider,
        *,
        handler: Handler,
        connect: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self._settings, self._connect = split_options(provider, handler, options, connect)
        settings = self._settings
        self._provider = provider
        self._handler = handler
        self._event_handler = handler if isinstance(handler, EventHandler) else None
        self._outcome = settings.outcome
        self._ledger = settings.ledger if settings.ledger is not None else ToolLedger()
        self._loop = TurnLoop(settings, handler, self._ledger, self._meta)
        if settings.decisions is not None:
            runtime = str(getattr(provider, "name", type(provider).__name__))
            kept = {k: v for k, v in self._connect.items() if k != "session_id"}
            self._loop.deferral = Deferral(book_for(settings.decisions), runtime, kept)
        self._lock = threading.Lock()
        self._conversation: Conversation | None = None
        self._run: Run | None = None
        self._future: Future[SessionResult] | None = None
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._stopped_as: dict[str, Any] = {"type": "cancelled"}  # the stop reason of a stop
        self._settling = threading.Lock()
        self._closed = False

    @property
    def settings(self) -> Settings:
        """The session's validated driver options (``max_turns``, ``confirm``, ...)."""
        return self._settings

    def __repr__(self) -> str:
        return f"Session(provider={type(self._provider).__name__}, session_id={self.session_id!r})"

    @property
    def session_id(self) -> str | None:
        """The provider's session id, once the session exists."""
        info = self.info
        return info.session_id if info is not None else None

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
        """The running (or last) run's result; :class:`SessionTimeoutError` after ``timeout``
        seconds (the run goes on: :meth:`run` has a hard deadline). Ctrl-C stops the run."""
        future = self._future
        if future is None:
            raise SessionError("nothing was started")
        # Wait, then take the result: a run's own TimeoutError must reach the caller as it is.
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
                self._shutdown(interrupt=self._settings.interrupt_on_timeout)
            raise

    def stream(
        self, prompt: str | None = None, *, timeout: float | None = None
    ) -> Iterator[StreamItem]:
        """Run a prompt and yield what happens as it happens: :class:`TextDelta` (and
        :class:`TextReset`, :class:`MessageDone`), :class:`ToolCallStarted`,
        :class:`ToolCallProgress` (a running tool's report) and :class:`ToolCallFinished`,
        :class:`ConfirmationAnswered`, :class:`HookEvent` (a harness hook that ran, before
        its turn's end), :class:`TurnEnded`, and last the :class:`SessionResult`.
        Each item comes once, though provider events may repeat.

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
                self._shutdown(interrupt=self._settings.interrupt_on_timeout)
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
        """Stop the current run (see the class docs): ``wait`` then returns a ``terminated``
        result with stop reason ``{"type": "cancelled"}``. The session is closed after."""
        self._shutdown(interrupt=True)

    def close(self) -> None:
        """Release the session's connections; a run still going is stopped first, remote
        turn included (see the class docs)."""
        self._shutdown(interrupt=True)

    def detach(self) -> None:
        """Let go of the session, leaving the remote turn running for another process to take
        up with ``session_id=`` (a restarted worker): as :meth:`close`, running tools see
        ``ToolContext.cancelled`` and the stream is closed, but nothing remote is stopped. A
        run in progress ends ``terminated`` with stop reason ``{"type": "detached"}``."""
        self._shutdown(interrupt=False, reason="detached")

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
                on_text=self._settings.text_sink,
                items=items,
                terminal_tool=self._settings.terminal_tool,
                progress=run_view() if self._settings.verbose else None,
            )
            self._run = run
            # In the caller's context: the run's telemetry and spans join the caller's trace.
            self._worker = threading.Thread(
                target=contextvars.copy_context().run,
                args=(self._work, prompt, outcome, run, future, self._stop),
                daemon=True,
                name="rma-session",
            )
            self._worker.start()

    def _shutdown(self, *, interrupt: bool, reason: str = "cancelled") -> None:
        """Stop the run in flight (once: a run stopped on a timeout is not interrupted
        later by ``close``) and release the conversation; ``reason`` is the stop reason.

        The order matters. The conversation's I/O is cut first, so the worker reports the
        stop rather than the turn the interrupt ends; the worker gets a moment to notice,
        and if it is stuck in a request that cannot be cut (a post on its way) the run is
        settled without it. Then the provider is asked to stop the remote turn, ordered
        after any input still in flight, so the interrupt reaches the turn it starts.
        """
        with self._lock:
            self._closed = True
            conversation, worker = self._conversation, self._worker
            run, future = self._run, self._future
            running = future is not None and not future.done()
            first = not self._stop.is_set()
            self._stopped_as = {"type": reason} if first else self._stopped_as
            self._stop.set()
        if conversation is not None:
            conversation.abort()
        if worker is not None and worker is not threading.current_thread():
            worker.join(_WORKER_JOIN_TIMEOUT)
        if running and run is not None and future is not None and not future.done():
            self._settle(run, future, run.result("terminated", dict(self._stopped_as)))
        if conversation is not None:
            if interrupt and running and first:
                wait_at_most(conversation.interrupt, INTERRUPT_WAIT, name="rma-interrupt")
            conversation.close()

    def _work(
        self,
        prompt: str | None,
        outcome: Outcome | None,
        run: Run,
        future: Future[SessionResult],
        stop: threading.Event,
    ) -> None:
        try:
            result = self._drive(prompt, outcome, run, stop)
        except BaseException as exc:
            # Stopped from outside mid-call: whatever that call raised, the run was stopped.
            cancelled = isinstance(exc, (Aborted, ToolRunCancelled)) or stop.is_set()
            if not cancelled:
                self._settle(run, future, exc)
                return
            result = run.result("terminated", dict(self._stopped_as))
        self._settle(run, future, result)

    def _settle(
        self, run: Run, future: Future[SessionResult], outcome: SessionResult | BaseException
    ) -> None:
        """Set the run's result (or error) once - by the worker or a stop - and report it."""
        with self._settling:
            if future.done():
                return
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        if isinstance(outcome, BaseException):
            tags = {"error": describe_exception(outcome), "error_type": type(outcome).__name__}
            telemetry.emit("session.stop", run.stop_measurements(None), self._meta(run, **tags))
            run.finish(None)
        else:
            measured = run.stop_measurements(outcome)
            telemetry.emit("session.stop", measured, self._meta(run, terminal=outcome.terminal))
            run.finish(outcome)

    def _meta(self, run: Run, **extra: Any) -> dict[str, Any]:
        conversation = self._conversation
        library = {
            "session_id": run.session_id,
            "provider": conversation.info.provider if conversation else self._provider.name,
            **extra,
        }
        return telemetry.merge_metadata(self._settings.telemetry, library)

    def _open(
        self, run: Run, stop: threading.Event, prompt: str | None
    ) -> tuple[Conversation, TurnResult | None, str | None, KeyedRun | None]:
        """The session's conversation, opened on the first run: with the turn to go on from
        (a reattached session's), the prompt still to send, and the run's key binding."""
        if self._conversation is not None:
            return self._conversation, None, prompt, None
        opening = Opening(
            self._deliver,
            self._settings.metadata,
            self._settings.telemetry,
            on_text=RunText(lambda: self._run),
            handler_tools=self._handler.schemas() if isinstance(self._handler, Tools) else None,
            cancelled=stop,
            prompt=prompt or DEFAULT_PROMPT,
            moved=lambda session_id: self._run.moved(session_id) if self._run else None,
        )

        def open_conversation(resume: str | None, token: CreateToken | None = None) -> Conversation:
            conversation = self._provider.open_conversation(
                self._connect, replace(opening, resume=resume, create_token=token)
            )
            with self._lock:
                self._conversation = conversation
                closed = self._closed
            if closed:
                conversation.close()
                raise Aborted
            run.session_id = conversation.info.session_id
            return conversation

        key = self._settings.idempotency_key
        if key is None:
            conversation = open_conversation(None)
            return conversation, conversation.resume(), prompt, None
        return KeyedRun.start(self._ledger, key, prompt or DEFAULT_PROMPT, open_conversation)

    def _deliver(self, event: Mapping[str, Any]) -> None:
        """Every raw event: into the run's record, then to ``handle_event`` (errors logged)."""
        run = self._run
        if run is not None:
            run.live.append(event)
        if self._event_handler is None:
            return
        conversation = self._conversation
        info = conversation.info if conversation else SessionInfo("", self._provider.name)
        try:
            self._event_handler.handle_event(event, info)
        except Exception as exc:
            _log.warning("handle_event raised %s; continuing", describe_exception(exc))

    def _drive(
        self, prompt: str | None, outcome: Outcome | None, run: Run, stop: threading.Event
    ) -> SessionResult:
        first = self._conversation is None
        conversation, resumed, prompt, keyed = self._open(run, stop, prompt)
        telemetry.emit("session.start", {"system_time": time.time()}, self._meta(run))
        if first and keyed is not None and prompt is None:
            # A keyed run whose prompt was delivered before: go on from the session's turn.
            return self._loop.drive(conversation, resumed, None, None, run, stop, keyed, True)
        return self._loop.drive(conversation, resumed, prompt, outcome, run, stop, keyed)
