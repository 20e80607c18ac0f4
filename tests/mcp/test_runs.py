"""Runs whose tools come from MCP servers, on the four runtimes' emulators: the results
arrive in the shapes each emulator checks strictly, a server killed mid-call leaves that
call to ``on_unfinished`` (and runs no call twice), and a stopped run tells the server and
leaves no child behind."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import McpServer, Session, ToolLedger, Tools, run_to_completion
from req_managed_agents.errors import UnfinishedToolCallError
from req_managed_agents.model import Image
from req_managed_agents.testing import (
    call,
)
from req_managed_agents.transport._backoff import RetryPolicy
from tests.emulated import BY_NAME, RUNTIMES, Runtime
from tests.mcp.conftest import eventually, npm_server, python_server

RUN_TIMEOUT = 60.0
QUICK_RESTART = RetryPolicy(max_retries=2, base=0.05, cap=0.5)
# A 1x1 PNG, as the filesystem server reads it back.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010804000000b51c0c02"
    "0000000b4944415478da63646000000006000230819d0b0000000049454e44ae426082"
)


def _echo_texts(results: list[str]) -> str:
    return " | ".join(results)


def _run(runtime: Runtime, turns: list[dict[str, Any]], tools: Tools, **options: Any) -> Any:
    script = [runtime.turn(**turn) for turn in turns]
    with runtime.start(script) as emulator, emulator.provider(timeout=10) as provider:
        return run_to_completion(
            provider,
            "Use the tools.",
            handler=tools,
            timeout=RUN_TIMEOUT,
            **runtime.connect(emulator),
            **options,
        )


@pytest.fixture(scope="module", params=["stateless", "handshake"])
def python_tools(request: pytest.FixtureRequest) -> Iterator[Tools]:
    with python_server(request.param) as server:
        server.start()  # here, so that its reader thread belongs to the module, not a test
        tools = Tools()
        allow = ["echo", "pixel", "forecast", "totals", "fail", "media"]
        tools.include(server, allow=allow, confirm="never")  # `fail` is marked destructive
        yield tools


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_a_python_servers_results_reach_each_runtime_in_its_shapes(
    runtime: Runtime, python_tools: Tools
) -> None:
    calls = [
        call("echo", text="hi"),
        call("pixel"),
        call("forecast", city="Oslo"),
        call("totals"),
        call("fail", reason="no"),
        call("media"),
    ]
    result = _run(
        runtime,
        [{"tool_calls": calls}, {"text": _echo_texts}],
        python_tools,
    )

    assert result.terminal == "end_turn"
    echo, pixel, forecast, totals, failed, media = result.tool_results
    assert (echo.content, echo.is_error) == ("hi", False)
    assert [type(b) for b in pixel.blocks] == [Image]
    assert json.loads(forecast.content) == {"city": "Oslo", "celsius": 21.5}
    assert json.loads(totals.content) == {"count": 3}
    assert failed.is_error
    assert len(media.blocks) == 7
    # What the emulator got back, as its agent read it: the texts, whatever the kinds.
    assert "hi" in result.text
    assert '"celsius": 21.5' in result.text.replace("\n", "")
    assert "four blocks follow" in result.text


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Tools, Path]]:
    folder = tmp_path_factory.mktemp("served")
    (folder / "pixel.png").write_bytes(PIXEL)
    command, *args = npm_server("server-filesystem")
    with McpServer(command, [*args, str(folder)], name="files") as server:
        server.start()  # here, so that its reader thread belongs to the module, not a test
        tools = Tools()
        tools.include(
            server, prefix="fs_", allow=["write_file", "read_text_file", "read_media_file"]
        )
        yield tools, folder


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_the_filesystem_servers_tools_act_once_on_real_files(
    runtime: Runtime, files: tuple[Tools, Path]
) -> None:
    tools, folder = files
    path = folder / f"{runtime.name}.txt"
    turns = [
        {"tool_calls": [call("fs_write_file", path=str(path), content="one")]},
        {"tool_calls": [call("fs_read_text_file", path=str(path))]},
        {"tool_calls": [call("fs_read_media_file", path=str(folder / "pixel.png"))]},
        {"tool_calls": [call("fs_read_text_file", path=str(folder / "missing.txt"))]},
        {"text": _echo_texts},
    ]
    # write_file is destructive: it asks, and the session's policy allows it.
    result = _run(runtime, turns, tools, confirm="allow")

    assert result.terminal == "end_turn"
    assert path.read_text() == "one"
    wrote, read, media, missing = result.tool_results
    assert not wrote.is_error
    assert (read.content, read.is_error) == ("one", False)
    assert [type(b) for b in media.blocks] == [Image]
    assert media.blocks[0] == Image(PIXEL, "image/png")
    assert missing.is_error
    assert "ENOENT" in missing.content or "no such file" in missing.content.lower()


def _kill_on_first_line(tally: Path) -> threading.Thread:
    """SIGKILL the server process whose pid ``tally``'s first line holds, once written."""

    def kill() -> None:
        if eventually(lambda: tally.exists() and tally.read_text().endswith("\n")):
            os.kill(int(tally.read_text().split()[0]), signal.SIGKILL)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer


