"""The hostile-answer sweep over every route of every provider's API client (Claude, on
Anthropic's API and Bedrock, OpenAI, AgentCore, Gemini), over real sockets: the first
request a call makes is answered, in place of the service, with one of the answers of
``_answers`` that its route cannot use. Each must end as a
:class:`~req_managed_agents.errors.MalformedResponseError` naming the request and what was
wrong - never a ``KeyError``, ``TypeError`` or ``AttributeError``, nor a value handed back
that the caller would trip on - and its message must stay short whatever the answer's size.

A table lists each route: the call, and the shape of answer it reads (one resource with its
id, an object without one, a page of items, the events a post recorded). A test checks that
the table leaves out no public method of any client, so a route added later joins the sweep
or is named among those whose answer is not read as JSON.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest

from req_managed_agents.errors import MalformedResponseError
from req_managed_agents.providers.agentcore import AgentCoreClient
from req_managed_agents.providers.claude import ClaudeBedrockClient, ClaudeClient
from req_managed_agents.providers.gemini._client import GeminiClient
from req_managed_agents.providers.openai import OpenAIClient
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    GeminiEmulator,
    OpenAIAgentsEmulator,
)
from tests.hostile._answers import HUGE, PAGE_ANSWERS, POSTED_ANSWERS, RESOURCE_ANSWERS

Call = Callable[[Any], Any]


def _page_answers(member: str, cursor: str) -> dict[str, bytes]:
    """The page answers, listing under ``member`` with the next page's token in ``cursor``
    (AgentCore and Gemini name a list after its items and leave an empty one out, so a page
    without it is an empty page there)."""
    if member == "data":
        return PAGE_ANSWERS
    answers = {
        name: body.replace(b'"data"', json.dumps(member).encode())
        for name, body in PAGE_ANSWERS.items()
        if name != "no-data"
    }
    answers["huge-cursor"] = json.dumps({member: [], cursor: HUGE}).encode()
    return answers


OBJECT_ANSWERS = {name: body for name, body in RESOURCE_ANSWERS.items() if name != "no-id"}
"""What an object that needs no id of its own (a probe's verdict) cannot be."""
POLLED_ANSWERS = {n: body for n, body in RESOURCE_ANSWERS.items() if n not in ("empty", "null")}
"""What a poll cannot answer (nothing, or null, says the queue is empty)."""

SHAPES: dict[str, dict[str, bytes]] = {
    "resource": RESOURCE_ANSWERS,
    "object": OBJECT_ANSWERS,
    "polled": POLLED_ANSWERS,
    "page": PAGE_ANSWERS,
    "posted": POSTED_ANSWERS,
}


@dataclass(frozen=True)
class Route:
    """One client method, called with ids that need not exist (the server never acts)."""

    name: str
    call: Call
    shape: str = "resource"  # a key of SHAPES
    member: str = "data"
    more: Mapping[str, bytes] = field(default_factory=dict)  # answers only this route reads
    usable: tuple[str, ...] = ()  # answers of its shape this route can use
    cursor: str = "nextToken"  # where a page names the next one (member not "data")

    def answers(self) -> dict[str, bytes]:
        if self.shape == "page":
            shared = _page_answers(self.member, self.cursor)
        else:
            shared = SHAPES[self.shape]
        kept = {name: body for name, body in shared.items() if name not in self.usable}
        return {**kept, **self.more}


_SINCE = datetime(2026, 1, 1, tzinfo=timezone.utc)
S, T, V, C, E, W, M, F = "sesn_1", "sthr_1", "vlt_1", "vcrd_1", "env_1", "work_1", "mem_1", "f_1"
MS = "memstore_1"

CLAUDE = [
    Route("create_agent", lambda c: c.create_agent(name="a", model="claude-sonnet-4-6")),
    Route("get_agent", lambda c: c.get_agent("agent_1")),
    Route("update_agent", lambda c: c.update_agent("agent_1", version=1, name="b")),
    Route("list_agents", lambda c: c.list_agents(), "page"),
    Route("list_agent_versions", lambda c: c.list_agent_versions("agent_1"), "page"),
    Route("archive_agent", lambda c: c.archive_agent("agent_1")),
    Route("create_environment", lambda c: c.create_environment(name="e")),
    Route("get_environment", lambda c: c.get_environment(E)),
    Route("update_environment", lambda c: c.update_environment(E, name="f")),
    Route("list_environments", lambda c: c.list_environments(), "page"),
    Route("archive_environment", lambda c: c.archive_environment(E)),
    Route("delete_environment", lambda c: c.delete_environment(E)),
    Route("create_session", lambda c: c.create_session("agent_1", E)),
    Route("find_created_session", lambda c: c.find_created_session("t", _SINCE), "page"),
    Route("get_session", lambda c: c.get_session(S)),
    Route("update_session", lambda c: c.update_session(S, title="t")),
    Route("list_sessions", lambda c: c.list_sessions(), "page"),
    Route("archive_session", lambda c: c.archive_session(S)),
    Route("delete_session", lambda c: c.delete_session(S)),
    Route("attach_file", lambda c: c.attach_file(S, F)),
    Route("list_session_resources", lambda c: c.list_session_resources(S), "page"),
    Route("delete_session_resource", lambda c: c.delete_session_resource(S, "sesrsc_1")),
    Route("send_events", lambda c: c.send_events(S, [{"type": "user.interrupt"}]), "posted"),
    Route("list_events", lambda c: c.list_events(S), "page"),
    Route("iter_events", lambda c: list(c.iter_events(S, order="desc")), "page"),
    Route("list_threads", lambda c: c.list_threads(S), "page"),
    Route("get_thread", lambda c: c.get_thread(S, T)),
    Route("archive_thread", lambda c: c.archive_thread(S, T)),
    Route("list_thread_events", lambda c: c.list_thread_events(S, T), "page"),
    Route("upload_file", lambda c: c.upload_file(b"x", filename="x.txt")),
    Route("list_files", lambda c: c.list_files(), "page"),
    Route("get_file", lambda c: c.get_file(F)),
    Route("delete_file", lambda c: c.delete_file(F)),
    Route("create_memory_store", lambda c: c.create_memory_store(name="m")),
    Route("get_memory_store", lambda c: c.get_memory_store(MS)),
    Route("list_memory_stores", lambda c: c.list_memory_stores(), "page"),
    Route("update_memory_store", lambda c: c.update_memory_store(MS, name="n")),
    Route("archive_memory_store", lambda c: c.archive_memory_store(MS)),
    Route("delete_memory_store", lambda c: c.delete_memory_store(MS)),
    Route("create_memory", lambda c: c.create_memory(MS, "/a.md", "x")),
    Route("get_memory", lambda c: c.get_memory(MS, M)),
    # A memory_prefix item (a folder) has no id.
    Route("list_memories", lambda c: c.list_memories(MS), "page", usable=("item-no-id",)),
    Route("update_memory", lambda c: c.update_memory(MS, M, {"content": "y"})),
    Route("delete_memory", lambda c: c.delete_memory(MS, M)),
    Route("get_memory_version", lambda c: c.get_memory_version(MS, "memver_1")),
    Route("list_memory_versions", lambda c: c.list_memory_versions(MS), "page"),
    Route("redact_memory_version", lambda c: c.redact_memory_version(MS, "memver_1")),
    Route("create_vault", lambda c: c.create_vault(display_name="v")),
    Route("get_vault", lambda c: c.get_vault(V)),
    Route("list_vaults", lambda c: c.list_vaults(), "page"),
    Route("update_vault", lambda c: c.update_vault(V, display_name="w")),
    Route("archive_vault", lambda c: c.archive_vault(V)),
    Route("delete_vault", lambda c: c.delete_vault(V)),
    Route(
        "create_vault_credential",
        lambda c: c.create_vault_credential(V, auth={"type": "static_bearer", "token": "t"}),
    ),
    Route("get_vault_credential", lambda c: c.get_vault_credential(V, C)),
    Route("list_vault_credentials", lambda c: c.list_vault_credentials(V), "page"),
    Route("update_vault_credential", lambda c: c.update_vault_credential(V, C, {"x": 1})),
    Route("archive_vault_credential", lambda c: c.archive_vault_credential(V, C)),
    Route("delete_vault_credential", lambda c: c.delete_vault_credential(V, C)),
    Route("validate_vault_credential", lambda c: c.validate_vault_credential(V, C), "object"),
    Route("poll_work", lambda c: c.poll_work(E), "polled"),
    Route("ack_work", lambda c: c.ack_work(E, W)),
    Route("heartbeat_work", lambda c: c.heartbeat_work(E, W)),
    Route("stop_work", lambda c: c.stop_work(E, W)),
    Route("get_work", lambda c: c.get_work(E, W)),
    Route("update_work", lambda c: c.update_work(E, W, metadata={"a": "b"})),
    Route("list_work", lambda c: c.list_work(E), "page"),
    Route("get_work_stats", lambda c: c.get_work_stats(E)),
]

_SANDBOX = "arn:aws:bedrock-agentcore:us-west-2:123456789012:sandbox/s-1"
_ROLE = {"type": "aws_role", "role_arn": "arn:aws:iam::123456789012:role/r"}
# On Bedrock, the Claude routes it serves; an agent and a session take its own fields.
BEDROCK = [
    *(
        route
        for route in CLAUDE
        if "." in getattr(ClaudeBedrockClient, route.name).__qualname__
        and route.name not in ("create_agent", "create_session")
    ),
    Route(
        "create_agent",
        lambda c: c.create_agent(
            name="a", model="us.anthropic.claude-sonnet-4-6", execution_identity=_ROLE
        ),
    ),
    Route("create_session", lambda c: c.create_session("agent_1", _SANDBOX)),
]

_TURN = "turn_1"
OPENAI = [
    Route("create_agent", lambda c: c.create_agent(name="a", model="gpt-5")),
    Route("get_agent", lambda c: c.get_agent("agent_1")),
    Route("update_agent", lambda c: c.update_agent("agent_1", name="b")),
    Route("list_agents", lambda c: c.list_agents(), "page"),
    Route("delete_agent", lambda c: c.delete_agent("agent_1")),
    Route("create_session", lambda c: c.create_session("none", agent_id="agent_1", input="hi")),
    Route("find_created_session", lambda c: c.find_created_session("token"), "page"),
    Route("get_session", lambda c: c.get_session(S)),
    Route("update_session", lambda c: c.update_session(S, metadata={"a": "b"})),
    Route("list_sessions", lambda c: c.list_sessions(), "page"),
    Route("delete_session", lambda c: c.delete_session(S)),
    Route("list_items", lambda c: c.list_items(S), "page"),
    Route("iter_items", lambda c: list(c.iter_items(S, order="desc")), "page"),
    Route("list_turns", lambda c: c.list_turns(S), "page"),
    Route("iter_turns", lambda c: list(c.iter_turns(S)), "page"),
    Route("get_turn", lambda c: c.get_turn(S, _TURN)),
    Route("list_turn_items", lambda c: c.list_turn_items(S, _TURN), "page"),
    Route("list_subagents", lambda c: c.list_subagents(S), "page"),
    Route("get_subagent", lambda c: c.get_subagent(S, "sub_1")),
    Route("list_subagent_items", lambda c: c.list_subagent_items(S, "sub_1"), "page"),
    Route("list_subagent_turns", lambda c: c.list_subagent_turns(S, "sub_1"), "page"),
    Route("get_subagent_turn", lambda c: c.get_subagent_turn(S, "sub_1", _TURN)),
    Route(
        "list_subagent_turn_items", lambda c: c.list_subagent_turn_items(S, "sub_1", _TURN), "page"
    ),
]

_HARNESS = "h_1-abcdefghij"
_ARN = f"arn:aws:bedrock-agentcore:us-west-2:123456789012:harness/{_HARNESS}"
_ROLE_ARN = "arn:aws:iam::123456789012:role/r"
AGENTCORE = [
    Route(
        "create_harness",
        lambda c: c.create_harness({"harnessName": "h", "executionRoleArn": _ROLE_ARN}),
    ),
    Route("get_harness", lambda c: c.get_harness(_HARNESS)),
    Route("cached_harness", lambda c: c.cached_harness(_ARN)),
    Route(
        "runtime_arn",
        lambda c: c.runtime_arn(_ARN),
        more={
            f"runtime-arn-{name}": json.dumps(
                {
                    "harness": {
                        "arn": _ARN,
                        "harnessId": _HARNESS,
                        "environment": {"agentCoreRuntimeEnvironment": {"agentRuntimeArn": arn}},
                    }
                }
            ).encode()
            for name, arn in (("list", [_ARN]), ("number", 5), ("huge", HUGE))
        },
    ),
    Route("update_harness", lambda c: c.update_harness(_HARNESS, {"maxTokens": 5})),
    Route("delete_harness", lambda c: c.delete_harness(_HARNESS), "object"),
    Route("list_harnesses", lambda c: c.list_harnesses(), "page", "harnesses"),
    Route(
        "list_harness_versions",
        lambda c: c.list_harness_versions(_HARNESS),
        "page",
        "harnessVersions",
        usable=("item-no-id",),  # a version is read whole, by nothing in particular
    ),
    Route("create_harness_endpoint", lambda c: c.create_harness_endpoint(_HARNESS, "E")),
    Route("get_harness_endpoint", lambda c: c.get_harness_endpoint(_HARNESS, "E")),
    Route(
        "update_harness_endpoint",
        lambda c: c.update_harness_endpoint(_HARNESS, "E", description="d"),
    ),
    Route("delete_harness_endpoint", lambda c: c.delete_harness_endpoint(_HARNESS, "E")),
    Route(
        "list_harness_endpoints", lambda c: c.list_harness_endpoints(_HARNESS), "page", "endpoints"
    ),
    Route(
        "stop_runtime_session", lambda c: c.stop_runtime_session(_ARN, "rs-" + "1" * 40), "object"
    ),
]

_GEMINI_PAGE = "next_page_token"
_I = "int_1"
GEMINI = [
    Route("create_interaction", lambda c: c.create_interaction(agent="a-1", input="hi")),
    Route("get_interaction", lambda c: c.get_interaction(_I)),
    Route("cancel_interaction", lambda c: c.cancel_interaction(_I)),
    Route("delete_interaction", lambda c: c.delete_interaction(_I), "object"),
    Route("create_agent", lambda c: c.create_agent(id="a-1")),
    Route("get_agent", lambda c: c.get_agent("a-1")),
    Route("list_agents", lambda c: c.list_agents(), "page", "agents", cursor=_GEMINI_PAGE),
    Route("iter_agents", lambda c: list(c.iter_agents()), "page", "agents", cursor=_GEMINI_PAGE),
    Route("delete_agent", lambda c: c.delete_agent("a-1"), "object"),
    Route("create_environment", lambda c: c.create_environment(mode="on_demand")),
    Route("get_environment", lambda c: c.get_environment(E)),
    Route(
        "list_environments",
        lambda c: c.list_environments(),
        "page",
        "environments",
        cursor=_GEMINI_PAGE,
    ),
    Route(
        "iter_environments",
        lambda c: list(c.iter_environments()),
        "page",
        "environments",
        cursor=_GEMINI_PAGE,
    ),
    Route("delete_environment", lambda c: c.delete_environment(E), "object"),
]

# Public methods that are no route, or whose answer is not read as one JSON object: a
# stream (read by the feeds and ``invoke_*``, swept in ``test_runs``), a file's bytes (any
# bytes are a file), a post answered 202 with no body, clients made from this one.
NOT_JSON = {
    "close",
    "with_bearer",
    "for_work_item",
    "open_event_stream",
    "stream_new_session",
    "download_file",
    "send_events",  # OpenAI's: 202, no body
    "invoke_harness",
    "invoke_agent_runtime_command",
    "stream_interaction",  # Gemini's streamed create
    "open_interaction_stream",
}


def _routes() -> Iterator[Any]:
    for provider, routes in (
        ("claude", CLAUDE),
        ("bedrock", BEDROCK),
        ("openai", OPENAI),
        ("agentcore", AGENTCORE),
        ("gemini", GEMINI),
    ):
        for route in routes:
            for answer, body in route.answers().items():
                yield pytest.param(provider, route, body, id=f"{provider}-{route.name}-{answer}")


@pytest.fixture(scope="module")
def claude() -> Iterator[tuple[ClaudeEmulator, ClaudeClient]]:
    with ClaudeEmulator() as emulator, emulator.provider(timeout=5, max_retries=0) as provider:
        yield emulator, provider.client


@pytest.fixture(scope="module")
def bedrock() -> Iterator[tuple[ClaudeEmulator, ClaudeClient]]:
    with (
        ClaudeEmulator(flavor="bedrock", region="us-west-2") as emulator,
        emulator.provider(timeout=5, max_retries=0) as provider,
    ):
        yield emulator, provider.client


@pytest.fixture(scope="module")
def openai() -> Iterator[tuple[OpenAIAgentsEmulator, OpenAIClient]]:
    with (
        OpenAIAgentsEmulator() as emulator,
        emulator.provider(timeout=5, max_retries=0) as provider,
    ):
        yield emulator, provider.client


@pytest.fixture(scope="module")
def agentcore() -> Iterator[tuple[AgentCoreEmulator, AgentCoreClient]]:
    with AgentCoreEmulator() as emulator, emulator.provider(timeout=5, max_retries=0) as provider:
        yield emulator, provider.client


@pytest.fixture(scope="module")
def gemini() -> Iterator[tuple[GeminiEmulator, GeminiClient]]:
    with GeminiEmulator() as emulator, emulator.provider(timeout=5, max_retries=0) as provider:
        yield emulator, provider.client


@pytest.mark.parametrize(("provider", "route", "body"), list(_routes()))
def test_an_unusable_answer_is_a_malformed_response_error(
    provider: str, route: Route, body: bytes, request: pytest.FixtureRequest
) -> None:
    emulator, client = request.getfixturevalue(provider)
    if provider == "agentcore":
        client._harness_cache.clear()  # every call asks again
    emulator.answer_requests("*", ".*", body, after_acting=False)
    # A foreign exception (KeyError, TypeError, ...) would escape this and fail the test.
    with pytest.raises(MalformedResponseError) as caught:
        route.call(client)
    assert caught.value.status_code == 200
    assert re.match(r"(GET|POST|PATCH|DELETE) \S+: \w", caught.value.message)  # says what
    assert len(str(caught.value)) < 2000, "the message quotes too much of the answer"
    assert emulator.pending_faults() == 0


_CLIENTS: Mapping[str, tuple[type, list[Route]]] = {
    "claude": (ClaudeClient, CLAUDE),
    "bedrock": (ClaudeBedrockClient, BEDROCK),
    "openai": (OpenAIClient, OPENAI),
    "agentcore": (AgentCoreClient, AGENTCORE),
    "gemini": (GeminiClient, GEMINI),
}


@pytest.mark.parametrize("provider", list(_CLIENTS))
def test_the_sweep_covers_every_route_of_every_client(provider: str) -> None:
    client, routes = _CLIENTS[provider]
    public = {
        name
        for name, method in inspect.getmembers(client, inspect.isfunction)
        if not name.startswith("_") and "." in method.__qualname__  # Bedrock's refusals are not
    }
    swept = {route.name for route in routes}
    assert public - NOT_JSON - swept == set()
    assert swept <= public
