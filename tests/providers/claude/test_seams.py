"""Claude-side seams a long or unlucky session meets: catch-up after a drop reads back from the
newest event in pages of 1000, duplicate-dropping memory stays bounded, a result posted before
the service registered its call is posted again (and no other 400 is), and absurd tool output
or input becomes that call's error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from req_managed_agents import Session, ToolResult, Tools, run_to_completion
from req_managed_agents.errors import BadRequestError
from req_managed_agents.model import Image, SessionInfo
from req_managed_agents.providers.claude import _feed
from req_managed_agents.providers.claude._events import tool_use_of
from req_managed_agents.sse import ServerSentEvent
from req_managed_agents.testing import ClaudeEmulator, Turn, call
from req_managed_agents.tools._handler import invoke_tool
from tests.support.tools import CountingTools

ADDING = [
    Turn(text="first", tool_calls=[call("add", a=1, b=2)]),
    Turn(text="second", tool_calls=[call("add", a=3, b=4)]),
    Turn(text=lambda results: f"sum {results[0]}"),
]
EVENTS = r"/v1/sessions/[^/]+/events"


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(ADDING) as emulator:
        yield emulator


def ids(emulator: ClaudeEmulator, script: Any = None) -> dict[str, str]:
    return {"agent_id": emulator.add_agent(script), "environment_id": emulator.add_environment()}


def test_a_catch_up_reads_back_from_the_newest_event_in_pages_of_1000(
    emulator: ClaudeEmulator,
) -> None:
    emulator.drop_stream(8)
    with emulator.provider() as provider:
        result = run_to_completion(
            provider, "go", handler=CountingTools(), timeout=20, **ids(emulator)
        )
    assert result.text == "sum 7"
    listings = [r for r in emulator.requests if r.method == "GET" and r.path.endswith("/events")]
    assert listings, "the drop was caught up from the history"
    for listing in listings:
        assert listing.query.get("limit") == ["1000"]
    assert any(listing.query.get("order") == ["desc"] for listing in listings)


def test_the_ids_kept_to_drop_duplicates_stay_bounded(
    emulator: ClaudeEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_feed, "SEEN_IDS_KEPT", 5)
    emulator.duplicate_stream_events()
    tools = CountingTools()
    with emulator.provider() as provider, Session(provider, handler=tools, **ids(emulator)) as s:
        result = s.run("go", timeout=20)
        feed = s._conversation._feed  # type: ignore[union-attr]  # looking inside on purpose
        assert len(feed._seen) <= 5
    assert result.text == "sum 7"
    assert sorted(tools.calls.values()) == [1, 1]


def is_result(request: Any) -> bool:
    events = request.body.get("events") if isinstance(request.body, dict) else None
    return bool(events) and events[0]["type"] == "user.custom_tool_result"


UNREGISTERED = "custom_tool_use_id sevt_x does not match any agent.tool_use event"


def test_a_result_posted_before_its_call_was_registered_is_posted_again(
    emulator: ClaudeEmulator,
) -> None:
    emulator.fail_requests("POST", EVENTS, 400, times=2, message=UNREGISTERED, where=is_result)
    tools = CountingTools()
    with emulator.provider() as provider:
        result = run_to_completion(provider, "go", handler=tools, timeout=20, **ids(emulator))
    assert result.text == "sum 7"
    assert sorted(tools.calls.values()) == [1, 1]
    (session_id,) = emulator.session_ids()
    posted = [e for e in emulator.events(session_id) if e["type"] == "user.custom_tool_result"]
    assert len(posted) == 2, "each result landed once"


def test_any_other_bad_request_is_not_posted_again(emulator: ClaudeEmulator) -> None:
    emulator.fail_requests("POST", EVENTS, 400, message="content is too long", where=is_result)
    with emulator.provider() as provider, pytest.raises(BadRequestError):
        run_to_completion(provider, "go", handler=CountingTools(), timeout=20, **ids(emulator))
    assert emulator.pending_faults() == 0
    assert len([r for r in emulator.requests if is_result(r)]) == 1


def test_a_malformed_tool_result_is_that_calls_error(emulator: ClaudeEmulator) -> None:
    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> ToolResult:
        """Answer with a result built wrongly by hand."""
        return ToolResult("x", 123, is_error="no", blocks=("a", 5))  # type: ignore[arg-type]  # deliberately malformed

    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text=lambda r: r[0])]
    with emulator.provider() as provider:
        ids_ = {
            "agent_id": emulator.add_agent(script),
            "environment_id": emulator.add_environment(),
        }
        result = run_to_completion(provider, "go", handler=tools, timeout=20, **ids_)
    assert result.tool_results[0].is_error
    assert "malformed ToolResult" in result.text


def test_a_result_with_a_proper_image_is_still_fine(emulator: ClaudeEmulator) -> None:
    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> ToolResult:
        """Answer with text and an image."""
        return ToolResult.of_blocks("x", [f"{a + b}", Image(b"\x89PNG", "image/png")])

    script = [Turn(tool_calls=[call("add", a=1, b=2)]), Turn(text="ok")]
    with emulator.provider() as provider:
        ids_ = {
            "agent_id": emulator.add_agent(script),
            "environment_id": emulator.add_environment(),
        }
        result = run_to_completion(provider, "go", handler=tools, timeout=20, **ids_)
    assert not result.tool_results[0].is_error


def test_a_tool_input_nesting_thousands_deep_is_that_calls_error() -> None:
    deep = '{"type": "agent.custom_tool_use", "id": "sevt_1", "name": "add", "input": {"a": '
    deep += "[" * 5000 + "]" * 5000 + "}}"
    event = _feed._parse(ServerSentEvent("agent.custom_tool_use", deep, None, None))
    assert event is not None
    from req_managed_agents.tools._handler import ToolContext

    use = tool_use_of(event)
    result = invoke_tool(CountingTools(), use, ToolContext(use.id, SessionInfo("s", "claude")))
    assert result.is_error
    assert "nests more than 100 levels deep" in result.content
