"""What the AgentCore emulator records of data-plane requests, for tests to look at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Invocation:
    """A well-formed InvokeHarness request, as received (``body`` is its decoded JSON)."""

    harness_arn: str
    runtime_session_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class StoppedSession:
    """A well-formed StopRuntimeSession request: ``runtime_arn`` is the one in its path,
    ``streams_cut`` how many in-flight InvokeHarness streams it cut."""

    runtime_arn: str
    runtime_session_id: str
    qualifier: str | None
    streams_cut: int
