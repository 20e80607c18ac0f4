"""Tool confirmations, outcomes and interrupts on the Claude emulator, over real sockets."""

from __future__ import annotations

import time
from typing import Any

import pytest

from req_managed_agents.testing import ClaudeEmulator, ToolCall, Turn, call
from tests.support.api import Api, error_of, ok, tool_result, user_message

# --- helpers ----------------------------------------------------------------------------------


def of_type(emulator: ClaudeEmulator, session_id: str, *types: str) -> list[dict[str, Any]]:
    return [e for e in emulator.events(session_id) if e["type"] in types]


def wait_idles(emulator: ClaudeEmulator, session_id: str, count: int = 1) -> dict[str, Any]:
    """Wait for the ``count``-th ``session.status_idle``; return it."""
    assert emulator.wait_until(
        lambda: len(of_type(emulator, session_id, "session.status_idle")) >= count
    ), [e["type"] for e in emulator.events(session_id)]
    return of_type(emulator, session_id, "session.status_idle")[count - 1]


def texts(emulator: ClaudeEmulator, session_id: str) -> list[str]:
    return [e["content"][0]["text"] for e in of_type(emulator, session_id, "agent.message")]


def confirmation(use_id: str, result: str, deny_message: str | None = None) -> dict[str, Any]:
    event = {"type": "user.tool_confirmation", "tool_use_id": use_id, "result": result}
    if deny_message is not None:
        event["deny_message"] = deny_message
    return event


def outcome(description: str = "A report", **fields: Any) -> dict[str, Any]:
    rubric = {"type": "text", "content": "Has a title."}
    return {"type": "user.define_outcome", "description": description, "rubric": rubric, **fields}


def echoed(texts: list[str]) -> str:
    return "got " + " | ".join(texts)


# --- permission policies ------------------------------------------------------------------------

FETCH = ToolCall("web_fetch", {"url": "https://example.com"}, result="<html>", permission="ask")
LS = ToolCall("bash", {"command": "ls"}, result="a.txt", permission="allow")
RM = ToolCall("delete_file", {"path": "/"}, result="gone", permission="deny", mcp_server="fs")


def test_allowed_and_denied_server_calls_get_their_results_at_once(harness: Any) -> None:
    query = ToolCall("query", {"sql": "select 1"}, result="1", mcp_server="db")
    emulator, api = harness([Turn("Working.", server_tool_calls=[LS, RM, query])])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("go")))
    assert wait_idles(emulator, session_id)["stop_reason"] == {"type": "end_turn"}
    ls, ls_result, rm, rm_result, db, db_result = of_type(
        emulator,
        session_id,
        "agent.tool_use",
        "agent.tool_result",
        "agent.mcp_tool_use",
        "agent.mcp_tool_result",
    )
    assert (ls["type"], ls["name"], ls["input"]) == ("agent.tool_use", "bash", {"command": "ls"})
    assert (ls["evaluated_permission"], ls["evaluation"]) == ("allow", {"type": "always_allow"})
    assert "mcp_server_name" not in ls
    assert ls_result == {
        "type": "agent.tool_result",
        "id": ls_result["id"],
        "tool_use_id": ls["id"],
        "content": [{"type": "text", "text": "a.txt"}],
        "is_error": False,
        "processed_at": ls_result["processed_at"],
    }
    assert (rm["type"], rm["mcp_server_name"], rm["name"]) == (
        "agent.mcp_tool_use",
        "fs",
        "delete_file",
    )
    assert rm["evaluated_permission"] == "deny"
    assert rm["evaluation"] == {
        "type": "auto",
        "evaluated_permission": {"type": "deny", "reason_code": "high_risk"},
    }
    assert rm_result["type"] == "agent.mcp_tool_result"
    assert rm_result["mcp_tool_use_id"] == rm["id"]
    assert rm_result["is_error"] is True
    assert rm_result["content"] == [
        {"type": "text", "text": "Permission to use delete_file has been denied."}
    ]
    assert (db["mcp_server_name"], db["evaluated_permission"]) == ("db", "allow")
    assert (db_result["mcp_tool_use_id"], db_result["is_error"]) == (db["id"], False)
    # A refused call cannot be confirmed after the fact.
    refused = error_of(api.send(session_id, confirmation(rm["id"], "allow")), 400)
    assert refused["type"] == "invalid_request_error"
    assert "not 'ask'" in refused["message"]


