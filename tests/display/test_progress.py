"""``verbose=True``: the text as it is written and a progress line updated in place."""

from __future__ import annotations

import io

import pytest

from req_managed_agents import run_to_completion
from req_managed_agents.display._progress import Progress
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.tools import CountingTools


def test_progress_follows_turns_and_tools_and_ends_with_the_outcome() -> None:
    out, lines = io.StringIO(), []
    script = [Turn(text="Adding.", tool_calls=[call("add", a=1, b=2)]), Turn(text="It is 3.")]
    with ClaudeEmulator(script) as emulator, emulator.provider() as provider:
        session_ids = {
            "agent_id": emulator.add_agent(),
            "environment_id": emulator.add_environment(),
        }
        progress = Progress(out, lines.append)
        from req_managed_agents import Session

        with Session(provider, handler=CountingTools(), **session_ids) as session:
            for item in session.stream("go", timeout=10):
                if hasattr(item, "terminal") and hasattr(item, "turns"):
                    progress.finish(item)  # type: ignore[arg-type]
                else:
                    progress(item)
    assert out.getvalue() == "Adding.It is 3."
    assert lines[0] == "turn 2"
    assert "turn 2, 1 tool(s) running" in lines
    assert lines[-1].startswith("end_turn after 2 turn(s), 1 tool call(s)")


def test_verbose_prints_the_text_and_no_status_line_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ClaudeEmulator(["Hello there."]) as emulator, emulator.provider() as provider:
        run_to_completion(
            provider,
            "hi",
            handler=CountingTools(),
            verbose=True,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=10,
        )
    captured = capsys.readouterr()
    assert captured.out == "Hello there."
    assert captured.err == "", "stderr is not a terminal here: no progress line"
