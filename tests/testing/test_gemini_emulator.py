"""The Gemini emulator refuses what the service refuses, and its faults (a 404 right after
create, a stream that cannot resume, a dropped stream) behave as documented; every answer
and event is checked strictly (``tests.support.gemini_api``), and so is the check itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

pytest.importorskip("google.genai")

from google.genai._gaos.types.interactions.interaction import Interaction

from req_managed_agents.testing import GeminiEmulator, GeminiTurn, call
from tests.support.gemini_api import GeminiApi, check_event, strict

ADD = {"type": "function", "name": "add"}
TOOLS = [
    GeminiTurn(text="Let me add.", tool_calls=[call("add", a=1, b=2), call("add", a=3, b=4)]),
    GeminiTurn(text=lambda results: "+".join(results)),
    GeminiTurn(text="Third."),
]
Start = Callable[..., tuple[GeminiEmulator, GeminiApi]]


@pytest.fixture
def api() -> Iterator[Start]:
    started: list[tuple[GeminiEmulator, GeminiApi]] = []

    def start(*args: Any, **kwargs: Any) -> tuple[GeminiEmulator, GeminiApi]:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = GeminiEmulator(*args, **kwargs)
        started.append((emulator, GeminiApi(emulator)))
        return started[-1]

    yield start
    for emulator, client in started:
        client.close()
        emulator.close()


def paused(emulator: GeminiEmulator, api: GeminiApi, **body: Any) -> dict[str, Any]:
    """A first hop that stops at requires_action."""
    body = {"agent": emulator.add_agent(tools=[ADD]), "input": "Add.", **body}
    interaction: dict[str, Any] = api.ok("POST", "/interactions", body)
    assert interaction["status"] == "requires_action"
    return interaction


def results(interaction: dict[str, Any], *answers: str) -> list[dict[str, Any]]:
    calls = [s["id"] for s in interaction["steps"] if s["type"] == "function_call"]
    return [
        {"type": "function_result", "call_id": call_id, "result": answer}
        for call_id, answer in zip(calls, answers)
    ]


def answer(interaction: dict[str, Any], steps: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "agent": interaction["agent"],
        "previous_interaction_id": interaction["id"],
        "input": steps,
        **more,
    }


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (
            {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "idempotency_key": "k"},
            400,
            'Unknown name "idempotency_key"',
        ),
        ({"input": "Hi"}, 400, "agent is required"),
        (
            {"agent": "deep-research-pro-preview-12-2025", "model": "gemini-3", "input": "Hi"},
            400,
            "cannot be combined",
        ),
        ({"agent": "nobody", "input": "Hi"}, 404, "'nobody' was not found"),
        ({"agent": "deep-research-pro-preview-12-2025"}, 400, "input is required"),
        (
            {
                "agent": "deep-research-pro-preview-12-2025",
                "input": "Hi",
                "previous_interaction_id": "int_nope",
            },
            400,
            "does not exist",
        ),
        (
            {
                "agent": "deep-research-pro-preview-12-2025",
                "input": "Hi",
                "background": True,
                "store": False,
            },
            400,
            "must be stored",
        ),
        (
            {
                "agent": "deep-research-pro-preview-12-2025",
                "input": [{"type": "function_result", "call_id": "c1", "result": "1"}],
            },
            400,
            "unknown call id 'c1'",
        ),
        (
            {
                "agent": "deep-research-pro-preview-12-2025",
                "input": "Hi",
                "continuation_token": "t",
            },
            400,
            "needs the previous_interaction_id",
        ),
    ],
)
def test_a_create_the_service_refuses_is_refused(
    api: Start, body: Any, status: int, says: str
) -> None:
    emulator, client = api()
    error = client.error(status, "POST", "/interactions", body)
    assert says in error["message"]
    assert emulator.interaction_ids() == []


@pytest.mark.parametrize(
    "labels",
    [
        {"Run": "x"},
        {"1run": "x"},
        {"run": "X"},
        {"r" * 64: "x"},
        {"run": "x" * 64},
        {"run": 7},
        {f"k{i}": "v" for i in range(65)},
        ["run"],
    ],
)
def test_bad_labels_are_refused(api: Start, labels: Any) -> None:
    _, client = api()
    body = {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "labels": labels}
    assert client.error(400, "POST", "/interactions", body)["code"] == "invalid_request"


def test_good_labels_are_echoed(api: Start) -> None:
    _, client = api()
    labels = {"run": "r-1_a", "empty": "", "k" + "x" * 62: "v" * 63}
    body = {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "labels": labels}
    interaction_id = client.ok("POST", "/interactions", body)["id"]
    assert client.ok("GET", f"/interactions/{interaction_id}", stream="false")["labels"] == labels


def test_function_results_must_answer_every_pending_call_exactly_once(api: Start) -> None:
    emulator, client = api(TOOLS)
    first = paused(emulator, client)
    one, two = results(first, "3", "7")
    refusals = [
        ([one], "has no function_result"),
        ([one, one], "answered more than once"),
        ([one, two, {**two, "call_id": "call_other"}], "unknown call id 'call_other'"),
        (
            [one, {"type": "user_input", "content": [{"type": "text", "text": "Hi"}]}],
            "function_result steps only",
        ),
    ]
    for steps, says in refusals:
        assert says in client.error(400, "POST", "/interactions", answer(first, steps))["message"]
    second = client.ok("POST", "/interactions", answer(first, [two, one]))
    assert second["status"] == "completed"
    assert second["steps"][-1]["content"][0]["text"] == "3+7"  # in call order
    again = client.ok("POST", "/interactions", answer(first, [one, two]))  # a branch
    assert again["id"] != second["id"]
    assert again["steps"][-1] == second["steps"][-1]
    follow_up = client.error(400, "POST", "/interactions", answer(second, [one, two]))
    assert "no pending call" in follow_up["message"]
    third = client.ok("POST", "/interactions", answer(second, [], input="And then?"))
    assert third["steps"][-1]["content"][0]["text"] == "Third."


def test_continuing_needs_the_issued_token_the_same_agent_and_a_stopped_hop(api: Start) -> None:
    script = [GeminiTurn(text="Part one.", end="requires_continuation"), GeminiTurn(delay=60)]
    emulator, client = api(script)
    agent_id = emulator.add_agent()
    first = client.ok("POST", "/interactions", {"agent": agent_id, "input": "Go."})
    token = first["continuation_token"]
    base = {"agent": agent_id, "previous_interaction_id": first["id"]}
    assert (
        "not the one"
        in client.error(400, "POST", "/interactions", {**base, "continuation_token": "x"})[
            "message"
        ]
    )
    assert (
        "carries no input"
        in client.error(
            400, "POST", "/interactions", {**base, "continuation_token": token, "input": "Hi"}
        )["message"]
    )
    other = emulator.add_agent()
    assert (
        "previous interaction's agent"
        in client.error(
            400, "POST", "/interactions", {**base, "agent": other, "continuation_token": token}
        )["message"]
    )
    running = client.ok(
        "POST", "/interactions", {**base, "continuation_token": token, "background": True}
    )
    assert running["status"] == "in_progress"
    later = {"agent": agent_id, "previous_interaction_id": running["id"], "input": "Hi"}
    assert "still running" in client.error(400, "POST", "/interactions", later)["message"]
    assert client.ok("POST", f"/interactions/{running['id']}/cancel")["status"] == "cancelled"
    done = client.ok(
        "POST", "/interactions", {"agent": emulator.add_agent(["Done."]), "input": "Hi"}
    )
    assert (
        "cannot be cancelled"
        in client.error(400, "POST", f"/interactions/{done['id']}/cancel")["message"]
    )


def test_a_call_to_an_undeclared_function_fails_the_hop(api: Start) -> None:
    emulator, client = api(TOOLS)
    events = client.ok(
        "POST", "/interactions", {"agent": emulator.add_agent(), "input": "Add.", "stream": True}
    )
    assert [e["event_type"] for e in events][-3:] == [
        "error",
        "interaction.status_update",
        "interaction.completed",
    ]
    assert "does not declare" in events[-3]["error"]["message"]
    assert events[-1]["interaction"]["status"] == "failed"


def test_keys_revisions_routes_and_queries_are_checked(api: Start) -> None:
    emulator, client = api()
    client.http.headers["x-goog-api-key"] = "wrong"
    assert client.error(401, "GET", "/agents")["code"] == "authentication"
    client.http.headers["x-goog-api-key"] = emulator.api_key
    client.http.headers["Api-Revision"] = "2025-01-01"
    assert "2026-05-20" in client.error(400, "GET", "/agents")["message"]
    client.http.headers["Api-Revision"] = "2026-05-20"
    assert client.ok("GET", "/agents") == {"agents": []}
    assert client.error(404, "GET", "/interactions")["code"] == "not_found"
    assert client.error(400, "GET", "/agents", bogus="1")["code"] == "invalid_request"
    assert client.error(400, "GET", "/agents", page_token="made-up")["code"] == "invalid_request"
    client.ok("POST", "/agents", {"id": "twin"})
    assert client.error(409, "POST", "/agents", {"id": "twin"})["code"] == "already_exists"
    assert client.error(400, "POST", "/agents", {"id": "Bad_Id"})["code"] == "invalid_request"
    assert (
        client.error(400, "POST", "/agents", {"id": "ok", "name": "x"})["code"] == "invalid_request"
    )
    assert client.error(404, "POST", "/environments", {"from_environment": "environments/env_x"})
    assert client.error(400, "POST", "/environments", {"mode": "anywhere"})


def test_resuming_needs_stream_and_an_event_of_the_interaction(api: Start) -> None:
    _, client = api(["Hello."])
    events = client.ok(
        "POST",
        "/interactions",
        {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "stream": True},
    )
    path = f"/interactions/{events[0]['interaction']['id']}"
    first = events[0]["event_id"]
    assert (
        "only be used if stream is true"
        in client.error(400, "GET", path, stream="false", last_event_id=first)["message"]
    )
    assert (
        "cannot be resumed"
        in client.error(400, "GET", path, stream="true", last_event_id="evt_other")["message"]
    )
    assert client.ok("GET", path, stream="true", last_event_id=first) == events[1:]
    assert client.ok("GET", path, stream="true", last_event_id=events[-1]["event_id"]) == []


# --- faults -----------------------------------------------------------------------------------


def test_a_created_interaction_can_read_404_for_its_first_gets(api: Start) -> None:
    emulator, client = api([GeminiTurn(text="Done.", delay=0.2)])
    emulator.not_found_after_create(reads=2)
    assert emulator.pending_faults() == 2
    body = {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "background": True}
    created = client.ok("POST", "/interactions", body)
    path = f"/interactions/{created['id']}"
    assert client.error(404, "GET", path, stream="false")["code"] == "not_found"
    assert client.error(404, "GET", path, stream="true")["code"] == "not_found"
    assert emulator.pending_faults() == 0
    events = client.ok("GET", path, stream="true")  # it ran all along
    assert events[-1]["interaction"]["status"] == "completed"


def test_a_stream_that_cannot_resume(api: Start) -> None:
    emulator, client = api(["Hello."])
    events = client.ok(
        "POST",
        "/interactions",
        {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "stream": True},
    )
    path = f"/interactions/{events[0]['interaction']['id']}"
    emulator.refuse_resumes(times=1, status=410)
    assert (
        "cannot be resumed"
        in client.error(410, "GET", path, stream="true", last_event_id=events[2]["event_id"])[
            "message"
        ]
    )
    assert emulator.pending_faults() == 0
    assert client.ok("GET", path, stream="true", last_event_id=events[2]["event_id"]) == events[3:]
    assert client.ok("GET", path, stream="false")["status"] == "completed"  # the catch-up


def test_stream_faults_count_positions_across_the_conversation(api: Start) -> None:
    emulator, client = api(TOOLS)
    first = paused(emulator, client)
    conversation = emulator.conversation_id(first["id"])
    assert conversation == first["id"]
    hop_one = len(emulator.events(first["id"]))
    emulator.drop_stream(hop_one + 2, session_id=conversation)
    received = client.cut_stream(
        "POST", "/interactions", answer(first, results(first, "3", "7"), stream=True)
    )
    assert [e["event_type"] for e in received] == ["interaction.created", "step.start"]
    assert emulator.stream_connections(conversation)[-1].end == "dropped"
    second_id = received[0]["interaction"]["id"]
    assert emulator.wait_until(lambda: emulator.interaction(second_id)["status"] == "completed")
    rest = client.ok(
        "GET", f"/interactions/{second_id}", stream="true", last_event_id=received[-1]["event_id"]
    )
    assert received + rest == emulator.events(second_id)
    log = emulator.conversation_events(second_id)
    assert log == emulator.events(first["id"]) + emulator.events(second_id)
    assert emulator.running() == []


def test_injected_errors_are_in_the_api_shape(api: Start) -> None:
    emulator, client = api()
    emulator.fail_requests("POST", r"/v1/interactions", 503, retry_after=2)
    response = client.call(
        "POST", "/interactions", {"agent": "deep-research-pro-preview-12-2025", "input": "Hi"}
    )
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert response.json() == {
        "error": {"code": "service_unavailable", "message": "injected failure"}
    }
    with pytest.raises(ValueError, match="must not be empty"):
        emulator.fail_requests("GET", ".*", 500, code="")


def test_a_failed_or_deleted_interaction(api: Start) -> None:
    emulator, client = api([GeminiTurn(text="slow", delay=60)])
    body = {"agent": "deep-research-pro-preview-12-2025", "input": "Hi", "background": True}
    created = client.ok("POST", "/interactions", body)
    emulator.fail_interaction(created["id"], "The backend fell over.")
    failed = client.ok("GET", f"/interactions/{created['id']}", stream="false")
    assert failed["status"] == "failed"
    assert failed["errors"] == [{"code": "api_error", "message": "The backend fell over."}]
    other = client.ok("POST", "/interactions", body)
    assert client.ok("DELETE", f"/interactions/{other['id']}") == {}
    assert client.error(404, "GET", f"/interactions/{other['id']}", stream="false")
    assert emulator.interaction(other["id"])["status"] == "cancelled"
    assert emulator.running() == []


def test_the_pytest_fixture(gemini_emulator: GeminiEmulator) -> None:
    agent_id = gemini_emulator.add_agent(["From the fixture."])
    client = GeminiApi(gemini_emulator, version="v1beta")
    try:
        interaction = client.ok(
            "POST", "/interactions", {"agent": f"agents/{agent_id}", "input": "Hi"}
        )
    finally:
        client.close()
    assert interaction["agent"] == f"agents/{agent_id}"
    assert interaction["steps"][-1]["content"][0]["text"] == "From the fixture."


# --- the strict check itself --------------------------------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        {"event_type": "interaction.status_update", "event_id": "e1", "status": "completed"},
        {
            "event_type": "step.start",
            "event_id": "e1",
            "index": 0,
            "step": {"type": "function_call", "id": "c", "name": "add"},
        },
        {"event_type": "interaction.heartbeat", "event_id": "e1"},
        {
            "event_type": "interaction.status_update",
            "event_id": "e1",
            "interaction_id": "i",
            "status": "waiting",
        },
        {
            "event_type": "step.delta",
            "event_id": "e1",
            "index": 0,
            "delta": {"type": "text", "text": "x", "extra": 1},
        },
        {"event_type": "step.stop", "index": 0},
    ],
)
def test_the_strict_check_refuses_what_the_models_do_not_declare(event: dict[str, Any]) -> None:
    with pytest.raises((AssertionError, ValueError)):
        check_event(event)


def test_the_strict_check_refuses_an_interaction_with_outputs() -> None:
    strict({"id": "i", "status": "completed"}, Interaction)
    with pytest.raises(AssertionError, match="outputs"):
        strict({"id": "i", "status": "completed", "outputs": []}, Interaction)
