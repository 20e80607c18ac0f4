"""Fixtures of the worker's tests: an emulator with a self-hosted environment, sessions for a
worker to serve, workers run on threads and stopped afterwards, and tools that count what
they did in files of each session's folder."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Callable

import pytest

from req_managed_agents import ToolContext, Tools
from req_managed_agents.providers import ClaudeManagedAgents
from req_managed_agents.testing import ClaudeEmulator, Turn
from req_managed_agents.worker import EnvironmentWorker, WorkItemReport

SELF_HOSTED = {"type": "self_hosted"}
WORK = r"/v1/environments/[^/]+/work"


class Hosted:
    """An emulator serving a self-hosted environment; its API-key provider and the
    environment's key."""

    def __init__(self, emulator: ClaudeEmulator) -> None:
        self.emulator = emulator
        self.provider: ClaudeManagedAgents = emulator.provider()
        self.environment_id = emulator.add_environment("sandbox", config=SELF_HOSTED)
        self.key = emulator.environment_key(self.environment_id)
        self.queue = self.provider.client.with_bearer(self.key)

    def agent(self, script: list[Turn | str]) -> str:
        return self.emulator.add_agent(script)

    def session(self, agent_id: str, prompt: str | None = "go") -> str:
        """A new session of the environment (it queues a work item), prompted unless None."""
        session_id = str(self.provider.client.create_session(agent_id, self.environment_id)["id"])
        if prompt is not None:
            self.send(session_id, prompt)
        return session_id

    def send(self, session_id: str, text: str) -> None:
        message = {"type": "user.message", "content": [{"type": "text", "text": text}]}
        self.provider.client.send_events(session_id, [message])

    def states(self) -> list[str]:
        return [item["state"] for item in self.emulator.work_items(self.environment_id)]

    def items_of(self, session_id: str) -> list[dict[str, Any]]:
        return [
            item
            for item in self.emulator.work_items(self.environment_id)
            if item["data"]["id"] == session_id
        ]

    def finished(self, session_id: str, turns: int) -> bool:
        """Whether the session has ended ``turns`` turns with an end_turn idle."""
        ends = [
            e
            for e in self.emulator.events(session_id)
            if e["type"] == "session.status_idle" and e["stop_reason"]["type"] == "end_turn"
        ]
        return len(ends) >= turns

    def worker(self, workdir: Path, **options: Any) -> EnvironmentWorker:
        options.setdefault("environment_key", self.key)
        options.setdefault("idle_grace", 0.3)
        options.setdefault("sandbox", "auto")
        return EnvironmentWorker(self.provider, self.environment_id, workdir=workdir, **options)


@pytest.fixture
def hosted() -> Iterator[Callable[..., Hosted]]:
    """Start emulators (``hosted(script=None, lease_ttl=...)``); close them afterwards."""
    opened: list[Hosted] = []

    def start(script: list[Turn | str] | None = None, **options: Any) -> Hosted:
        options.setdefault("ping_interval", 0.2)
        world = Hosted(ClaudeEmulator(script, **options))
        opened.append(world)
        return world

    yield start
    for world in reversed(opened):
        world.provider.close()
        world.emulator.close()


class Running:
    """A worker's ``run`` on a thread; ``reports`` gathers what ``on_item`` heard."""

    def __init__(self, worker: EnvironmentWorker, reports: list[WorkItemReport]) -> None:
        self.worker = worker
        self.reports = reports
        self.stop = threading.Event()
        self.error: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)

    def _run(self) -> None:
        try:
            self.worker.run(self.stop)
        except BaseException as exc:
            self.error.append(exc)

    def outcomes(self, session_id: str) -> list[str]:
        return [r.outcome for r in list(self.reports) if r.session_id == session_id]

    def halt(self, within: float = 15.0) -> float:
        """Stop the worker; how long ``run`` took to return."""
        import time

        started = time.monotonic()
        self.stop.set()
        self.thread.join(within)
        assert not self.thread.is_alive(), "run() did not return after stop was set"
        return time.monotonic() - started


@pytest.fixture
def running(
    hosted: Callable[..., Hosted],
) -> Iterator[Callable[..., Running]]:
    """Run workers (``running(world, workdir, **options)``); stop them afterwards."""
    started: list[Running] = []

    def start(world: Hosted, workdir: Path, **options: Any) -> Running:
        reports: list[WorkItemReport] = []
        options.setdefault("on_item", reports.append)
        runner = Running(world.worker(workdir, **options), reports)
        runner.thread.start()
        started.append(runner)
        return runner

    yield start
    for runner in started:
        with contextlib.suppress(AssertionError):
            runner.halt()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class FileTools(Tools):
    """Custom tools that write what they do into the session's folder under ``workdir``:
    ``count`` appends its label to ``custom.log``; ``hold`` appends ``start``, waits until
    the session folder holds a ``release`` file (or it is told to stop: ``cancelled``),
    then appends ``end``."""

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = workdir
        self.cancelled = threading.Event()

        @self.tool
        def count(label: str, context: ToolContext) -> str:
            """Count one call."""
            self._append(context, f"count {label}")
            return f"counted {label}"

        @self.tool
        def hold(context: ToolContext) -> str:
            """Wait for the release file."""
            self._append(context, "start")
            release = self.workdir / context.session.session_id / "release"
            while not release.exists():
                if context.cancelled.wait(0.05):
                    self.cancelled.set()
                    self._append(context, "cancelled")
                    return "cancelled"
            self._append(context, "end")
            return "held"

    def _append(self, context: ToolContext, line: str) -> None:
        with open(self.workdir / context.session.session_id / "custom.log", "a") as log:
            log.write(line + "\n")


def tool_results(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e["type"] in ("user.tool_result", "user.custom_tool_result")]
