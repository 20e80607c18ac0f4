"""The client against a server written with the ``mcp`` package, in both protocol eras, over
stdio and over streamable HTTP on loopback: what a bridge relies on arrives as the server
sent it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.mcp import McpProgress, McpServer, McpServerError
from tests.mcp.conftest import eventually, python_server

VARIANTS = [
    ("stdio", "stateless"),
    ("stdio", "handshake"),
    ("http", "stateless"),
    ("http", "handshake"),
]
ERA_VERSION = {"stateless": "2026-07-28", "handshake": "2025-11-25"}


def _accept_name(params: Any) -> dict[str, Any]:
    assert params["message"] == "What is your name?"
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda v: "-".join(v))
def server(request: pytest.FixtureRequest) -> Iterator[McpServer]:
    transport, era = request.param
    if transport == "stdio":
        opened = python_server(era, on_elicitation=_accept_name)
    else:
        url = request.getfixturevalue("http_servers")[era]
        opened = McpServer.http(url, name=f"http-{era}", on_elicitation=_accept_name)
    with opened:
        opened.start()
        assert opened.protocol_version == ERA_VERSION[era]
        yield opened


def test_tools_are_listed_with_their_schemas_and_annotations(server: McpServer) -> None:
    tools = {tool.name: tool for tool in server.list_tools()}

    assert {"echo", "pixel", "forecast", "fail", "count", "wait"} <= set(tools)
    assert tools["echo"].description == "Echo the text back."
    assert tools["echo"].input_schema["properties"]["text"]["type"] == "string"
    assert tools["echo"].annotations == {"readOnlyHint": True}
    assert tools["fail"].annotations == {"destructiveHint": True}
    assert tools["forecast"].output_schema is not None
    assert set(tools["forecast"].output_schema["properties"]) == {"city", "celsius"}


def test_text_image_structured_content_and_errors_arrive_as_sent(server: McpServer) -> None:
    echoed = server.call_tool("echo", {"text": "héllo\nworld"})
    assert echoed.content == ({"type": "text", "text": "héllo\nworld"},)
    assert echoed.text == "héllo\nworld"
    assert echoed.is_error is False

    (image,) = server.call_tool("pixel").content
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert image["data"].startswith("iVBORw0KGgo")

    forecast = server.call_tool("forecast", {"city": "Oslo"})
    assert forecast.structured_content == {"city": "Oslo", "celsius": 21.5}

    failed = server.call_tool("fail", {"reason": "no"})
    assert failed.is_error is True


def test_bad_arguments_and_unknown_tools_are_this_servers_tool_errors(server: McpServer) -> None:
    # The mcp package answers both as the tool's failure (isError), not a JSON-RPC error.
    assert server.call_tool("echo", {"text": 42}).is_error
    assert "Unknown tool" in server.call_tool("no-such-tool").text


def test_progress_reports_reach_the_callback_in_order(server: McpServer) -> None:
    seen: list[McpProgress] = []

    result = server.call_tool("count", {"steps": 3}, on_progress=seen.append)

    assert result.text == "counted 3"
    assert seen == [McpProgress(float(n), 3.0, f"step {n}") for n in (1, 2, 3)]


def test_cancelling_a_call_tells_the_server_and_raises(server: McpServer, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    cancelled = threading.Event()
    started = threading.Event()

    def on_progress(progress: McpProgress) -> None:
        started.set()

    def cancel_once_started() -> None:
        if started.wait(30):
            cancelled.set()

    threading.Thread(target=cancel_once_started, daemon=True).start()
    with pytest.raises(McpServerError, match="cancelled by the caller"):
        server.call_tool(
            "wait", {"marker": str(marker)}, cancelled=cancelled, on_progress=on_progress
        )

    assert eventually(lambda: marker.exists() and marker.read_text() == "cancelled")
    assert server.call_tool("echo", {"text": "still here"}).text == "still here"


def test_a_question_to_a_person_goes_to_on_elicitation(server: McpServer) -> None:
    assert server.call_tool("greet").text == "hello Ada"


def _answer_name(name: str) -> Any:
    return lambda params: {"action": "accept", "content": {"name": name}}


def test_a_calls_own_on_elicitation_answers_its_questions(server: McpServer) -> None:
    assert server.call_tool("greet", on_elicitation=_answer_name("Grace")).text == "hello Grace"


def test_concurrent_calls_over_http_each_answer_their_own_questions(
    http_servers: dict[str, str],
) -> None:
    # Streamable HTTP carries a call's questions on the call's own answer stream.
    with McpServer.http(http_servers["handshake"], name="http") as server:
        server.offer_elicitation()
        answers: dict[int, str] = {}

        def call(n: int) -> None:
            answers[n] = server.call_tool("greet", on_elicitation=_answer_name(f"n{n}")).text

        threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    assert answers == {n: f"hello n{n}" for n in range(6)}


def test_over_stdio_a_question_two_calls_could_own_goes_to_the_servers_answer() -> None:
    # Over stdio a question names no call: while two calls that answer questions are in
    # flight, neither gets it (the server's own on_elicitation does).
    second: dict[str, str] = {}

    def first_answer(params: Any) -> dict[str, Any]:
        # Asked while alone; now a second call starts and is asked while this one waits.
        second["text"] = server.call_tool("greet", on_elicitation=_answer_name("Other")).text
        return {"action": "accept", "content": {"name": "First"}}

    with python_server("handshake", on_elicitation=_answer_name("Server")) as server:
        first = server.call_tool("greet", on_elicitation=first_answer)

    assert (first.text, second["text"]) == ("hello First", "hello Server")


def test_an_offered_elicitation_with_no_one_to_answer_is_declined() -> None:
    with python_server("handshake") as server:
        server.offer_elicitation()
        assert server.call_tool("greet").text == "no name (decline)"


def test_calls_from_many_threads_each_get_their_own_answer(server: McpServer) -> None:
    answers: dict[int, str] = {}

    def call(n: int) -> None:
        answers[n] = server.call_tool("echo", {"text": f"call {n}"}).text

    threads = [threading.Thread(target=call, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert answers == {n: f"call {n}" for n in range(12)}


def test_a_call_past_its_timeout_raises_with_the_timeout_code(
    server: McpServer, tmp_path: Path
) -> None:
    with pytest.raises(McpServerError) as late:
        # (with a progress callback, so that over HTTP the answer's stream has begun and
        # giving up closes it at once)
        server.call_tool(
            "wait", {"marker": str(tmp_path / "m")}, timeout=0.5, on_progress=lambda p: None
        )
    assert late.value.code == -32001


def test_without_on_elicitation_no_one_is_asked() -> None:
    # The client does not offer elicitation, so the server refuses to ask (it needs it).
    with (
        python_server("stateless") as server,
        pytest.raises(McpServerError, match="elicitation") as refused,
    ):
        server.call_tool("greet")
    assert refused.value.code == -32021  # MISSING_REQUIRED_CLIENT_CAPABILITY (mcp_types.jsonrpc)


@pytest.mark.parametrize("era", ["handshake"])
def test_a_tool_list_change_marks_the_list_stale(era: str) -> None:
    # The stateless era sends list_changed only on a subscriptions/listen stream, which
    # this client does not open (see the package docs).
    with python_server(era) as server:
        server.list_tools()
        assert not server.tools_stale

        server.call_tool("grow", {"name": "sprout"})

        assert eventually(lambda: server.tools_changed == 1)
        assert server.tools_stale
        assert "sprout" in {tool.name for tool in server.list_tools()}
        assert not server.tools_stale
