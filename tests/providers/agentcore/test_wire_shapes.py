"""The request bodies our AgentCore code builds, checked against the installed botocore models.

No emulator here: a recording transport captures the exact bytes the client would send (after
signing) and answers with canned responses, and each body is checked member by member against
``InvokeHarnessRequest`` (its body-only members) and ``CreateHarnessRequest``: required members
present, no unknown members, no nulls, the right types, lengths, enums and patterns.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from req_managed_agents import ToolResult, Tools, run_to_completion
from req_managed_agents.eventstream import encode_message
from req_managed_agents.model import ToolUse
from req_managed_agents.providers.agentcore import BedrockAgentCore, resume_messages
from req_managed_agents.provisioner import AgentSpec, EnvironmentSpec
from req_managed_agents.provisioner._harness import harness_body
from req_managed_agents.testing.agentcore._shapes import (
    _check_shape,
    _check_structure,
    _service_model,
)

pytest.importorskip("botocore")

ROLE = "arn:aws:iam::123456789012:role/harness"
HARNESS_ARN = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/reporter-abcdefghij"
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
ENVIRONMENT = {
    "environment": {
        "agentCoreRuntimeEnvironment": {
            "filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}]
        }
    }
}

# What GetHarness answers for HARNESS_ARN: one deployed built-in tool.
DEPLOYED_HARNESS = {
    "arn": HARNESS_ARN,
    "harnessId": "reporter-abcdefghij",
    "harnessName": "reporter",
    "status": "READY",
    "tools": [{"type": "agentcore_code_interpreter", "name": "code"}],
}


def tools() -> Tools:
    registry = Tools()

    @registry.tool
    def lookup(city: str, days: int = 1) -> str:
        """Look up the weather forecast for a city."""
        return "sunny"

    @registry.tool
    def note(text: str) -> str:
        """Write a note."""
        return "ok"

    return registry


# --- the checker ---------------------------------------------------------------------------


def problems(shape_name: str, operation: str, body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every way ``body`` breaks the operation's input shape (body members only)."""
    service = "bedrock-agentcore" if shape_name == "data" else "bedrock-agentcore-control"
    shape = _service_model(service).operation_model(operation).input_shape
    errors: list[tuple[str, str]] = []
    _check_structure(shape, body, "", errors, body_only=True)
    return errors


def invoke_problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    return problems("data", "InvokeHarness", body)


def create_problems(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    return problems("control", "CreateHarness", body)


def test_the_checker_catches_a_null_an_unknown_member_and_a_wrong_type() -> None:
    good = {"messages": [{"role": "user", "content": [{"text": "hi"}]}], "maxTokens": 10}
    assert invoke_problems(good) == []
    bad = {
        "messages": [{"role": "user", "content": [{"text": None}]}],
        "maxTokens": "10",
        "temperature": 0.5,
    }
    paths = dict(invoke_problems(bad))
    assert "must not be null" in paths["messages.0.content.0.text"]
    assert "not a known member" in paths["temperature"]
    assert "type integer" in paths["maxTokens"]
    assert "must not be null" in dict(invoke_problems({}))["messages"]
    assert (
        "not a known member"
        in dict(invoke_problems({**good, "harnessArn": HARNESS_ARN}))["harnessArn"]
    ), "query and header members do not belong in the body"
    two_models = {"bedrockModelConfig": {"modelId": "a"}, "liteLlmModelConfig": {"modelId": "b"}}
    assert "exactly one member" in dict(invoke_problems({**good, "model": two_models}))["model"]
    assert (
        "enum"
        in dict(invoke_problems({"messages": [{"role": "tool", "content": []}]}))["messages.0.role"]
    )


# --- a recording transport ----------------------------------------------------------------


def frame(event_type: str, payload: Mapping[str, Any]) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload).encode())


