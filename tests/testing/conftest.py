"""Fixtures of the Claude emulator's tests: emulators with their API clients, and streams."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

from req_managed_agents.testing import ClaudeEmulator
from tests.support.api import Api, Stream


@pytest.fixture
def harness() -> Iterator[Callable[..., tuple[ClaudeEmulator, Api]]]:
    """Start emulators (with quick pings) and their API clients; close them all afterwards."""
    started: list[tuple[ClaudeEmulator, Api]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[ClaudeEmulator, Api]:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = ClaudeEmulator(*args, **kwargs)
        started.append((emulator, Api(emulator)))
        return started[-1]

    yield start
    for emulator, api in started:
        api.http.close()
        emulator.close()


@pytest.fixture
def streams() -> Iterator[Callable[..., Stream]]:
    """Open streams (``streams(emulator, session_id, deltas=...)``); close them afterwards."""
    opened: list[Stream] = []

    def open_stream(
        emulator: ClaudeEmulator, session_id: str, deltas: tuple[str, ...] = ()
    ) -> Stream:
        opened.append(Stream(emulator, session_id, deltas))
        return opened[-1]

    yield open_stream
    for stream in opened:
        stream.close()