def _tally_run(
    runtime: Runtime, tally: Path, **options: Any
) -> tuple[Any, list[str], BaseException | None]:
    tally_call = call("tally", path=str(tally))
    turns = [{"tool_calls": [tally_call]}, {"tool_calls": [tally_call]}, {"text": _echo_texts}]
    with python_server("stateless", restart=QUICK_RESTART) as server:
        tools = Tools()
        tools.include(server, allow=["tally"])
        killer = _kill_on_first_line(tally)
        try:
            result, raised = _run(runtime, turns, tools, **options), None
        except UnfinishedToolCallError as error:
            result, raised = None, error
        killer.join(30)
    return result, tally.read_text().split(), raised


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_a_server_killed_mid_call_leaves_the_call_to_on_unfinished(
    runtime: Runtime, tmp_path: Path
) -> None:
    tally = tmp_path / "tally"
    result, pids, _ = _tally_run(runtime, tally)

    assert result.terminal == "end_turn"
    first, second = result.tool_results
    assert first.is_error
    assert "may already have had its effect" in first.content
    assert "the server process exited" in first.content
    assert (second.content, second.is_error) == ("tallied 2", False)
    # Each call ran once, the second on a server started again.
    assert len(pids) == 2
    assert pids[0] != pids[1]


def test_on_unfinished_rerun_runs_the_killed_call_again_on_a_new_server(tmp_path: Path) -> None:
    tally = tmp_path / "tally"
    result, pids, _ = _tally_run(BY_NAME["claude"], tally, on_unfinished="rerun")

    assert result.terminal == "end_turn"
    first, second = result.tool_results
    assert (first.content, first.is_error) == ("tallied 2", False)
    assert second.content == "tallied 3"
    assert len(pids) == 3


def test_on_unfinished_raise_stops_the_run_and_runs_nothing_again(tmp_path: Path) -> None:
    tally = tmp_path / "tally"
    ledger = ToolLedger()
    result, pids, raised = _tally_run(
        BY_NAME["openai"], tally, on_unfinished="raise", ledger=ledger
    )

    assert result is None
    assert isinstance(raised, UnfinishedToolCallError)
    assert raised.tool_use.name == "tally"
    assert len(pids) == 1
    # The ledger holds the call as unfinished, its claim let go: a resume decides again.
    assert raised.session_id is not None
    entry = ledger.entry(raised.session_id, raised.tool_use.id)
    assert entry is not None
    assert not entry.finished
    seen = ledger.await_finish(
        raised.session_id, entry, stop=threading.Event(), deadline=time.monotonic() + 5
    )
    assert seen is not None
    assert not seen.live


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is a process that is gone but not reaped: count it as alive.
    return True


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_a_run_stopped_during_a_long_call_cancels_it_and_leaves_no_child(
    runtime: Runtime, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    script = [runtime.turn(tool_calls=[call("wait", marker=str(marker))]), runtime.turn(text="-")]
    with python_server("handshake") as server:
        child = server.call_tool("pid").structured_content["result"]
        tools = Tools()
        tools.include(server, allow=["wait"])
        with runtime.start(script) as emulator, emulator.provider(timeout=10) as provider:
            session = Session(provider, handler=tools, **runtime.connect(emulator))
            session.start("Wait.")
            assert eventually(lambda: marker.exists() and marker.read_text() == "started")
            session.cancel()
            result = session.wait(RUN_TIMEOUT)
        assert result.terminal == "terminated"
        assert eventually(lambda: marker.read_text() == "cancelled")
        assert _alive(child)  # the server is the caller's until its with block ends
    assert eventually(lambda: not _alive(child))


@pytest.fixture(scope="module")
def everything_tools() -> Iterator[Tools]:
    node, entry = npm_server("server-everything")
    with McpServer(node, [entry, "stdio"], name="everything") as server:
        server.start()  # here, so that its reader thread belongs to the module, not a test
        tools = Tools()
        tools.include(server, allow=["echo", "get-tiny-image", "get-structured-content"])
        yield tools


@pytest.mark.parametrize("runtime", RUNTIMES, ids=lambda r: r.name)
def test_the_everything_servers_results_reach_each_runtime_in_its_shapes(
    runtime: Runtime, everything_tools: Tools
) -> None:
    calls = [
        call("echo", message="hi"),
        call("get-tiny-image"),
        call("get-structured-content", location="New York"),
        call("echo"),  # no message: the server's input validation fails the call
    ]
    result = _run(runtime, [{"tool_calls": calls}, {"text": _echo_texts}], everything_tools)

    assert result.terminal == "end_turn"
    echo, image, weather, invalid = result.tool_results
    assert (echo.content, echo.is_error) == ("Echo: hi", False)
    texts = [block for block in image.blocks if isinstance(block, str)]
    (logo,) = [block for block in image.blocks if isinstance(block, Image)]
    assert texts == ["Here's the image you requested:", "The image above is the MCP logo."]
    assert logo.media_type == "image/png"
    assert logo.data.startswith(b"\x89PNG")
    assert not image.is_error
    assert set(json.loads(weather.content)) == {"temperature", "conditions", "humidity"}
    assert invalid.is_error
    assert "message" in invalid.content
    # What the emulator got back, as its agent read it.
    assert "Echo: hi" in result.text
    assert "The image above is the MCP logo." in result.text
    assert "humidity" in result.text