def tool_turn() -> bytes:
    tool_input = json.dumps({"city": "Paris", "days": 2})
    return b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame(
                "contentBlockStart",
                {
                    "contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup"}},
                },
            ),
            frame(
                "contentBlockDelta",
                {"contentBlockIndex": 0, "delta": {"toolUse": {"input": tool_input}}},
            ),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame("messageStop", {"stopReason": "tool_use"}),
            frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}),
        ]
    )


def final_turn() -> bytes:
    return b"".join(
        [
            frame("messageStart", {"role": "assistant"}),
            frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sunny."}}),
            frame("contentBlockStop", {"contentBlockIndex": 0}),
            frame("messageStop", {"stopReason": "end_turn"}),
        ]
    )


class Recorder(BaseAdapter):
    """Records every prepared request and answers from a queue of canned bodies."""

    def __init__(self, answers: list[tuple[int, str, bytes]]) -> None:
        super().__init__()
        self.answers = answers
        self.sent: list[requests.PreparedRequest] = []

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        self.sent.append(request)
        status, content_type, body = self.answers.pop(0)
        response = requests.Response()
        response.status_code = status
        response.reason = "OK"
        response.headers = CaseInsensitiveDict({"content-type": content_type})
        response.raw = io.BufferedReader(io.BytesIO(body))
        response.request = request
        response.url = request.url or ""
        return response

    def close(self) -> None:
        pass

    def invocations(self) -> list[requests.PreparedRequest]:
        return [request for request in self.sent if request.method == "POST"]

    def bodies(self) -> list[Any]:
        return [json.loads(request.body or b"{}") for request in self.invocations()]


def recording_provider(recorder: Recorder) -> BedrockAgentCore:
    http = requests.Session()
    http.mount("https://", recorder)
    return BedrockAgentCore(
        "us-east-1",
        credentials={"access_key_id": "AKIDEXAMPLE", "secret_access_key": "not-a-real-secret"},
        endpoint_url="https://data.agentcore.invalid",
        control_endpoint_url="https://control.agentcore.invalid",
        http=http,
    )


@pytest.fixture
def invoked() -> Recorder:
    """A two-turn session with every per-invocation option set, recorded; the harness it
    reads first deploys a code interpreter, which is sent along with the local tools."""
    stream = "application/vnd.amazon.eventstream"
    harness = json.dumps({"harness": DEPLOYED_HARNESS}).encode()
    recorder = Recorder(
        [
            (200, "application/json", harness),
            (200, stream, tool_turn()),
            (200, stream, final_turn()),
        ]
    )
    registry = tools()
    with recording_provider(recorder) as provider:
        result = run_to_completion(
            provider,
            "What is the weather in Paris?",
            handler=registry,
            harness_arn=HARNESS_ARN,
            qualifier="live_endpoint",
            timeout=10,
            timeout_seconds=600,
            max_iterations=12,
            max_tokens=2048,
            system_prompt="Answer in one word.",
            model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            tools=registry,
            allowed_tools=["lookup", "note"],
            actor_id="user-42",
        )
    assert result.text == "Sunny."
    assert [request.method for request in recorder.sent] == ["GET", "POST", "POST"]
    return recorder


def test_the_kickoff_body_with_every_option_fits_invoke_harness_request(
    invoked: Recorder,
) -> None:
    kickoff = invoked.bodies()[0]
    assert invoke_problems(kickoff) == []
    assert set(kickoff) == {
        "messages",
        "timeoutSeconds",
        "maxIterations",
        "maxTokens",
        "systemPrompt",
        "model",
        "tools",
        "allowedTools",
        "actorId",
    }, "every option is sent under its member name"
    assert [tool["type"] for tool in kickoff["tools"]] == ["agentcore_code_interpreter"] + [
        "inline_function"
    ] * 2, "the harness's deployed tool first, then the local ones"


def test_the_resume_body_of_a_session_fits_invoke_harness_request(invoked: Recorder) -> None:
    resume = invoked.bodies()[1]
    assert invoke_problems(resume) == []
    assert [message["role"] for message in resume["messages"]] == ["assistant", "user"]