def test_a_mixed_pause_waits_for_every_confirmation_and_custom_result(
    harness: Any, streams: Any
) -> None:
    script = [
        Turn("Checking.", server_tool_calls=[FETCH, LS], tool_calls=[call("lookup", q="x")]),
        Turn(echoed),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    ok(api.send(session_id, user_message("go")))
    stream.read_until_count("session.status_idle")
    assert stream.types == [
        "user.message",
        "session.status_running",
        "span.model_request_start",
        "agent.message",
        "agent.tool_use",  # web_fetch: asks
        "agent.tool_use",  # bash: allowed, so it ran
        "agent.tool_result",
        "span.model_request_end",
        "agent.custom_tool_use",
        "session.usage",
        "session.status_idle",
    ]
    fetch, lookup = stream.events[4], stream.events[8]
    assert (fetch["name"], fetch["evaluated_permission"]) == ("web_fetch", "ask")
    assert fetch["evaluation"] == {"type": "always_ask"}
    assert stream.events[-1]["stop_reason"] == {
        "type": "requires_action",
        "event_ids": [fetch["id"], lookup["id"]],
    }
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "idle"

    # Half the answers: idle again, naming the rest.
    ok(api.send(session_id, tool_result(lookup["id"], "42")))
    stream.read_until_count("session.status_idle", 2)
    assert stream.types[-2:] == ["session.usage", "session.status_idle"]
    assert stream.events[-1]["stop_reason"] == {
        "type": "requires_action",
        "event_ids": [fetch["id"]],
    }

    echo = ok(api.send(session_id, confirmation(fetch["id"], "deny", "too risky")))["data"][0]
    assert echo["type"] == "user.tool_confirmation"
    assert echo["id"].startswith("sevt_")
    assert echo["processed_at"].endswith("Z")
    assert (echo["tool_use_id"], echo["result"], echo["deny_message"]) == (
        fetch["id"],
        "deny",
        "too risky",
    )
    stream.read_until_count("session.status_idle", 3)
    resumed = stream.events[stream.types.index("user.tool_confirmation") :]
    assert [e["type"] for e in resumed] == [
        "user.tool_confirmation",
        "session.status_running",
        "agent.tool_result",
        "span.model_request_start",
        "agent.message",
        "span.model_request_end",
        "session.usage",
        "session.status_idle",
    ]
    denial = resumed[2]
    assert (denial["tool_use_id"], denial["is_error"]) == (fetch["id"], True)
    assert denial["content"] == [
        {"type": "text", "text": "Permission to use web_fetch has been denied. too risky"}
    ]
    # The next turn gets the custom results, then each confirmation, in call order.
    assert resumed[4]["content"][0]["text"] == "got 42 | denied: too risky"
    assert resumed[-1]["stop_reason"] == {"type": "end_turn"}
    assert stream.events == emulator.events(session_id)


def test_allowed_confirmations_run_the_scripted_calls(harness: Any) -> None:
    other = ToolCall("search", {"q": "x"}, result="hits", permission="ask", mcp_server="web")
    emulator, api = harness([Turn(server_tool_calls=[FETCH, other]), Turn(echoed)])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("go")))
    first, second = wait_idles(emulator, session_id)["stop_reason"]["event_ids"]
    ok(api.send(session_id, confirmation(second, "deny"), confirmation(first, "allow")))
    assert wait_idles(emulator, session_id, 2)["stop_reason"] == {"type": "end_turn"}
    fetched, searched = of_type(emulator, session_id, "agent.tool_result", "agent.mcp_tool_result")
    assert (fetched["tool_use_id"], fetched["is_error"]) == (first, False)
    assert fetched["content"] == [{"type": "text", "text": "<html>"}]
    assert (searched["mcp_tool_use_id"], searched["is_error"]) == (second, True)
    assert searched["content"][0]["text"] == "Permission to use search has been denied."
    assert texts(emulator, session_id) == ["got allowed | denied"]


