"""examples/django's page in a real browser: Debian's Chromium, driven through selenium.

The page streams a run from ``/stream`` with ``EventSource``: its text and tool calls must
show while the run is still going, and its Stop button must stop the remote turn (the
emulator logs a ``user.interrupt``). Skipped, with the reason, where Chromium, its driver or
selenium is not installed (``scripts/test`` installs them where it can).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.examples.test_django import event_types, wsgi_site
from tests.support.browser import chromium, require_chromium

require_chromium()

FIRST = "Let me check the weather."


def script(final_delay: float) -> list[Turn]:
    return [
        Turn(text=FIRST, tool_calls=[call("get_weather", city="Paris")]),
        Turn(text=lambda results: f"Here is the weather: {results[0]}.", delay=final_delay),
    ]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "profile") as driver:
        yield driver


def wait_for(predicate: Any, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s")


def page_lines(browser: Any, kind: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [p.text for p in browser.find_elements(By.CSS_SELECTOR, f"#log p.{kind}")]


def ask(browser: Any, port: int, prompt: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"http://127.0.0.1:{port}/")
    field = browser.find_element(By.ID, "prompt")
    field.clear()
    field.send_keys(prompt)
    browser.find_element(By.ID, "send").click()


def test_the_page_streams_text_and_tool_calls_before_the_run_ends(
    browser: Any, tmp_path: Path
) -> None:
    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent(script(final_delay=2.0))
        with wsgi_site(emulator, agent_id, tmp_path / "server.log") as port:
            ask(browser, port, "Weather in Paris?")
            wait_for(lambda: page_lines(browser, "tool"))
            assert page_lines(browser, "text") == [FIRST]
            assert page_lines(browser, "tool") == ['tool: get_weather {"city":"Paris"}']
            assert page_lines(browser, "status") == [], "shown while the run was going"
            wait_for(lambda: page_lines(browser, "status"))
            assert page_lines(browser, "status") == ["done: end_turn"]
            assert page_lines(browser, "text") == [
                FIRST,
                "Here is the weather: 18 degrees and sunny in Paris.",
            ]
            (session_id,) = emulator.session_ids()
            assert "user.interrupt" not in event_types(emulator, session_id)


def test_the_stop_button_interrupts_the_remote_turn(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    with ClaudeEmulator() as emulator:
        agent_id = emulator.add_agent(script(final_delay=60.0))
        with wsgi_site(emulator, agent_id, tmp_path / "server.log") as port:
            ask(browser, port, "Weather in Paris?")
            wait_for(lambda: page_lines(browser, "tool"))
            (session_id,) = emulator.session_ids()
            assert "user.interrupt" not in event_types(emulator, session_id)
            browser.find_element(By.ID, "stop").click()
            wait_for(lambda: "user.interrupt" in event_types(emulator, session_id), 10)
            status = wait_for(lambda: page_lines(browser, "status"), 10)
            assert status == ["done: terminated"]
            assert browser.find_element(By.ID, "send").is_enabled(), "ready for the next"
