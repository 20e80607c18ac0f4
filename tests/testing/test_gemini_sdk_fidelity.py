"""The Gemini emulator driven by google-genai 3.6.1's own client over loopback sockets, every
answer and every streamed event checked strictly against the SDK's models on the wire
(``tests.support.gemini_api.StrictTransport``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

genai = pytest.importorskip("google.genai")

from google.genai import _interactions_errors as sdk_errors  # noqa: E402

from req_managed_agents.testing import GeminiEmulator, GeminiTurn, ToolCall, call  # noqa: E402
from tests.support.gemini_api import StrictTransport, sdk_client  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*usage is experimental:UserWarning")

ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
}
MUL = {**ADD, "name": "mul", "description": "Multiply two integers."}
TWO_TOOLS = [
    GeminiTurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    GeminiTurn(text=lambda results: f"The results are {' and '.join(results)}.", usage=(7, 3)),
]
HOP = ["interaction.created", "interaction.status_update", "interaction.completed"]
Start = Callable[..., tuple[GeminiEmulator, Any, StrictTransport]]


@pytest.fixture
def sdk() -> Iterator[Start]:
    """Start emulators and strict SDK clients aimed at them; close them all afterwards."""
    started: list[tuple[GeminiEmulator, Any, StrictTransport]] = []

    def start(*args: Any, http_options: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        kwargs.setdefault("ping_interval", 0.2)
        emulator = GeminiEmulator(*args, **kwargs)
        client, transport = sdk_client(emulator, **(http_options or {}))
        started.append((emulator, client, transport))
        return started[-1]

    yield start
    for emulator, _, transport in started:
        transport.close()
        emulator.close()


def wait_for(emulator: GeminiEmulator, interaction_id: str, status: str) -> None:
    reached = emulator.wait_until(lambda: emulator.interaction(interaction_id)["status"] == status)
    assert reached, emulator.interaction(interaction_id)


def types(events: list[Any]) -> list[str]:
    return [event.event_type for event in events]


def test_a_tool_run_done_by_hand_with_the_sdk(sdk: Start) -> None:
    emulator, client, transport = sdk(TWO_TOOLS)
    agent_id = emulator.add_agent()
    first = client.interactions.create(
        agent=agent_id, input="Compute.", tools=[ADD, MUL], labels={"run": "r-1"}
    )
    assert first.status == "requires_action"
    assert first.labels == {"run": "r-1"}
    calls = [step for step in first.steps if step.type == "function_call"]
    assert [(c.name, c.arguments) for c in calls] == [
        ("add", {"a": 1, "b": 2}),
        ("mul", {"a": 3, "b": 4}),
    ]
    assert first.output_text == "Let me compute."
    results = [
        {"type": "function_result", "call_id": c.id, "name": c.name, "result": r, "is_error": False}
        for c, r in zip(calls, ["3", "12"])
    ]
    second = client.interactions.create(
        agent=agent_id, previous_interaction_id=first.id, input=results
    )
    assert second.id != first.id
    assert second.status == "completed"
    assert second.previous_interaction_id == first.id
    assert second.output_text == "The results are 3 and 12."
    assert second.usage.total_input_tokens == 7
    assert [step.type for step in second.steps] == [*["function_result"] * 2, "model_output"]
    assert transport.checked == {"POST 200": 2}


def test_a_streamed_create_resumes_from_every_event(sdk: Start) -> None:
    emulator, client, transport = sdk(["Hello there, how are you?"])
    events = list(client.interactions.create(agent=emulator.add_agent(), input="Hi", stream=True))
    assert types(events) == [
        "interaction.created",
        "step.start",
        *["step.delta"] * 3,
        "step.stop",
        "interaction.status_update",
        "interaction.completed",
    ]
    assert "".join(e.delta.text for e in events if e.event_type == "step.delta") == (
        "Hello there, how are you?"
    )
    ids = [event.event_id for event in events]
    assert len(set(ids)) == len(ids)
    interaction_id = events[0].interaction.id
    assert events[-1].interaction.status == "completed"
    for position, event_id in enumerate(ids):
        resumed = client.interactions.get(interaction_id, stream=True, last_event_id=event_id)
        assert [event.event_id for event in resumed] == ids[position + 1 :]
    replayed = list(client.interactions.get(interaction_id, stream=True))
    assert [event.event_id for event in replayed] == ids
    resumed_events = sum(len(ids) - position - 1 for position in range(len(ids)))
    assert len(transport.events) == 2 * len(ids) + resumed_events  # each checked strictly


def test_a_background_interaction_is_read_cancelled_and_deleted(sdk: Start) -> None:
    emulator, client, transport = sdk([GeminiTurn(text="slow", delay=60)])
    created = client.interactions.create(
        agent=emulator.add_agent(), input="Take your time.", background=True
    )
    assert created.status == "in_progress"
    read = client.interactions.get(created.id, include_input=True)
    assert read.status == "in_progress"
    assert read.input == "Take your time."
    cancelled = client.interactions.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert client.interactions.cancel(created.id).status == "cancelled"  # a retried cancel
    events = list(client.interactions.get(created.id, stream=True))
    assert types(events) == HOP
    assert events[1].status == "cancelled"
    client.interactions.delete(created.id)
    with pytest.raises(sdk_errors.NotFoundError):
        client.interactions.get(created.id)
    assert emulator.running() == []
    assert transport.checked["DELETE 200"] == 1


def test_a_stream_follows_a_running_interaction_until_it_completes(sdk: Start) -> None:
    emulator, client, _ = sdk([GeminiTurn(text="done", delay=0.3, thinking=True)])
    created = client.interactions.create(agent=emulator.add_agent(), input="Go.", background=True)
    events = list(client.interactions.get(created.id, stream=True))
    assert types(events)[:5] == [
        "interaction.created",
        "step.start",
        "step.delta",
        "step.delta",
        "step.stop",
    ]
    assert [e.delta.type for e in events if e.event_type == "step.delta"][:2] == [
        "thought_summary",
        "thought_signature",
    ]
    assert events[-1].interaction.status == "completed"
    got = client.interactions.get(created.id)
    assert [step.type for step in got.steps] == ["user_input", "thought", "model_output"]


def test_server_side_steps_failures_and_continuations_pass_strictly(sdk: Start) -> None:
    search = [
        {"type": "google_search_call", "id": "gs_1", "arguments": {"queries": ["weather"]}},
        {
            "type": "google_search_result",
            "call_id": "gs_1",
            "result": [{"search_suggestions": "<div>Sunny</div>"}],
        },
    ]
    script = [
        GeminiTurn(
            text="Looking it up.",
            mcp_calls=[ToolCall("lookup", {"q": "x"}, result="found", mcp_server="docs")],
            steps=search,
            end="requires_continuation",
        ),
        GeminiTurn(text="Broken.", end="failed"),
    ]
    emulator, client, _ = sdk(script)
    agent_id = emulator.add_agent()
    events = list(client.interactions.create(agent=agent_id, input="Search.", stream=True))
    starts = [e.step.type for e in events if e.event_type == "step.start"]
    assert starts == [
        "model_output",
        "mcp_server_tool_call",
        "mcp_server_tool_result",
        "google_search_call",
        "google_search_result",
    ]
    first = client.interactions.get(events[0].interaction.id)
    assert first.status == "requires_continuation"
    assert events[-2].continuation_token == first.continuation_token
    second = client.interactions.create(
        agent=agent_id,
        previous_interaction_id=first.id,
        continuation_token=first.continuation_token,
        stream=True,
    )
    events = list(second)
    assert [e.event_type for e in events][-3:] == ["error", *HOP[1:]]
    failed = client.interactions.get(events[0].interaction.id)
    assert failed.status == "failed"
    assert failed.errors[0].code == "api_error"


def test_agents_and_environments_through_the_sdk(sdk: Start) -> None:
    _, client, transport = sdk()
    agent = client.agents.create(id="calc-agent", description="Adds.", tools=[ADD])
    assert agent.id == "calc-agent"
    for name in ("b-agent", "c-agent"):
        client.agents.create(id=name)
    page = client.agents.list(page_size=2)
    assert [a.id for a in page.agents] == ["calc-agent", "b-agent"]
    rest = client.agents.list(page_size=2, page_token=page.next_page_token)
    assert [a.id for a in rest.agents] == ["c-agent"]
    assert rest.next_page_token is None
    assert client.agents.get("calc-agent").tools[0].name == "add"
    client.agents.delete("b-agent")
    assert [a.id for a in client.agents.list().agents] == ["calc-agent", "c-agent"]

    source = {"type": "inline", "content": "print(1)", "target": "/work/main.py"}
    base = client.environments.create(mode="on_demand", sources=[source])
    assert base.id.startswith("env_")
    assert base.status == "active"
    derived = client.environments.create(from_environment=f"environments/{base.id}")
    assert derived.sources[0].target == "/work/main.py"
    hosted = client.environments.create(mode="self_hosted")
    listed = client.environments.list(mode="on_demand")
    assert [e.id for e in listed.environments] == [base.id, derived.id]
    assert client.environments.get(hosted.id).mode == "self_hosted"
    client.environments.delete(hosted.id)
    assert len(client.environments.list().environments) == 2
    interaction = client.interactions.create(agent="calc-agent", input="Hi", environment=derived.id)
    assert interaction.environment_id == derived.id
    assert transport.checked["GET 200"] >= 6


def test_v1beta_and_the_api_revision_header_are_served(sdk: Start) -> None:
    options = {"api_version": "v1beta", "headers": {"Api-Revision": "2026-05-20"}}
    emulator, client, _ = sdk(["Hello."], http_options=options)
    interaction = client.interactions.create(agent="deep-research-pro-preview-12-2025", input="Hi")
    assert interaction.output_text == "Hello."
    request = emulator.requests[-1]
    assert request.path == "/v1beta/interactions"
    assert request.headers["api-revision"] == "2026-05-20"


def test_the_sdk_raises_the_status_error_of_each_refusal(sdk: Start) -> None:
    emulator, client, _ = sdk(TWO_TOOLS)
    agent_id = emulator.add_agent()
    with pytest.raises(sdk_errors.BadRequestError, match="Unknown name"):
        client.interactions.create(agent=agent_id, input="Hi", extra_body={"idempotency_key": "k"})
    with pytest.raises(sdk_errors.NotFoundError, match="not_found"):
        client.interactions.create(agent="no-such-agent", input="Hi")
    with pytest.raises(sdk_errors.BadRequestError, match="Label key"):
        client.interactions.create(agent=agent_id, input="Hi", labels={"Run": "x"})
    emulator.fail_requests("POST", "/v1/interactions", 429, retry_after=0)
    with pytest.raises(sdk_errors.RateLimitError, match="rate_limit_exceeded"):
        client.interactions.create(agent=agent_id, input="Hi")