def test_bad_confirmations_are_refused_and_change_nothing(harness: Any) -> None:
    emulator, api = harness(
        [Turn(server_tool_calls=[FETCH, LS], tool_calls=[call("lookup")]), Turn(echoed)]
    )
    session_id = api.new_session()
    ok(api.send(session_id, user_message("go")))
    wait_idles(emulator, session_id)
    fetch, ls = of_type(emulator, session_id, "agent.tool_use")
    (lookup,) = of_type(emulator, session_id, "agent.custom_tool_use")
    before = emulator.events(session_id)

    def refused(*events: dict[str, Any]) -> str:
        message = error_of(api.send(session_id, *events), 400)
        assert message["type"] == "invalid_request_error"
        assert emulator.events(session_id) == before  # nothing logged
        return str(message["message"])

    assert "does not match" in refused(confirmation("sevt_unknown", "allow"))
    assert "does not match" in refused(confirmation(lookup["id"], "allow"))  # a custom tool
    assert "not 'ask'" in refused(confirmation(ls["id"], "deny"))
    assert "deny_message" in refused(confirmation(fetch["id"], "allow", "why not"))
    assert "result" in refused(confirmation(fetch["id"], "maybe"))
    assert "tool_use_id" in refused({"type": "user.tool_confirmation", "result": "allow"})
    assert "deny_message" in refused({**confirmation(fetch["id"], "deny"), "deny_message": 3})
    twice = [confirmation(fetch["id"], "allow"), confirmation(fetch["id"], "deny")]
    assert "already confirmed" in refused(*twice)
    # A bad event anywhere in the request refuses the whole request.
    assert "not 'ask'" in refused(tool_result(lookup["id"], "1"), confirmation(ls["id"], "allow"))

    ok(api.send(session_id, confirmation(fetch["id"], "allow", None)))  # null is no message
    assert wait_idles(emulator, session_id, 2)["stop_reason"] == {
        "type": "requires_action",
        "event_ids": [lookup["id"]],
    }
    assert (
        "already confirmed"
        in error_of(api.send(session_id, confirmation(fetch["id"], "allow")), 400)["message"]
    )


# --- interrupts ---------------------------------------------------------------------------------


def test_an_interrupt_on_an_idle_session_is_logged_and_does_nothing(harness: Any) -> None:
    emulator, api = harness(["hi"])
    session_id = api.new_session()
    echo = ok(api.send(session_id, {"type": "user.interrupt"}))["data"][0]
    assert echo["type"] == "user.interrupt"
    time.sleep(0.1)
    assert emulator.events(session_id) == [echo]
    assert ok(api.get(f"/v1/sessions/{session_id}"))["status"] == "idle"
    ok(api.send(session_id, user_message("go")))  # the script is where it was
    wait_idles(emulator, session_id)
    assert texts(emulator, session_id) == ["hi"]


def test_an_interrupt_ends_a_paused_turn(harness: Any) -> None:
    emulator, api = harness([Turn(server_tool_calls=[FETCH], tool_calls=[call("lookup")]), "next"])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("go")))
    fetch_id, lookup_id = wait_idles(emulator, session_id)["stop_reason"]["event_ids"]
    ok(api.send(session_id, {"type": "user.interrupt"}))
    assert [e["type"] for e in emulator.events(session_id)[-3:]] == [
        "user.interrupt",
        "session.usage",
        "session.status_idle",
    ]
    assert wait_idles(emulator, session_id, 2)["stop_reason"] == {"type": "end_turn"}
    late = error_of(api.send(session_id, confirmation(fetch_id, "allow")), 400)["message"]
    assert "no longer awaiting" in late
    assert error_of(api.send(session_id, tool_result(lookup_id, "x")), 400)
    ok(api.send(session_id, user_message("again")))
    wait_idles(emulator, session_id, 3)
    assert texts(emulator, session_id) == ["next"]


