"""examples/django's approvals page, served and worked the way a user runs it: a real
``redis-server`` (the decisions store and the Celery broker), a Celery worker process, the
site behind Django's threaded WSGI server, ``manage.py start_run`` for runs that stop for a
person, and two headless Chromium windows clicking on the page.

The agent (the emulator's) asks permission to run its own bash tool, then answers only once
the test opens a gate: whatever the page shows before that, it shows while the session is
still finishing. Skipped, with the reason, where Chromium, redis-server, Celery or selenium
is missing (``scripts/test`` installs them where it can).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import pending
from req_managed_agents.model import PendingDecision
from req_managed_agents.stores import RedisStore
from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn
from tests.examples.test_django import EXAMPLE, WSGI_SERVER, site_environment, site_process
from tests.support.browser import chromium, require_chromium
from tests.support.redis import RedisServer

pytest.importorskip("django")
pytest.importorskip("celery")
require_chromium()

WAIT = 60.0  # seconds any one condition may take on a loaded machine
FIRST_WORDS = "I will delete the build folder."
REMOVE_BUILD = ToolCall("bash", {"command": "rm -rf build"}, result="", permission="ask")


class Gate:
    """The agent's last words, given only once the test opens the gate."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.answers: list[list[str]] = []

    def last_words(self, answers: list[str]) -> str:
        self.answers.append(answers)
        self.opened.wait(WAIT)
        if answers == ["allowed"]:
            return "Done: the build folder is gone."
        return f"I left the build folder alone ({answers[0]})."


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def emulator(gate: Gate) -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as emulator:
        try:
            yield emulator
        finally:
            gate.opened.set()  # never leave the emulator's turn waiting


@pytest.fixture
def env(emulator: ClaudeEmulator, gate: Gate, lone_redis_server: RedisServer) -> dict[str, str]:
    """What a deployment of the site sets: the emulator, its cleanup agent, the Redis."""
    agent_id = emulator.add_agent(
        [Turn(text=FIRST_WORDS, server_tool_calls=[REMOVE_BUILD]), Turn(text=gate.last_words)]
    )
    return {
        **site_environment(emulator, agent_id),
        "CLAUDE_APPROVALS_AGENT_ID": agent_id,
        "REDIS_URL": lone_redis_server.url,
    }


@contextmanager
def celery_worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``celery -A approvals worker --pool threads``, as the example's README starts it,
    leading a process group of its own."""
    command = [sys.executable, "-m", "celery", "-A", "approvals", "worker", "--pool=threads"]
    command += ["--concurrency=4", "--loglevel=INFO", "--without-gossip", "--without-mingle"]
    with log.open("wb") as output:
        worker = subprocess.Popen(
            command,
            cwd=EXAMPLE,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield worker
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)  # a warm shutdown: running tasks finish
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(30)


@contextmanager
def site(env: dict[str, str], log: Path) -> Iterator[int]:
    """The site behind Django's threaded WSGI server; yields its port."""
    with site_process(WSGI_SERVER, env, log) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip().isdigit(), f"the server did not start:\n{log.read_text()}"
        yield int(line)


def start_run(env: dict[str, str]) -> str:
    """``manage.py start_run``, run to its end as a user runs it; its output."""
    done = subprocess.run(
        [sys.executable, "manage.py", "start_run"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def row(browser: Any, decision: PendingDecision) -> Any:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, f'.decision[data-token="{decision.token}"]')


def shown(browser: Any, decision: PendingDecision) -> tuple[str, str, str]:
    """The decision's row as the page shows it: its state, headline and agent text."""
    from selenium.webdriver.common.by import By

    found = row(browser, decision)
    return (
        found.get_attribute("data-state") or "",
        found.find_element(By.CSS_SELECTOR, ".outcome").text,
        found.find_element(By.CSS_SELECTOR, ".text").text,
    )


def wait_for_state(browser: Any, decision: PendingDecision, states: tuple[str, ...]) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT, poll_frequency=0.1).until(
        lambda b: shown(b, decision) if shown(b, decision)[0] in states else None,
        f"the row never showed {states}",
    )


def confirmations(emulator: ClaudeEmulator, session_id: str) -> list[str]:
    """The permission answers the session received, in order."""
    events = emulator.events(session_id)
    return [e["result"] for e in events if e["type"] == "user.tool_confirmation"]


def test_two_tabs_approve_at_once_one_wins_and_the_page_shows_the_session_finish(
    emulator: ClaudeEmulator, gate: Gate, env: dict[str, str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # Two runs stop for a person, each in a process that then exits.
    for _ in range(2):
        said = start_run(env)
        assert f"agent: {FIRST_WORDS}" in said
        assert "waiting: run bash with {'command': 'rm -rf build'}" in said
    store = RedisStore(env["REDIS_URL"], prefix="agentsite:")
    raced, denied = pending(store)
    assert (raced.kind, denied.kind) == ("confirmation", "confirmation")

    with ExitStack() as stack:
        stack.enter_context(celery_worker(env, tmp_path / "worker.log"))
        port = stack.enter_context(site(env, tmp_path / "site.log"))
        tabs = [stack.enter_context(chromium(tmp_path / f"profile-{n}")) for n in (1, 2)]
        for tab in tabs:
            tab.get(f"http://127.0.0.1:{port}/approvals/")
            WebDriverWait(tab, WAIT).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".deny"))
            assert "run bash with {'command': 'rm -rf build'}" in row(tab, raced).text

        # Both tabs click Approve on the same decision, as close together as two threads get.
        barrier = threading.Barrier(len(tabs), timeout=WAIT)

        def approve(tab: Any) -> None:
            button = row(tab, raced).find_element(By.CSS_SELECTOR, ".approve")
            barrier.wait()
            button.click()

        with ThreadPoolExecutor(len(tabs)) as pool:
            list(pool.map(approve, tabs))

        outcomes = [wait_for_state(tab, raced, ("finishing", "already_answered")) for tab in tabs]
        states = sorted(state for state, _, _ in outcomes)
        assert states == ["already_answered", "finishing"], outcomes
        winner, loser = sorted(tabs, key=lambda tab: shown(tab, raced)[0] != "finishing")
        assert shown(winner, raced)[1] == "approved, the session is finishing"
        assert shown(loser, raced)[1].startswith("already answered by someone else: approved at ")
        # The answer went out once, and the agent's last turn waits at the gate.
        assert emulator.wait_until(lambda: confirmations(emulator, raced.session_id), timeout=WAIT)
        assert confirmations(emulator, raced.session_id) == ["allow"]

        gate.opened.set()
        _, headline, text = wait_for_state(winner, raced, ("done",))
        assert headline == "approved; the session finished (end_turn)"
        assert text == "Done: the build folder is gone."
        assert shown(loser, raced)[0] == "already_answered"  # unchanged: it ran nothing

        # The other decision, denied with a message from the second tab.
        denial = row(loser, denied)
        denial.find_element(By.CSS_SELECTOR, ".message").send_keys("not on a Friday")
        denial.find_element(By.CSS_SELECTOR, ".deny").click()
        _, headline, text = wait_for_state(loser, denied, ("done", "failed"))
        assert headline == "denied; the session finished (end_turn)"
        assert text == "I left the build folder alone (denied: not on a Friday)."

    assert confirmations(emulator, raced.session_id) == ["allow"]
    assert confirmations(emulator, denied.session_id) == ["deny"]
    assert gate.answers == [["allowed"], ["denied: not on a Friday"]]  # each turn played once
    assert pending(store) == []
