"""``EnvironmentWorker``: the worker of a self-hosted environment, on this machine.

The calling thread long-polls the environment's work queue - only while it serves fewer
than ``max_sessions`` items - and hands each item to a thread of its own (``_item``), which
claims it, keeps its lease on a heartbeat thread (``_lease``) and drives its session. A
transient poll failure is retried forever, at a growing interval (``POLL_RETRY``); a
refused environment key, an unknown environment or one that is not self-hosted ends
:meth:`EnvironmentWorker.run` with that error.

Stopping (the ``stop`` event of :meth:`~EnvironmentWorker.run`, or SIGTERM / Ctrl-C in
:meth:`~EnvironmentWorker.serve_forever`) polls no more, detaches every served session (its
running tools told to stop, its remote turn not interrupted), stops the items whose session
is idle with nothing pending and leaves the others to their leases (see ``_item``); an
item polled at that moment is not acknowledged, so it stays queued for another worker.

``progress`` hears how the worker stands - sessions served of ``max_sessions``, what it
waits for, items done - on the polling thread, each time round its loop (a poll for work
is held about a second; a full worker looks for a free slot ten times a second).
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, Literal

from req_managed_agents._redact import get_logger
from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
from req_managed_agents.drivers._options import ConfirmPolicy
from req_managed_agents.errors import APIError, ConfigurationError, ManagedAgentsError
from req_managed_agents.model._progress import Progress, ProgressCallback
from req_managed_agents.providers.claude._provider import ClaudeManagedAgents
from req_managed_agents.providers.claude.api._work import MAX_BLOCK_MS
from req_managed_agents.tools._handler import Handler
from req_managed_agents.toolset import DEFAULT_SHELL_LIMITS, ShellLimits
from req_managed_agents.transport._backoff import RetryPolicy, pause
from req_managed_agents.worker._item import ItemServer, WorkItemReport
from req_managed_agents.worker._lease import transient
from req_managed_agents.worker._settings import ToolsetFactory, WorkerSettings, check_settings

__all__ = ["EMPTY_POLL", "POLL_RETRY", "RELEASE_TIMEOUT", "SLOT_POLL", "EnvironmentWorker"]

POLL_RETRY = RetryPolicy(max_retries=0, base=0.5, cap=30.0)
"""Between polls that failed transiently: from 0.5 s, doubling up to 30 s, forever."""
EMPTY_POLL = RetryPolicy(max_retries=0, base=0.25, cap=2.0)
"""After an empty poll the server did not hold open (it answered at once)."""
SLOT_POLL = RetryPolicy.poll(0.1)
"""How often a worker serving ``max_sessions`` items looks for a free slot (or its stop)."""
RELEASE_TIMEOUT = 30.0
"""How long stopping waits for the served items to be released."""

# An empty poll answered faster than this was not held open by the server.
_HELD = 0.25
_log = get_logger(__name__)


class EnvironmentWorker:
    """Serves the sessions of a self-hosted environment on this machine.

    ::

        worker = EnvironmentWorker(ClaudeManagedAgents(), "env_01", workdir="/srv/agents",
                                   handler=tools, ledger=ToolLedger(FileStore("ledger.json")))
        worker.serve_forever()  # until SIGTERM or Ctrl-C

    Each work item is claimed (acknowledged, then its lease heartbeated about every
    ``min(ttl / 2, 30 s)``), and its session driven by the drivers' ``Session`` acting with
    the item's sessions token: the agent's built-in tool calls (``bash``, ``read``,
    ``write``, ``edit``, ``glob``, ``grep``) run in the session's own folder,
    ``<workdir>/<session_id>`` (mode 0700), through ``toolset(folder)`` (default: an
    :class:`~req_managed_agents.toolset.AgentToolset` with ``sandbox``, ``network`` and
    ``limits``, whose bwrap sandbox is tried once, here); every other call goes to
    ``handler`` (an unknown-tool error without one), whose ``handle_event`` and
    ``handle_confirmation`` hooks apply too. When the session has been idle ``idle_grace``
    seconds, or ends, its item is stopped, and what it left behind goes: its ledger entries
    (every call was answered) and, once the session ended, its folder. A session left
    mid-turn keeps both for the worker that resumes it.

    ``environment_key`` (default: ``ANTHROPIC_ENVIRONMENT_KEY``) authorizes the polls;
    ``provider`` (a :class:`ClaudeManagedAgents`) gives the URL, timeouts and connection
    pool. ``ledger`` keeps each tool call to one run (``on_unfinished`` says what a call
    that started and never finished gets); over a shared or file store, a restarted worker
    that takes a session up again posts the results recorded before instead of running the
    tools again. ``tool_timeout`` and ``confirm`` are the drivers' options. ``on_item``
    hears a :class:`WorkItemReport` as each item is done - including a lost lease, which
    is also logged and never stops the worker. ``worker_id`` names this worker in the
    queue's statistics (default: host, process and a random part). ``progress`` hears a
    :class:`~req_managed_agents.model.Progress` each time round the polling loop (sessions served,
    what it waits for, items done, time since :meth:`run` began), on the polling thread;
    what it raises stops the worker as a refused key does.
    """

    def __init__(
        self,
        provider: ClaudeManagedAgents,
        environment_id: str,
        *,
        workdir: str | Path,
        environment_key: str | None = None,
        handler: Handler | None = None,
        toolset: ToolsetFactory | None = None,
        sandbox: Literal["auto", "bwrap", "none"] = "auto",
        network: bool = False,
        limits: ShellLimits | None = DEFAULT_SHELL_LIMITS,
        max_sessions: int = 4,
        ledger: ToolLedger | None = None,
        on_unfinished: UnfinishedPolicy = "error",
        idle_grace: float = 60.0,
        worker_id: str | None = None,
        tool_timeout: float | None = None,
        confirm: ConfirmPolicy = "raise",
        on_item: Callable[[WorkItemReport], None] | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        if on_item is not None and not callable(on_item):
            raise ConfigurationError("on_item must be a callable taking a WorkItemReport")
        if progress is not None and not callable(progress):
            raise ConfigurationError("progress must be a callable taking a Progress")
        self.settings: WorkerSettings = check_settings(
            provider,
            environment_id,
            environment_key=environment_key,
            handler=handler,
            workdir=workdir,
            toolset=toolset,
            sandbox=sandbox,
            network=network,
            limits=limits,
            max_sessions=max_sessions,
            ledger=ledger,
            on_unfinished=on_unfinished,
            idle_grace=idle_grace,
            worker_id=worker_id,
            tool_timeout=tool_timeout,
            confirm=confirm,
        )
        self._on_item = on_item
        self._progress = progress
        self._started = time.monotonic()
        self._items_done = 0
        self._queue = self.settings.provider.client.with_bearer(self.settings.environment_key)
        self._lock = threading.Lock()
        self._serving: list[tuple[ItemServer, threading.Thread]] = []
        self._running = False

    def __repr__(self) -> str:
        settings = self.settings
        return (
            f"EnvironmentWorker({settings.environment_id!r}, workdir={str(settings.workdir)!r}, "
            f"worker_id={settings.worker_id!r})"
        )

    @property
    def serving(self) -> int:
        """How many work items are being served now."""
        with self._lock:
            return len(self._serving)

    def run(self, stop: threading.Event) -> None:
        """Poll and serve until ``stop`` is set; return once every item is released (at most
        :data:`RELEASE_TIMEOUT` seconds after). A refused environment key (or an unknown or
        not self-hosted environment) raises, after releasing too."""
        if not isinstance(stop, threading.Event):
            raise ConfigurationError("stop must be a threading.Event")
        with self._lock:
            if self._running:
                raise ConfigurationError("this worker is running already")
            self._running = True
            self._started = time.monotonic()
        _log.info(
            "worker %s polls environment %s (workdir %s)",
            self.settings.worker_id,
            self.settings.environment_id,
            self.settings.workdir,
        )
        try:
            self._poll(stop)
        finally:
            self._release()
            with self._lock:
                self._running = False

    def serve_forever(self) -> int:
        """:meth:`run` until SIGTERM or SIGINT (Ctrl-C) arrives; return which one. Its
        handlers replace the process's meanwhile (a second signal meets the previous
        handler, so a second Ctrl-C does not wait for the release). Only the main thread
        can install them: elsewhere use :meth:`run` with an event of your own."""
        if threading.current_thread() is not threading.main_thread():
            raise ConfigurationError(
                "serve_forever installs signal handlers, which only the main thread can; "
                "call run(stop) from other threads"
            )
        stop = threading.Event()
        received: list[int] = []
        previous: dict[int, Any] = {}

        def on_signal(number: int, frame: FrameType | None) -> None:
            received.append(number)
            stop.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[int(signum)] = signal.signal(signum, on_signal)
        try:
            self.run(stop)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return received[0]

    # -- polling --------------------------------------------------------------------------

    def _poll(self, stop: threading.Event) -> None:
        settings = self.settings
        tags = {"environment_id": settings.environment_id, "worker_id": settings.worker_id}
        failures = empties = 0
        while self._wait_for_slot(stop):
            self._report("waiting for work")
            started = time.monotonic()
            try:
                item = self._queue.poll_work(
                    settings.environment_id,
                    block_ms=MAX_BLOCK_MS,
                    worker_id=settings.worker_id,
                    telemetry_metadata=tags,
                )
            except ManagedAgentsError as error:
                if not transient(error):
                    raise
                _log.warning("polling for work failed (%s); trying again", error)
                self._report("polling for work failed; trying again")
                retry_after = error.retry_after if isinstance(error, APIError) else None
                if not POLL_RETRY.wait(failures, retry_after, stop=stop):
                    return
                failures += 1
                continue
            failures = 0
            if item is None:
                held = time.monotonic() - started >= _HELD
                empties = 0 if held else empties + 1
                if not held and not pause(EMPTY_POLL.delay(empties - 1), stop):
                    return
                continue
            empties = 0
            if stop.is_set():
                _log.info("stopping: work item %s stays queued", item.get("id"))
                return
            self._start(item)

    def _wait_for_slot(self, stop: threading.Event) -> bool:
        attempt = 0
        while True:
            if stop.is_set():
                return False
            with self._lock:
                if len(self._serving) < self.settings.max_sessions:
                    return True
            self._report("every session slot busy")
            SLOT_POLL.wait(attempt, stop=stop)
            attempt += 1

    def _start(self, item: Mapping[str, Any]) -> None:
        server = ItemServer(self.settings, self._queue, item)
        thread = threading.Thread(
            target=contextvars.copy_context().run,
            args=(self._serve, server),
            name=f"rma-work-{server.work_id}",
            daemon=True,
        )
        with self._lock:
            self._serving.append((server, thread))
        thread.start()

    def _serve(self, server: ItemServer) -> None:
        try:
            report = server.serve()
        finally:
            with self._lock:
                self._serving = [entry for entry in self._serving if entry[0] is not server]
                self._items_done += 1
        _log.info(
            "work item %s (session %s): %s%s",
            report.work_id,
            report.session_id,
            report.outcome,
            f" ({report.detail})" if report.detail else "",
        )
        if self._on_item is not None:
            try:
                self._on_item(report)
            except Exception:
                _log.warning("on_item raised; continuing", exc_info=True)

    def _report(self, waiting_for: str) -> None:
        """Tell ``progress`` how the worker stands."""
        if self._progress is None:
            return
        settings = self.settings
        with self._lock:
            serving, done = len(self._serving), self._items_done
        what = (
            f"worker on {settings.environment_id}: {serving} of {settings.max_sessions} "
            f"sessions, {waiting_for}"
        )
        self._progress(Progress(what, time.monotonic() - self._started, done, unit="item done"))

    # -- stopping -------------------------------------------------------------------------

    def _release(self) -> None:
        """End every served item at once (each detaches its session), then wait for them."""
        with self._lock:
            serving = list(self._serving)
        if not serving:
            return
        deadline = time.monotonic() + RELEASE_TIMEOUT
        enders = [
            threading.Thread(target=server.end, name="rma-release", daemon=True)
            for server, _ in serving
        ]
        for ender in enders:
            ender.start()
        for _, thread in serving:
            thread.join(max(0.0, deadline - time.monotonic()))
        late = [server.work_id for server, thread in serving if thread.is_alive()]
        if late:
            _log.warning("work items %s were not released in time", ", ".join(late))