def test_the_query_and_header_members_fit_their_shapes(invoked: Recorder) -> None:
    shape = _service_model("bedrock-agentcore").operation_model("InvokeHarness").input_shape
    for request in invoked.invocations():
        url = urlsplit(request.url or "")
        query = parse_qs(url.query)
        errors: list[tuple[str, str]] = []
        _check_shape(shape.members["harnessArn"], query["harnessArn"][0], "harnessArn", errors)
        _check_shape(shape.members["qualifier"], query["qualifier"][0], "qualifier", errors)
        session_id = request.headers[SESSION_HEADER]
        _check_shape(shape.members["runtimeSessionId"], session_id, "runtimeSessionId", errors)
        assert errors == []
        assert url.path == "/harnesses/invoke"
        assert query["harnessArn"] == [HARNESS_ARN]


@pytest.mark.parametrize(
    ("uses", "results"),
    [
        pytest.param(
            [ToolUse("tooluse_a", "lookup", {"city": "Paris"})],
            [ToolResult("tooluse_a", "sunny")],
            id="one",
        ),
        pytest.param(
            [
                ToolUse("tooluse_a", "lookup", {"city": "Paris", "days": 3}),
                ToolUse("tooluse_b", "note", {}),
                ToolUse("tooluse_c", "lookup", {"nested": {"list": [1, None, "x"]}}),
            ],
            [
                ToolResult("tooluse_b", "", is_error=False),
                ToolResult("tooluse_a", "rain", is_error=False),
                ToolResult("tooluse_c", "boom", is_error=True),
            ],
            id="several-empty-and-error",
        ),
    ],
)
def test_resume_messages_fit_invoke_harness_request(
    uses: list[ToolUse], results: list[ToolResult]
) -> None:
    body: dict[str, Any] = {"messages": resume_messages(uses, results), "maxTokens": 100}
    assert invoke_problems(body) == []
    assistant, user = body["messages"]
    assert [block["toolUse"]["toolUseId"] for block in assistant["content"]] == [
        use.id for use in uses
    ]
    assert [block["toolResult"]["toolUseId"] for block in user["content"]] == [
        use.id for use in uses
    ], "results follow the order of the tool uses"
    statuses = {r.tool_use_id: "error" if r.is_error else "success" for r in results}
    assert [block["toolResult"]["status"] for block in user["content"]] == [
        statuses[use.id] for use in uses
    ]


# --- CreateHarness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system_prompt", "model_config", "environment"),
    [
        ("You forecast the weather.", {"maxTokens": 4096, "temperature": 0.2}, ENVIRONMENT),
        ("", None, None),
    ],
    ids=["everything", "minimal"],
)
def test_the_create_harness_body_fits_create_harness_request(
    system_prompt: str, model_config: dict[str, Any] | None, environment: dict[str, Any] | None
) -> None:
    spec = AgentSpec(
        name="forecaster",
        system_prompt=system_prompt,
        model="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        tools=tools().schemas(),
        model_config=model_config,
    )
    env = EnvironmentSpec(config=environment) if environment is not None else None
    request = {"harnessName": "forecaster_1a2b3c4d", **harness_body(spec, env, ROLE)}
    assert create_problems(request) == []
    harness = {"harnessId": "forecaster_1a2b3c4d-abcdefghij", "arn": HARNESS_ARN}
    recorder = Recorder([(201, "application/json", json.dumps({"harness": harness}).encode())])
    with recording_provider(recorder) as provider:
        provider.client.create_harness(request)
    (sent,) = recorder.bodies()
    assert create_problems(sent) == [], "what went on the wire, client token included"
    assert sent == {**request, "clientToken": sent["clientToken"]}
    if environment is not None:
        assert sent["environment"] == environment["environment"]
        assert sent["systemPrompt"] == [{"text": system_prompt}]
    else:
        assert "environment" not in sent
        assert "systemPrompt" not in sent, "an empty prompt is omitted (text has min length 1)"
