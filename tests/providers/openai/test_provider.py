"""``OpenAIAgents``'s settings and ``OpenAIClient``'s calls, over real sockets against the
emulator: where the key, URL, organization and project come from, what every request
carries, the nouns of the API, and what is refused before anything is sent."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.errors import AuthenticationError, NotFoundError
from req_managed_agents.providers import OpenAIAgents
from req_managed_agents.providers.openai import OpenAIClient
from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call


@pytest.fixture
def emulator() -> Iterator[OpenAIAgentsEmulator]:
    with OpenAIAgentsEmulator(
        [OpenAITurn(text="Hi.", tool_calls=[call("add", a=1, b=2)]), "Done."]
    ) as emulator:
        yield emulator


def test_settings_come_from_arguments_then_the_environment(
    emulator: OpenAIAgentsEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", emulator.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", emulator.base_url)
    monkeypatch.setenv("OPENAI_ORG_ID", "org_1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_1")
    with OpenAIAgents() as provider:
        assert provider.client.base_url == emulator.base_url
        provider.client.list_agents()
    with OpenAIAgents(organization="org_2") as provider:
        provider.client.list_agents()
    first, second = emulator.requests[-2:]
    for request, org in ((first, "org_1"), (second, "org_2")):
        assert request.headers["authorization"] == f"Bearer {emulator.api_key}"
        assert request.headers["openai-beta"] == "agents=v1"
        assert request.headers["openai-organization"] == org
        assert request.headers["openai-project"] == "proj_1"


def test_bad_settings_are_refused_without_quoting_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIAgents()
    with pytest.raises(ConfigurationError, match="http"):
        OpenAIAgents("sk-1", base_url="ftp://example")
    with pytest.raises(ConfigurationError, match="timeout"):
        OpenAIAgents("sk-1", timeout=0)
    with pytest.raises(ConfigurationError) as caught:
        OpenAIAgents("sk-secret value")
    assert "sk-secret" not in str(caught.value)
    assert "api_key=***" in repr(OpenAIAgents("sk-secret", base_url="http://127.0.0.1:9/v1"))


def test_a_wrong_key_is_an_authentication_error(emulator: OpenAIAgentsEmulator) -> None:
    with (
        OpenAIAgents("sk-wrong", base_url=emulator.base_url) as provider,
        pytest.raises(AuthenticationError) as caught,
    ):
        provider.client.list_agents()
    assert caught.value.status_code == 401
    assert "sk-wrong" not in str(caught.value)


def test_agents_sessions_items_and_turns(emulator: OpenAIAgentsEmulator) -> None:
    with emulator.provider() as provider:
        client = provider.client
        agent = client.create_agent(model="gpt-5.1", name="calc", metadata={"team": "a"})
        assert client.get_agent(agent["id"])["name"] == "calc"
        assert client.update_agent(agent["id"], instructions="Be brief.")["instructions"]
        assert agent["id"] in [a["id"] for a in client.list_agents()]
        session = client.create_session("none", agent_id=agent["id"], input="Hello")
        sid = session["id"]
        assert emulator.wait_until(lambda: client.get_session(sid)["status"] == "requires_action")
        (turn,) = client.list_turns(sid)
        assert client.get_turn(sid, turn["id"])["status"] == "waiting"
        assert [i["type"] for i in client.list_turn_items(sid, turn["id"])][-1] == "function_call"
        assert client.list_items(sid)[0]["role"] == "user"
        updated = client.update_session(sid, metadata={"k": "v"})
        assert updated["metadata"]["k"] == "v"
        assert sid in [s["id"] for s in client.list_sessions(agent_id=agent["id"])]
        assert sid in [s["id"] for s in client.list_sessions(metadata={"k": "v"})]
        assert client.list_subagents(sid) == []
        client.delete_agent(agent["id"])
        with pytest.raises(NotFoundError):
            client.get_agent(agent["id"])


def test_a_lost_create_answer_finds_the_session_it_made(emulator: OpenAIAgentsEmulator) -> None:
    emulator.reset_requests("POST", r"/v1/agents/sessions", after_acting=True)
    with emulator.provider() as provider:
        agent = emulator.add_agent()
        session = provider.client.create_session("none", agent_id=agent, input="Hello")
    assert emulator.session_ids() == [session["id"]], "one session, found by its token"


BAD_CALLS: list[tuple[Callable[[OpenAIClient], object], str]] = [
    (lambda c: c.create_session("none", agent_id="a"), "must be created with its input"),
    (lambda c: c.create_session("moon", agent_id="a", input="x"), "environment.type"),
    (lambda c: c.create_session({"type": "self_hosted"}, agent_id="a"), "workspace_directory"),
    (lambda c: c.create_session("none", input="x"), "needs agent_id"),
    (lambda c: c.create_session("none", agent_id="a", input="x", spend_control=0), "positive"),
    (lambda c: c.create_session("none", agent_id="a", input="x", review="strict"), "review"),
    (
        lambda c: c.create_session(
            "none", agent_id="a", input="x", metadata={f"k{i}": "v" for i in range(17)}
        ),
        "at most 16 pairs",
    ),
    (lambda c: c.create_agent(name="no model"), "needs a model"),
    (lambda c: c.get_agent(".."), "an id must be"),
    (lambda c: c.send_events("s", [], idempotency_key="k"), "at least one event"),
    (
        lambda c: c.send_events("s", [{"type": "user.message"}], idempotency_key="k"),
        "agent.session.input",
    ),
    (lambda c: c.list_sessions(order="sideways"), "order must be"),
]


@pytest.mark.parametrize(("call", "fragment"), BAD_CALLS)
def test_the_client_refuses_bad_input_before_sending(
    emulator: OpenAIAgentsEmulator, call: Callable[[OpenAIClient], object], fragment: str
) -> None:
    with emulator.provider() as provider, pytest.raises(ValueError, match=fragment):
        call(provider.client)
    assert not emulator.requests


def test_a_create_whose_stream_head_came_too_late_is_found_and_not_made_twice(
    emulator: OpenAIAgentsEmulator,
) -> None:
    """The service was slow to answer the streaming create (its head came after the idle
    timeout): the create may still land, so the session is looked for after a pause, found
    once it exists, and the run goes on with it - one session, the prompt sent once."""
    import threading

    from req_managed_agents import Tools, run_to_completion

    looking = threading.Event()

    def hold_the_create() -> None:
        assert looking.wait(30), "the client looked for the session it may have made"

    def let_the_create_land() -> None:
        looking.set()
        assert emulator.wait_until(lambda: bool(emulator.session_ids()), 30)

    emulator.before_requests("POST", r"/v1/agents/sessions", hold_the_create)
    emulator.before_requests("GET", r"/v1/agents/sessions", let_the_create_land)
    with emulator.provider() as provider:
        result = run_to_completion(
            provider,
            "Say hi.",
            handler=Tools(),
            agent_id=emulator.add_agent([OpenAITurn(text="hi")]),
            idle_timeout=0.5,
            timeout=60,
        )
    assert result.text == "hi"
    assert emulator.session_ids() == [result.session_id]
