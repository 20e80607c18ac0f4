"""The Claude emulator takes only the input events the ``anthropic`` SDK's params declare,
with only the fields they declare, and refuses the rest as the service does: a 400
``invalid_request_error`` naming the field, the request changing nothing.

The authority is the SDK's own params (``types/beta/sessions/*_event_params.py`` for the
Claude API, ``types/beta/bedrock/sessions/`` for Claude on Bedrock): the event types and
their fields are read from its unions, so a field the SDK adds or drops shows up here.
Everything is sent through the strict SDK clients of :mod:`tests.support.sdk`.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is a test extra")

from anthropic.types.beta.bedrock.sessions.beta_managed_agents_bedrock_event_params import (  # noqa: E402
    BetaManagedAgentsBedrockEventParams,
)
from anthropic.types.beta.sessions.beta_managed_agents_event_params import (  # noqa: E402
    BetaManagedAgentsEventParams,
)

from req_managed_agents.testing import ClaudeEmulator, Turn, call  # noqa: E402
from tests.support.sdk import strict_bedrock_client, strict_client  # noqa: E402

SANDBOX = "arn:aws:bedrock-agentcore:us-east-1:123456789012:sandbox/dev-0123456789"
FLAVORS = ("anthropic", "bedrock")
UNIONS = {"anthropic": BetaManagedAgentsEventParams, "bedrock": BetaManagedAgentsBedrockEventParams}
# Fields a client could be tempted to send back: the thread an echo names, and what the
# service sets on every event.
TEMPTING = ("session_thread_id", "id", "processed_at")


def declared(union: Any) -> dict[str, frozenset[str]]:
    """The event types a union of the SDK's event params declares, with their fields."""
    fields = {}
    for params in typing.get_args(union):
        hints = typing.get_type_hints(params)
        (kind,) = typing.get_args(hints["type"])
        fields[kind] = frozenset(hints)
    return fields


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    if request.param == "bedrock":
        pytest.importorskip("botocore", reason="AnthropicBedrock signs with botocore")
    return str(request.param)


@pytest.fixture
def session(flavor: str) -> Iterator[tuple[ClaudeEmulator, Any, str]]:
    """An emulator of ``flavor`` whose agent calls one custom tool, the SDK's client (its
    ``beta``) and a session paused on that call."""
    script = [Turn(tool_calls=[call("get_weather", city="Oslo")]), Turn(text="Thanks.")]
    with ClaudeEmulator(script, flavor=flavor, ping_interval=0.2) as emulator:  # type: ignore[arg-type]
        client = strict_bedrock_client(emulator) if flavor == "bedrock" else strict_client(emulator)
        with client:
            agent_id = emulator.add_agent()
            environment_id = SANDBOX if flavor == "bedrock" else emulator.add_environment()
            created = client.beta.sessions.create(agent=agent_id, environment_id=environment_id)
            message = {"type": "user.message", "content": [{"type": "text", "text": "Weather?"}]}
            client.beta.sessions.events.send(created.id, events=[message])
            assert emulator.wait_until(
                lambda: emulator.events(created.id)[-1]["type"] == "session.status_idle"
            )
            yield emulator, client.beta, created.id


def refusal(beta: Any, session_id: str, event: dict[str, Any]) -> str:
    """The message of the 400 ``invalid_request_error`` that refuses ``event``."""
    with pytest.raises(anthropic.BadRequestError) as refused:
        beta.sessions.events.send(session_id, events=[event])
    body = refused.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    return str(body["error"]["message"])


def test_every_field_no_params_declare_is_refused(
    flavor: str, session: tuple[ClaudeEmulator, Any, str]
) -> None:
    emulator, beta, session_id = session
    before = emulator.events(session_id)
    primary = emulator.threads(session_id)[0]["id"]  # a thread that exists, to name
    for kind, fields in declared(UNIONS[flavor]).items():
        for name in [*TEMPTING, "unexpected"]:
            if name in fields:
                continue
            message = refusal(beta, session_id, {"type": kind, name: primary})
            assert f"events[0].{name}" in message, (kind, message)
    assert emulator.events(session_id) == before, "a refused request changes nothing"


