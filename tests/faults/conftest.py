"""The fault matrix's fixtures and its summary line.

The library's waits between retries are module constants and retry policies built inside
the clients; shrinking them keeps hundreds of scenarios within a CI budget. Waits a server
asks for (``retry-after``) are not shrunk: the scenarios check that they are honoured.
"""

from __future__ import annotations

import collections

import pytest

from req_managed_agents.providers import _delivery as delivery
from req_managed_agents.providers.agentcore import _conversation as agentcore_conversation
from req_managed_agents.providers.agentcore.api import _core as agentcore_client
from req_managed_agents.providers.claude import _feed as claude_feed
from req_managed_agents.providers.claude.api import _core as claude_client
from req_managed_agents.providers.openai import _feed as openai_feed
from req_managed_agents.providers.openai.api import _core as openai_client

_FAST = 0.001


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink every backoff the library waits out on its own (a missing name fails here)."""
    fast = {"base": _FAST, "cap": 10 * _FAST}
    for module, name in [
        (claude_feed, "RECONNECT"),
        (delivery, "RESEND"),
        (agentcore_conversation, "INVOKE_RETRY"),
        (claude_client, "REQUESTS"),
        (agentcore_client, "REQUESTS"),
        (openai_feed, "RECONNECT"),
        (openai_client, "REQUESTS"),
    ]:
        monkeypatch.setattr(module, name, getattr(module, name).but(**fast))


_PROVIDERS = {
    "test_claude_matrix.py": "claude",
    "test_claude_bedrock_matrix.py": "claude-bedrock",
    "test_agentcore_matrix.py": "agentcore",
    "test_openai_matrix.py": "openai",
}
_outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
_seconds: dict[str, float] = collections.defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    provider = _PROVIDERS.get(report.nodeid.split("::")[0].rsplit("/", 1)[-1])
    if provider is None:
        return
    _seconds[provider] += report.duration
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _outcomes[provider][report.outcome] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _outcomes:
        return
    terminalreporter.section("fault matrix")
    for provider, outcomes in _outcomes.items():
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
        terminalreporter.write_line(
            f"{provider}: {sum(outcomes.values())} scenarios ({counts}) "
            f"in {_seconds[provider]:.1f} s"
        )
    terminalreporter.write_line(f"total: {sum(_seconds.values()):.1f} s")
