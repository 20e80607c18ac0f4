"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven through selenium,
for the tests of the example pages; a skip, with the reason, where either is missing
(``scripts/test`` installs them where it can)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["chromium", "require_chromium"]


def require_chromium() -> tuple[str, str]:
    """The chromium and chromedriver binaries, or a skip of the whole module saying what is
    missing. Call it at a test module's top."""
    pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip(
            "Debian's chromium and chromium-driver are not installed", allow_module_level=True
        )
    return browser, driver


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    """A headless Chromium with its own profile folder, quit on leaving the block."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = require_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for Chromium's sandbox
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",  # nothing but loopback is reachable here
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()