def test_event_types_the_flavors_params_lack_are_refused(
    flavor: str, session: tuple[ClaudeEmulator, Any, str]
) -> None:
    _, beta, session_id = session
    own = declared(UNIONS[flavor])
    other = {kind for union in UNIONS.values() for kind in declared(union)} - set(own)
    assert other, "each flavor's params lack a type the other's declare"
    for kind in sorted(other):
        assert "events[0].type" in refusal(beta, session_id, {"type": kind})


def test_a_result_names_no_thread_and_is_routed_by_its_tool_use_id(
    session: tuple[ClaudeEmulator, Any, str],
) -> None:
    emulator, beta, session_id = session
    use = next(e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use")
    primary = emulator.threads(session_id)[0]["id"]
    answer = {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": use["id"],
        "content": [{"type": "text", "text": "sunny"}],
    }
    assert "session_thread_id" in refusal(
        beta, session_id, {**answer, "session_thread_id": primary}
    )
    (echo,) = beta.sessions.events.send(session_id, events=[answer]).data
    assert echo.custom_tool_use_id == use["id"]


NESTED = [
    pytest.param(
        {"type": "user.message", "content": [{"type": "text", "text": "hi", "citations": []}]},
        "events[0].content[0].citations",
        id="a-message-block",
    ),
    pytest.param(
        {
            "type": "user.message",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AA==", "x": 1},
                }
            ],
        },
        "events[0].content[0].source.x",
        id="an-image-source",
    ),
    pytest.param(
        {
            "type": "user.custom_tool_result",
            "custom_tool_use_id": "sevt_1",
            "content": [
                {
                    "type": "search_result",
                    "source": "https://example.com",
                    "title": "t",
                    "content": [{"type": "text", "text": "x"}],
                    "citations": {"enabled": True, "style": "inline"},
                }
            ],
        },
        "events[0].content[0].citations.style",
        id="a-result-search-citations",
    ),
    pytest.param(
        {
            "type": "user.custom_tool_result",
            "custom_tool_use_id": "sevt_1",
            "content": [
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "x"},
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        "events[0].content[0].cache_control",
        id="a-result-document",
    ),
    pytest.param(
        {"type": "system.message", "content": [{"type": "text", "text": "x", "y": 1}]},
        "events[0].content[0]",
        id="a-system-block",
    ),
]


@pytest.mark.parametrize(("event", "named"), NESTED)
def test_undeclared_fields_inside_an_event_are_refused(
    session: tuple[ClaudeEmulator, Any, str], event: dict[str, Any], named: str
) -> None:
    _, beta, session_id = session
    assert named in refusal(beta, session_id, event)


def test_bedrock_takes_images_and_documents_only_as_data(
    flavor: str, session: tuple[ClaudeEmulator, Any, str]
) -> None:
    """The Bedrock params of a user message declare base64 images and base64 or plain-text
    documents, no URL and no file; tool results take the Claude API's blocks."""
    _, beta, session_id = session
    by_url = {
        "type": "user.message",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}],
    }
    if flavor == "bedrock":
        assert "events[0].content[0].source.type" in refusal(beta, session_id, by_url)
    else:
        beta.sessions.events.send(session_id, events=[by_url])


def test_every_declared_field_is_taken(
    flavor: str, session: tuple[ClaudeEmulator, Any, str]
) -> None:
    emulator, beta, session_id = session
    use = next(e for e in emulator.events(session_id) if e["type"] == "agent.custom_tool_use")
    plain = {"type": "text", "media_type": "text/plain", "data": "notes"}
    document = {"type": "document", "source": plain, "title": "Notes", "context": "Read it."}
    search = {
        "type": "search_result",
        "source": "https://example.com",
        "title": "Weather",
        "content": [{"type": "text", "text": "sunny"}],
        "citations": {"enabled": True},
    }
    answer = {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": use["id"],
        "content": [{"type": "text", "text": "sunny"}, document, search],
        "is_error": False,
    }
    assert set(answer) == declared(UNIONS[flavor])["user.custom_tool_result"]
    beta.sessions.events.send(session_id, events=[answer])
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
    }
    message = {
        "type": "user.message",
        "content": [{"type": "text", "text": "Go on."}, image, document],
    }
    beta.sessions.events.send(session_id, events=[message])
    interrupt = {
        "type": "user.interrupt",
        "session_thread_id": emulator.threads(session_id)[0]["id"],
    }
    assert set(interrupt) == declared(UNIONS[flavor])["user.interrupt"]
    beta.sessions.events.send(session_id, events=[interrupt])
