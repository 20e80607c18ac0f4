"""``Progress`` reads as one line, and ``ProgressLine`` shows it as a person needs: live and
redrawn in place on a terminal, with other output and log records put above it; plain lines
elsewhere, one when there is news and then less and less often while nothing changes."""

from __future__ import annotations

import io
import logging

import pytest

from req_managed_agents import ProgressLine
from req_managed_agents.display import _progress_line
from req_managed_agents.model import Progress

ERASE = "\r\033[K"


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal of ``columns`` columns (no descriptor: 80)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("progress", "line"),
    [
        (Progress("waiting", 0.4), "waiting, 0 s"),
        (Progress("polling", 7.9, 1, unit="poll"), "polling, 1 poll, 7 s"),
        (Progress("polling", 65, 3, unit="poll"), "polling, 3 polls, 1 min 05 s"),
        (Progress("batch", 3725, 1, 10, "prompt done"), "batch, 1/10 prompts done, 1 h 02 min"),
        (Progress("batch", 1, 1, 1, "prompt done"), "batch, 1/1 prompt done, 1 s"),
        (Progress("worker", 2, 0, unit="item done"), "worker, 0 items done, 2 s"),
    ],
)
def test_a_report_reads_as_one_line(progress: Progress, line: str) -> None:
    assert str(progress) == line


def test_on_a_terminal_the_line_is_redrawn_in_place_only_when_it_changes() -> None:
    screen = FakeTerminal()
    with ProgressLine(screen) as line:
        assert line.live
        line(Progress("waiting", 0.1))
        line(Progress("waiting", 0.9))  # the same words: nothing drawn
        line(Progress("waiting", 1.2))
        line(Progress("w" * 200, 1.2))  # never wider than the terminal
    assert screen.getvalue() == (f"{ERASE}waiting, 0 s{ERASE}waiting, 1 s{ERASE}{'w' * 79}{ERASE}")


def test_other_output_goes_above_the_live_line() -> None:
    screen, out = FakeTerminal(), FakeTerminal()
    with ProgressLine(screen) as line:
        line(Progress("waiting", 0))
        line.write_line("work_1 served", out)
    assert out.getvalue() == "work_1 served\n"
    assert screen.getvalue() == f"{ERASE}waiting, 0 s{ERASE}{ERASE}waiting, 0 s{ERASE}"


def test_log_records_go_above_the_live_line_when_logging_is_not_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # as in a fresh `rma` process
    screen = FakeTerminal()
    log = logging.getLogger("req_managed_agents.worker._worker")
    with ProgressLine(screen) as line, line.showing_logs():
        line(Progress("waiting", 0))
        log.warning("polling for work failed")
    log.warning("after: not through the line")
    assert screen.getvalue() == (
        f"{ERASE}waiting, 0 s{ERASE}polling for work failed\n{ERASE}waiting, 0 s{ERASE}"
    )


def test_off_a_terminal_lines_are_plain_and_repeat_less_and_less_often(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(_progress_line.time, "monotonic", lambda: now[0])
    log = io.StringIO()
    line = ProgressLine(log)
    assert not line.live
    for second in range(80):  # a report every second, nothing new in it
        now[0] = 100.0 + second
        line(Progress("waiting for harness h (CREATING)", second, second, unit="poll"))
    line(Progress("waiting for endpoint DEFAULT of harness h", 80))  # news: said at once
    said = log.getvalue().splitlines()
    assert [s.split(", ")[-1] for s in said] == ["0 s", "10 s", "30 s", "1 min 10 s", "1 min 20 s"]
    assert "\r" not in log.getvalue()
    assert "\033" not in log.getvalue()
    line.close()
    assert log.getvalue().count("\n") == 5  # closing plain output adds nothing


def test_off_a_terminal_moving_numbers_are_not_news_and_the_last_report_ends_the_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(_progress_line.time, "monotonic", lambda: now[0])
    log = io.StringIO()
    with ProgressLine(log) as line:
        for second, running in enumerate((0, 2, 3, 2, 1)):
            now[0] = 100.0 + second
            line(Progress(f"batch: {running} running", second, second, 5, "prompt done"))
        line(Progress("batch: 0 running", 5, 5, 5, "prompt done"))
    assert log.getvalue().splitlines() == [
        "batch: 0 running, 0/5 prompts done, 0 s",
        "batch: 0 running, 5/5 prompts done, 5 s",  # said when the line is closed
    ]
