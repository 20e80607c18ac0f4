"""``verbose=True``: the text as it is written, a blank line between messages, and a progress
line that never overwrites the text - checked on the screen of a real pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time

import pytest

from req_managed_agents import Session, run_to_completion
from req_managed_agents.display import _progress
from req_managed_agents.display._progress import VerboseDisplay
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from tests.support.tools import CountingTools


class Terminal(io.StringIO):
    """A stream that says it is a terminal; ``screen`` collects what both streams wrote."""

    def __init__(self, screen: list[str]) -> None:
        super().__init__()
        self.screen = screen

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.screen.append(text)
        return len(text)


ADDING = [Turn(text="Adding.", tool_calls=[call("add", a=1, b=2)]), Turn(text="It is 3.")]


def run_with(progress: VerboseDisplay) -> None:
    with ClaudeEmulator(ADDING) as emulator, emulator.provider() as provider:
        options = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        with Session(provider, handler=CountingTools(), **options) as session:
            for item in session.stream("go", timeout=10):
                progress(item)


def test_the_progress_line_counts_a_turns_tools_under_that_turn() -> None:
    written: list[str] = []
    run_with(VerboseDisplay(io.StringIO(), Terminal(written)))  # text elsewhere, progress on a tty
    lines = [w[len("\r\033[K[") : -1] for w in written if w.startswith("\r\033[K[")]
    assert all(re.search(r", \d+ s$", line) for line in lines), lines  # the time so far
    lines = [re.sub(r", \d+ s$", "", line) for line in lines]
    assert lines[:2] == ["turn 1", "turn 1, 1 tool(s) running"]
    assert "turn 3" not in " ".join(lines), "a two-turn run never shows a third turn"
    assert lines[-1].startswith("end_turn after 2 turn(s), 1 tool call(s)")


def test_text_and_progress_on_one_terminal_never_share_a_line() -> None:
    screen: list[str] = []
    run_with(VerboseDisplay(Terminal(screen), Terminal(screen)))
    text = re.sub(r"\r\033\[K(\[[^\]]*\])?", "", "".join(screen))
    assert text.rstrip("\n") == "Adding.\n\nIt is 3."  # the progress line ends with one too
    for at, piece in enumerate(screen):  # the line is erased before any text follows it
        if piece.startswith("\r\033[K["):
            after = next((p for p in screen[at + 1 :] if not p.startswith("\r\033[K[")), "")
            assert after in ("", "\r\033[K", "\n") or after.startswith("\r\033[K")


def test_verbose_prints_the_text_and_no_status_line_off_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with ClaudeEmulator(["Hello there.", "Again."]) as emulator, emulator.provider() as provider:
        options = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        run_to_completion(
            provider, "hi", handler=CountingTools(), verbose=True, timeout=10, **options
        )
    captured = capsys.readouterr()
    assert captured.out == "Hello there.\n"
    assert captured.err == "", "stderr is not a terminal here: no progress line"


def test_on_text_gets_a_blank_line_between_messages_or_is_told_of_each_new_one() -> None:
    pieces: list[str] = []
    flagged: list[tuple[str, bool]] = []
    with ClaudeEmulator(ADDING * 2) as emulator, emulator.provider() as provider:
        options = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        run_to_completion(
            provider, "go", handler=CountingTools(), on_text=pieces.append, timeout=10, **options
        )

        def two(text: str, new_message: bool) -> None:
            flagged.append((text, new_message))

        run_to_completion(provider, "go", handler=CountingTools(), on_text=two, **options)
    assert "".join(pieces) == "Adding.\n\nIt is 3."
    assert "".join(t for t, _ in flagged) == "Adding.It is 3."
    assert [new for _, new in flagged].count(True) == 1
    starts = next(at for at, (_, new) in enumerate(flagged) if new)
    assert "".join(t for t, _ in flagged[starts:]) == "It is 3."


LONG = (
    "Rome is cloudy with a light breeze from the west and a chance of rain by the evening, "
    "so the walk along the river is best done in the morning before the clouds come in."
)
CHILD = textwrap.dedent(
    """
    import sys
    from req_managed_agents import ClaudeManagedAgents, Tools, run_to_completion

    base_url, api_key, agent_id, environment_id = sys.argv[1:]
    tools = Tools()

    @tools.tool
    def get_weather(city: str) -> str:
        '''The weather in a city.'''
        return "sunny" if city == "Paris" else "cloudy"

    provider = ClaudeManagedAgents(api_key, base_url=base_url)
    run_to_completion(provider, "Weather?", handler=tools, verbose=True, timeout=30,
                      agent_id=agent_id, environment_id=environment_id)
    """
)


def test_the_screen_of_a_real_terminal_shows_every_character_once() -> None:
    pyte = pytest.importorskip("pyte")
    script = [
        Turn(text="Let me check Paris first.", tool_calls=[call("get_weather", city="Paris")]),
        Turn(text="Paris is sunny. Now Rome.", tool_calls=[call("get_weather", city="Rome")]),
        Turn(text=LONG, delay=0.2),
    ]
    with ClaudeEmulator(script) as emulator:
        agent, environment = emulator.add_agent(), emulator.add_environment()
        args = [emulator.base_url, emulator.api_key, agent, environment]
        raw = _in_a_terminal([sys.executable, "-c", CHILD, *args], columns=80)
    screen = pyte.Screen(80, 30)
    pyte.ByteStream(screen).feed(raw)
    rows = [row.rstrip() for row in screen.display]
    joined = "".join(row if len(row) == 80 else row + "\n" for row in rows)
    # Every character once, in order (a line wrapped at a space keeps no trailing space).
    assert "".join(joined.split()).count("".join(LONG.split())) == 1, joined
    assert joined.startswith("Let me check Paris first.\n\nParis is sunny. Now Rome.\n\n")
    status = [row for row in rows if row.startswith("[")]
    assert status == [status[-1]], f"one progress line, last: {rows}"
    assert status[-1].startswith("[end_turn after 3 turn(s), 2 tool call(s),")


def _in_a_terminal(command: list[str], columns: int) -> bytes:
    """Everything ``command`` wrote to a pseudo-terminal (stdout and stderr both)."""
    main, child = pty.openpty()
    os.set_blocking(main, False)
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    with subprocess.Popen(command, stdin=child, stdout=child, stderr=child, env=env) as process:
        os.close(child)
        out = bytearray()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out.extend(chunk)
            elif process.poll() is not None:
                break
        process.wait(10)
    os.close(main)
    assert process.returncode == 0, out.decode(errors="replace")
    return bytes(out.replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n"))


class _Clock:
    """Time that moves only when told: as text arrives, and while a redraw is sent."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class _Display:
    """A notebook display whose redraw costs time in proportion to the text it sends."""

    def __init__(self, clock: _Clock, seconds_per_character: float) -> None:
        self.clock = clock
        self.cost = seconds_per_character
        self.bodies: list[str] = []
        self.redraws: list[tuple[float, float]] = []  # (when, how long it took)

    def update(self, data: dict[str, str], raw: bool) -> None:
        body = data["text/plain"]
        self.bodies.append(body)
        took = len(body) * self.cost
        self.redraws.append((self.clock.now, took))
        self.clock.now += took


def test_a_notebook_redraws_a_growing_text_less_often_so_that_redrawing_stays_a_small_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(_progress, "time", clock)  # the module's clock only
    display = _Display(clock, seconds_per_character=1e-6)
    view = _progress._NotebookView(display)
    words = [f"word{n} " for n in range(40_000)]
    for word in words:
        clock.now += 50e-6  # a delta every 50 microseconds
        view.text(word)
    redraws = list(display.redraws)
    view.status("turn 1")  # drawn at once, whatever it costs
    text = "".join(words).rstrip("\n")
    assert display.bodies[-1] == f"{text}\n\n[turn 1]"
    assert all(text.startswith(body.rpartition("\n\n[")[0]) for body in display.bodies[:-1])
    assert len(redraws) > 3, "the text was shown while it was written"
    # Each redraw sends the whole text: the view waits ten times as long as one took (at
    # least 0.1 s) before the next, so redrawing never takes more than a tenth of the time.
    for (when, took), (following, _) in zip(redraws, redraws[1:]):
        assert following - when >= max(0.1, 10 * took) - 1e-9, redraws
