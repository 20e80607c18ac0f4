"""The fault matrix's fixtures and its summary line.

The library's waits between retries are module constants and retry policies built inside
the clients; shrinking them keeps hundreds of scenarios within a CI budget. Waits a server
asks for (``retry-after``) are not shrunk: the scenarios check that they are honoured.
Each runtime names its own (``Runtime.backoffs``).
"""

from __future__ import annotations

import collections

import pytest

from tests.faults._runtimes import RUNTIMES, runtime_of

_FAST = 0.001
_MATRIX = "test_matrix.py::test_fault["


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink every backoff the library waits out on its own (a missing name fails here)."""
    fast = {"base": _FAST, "cap": 10 * _FAST}
    for module, name in {backoff for runtime in RUNTIMES for backoff in runtime.backoffs}:
        monkeypatch.setattr(module, name, getattr(module, name).but(**fast))


_outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
_seconds: dict[str, float] = collections.defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _, matrix, scenario = report.nodeid.rpartition(_MATRIX)
    runtime = runtime_of(scenario) if matrix else None
    if runtime is None:
        return
    _seconds[runtime.name] += report.duration
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _outcomes[runtime.name][report.outcome] += 1


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