def test_an_interrupt_and_a_message_in_one_request(harness: Any) -> None:
    emulator, api = harness([Turn("never said", delay=30), Turn(echoed)])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("slow")))
    ok(api.send(session_id, {"type": "user.interrupt"}, user_message("instead")))
    assert wait_idles(emulator, session_id)["stop_reason"] == {"type": "end_turn"}
    wait_idles(emulator, session_id, 2)
    assert texts(emulator, session_id) == ["got instead"]


# --- outcomes -----------------------------------------------------------------------------------


def test_an_outcome_is_revised_until_the_grader_is_satisfied(harness: Any, streams: Any) -> None:
    script = [
        Turn("Draft 1", evaluation="needs_revision", explanation="Add a title.", usage=(10, 5)),
        Turn(lambda t: f"Draft 2 ({t[0]})", explanation="Looks good.", usage=(6, 3)),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    stream = streams(emulator, session_id)
    echo = ok(api.send(session_id, outcome(max_iterations=5)))["data"][0]
    assert echo["type"] == "user.define_outcome"
    assert echo["outcome_id"].startswith("outc_")
    assert echo["processed_at"].endswith("Z")
    assert echo["rubric"] == {"type": "text", "content": "Has a title."}
    assert (echo["description"], echo["max_iterations"]) == ("A report", 5)
    stream.read_until_count("session.status_idle")
    assert stream.types == [
        "user.define_outcome",
        "session.status_running",
        "span.model_request_start",
        "agent.message",
        "span.model_request_end",
        "span.outcome_evaluation_start",
        "span.outcome_evaluation_end",
        "span.model_request_start",
        "agent.message",
        "span.model_request_end",
        "span.outcome_evaluation_start",
        "span.outcome_evaluation_end",
        "session.usage",
        "session.status_idle",
    ]
    events = stream.events
    outcome_id = echo["outcome_id"]
    first_start, first_end, second_start, second_end = (
        events[5],
        events[6],
        events[10],
        events[11],
    )
    assert {k: first_start[k] for k in ("outcome_id", "iteration")} == {
        "outcome_id": outcome_id,
        "iteration": 0,
    }
    assert first_end["outcome_evaluation_start_id"] == first_start["id"]
    assert (first_end["iteration"], first_end["result"], first_end["explanation"]) == (
        0,
        "needs_revision",
        "Add a title.",
    )
    assert set(first_end["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }
    assert second_start["iteration"] == second_end["iteration"] == 1
    assert second_end["outcome_evaluation_start_id"] == second_start["id"]
    assert (second_end["result"], second_end["explanation"]) == ("satisfied", "Looks good.")
    assert events[8]["content"][0]["text"] == "Draft 2 (Add a title.)"  # gets the explanation
    assert events[-1]["stop_reason"] == {"type": "end_turn"}
    assert stream.count("session.status_running") == 1  # it never stopped running

    session = ok(api.get(f"/v1/sessions/{session_id}"))
    (evaluation,) = session["outcome_evaluations"]
    assert evaluation["completed_at"].endswith("Z")
    assert evaluation == {
        "type": "outcome_evaluation",
        "outcome_id": outcome_id,
        "description": "A report",
        "iteration": 1,
        "result": "satisfied",
        "explanation": "Looks good.",
        "completed_at": evaluation["completed_at"],
    }
    graded = sum(e["usage"]["input_tokens"] for e in (first_end, second_end))
    assert session["usage"]["input_tokens"] == 10 + 6 + graded
    assert events[-2]["usage"] == session["usage"]


def test_the_iterations_run_out_into_one_final_turn(harness: Any) -> None:
    script = [
        Turn("v1", evaluation="needs_revision"),
        Turn("v2", evaluation="needs_revision", explanation="Still no title."),
        Turn(lambda t: f"giving up: {t[0]}", evaluation="needs_revision"),
        Turn("after"),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    ok(api.send(session_id, outcome(max_iterations=2)))
    assert wait_idles(emulator, session_id)["stop_reason"] == {"type": "end_turn"}
    ends = of_type(emulator, session_id, "span.outcome_evaluation_end")
    assert [(e["iteration"], e["result"]) for e in ends] == [
        (0, "needs_revision"),
        (1, "max_iterations_reached"),
    ]
    assert ends[0]["explanation"] == "The work does not meet the rubric yet."
    assert texts(emulator, session_id) == ["v1", "v2", "giving up: Still no title."]
    (evaluation,) = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert (evaluation["result"], evaluation["iteration"]) == ("max_iterations_reached", 1)
    ok(api.send(session_id, user_message("more")))  # the outcome is over: a plain turn
    wait_idles(emulator, session_id, 2)
    assert len(of_type(emulator, session_id, "span.outcome_evaluation_end")) == 2


def test_a_failed_verdict_ends_the_outcome_at_once(harness: Any) -> None:
    emulator, api = harness([Turn("v1", evaluation="failed"), "unused"])
    session_id = api.new_session()
    ok(api.send(session_id, outcome()))  # max_iterations defaults to 3
    wait_idles(emulator, session_id)
    (end,) = of_type(emulator, session_id, "span.outcome_evaluation_end")
    assert (end["result"], end["iteration"]) == ("failed", 0)
    assert texts(emulator, session_id) == ["v1"]
    ok(api.send(session_id, outcome("Next one")))  # one at a time: the next is welcome now
    wait_idles(emulator, session_id, 2)
    records = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert [(r["description"], r["result"]) for r in records] == [
        ("A report", "failed"),
        ("Next one", "satisfied"),
    ]


def test_custom_tools_pause_an_outcome_turn(harness: Any) -> None:
    script = [
        Turn("Looking it up.", tool_calls=[call("lookup", q="x")]),
        Turn(echoed, evaluation="needs_revision"),
        Turn("fixed"),
    ]
    emulator, api = harness(script)
    session_id = api.new_session()
    ok(api.send(session_id, outcome(description="Find x")))
    paused = wait_idles(emulator, session_id)
    assert paused["stop_reason"]["type"] == "requires_action"
    assert of_type(emulator, session_id, "span.outcome_evaluation_start") == []
    (record,) = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert (record["result"], record["iteration"]) == ("running", 0)
    ok(api.send(session_id, tool_result(paused["stop_reason"]["event_ids"][0], "42")))
    wait_idles(emulator, session_id, 2)
    assert texts(emulator, session_id) == ["Looking it up.", "got 42", "fixed"]
    ends = of_type(emulator, session_id, "span.outcome_evaluation_end")
    assert [(e["iteration"], e["result"]) for e in ends] == [
        (0, "needs_revision"),
        (1, "satisfied"),
    ]


def test_an_interrupt_ends_an_outcome_as_interrupted(harness: Any) -> None:
    script = [Turn("v1", evaluation="needs_revision"), Turn("never said", delay=30), "later"]
    emulator, api = harness(script)
    session_id = api.new_session()
    ok(api.send(session_id, outcome()))
    assert emulator.wait_until(
        lambda: len(of_type(emulator, session_id, "span.outcome_evaluation_end")) == 1
    )
    (record,) = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert (record["result"], record["iteration"]) == ("running", 1)
    ok(api.send(session_id, {"type": "user.interrupt"}))
    assert wait_idles(emulator, session_id)["stop_reason"] == {"type": "end_turn"}
    tail = emulator.events(session_id)[-5:]
    assert [e["type"] for e in tail] == [
        "user.interrupt",
        "span.outcome_evaluation_start",
        "span.outcome_evaluation_end",
        "session.usage",
        "session.status_idle",
    ]
    assert tail[2]["outcome_evaluation_start_id"] == tail[1]["id"]
    assert (tail[2]["iteration"], tail[2]["result"]) == (1, "interrupted")
    (record,) = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert record["result"] == "interrupted"
    assert record["completed_at"] is not None
    assert texts(emulator, session_id) == ["v1"]


def test_an_interrupt_while_an_outcome_waits_for_tools(harness: Any) -> None:
    emulator, api = harness([Turn(tool_calls=[call("lookup")])])
    session_id = api.new_session()
    ok(api.send(session_id, outcome()))
    wait_idles(emulator, session_id)
    ok(api.send(session_id, {"type": "user.interrupt"}))
    assert wait_idles(emulator, session_id, 2)["stop_reason"] == {"type": "end_turn"}
    (end,) = of_type(emulator, session_id, "span.outcome_evaluation_end")
    assert (end["iteration"], end["result"]) == (0, "interrupted")


def test_an_outcome_queued_behind_a_turn_starts_after_it(harness: Any) -> None:
    emulator, api = harness([Turn("plain", delay=0.2), Turn("graded")])
    session_id = api.new_session()
    ok(api.send(session_id, user_message("first")))
    ok(api.send(session_id, outcome()))
    (record,) = ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"]
    assert record["result"] == "pending"
    wait_idles(emulator, session_id, 2)  # the plain turn's idle, then the graded turn's
    types = [e["type"] for e in emulator.events(session_id)]
    assert types.index("span.outcome_evaluation_start") > types.index("span.model_request_end")
    (start,) = of_type(emulator, session_id, "span.outcome_evaluation_start")
    messages = of_type(emulator, session_id, "agent.message")
    assert emulator.events(session_id).index(start) > emulator.events(session_id).index(
        messages[1]
    )  # the plain turn was not graded


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"description": None}, "description"),
        ({"description": 3}, "description"),
        ({"rubric": None}, "rubric"),
        ({"rubric": "Has a title."}, "rubric"),
        ({"rubric": {"type": "url", "url": "x"}}, "rubric.type"),
        ({"rubric": {"type": "text"}}, "rubric.content"),
        ({"rubric": {"type": "text", "content": "x" * 262_145}}, "rubric.content"),
        ({"rubric": {"type": "text", "content": "x", "extra": 1}}, "rubric.extra"),
        ({"rubric": {"type": "file", "file_id": "file_missing"}}, "rubric.file_id"),
        ({"rubric": {"type": "file"}}, "rubric.file_id"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iterations": 21}, "max_iterations"),
        ({"max_iterations": True}, "max_iterations"),
        ({"max_iterations": "3"}, "max_iterations"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_bad_outcomes_are_refused(harness: Any, changes: dict[str, Any], field: str) -> None:
    emulator, api = harness()
    session_id = api.new_session()
    event = {k: v for k, v in {**outcome(), **changes}.items() if v is not None}
    error = error_of(api.send(session_id, event), 400)
    assert error["type"] == "invalid_request_error"
    assert f"events[0].{field}" in error["message"]
    assert emulator.events(session_id) == []
    assert ok(api.get(f"/v1/sessions/{session_id}"))["outcome_evaluations"] == []


def test_outcome_limits_and_file_rubrics_are_accepted(harness: Any) -> None:
    emulator, api = harness([Turn("slow", delay=30)])
    session_id = api.new_session()
    with Api(emulator) as uploader:
        rubric_file = uploader.upload_file("rubric.md", b"# Rubric", "text/markdown")
    file_rubric = {"type": "file", "file_id": rubric_file["id"]}
    echo = ok(api.send(session_id, outcome(rubric=file_rubric, max_iterations=20)))["data"][0]
    assert echo["rubric"] == file_rubric
    one_more = error_of(api.send(session_id, outcome("another")), 400)["message"]
    assert "already" in one_more
    other = api.new_session()
    two = error_of(api.send(other, outcome("a"), outcome("b")), 400)["message"]
    assert "events[1]" in two
    longest = {"type": "text", "content": "x" * 262_144}
    ok(api.send(other, outcome(rubric=longest, max_iterations=1)))
