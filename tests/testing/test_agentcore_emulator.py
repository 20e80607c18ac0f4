"""The AgentCore Harness emulator over real loopback sockets, signed and parsed by botocore."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import botocore.auth
import botocore.session
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError, EventStreamError
from botocore.parsers import create_parser

from req_managed_agents.errors import EventStreamError as FramingError
from req_managed_agents.eventstream import EventStreamDecoder, EventStreamMessage
from req_managed_agents.testing import (
    AgentCoreEmulator,
    CommandOutput,
    CommandRecord,
    ConverseTurn,
    Invocation,
    StoppedSession,
    call,
)
from req_managed_agents.testing.agentcore._shapes import _check_structure

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
ROLE = "arn:aws:iam::123456789012:role/harness"


def inline_tool(name: str) -> dict[str, Any]:
    config = {"inlineFunction": {"description": name, "inputSchema": {"type": "object"}}}
    return {"type": "inline_function", "name": name, "config": config}


# What the helpers' invocations declare unless a test says otherwise: the scripts call these.
TOOLS = [inline_tool(name) for name in ("a", "b", "get_time", "get_weather")]

# --- helpers ----------------------------------------------------------------------------------


def new_session_id() -> str:
    return f"test-{uuid.uuid4()}"  # 41 characters, as the service wants at least 33


class Client:
    """Signs each request with botocore, as an AWS SDK would, and sends it with requests."""

    def __init__(
        self,
        emulator: AgentCoreEmulator,
        *,
        secret: str | None = None,
        token: str | None = "same",
        service: str = "bedrock-agentcore",
        region: str | None = None,
        access_key_id: str | None = None,
    ) -> None:
        self.emulator = emulator
        self.credentials = Credentials(
            access_key_id or emulator.access_key_id,
            secret or emulator.secret_access_key,
            emulator.session_token if token == "same" else token,
        )
        self.service = service
        self.region = region or emulator.region

    def request(
        self,
        method: str,
        url: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        sent_body: bytes | None = None,
        stream: bool = False,
        timeout: float = 5,
    ) -> requests.Response:
        data = b"" if body is None else json.dumps(body).encode()
        all_headers = {**({"content-type": "application/json"} if data else {}), **(headers or {})}
        signed = AWSRequest(method=method, url=url, data=data, headers=all_headers)
        SigV4Auth(self.credentials, self.service, self.region).add_auth(signed)
        return requests.request(
            method,
            url,
            data=data if sent_body is None else sent_body,
            headers=dict(signed.headers.items()),
            stream=stream,
            timeout=timeout,
        )

    def invoke(
        self, arn: str, messages: list[dict[str, Any]], session_id: str, **options: Any
    ) -> requests.Response:
        url = f"{self.emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
        body = {"messages": messages, "tools": TOOLS, **options}
        return self.request("POST", url, body, headers={SESSION_HEADER: session_id})

    def command(
        self, arn: str, command: str, session_id: str, timeout: int | None = None
    ) -> requests.Response:
        url = f"{self.emulator.data_url}/runtimes/{quote(arn, safe='')}/commands"
        body: dict[str, Any] = {"command": command}
        if timeout is not None:
            body["timeout"] = timeout
        return self.request("POST", url, body, headers={SESSION_HEADER: session_id})

    def stop(
        self,
        arn: str,
        session_id: str | None,
        body: Any = None,
        *,
        qualifier: str | None = None,
    ) -> requests.Response:
        url = f"{self.emulator.data_url}/runtimes/{quote(arn, safe='')}/stopruntimesession"
        if qualifier is not None:
            url += f"?qualifier={quote(qualifier, safe='')}"
        headers = {} if session_id is None else {SESSION_HEADER: session_id}
        return self.request("POST", url, body, headers=headers)

    def control(self, method: str, path: str, body: Any = None) -> requests.Response:
        return self.request(method, self.emulator.control_url + path, body)


def frames(response: requests.Response) -> list[tuple[str, Any]]:
    """(kind, payload) per frame: the event type, or ``exception:<type>`` / ``error:<code>``."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
    decoder = EventStreamDecoder()
    decoded = decoder.feed(response.content)
    decoder.close()
    out: list[tuple[str, Any]] = []
    for message in decoded:
        headers = message.headers
        if headers[":message-type"] == "event":
            assert headers[":content-type"] == "application/json"
            out.append((str(headers[":event-type"]), json.loads(message.payload)))
        elif headers[":message-type"] == "exception":
            out.append((f"exception:{headers[':exception-type']}", json.loads(message.payload)))
        else:
            out.append((f"error:{headers[':error-code']}", headers[":error-message"]))
    return out


def text_of(events: list[tuple[str, Any]]) -> str:
    return "".join(
        p["delta"]["text"]
        for kind, p in events
        if kind == "contentBlockDelta" and "text" in p["delta"]
    )


def tool_uses(events: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls keyed by toolUseId, input fragments routed by the active block index."""
    uses: dict[str, dict[str, Any]] = {}
    active: dict[int, str] = {}
    for kind, payload in events:
        if kind == "contentBlockStart":
            use = payload["start"]["toolUse"]
            uses[use["toolUseId"]] = {**use, "input": ""}
            active[payload["contentBlockIndex"]] = use["toolUseId"]
        elif kind == "contentBlockDelta" and "toolUse" in payload["delta"]:
            uses[active[payload["contentBlockIndex"]]]["input"] += payload["delta"]["toolUse"][
                "input"
            ]
    return [{**use, "input": json.loads(use["input"])} for use in uses.values()]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def echo(uses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"toolUse": use} for use in uses]}


def results(uses: list[dict[str, Any]], texts: list[str]) -> dict[str, Any]:
    blocks = [
        {"toolResult": {"toolUseId": u["toolUseId"], "content": [{"text": t}], "status": "success"}}
        for u, t in zip(uses, texts)
    ]
    return {"role": "user", "content": blocks}


def aws_error(response: requests.Response, status: int, name: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["x-amzn-ErrorType"] == name
    body: dict[str, Any] = response.json()
    assert isinstance(body["message"], str)
    return body


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    script = [
        ConverseTurn(
            text="Checking both.",
            tool_calls=[call("get_weather", city="Paris"), call("get_time", zone="CET")],
        ),
        ConverseTurn(text=lambda texts: " / ".join(texts)),
        ConverseTurn(text="Bye.", usage=(7, 3), stop_reason="max_tokens"),
    ]
    with AgentCoreEmulator(script) as emu:
        yield emu


@pytest.fixture(scope="module")
def token_emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator(session_token="session-token-for-tests") as emu:
        emu.add_harness()
        yield emu


# --- signing ----------------------------------------------------------------------------------


def test_credentials_are_aws_shaped_and_never_shown() -> None:
    with AgentCoreEmulator(session_token="very-secret-token") as emu:
        assert re.fullmatch("AKIA[A-Z0-9]{16}", emu.access_key_id)
        assert len(emu.secret_access_key) == 40
        shown = repr(emu)
        assert emu.data_url in shown
        assert emu.control_url in shown
        assert emu.secret_access_key not in shown
        assert "very-secret-token" not in shown
    assert "closed" in repr(emu)


@pytest.mark.parametrize("session_token", [None, "a-temporary-session-token"])
def test_good_signatures_pass_on_both_planes(session_token: str | None) -> None:
    with AgentCoreEmulator(["Hello."], session_token=session_token) as emu:
        client = Client(emu)
        arn = emu.add_harness()
        events = frames(client.invoke(arn, [user("Hi")], new_session_id()))
        assert text_of(events) == "Hello."
        listed = client.control("GET", "/harnesses?maxResults=5")
        assert listed.status_code == 200
        assert [h["arn"] for h in listed.json()["harnesses"]] == [arn]
        assert emu.signature_failures == []
        token = emu.requests[0].headers.get("x-amz-security-token")
        assert token == session_token
        assert {r.listener for r in emu.requests} == {"data", "control"}


def stale_clock() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(minutes=20)


@pytest.mark.parametrize(
    ("case", "error_type"),
    [
        ("tampered body", "InvalidSignatureException"),
        ("tampered body with content hash", "InvalidSignatureException"),
        ("wrong secret", "InvalidSignatureException"),
        ("wrong service", "InvalidSignatureException"),
        ("wrong region", "InvalidSignatureException"),
        ("stale date", "InvalidSignatureException"),
        ("unknown access key", "UnrecognizedClientException"),
        ("missing token", "UnrecognizedClientException"),
        ("wrong token", "UnrecognizedClientException"),
        ("no signature", "MissingAuthenticationTokenException"),
    ],
)
def test_bad_signatures_are_rejected(
    token_emulator: AgentCoreEmulator,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    error_type: str,
) -> None:
    emu = token_emulator
    options: dict[str, Any] = {
        "wrong secret": {"secret": "x" * 40},
        "wrong service": {"service": "bedrock-agentcore-control"},
        "wrong region": {"region": "eu-west-1"},
        "unknown access key": {"access_key_id": "AKIAAAAAAAAAAAAAAAAA"},
        "missing token": {"token": None},
        "wrong token": {"token": "another-token"},
    }.get(case, {})
    client = Client(emu, **options)
    if case == "stale date":
        monkeypatch.setattr(botocore.auth, "get_current_datetime", stale_clock)
    body = {"harnessName": "signed", "executionRoleArn": ROLE}
    url = emu.control_url + "/harnesses"
    failures = len(emu.signature_failures)
    if case == "no signature":
        response = requests.post(url, json=body, timeout=5)
    elif case.startswith("tampered body"):
        headers = {}
        if case.endswith("hash"):  # botocore trusts this header instead of hashing the body
            digest = botocore.auth.sha256(json.dumps(body).encode()).hexdigest()
            headers["x-amz-content-sha256"] = digest
        tampered = json.dumps({**body, "harnessName": "forged"}).encode()
        response = client.request("POST", url, body, headers=headers, sent_body=tampered)
    else:
        response = client.request("POST", url, body)
    aws_error(response, 403, error_type)
    assert len(emu.signature_failures) == failures + 1
    method, path, reason = emu.signature_failures[-1]
    assert (method, path) == ("POST", "/harnesses")
    assert reason == response.json()["message"]
    assert all(h["harnessName"] != "forged" for h in emu.harnesses())


# --- InvokeHarness: a conversation --------------------------------------------------------------


def test_a_two_tool_turn_streams_the_expected_frames(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    events = frames(client.invoke(arn, [user("Weather and time?")], new_session_id()))
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "messageStart"
    assert events[0][1] == {"role": "assistant"}
    text_deltas = [p for k, p in events if k == "contentBlockDelta" and "text" in p["delta"]]
    assert len(text_deltas) > 1
    assert {p["contentBlockIndex"] for p in text_deltas} == {0}
    assert text_of(events) == "Checking both."
    starts = [p for k, p in events if k == "contentBlockStart"]
    assert [s["contentBlockIndex"] for s in starts] == [1, 2]
    for start in starts:  # each tool input arrives in at least two fragments
        index = start["contentBlockIndex"]
        fragments = [
            p for k, p in events if k == "contentBlockDelta" and p["contentBlockIndex"] == index
        ]
        assert len(fragments) >= 2
    assert [p["contentBlockIndex"] for k, p in events if k == "contentBlockStop"] == [0, 1, 2]
    uses = tool_uses(events)
    assert [(u["name"], u["input"]) for u in uses] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    assert all(u["toolUseId"].startswith("tooluse_") for u in uses)
    assert kinds[-2:] == ["messageStop", "metadata"]
    assert events[-2][1] == {"stopReason": "tool_use"}
    metadata = events[-1][1]
    assert metadata["usage"] == {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    assert isinstance(metadata["metrics"]["latencyMs"], int)


def test_a_resume_must_echo_every_tool_use(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    uses = tool_uses(frames(client.invoke(arn, [user("Weather and time?")], session_id)))
    answered = results(uses, ["sunny", "noon"])

    only_results = frames(client.invoke(arn, [answered], session_id))
    assert only_results == [
        (
            "exception:runtimeClientError",
            {
                "message": "Received a model error: ValidationException: The number of "
                "toolResult blocks at messages.0.content exceeds the number of toolUse blocks "
                "of previous turn."
            },
        )
    ]
    duplicated = echo([uses[0], uses[0], uses[1]])
    kind, payload = frames(client.invoke(arn, [duplicated, answered], session_id))[0]
    assert kind == "exception:runtimeClientError"
    assert "duplicate Ids at messages.0.content" in payload["message"]
    partial = [echo(uses[:1]), results(uses[:1], ["sunny"])]
    kind, payload = frames(client.invoke(arn, partial, session_id))[0]
    assert kind == "exception:runtimeClientError"
    assert "do not repeat the tool calls of the previous turn" in payload["message"]
    misassembled = [echo([{**uses[0], "input": {}}, uses[1]]), answered]
    kind, _ = frames(client.invoke(arn, misassembled, session_id))[0]
    assert kind == "exception:runtimeClientError"

    # Results may come in any order; the turn gets their texts in call order.
    reordered = {"role": "user", "content": list(reversed(answered["content"]))}
    events = frames(client.invoke(arn, [echo(uses), reordered], session_id))
    assert text_of(events) == "sunny / noon"
    assert events[-2][1] == {"stopReason": "end_turn"}
    events = frames(client.invoke(arn, [user("Thanks")], session_id))
    assert text_of(events) == "Bye."
    assert events[-2][1] == {"stopReason": "max_tokens"}
    assert events[-1][1]["usage"] == {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10}
    assert text_of(frames(client.invoke(arn, [user("More?")], session_id))) == "(script finished)"
    invocations = emulator.invocations
    assert len(invocations) == 8
    first = {"messages": [user("Weather and time?")], "tools": TOOLS}
    assert invocations[0] == Invocation(arn, session_id, first)


def test_conversations_are_per_session_and_per_harness(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    first = emulator.add_harness(name="first")
    second = emulator.add_harness(["Other script."], name="second")
    session_id = new_session_id()
    assert text_of(frames(client.invoke(first, [user("a")], session_id))) == "Checking both."
    assert text_of(frames(client.invoke(first, [user("b")], new_session_id()))) == "Checking both."
    assert text_of(frames(client.invoke(second, [user("c")], session_id))) == "Other script."


def test_a_new_user_message_abandons_pending_tool_calls(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    frames(client.invoke(arn, [user("Weather?")], session_id))
    events = frames(client.invoke(arn, [user("Never mind, how are you?")], session_id))
    assert text_of(events) == "Never mind, how are you?"  # the callable got the user's text


def test_tool_blocks_may_share_an_index() -> None:
    turn = ConverseTurn(tool_calls=[call("a", n=1), call("b", n=2)], reuse_block_index=True)
    with AgentCoreEmulator([turn, ConverseTurn(text=lambda texts: ",".join(texts))]) as emu:
        client = Client(emu)
        arn = emu.add_harness()
        session_id = new_session_id()
        events = frames(client.invoke(arn, [user("go")], session_id))
        starts = [p for k, p in events if k == "contentBlockStart"]
        assert [s["contentBlockIndex"] for s in starts] == [0, 0]
        uses = tool_uses(events)
        assert len({u["toolUseId"] for u in uses}) == 2
        assert [u["input"] for u in uses] == [{"n": 1}, {"n": 2}]
        resumed = frames(client.invoke(arn, [echo(uses), results(uses, ["1", "2"])], session_id))
        assert text_of(resumed) == "1,2"


def test_a_scripted_text_that_raises_becomes_an_exception_frame() -> None:
    def broken(texts: list[str]) -> str:
        raise RuntimeError("script bug")

    with AgentCoreEmulator([ConverseTurn(text=broken)]) as emu:
        arn = emu.add_harness()
        ((kind, payload),) = frames(Client(emu).invoke(arn, [user("x")], new_session_id()))
        assert kind == "exception:internalServerException"
        assert "script bug" in payload["message"]


def test_a_turn_delay_paces_every_frame() -> None:
    with AgentCoreEmulator([ConverseTurn(text="abc", delay=0.03)]) as emu:
        arn = emu.add_harness()
        started = time.monotonic()
        events = frames(Client(emu).invoke(arn, [user("x")], new_session_id()))
        assert time.monotonic() - started >= 0.03 * len(events)


# --- InvokeHarness: validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [user("x")], "prompt": "x"}, "prompt"),
        ({"messages": [user("x")], "model": None}, "model"),
        ({"messages": [user("x")], "maxTokens": "5"}, "maxTokens"),
        ({"messages": [{"role": "system", "content": [{"text": "x"}]}]}, "messages.0.role"),
        ({"messages": [{"role": "user", "content": [{"text": "x", "toolUse": {}}]}]}, None),
        ({"messages": [user("x")], "systemPrompt": "a string"}, "systemPrompt"),
    ],
)
def test_invoke_bodies_are_checked_against_the_model(
    emulator: AgentCoreEmulator, body: dict[str, Any], field: str | None
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    response = client.request("POST", url, body, headers={SESSION_HEADER: new_session_id()})
    error = aws_error(response, 400, "ValidationException")
    assert error["reason"] == "FieldValidationFailed"
    if field is not None:
        assert field in {f["name"] for f in error["fieldList"]}
    assert emulator.invocations == []


@pytest.mark.parametrize(
    "session_id", ["a" * 32, "-" + "a" * 40, "a" * 101, "has space" + "a" * 30, None]
)
def test_runtime_session_ids_are_checked(
    emulator: AgentCoreEmulator, session_id: str | None
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    headers = {} if session_id is None else {SESSION_HEADER: session_id}
    response = client.request("POST", url, {"messages": [user("x")]}, headers=headers)
    error = aws_error(response, 400, "ValidationException")
    assert [f["name"] for f in error["fieldList"]] == ["runtimeSessionId"]


def test_invoke_errors_outside_the_body(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    unknown = arn[:-10] + "zzzzzzzzzz"
    aws_error(
        client.invoke(unknown, [user("x")], new_session_id()), 404, "ResourceNotFoundException"
    )
    no_arn = client.request(
        "POST",
        f"{emulator.data_url}/harnesses/invoke",
        {"messages": [user("x")]},
        headers={SESSION_HEADER: new_session_id()},
    )
    assert aws_error(no_arn, 400, "ValidationException")["fieldList"][0]["name"] == "harnessArn"
    wrong_plane = client.request("POST", f"{emulator.control_url}/harnesses/invoke", {})
    aws_error(wrong_plane, 404, "UnknownOperationException")
    (frame,) = frames(client.invoke(arn, [user("x"), echo([])], new_session_id()))
    assert frame[0] == "exception:runtimeClientError"  # a conversation must end with the user


# --- InvokeHarness: faults ----------------------------------------------------------------------


def test_exception_and_error_frames_leave_the_turn_unplayed(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.exception_frame("validationException", "bad input", after_frames=2)
    emulator.error_frame("ModelStreamErrorException", "the model went away", after_frames=0)
    failed = frames(client.invoke(arn, [user("x")], session_id))
    assert [k for k, _ in failed] == [
        "messageStart",
        "contentBlockDelta",
        "exception:validationException",
    ]
    assert failed[-1][1] == {"message": "bad input", "reason": "FieldValidationFailed"}
    errored = frames(client.invoke(arn, [user("x")], session_id))
    assert errored == [("error:ModelStreamErrorException", "the model went away")]
    assert text_of(frames(client.invoke(arn, [user("x")], session_id))) == "Checking both."


def test_a_truncated_turn_is_replayed_by_the_retry(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.truncate_stream(after_frames=30)  # far past the end: still stops before messageStop
    truncated = frames(client.invoke(arn, [user("x")], session_id))
    assert "messageStop" not in [k for k, _ in truncated]
    assert text_of(truncated) == "Checking both."
    retried = frames(client.invoke(arn, [user("x")], session_id))
    assert text_of(retried) == "Checking both."
    assert retried[-2][1] == {"stopReason": "tool_use"}
    uses = tool_uses(retried)  # fresh ids: the first attempt's never count
    assert {u["toolUseId"] for u in uses}.isdisjoint(u["toolUseId"] for u in tool_uses(truncated))
    events = frames(client.invoke(arn, [echo(uses), results(uses, ["a", "b"])], session_id))
    assert text_of(events) == "a / b"


def test_a_stalled_stream_goes_silent_then_closes(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.stall_stream(after_frames=1, seconds=1.0)
    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    body = {"messages": [user("x")]}
    response = client.request(
        "POST", url, body, headers={SESSION_HEADER: session_id}, stream=True, timeout=0.3
    )
    decoder = EventStreamDecoder()
    received: list[EventStreamMessage] = []

    def read_all() -> None:
        for chunk in response.iter_content(chunk_size=None):
            received.extend(decoder.feed(chunk))

    with pytest.raises(requests.RequestException):  # the idle read times out
        read_all()
    assert [m.headers[":event-type"] for m in received] == ["messageStart"]
    response.close()
    assert text_of(frames(client.invoke(arn, [user("x")], session_id))) == "Checking both."


def test_request_faults_answer_in_the_aws_error_format(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    emulator.fail_requests("POST", "/harnesses/invoke", 429, retry_after=2)
    emulator.fail_requests("GET", "/harnesses.*", 503, times=2)
    emulator.fail_requests("*", "/harnesses", 400)
    throttled = client.invoke(arn, [user("x")], new_session_id())
    aws_error(throttled, 429, "ThrottlingException")
    assert throttled.headers["retry-after"] == "2"
    aws_error(client.control("GET", "/harnesses"), 503, "ServiceUnavailableException")
    aws_error(client.control("GET", "/harnesses/x-1234567890"), 503, "ServiceUnavailableException")
    error = aws_error(client.control("POST", "/harnesses", {}), 400, "ValidationException")
    assert "reason" in error
    assert emulator.invocations == []
    assert text_of(frames(client.invoke(arn, [user("x")], new_session_id()))) == "Checking both."
    with pytest.raises(ValueError, match="error_type"):  # AWS names the exception alone
        emulator.fail_requests("GET", "/harnesses", 429, code="ThrottlingException")
    assert emulator.pending_faults() == 0


def read_frames(response: requests.Response) -> tuple[list[tuple[str, Any]], Exception | None]:
    """The frames up to where the body or its framing broke, and what broke it."""
    decoder = EventStreamDecoder()
    messages: list[EventStreamMessage] = []
    try:
        for chunk in response.iter_content(chunk_size=None):
            messages.extend(decoder.feed(chunk))
    except (requests.RequestException, FramingError) as error:
        failure: Exception | None = error
    else:
        failure = None
    return [(m.headers[":event-type"], json.loads(m.payload)) for m in messages], failure


def invoke_stream(
    client: Client, arn: str, messages: list[dict[str, Any]], session_id: str
) -> requests.Response:
    url = f"{client.emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    body = {"messages": messages, "tools": TOOLS}
    return client.request("POST", url, body, headers={SESSION_HEADER: session_id}, stream=True)


def as_turn(events: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{kind: payload} for kind, payload in events]


@pytest.mark.parametrize("abrupt", [False, True])
def test_a_truncation_after_commit_loses_only_the_metadata(
    emulator: AgentCoreEmulator, abrupt: bool
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.truncate_after_commit(abrupt=abrupt)
    assert emulator.pending_faults() == 1
    received, failure = read_frames(invoke_stream(client, arn, [user("x")], session_id))
    assert [k for k, _ in received][-2:] == ["contentBlockStop", "messageStop"]
    assert isinstance(failure, requests.exceptions.ChunkedEncodingError) == abrupt
    assert failure is None or abrupt
    assert emulator.stream_connections(session_id)[-1].end == "truncated"
    assert emulator.turn_frames(arn, session_id) == [as_turn(received)]
    assert emulator.pending_faults() == 0
    uses = tool_uses(received)  # committed: the results play the next turn
    events = frames(client.invoke(arn, [echo(uses), results(uses, ["a", "b"])], session_id))
    assert text_of(events) == "a / b"
    assert emulator.turn_frames(arn, session_id)[1] == as_turn(events)


def test_a_retry_after_the_commit_meets_the_next_turn(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.truncate_after_commit(abrupt=True)
    read_frames(invoke_stream(client, arn, [user("x")], session_id))
    again = frames(client.invoke(arn, [user("x")], session_id))
    assert text_of(again) == "x"  # the second turn, fed the repeated prompt


@pytest.mark.parametrize("after_frames", [0, 2, 15])
def test_a_corrupt_frame_before_message_stop_leaves_the_turn_unplayed(
    emulator: AgentCoreEmulator, after_frames: int
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.corrupt_frame(after_frames)
    received, failure = read_frames(invoke_stream(client, arn, [user("x")], session_id))
    assert len(received) == after_frames
    assert isinstance(failure, FramingError)
    assert "CRC" in str(failure)
    assert emulator.turn_frames(arn, session_id) == []
    retried = frames(client.invoke(arn, [user("x")], session_id))
    assert text_of(retried) == "Checking both."
    assert retried[-2][1] == {"stopReason": "tool_use"}


@pytest.mark.parametrize("after_frames", [16, 17, 30])
def test_a_corrupt_frame_after_message_stop_finds_the_turn_committed(
    emulator: AgentCoreEmulator, after_frames: int
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.corrupt_frame(after_frames)
    received, failure = read_frames(invoke_stream(client, arn, [user("x")], session_id))
    assert len(received) == min(after_frames, 17)  # 17 frames: messageStop is number 16
    assert isinstance(failure, FramingError)
    assert emulator.turn_frames(arn, session_id) == [as_turn(received)]
    uses = tool_uses(received)
    events = frames(client.invoke(arn, [echo(uses), results(uses, ["a", "b"])], session_id))
    assert text_of(events) == "a / b"


def test_any_fault_after_message_stop_finds_the_turn_committed(
    emulator: AgentCoreEmulator,
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.exception_frame(after_frames=17)  # all 17 frames of the first turn, then this
    emulator.stall_stream(after_frames=6, seconds=0.1)  # the second turn's 7 frames but one
    first = frames(client.invoke(arn, [user("x")], session_id))
    assert [k for k, _ in first][-3:] == [
        "messageStop",
        "metadata",
        "exception:internalServerException",
    ]
    uses = tool_uses(first)
    stalled, failure = read_frames(
        invoke_stream(client, arn, [echo(uses), results(uses, ["a", "b"])], session_id)
    )
    assert isinstance(failure, requests.exceptions.ChunkedEncodingError)
    assert [k for k, _ in stalled][-1] == "messageStop"
    assert text_of(stalled) == "a / b"
    assert len(emulator.turn_frames(arn, session_id)) == 2
    assert text_of(frames(client.invoke(arn, [user("y")], session_id))) == "Bye."


@pytest.mark.parametrize("after_acting", [False, True])
def test_a_reset_invocation_plays_nothing(emulator: AgentCoreEmulator, after_acting: bool) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    emulator.reset_requests("POST", "/harnesses/invoke", after_acting=after_acting)
    with pytest.raises(requests.ConnectionError):
        client.invoke(arn, [user("x")], session_id)
    assert len(emulator.requests) == 1
    assert len(emulator.invocations) == int(after_acting)  # handled only after acting
    ends = [c.end for c in emulator.stream_connections(session_id)]
    assert ends == (["reset"] if after_acting else [])
    assert emulator.turn_frames(arn, session_id) == []
    assert text_of(frames(client.invoke(arn, [user("x")], session_id))) == "Checking both."


def test_a_control_plane_reset_after_acting_still_creates_the_harness(
    emulator: AgentCoreEmulator,
) -> None:
    client = Client(emulator)
    emulator.reset_requests("POST", "/harnesses", after_acting=True)
    with pytest.raises(requests.ConnectionError):
        create(client, "made_anyway")
    assert [h["harnessName"] for h in emulator.harnesses()] == ["made_anyway"]


def test_frame_faults_count_as_pending_until_an_invocation_meets_them(
    emulator: AgentCoreEmulator,
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    emulator.corrupt_frame(1, times=2)
    emulator.fail_requests(
        "POST", "/harnesses/invoke", 503, where=lambda r: r.body["messages"] == [user("y")]
    )
    assert emulator.pending_faults() == 3
    read_frames(invoke_stream(client, arn, [user("x")], new_session_id()))
    assert emulator.pending_faults() == 2
    aws_error(client.invoke(arn, [user("y")], new_session_id()), 503, "ServiceUnavailableException")
    assert emulator.pending_faults() == 1
    with pytest.raises(ValueError, match="times"):
        emulator.corrupt_frame(1, times=0)


# --- InvokeAgentRuntimeCommand ------------------------------------------------------------------


def command_frames(response: requests.Response) -> list[dict[str, Any]]:
    events = frames(response)
    assert {kind for kind, _ in events} == {"chunk"}
    return [payload for _, payload in events]


def joined(chunks: list[dict[str, Any]], stream: str) -> str:
    return "".join(c["contentDelta"].get(stream, "") for c in chunks if "contentDelta" in c)


def test_a_command_streams_its_output_and_exit_code(
    emulator: AgentCoreEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCORE_EMULATOR_TEST_SECRET", "leak")
    client = Client(emulator)
    arn = runtime_arn(emulator, emulator.add_harness())
    session_id = new_session_id()
    script = "echo out; echo err >&2; pwd; env; exit 7"
    response = client.command(arn, script, session_id, timeout=30)
    assert response.headers[SESSION_HEADER] == session_id
    chunks = command_frames(response)
    assert chunks[0] == {"contentStart": {}}
    assert chunks[-1] == {"contentStop": {"exitCode": 7, "status": "COMPLETED"}}
    stdout = joined(chunks, "stdout")
    assert stdout.startswith("out\n")
    assert joined(chunks, "stderr") == "err\n"
    assert emulator.workdir is not None
    assert os.path.realpath(stdout.splitlines()[1]) == os.path.realpath(emulator.workdir)
    assert f"HOME={emulator.workdir}" in stdout
    assert "AGENTCORE_EMULATOR_TEST_SECRET" not in stdout
    assert emulator.commands == [CommandRecord(arn, session_id, script, 30)]


def test_large_output_is_split_into_8_kib_pieces(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = runtime_arn(emulator, emulator.add_harness())
    chunks = command_frames(
        client.command(arn, "head -c 20000 /dev/zero | tr '\\0' a", new_session_id())
    )
    pieces = [c["contentDelta"]["stdout"] for c in chunks if "contentDelta" in c]
    assert len(pieces) == 3
    assert all(len(p.encode()) <= 8192 for p in pieces)
    assert "".join(pieces) == "a" * 20000


def test_a_command_that_overruns_its_timeout_is_killed(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = runtime_arn(emulator, emulator.add_harness())
    started = time.monotonic()
    chunks = command_frames(
        client.command(arn, "echo started; sleep 5; echo late", new_session_id(), timeout=1)
    )
    assert time.monotonic() - started < 4
    assert joined(chunks, "stdout") == "started\n"
    assert chunks[-1] == {"contentStop": {"exitCode": -1, "status": "TIMED_OUT"}}


def test_a_custom_runner_and_the_runtime_arn() -> None:
    seen: list[tuple[str, float | None]] = []

    def runner(command: str, timeout: float | None) -> CommandOutput:
        seen.append((command, timeout))
        text = ("é" * 5000).encode() + b"\xff"  # 10 001 bytes, one of them not UTF-8
        return CommandOutput(stdout=text, stderr=b"", exit_code=0)

    with AgentCoreEmulator(command_runner=runner) as emu:
        assert emu.workdir is None
        client = Client(emu)
        emu.add_harness()
        runtime_arn = emu.harnesses()[0]["environment"]["agentCoreRuntimeEnvironment"][
            "agentRuntimeArn"
        ]
        chunks = command_frames(client.command(runtime_arn, "anything", new_session_id()))
        pieces = [c["contentDelta"]["stdout"] for c in chunks if "contentDelta" in c]
        assert len(pieces) == 2
        assert all(len(p.encode()) <= 8192 for p in pieces)
        assert "".join(pieces) == "é" * 5000 + "\ufffd"
        assert seen == [("anything", None)]


@pytest.mark.parametrize(
    ("body", "session_id", "status", "error_type"),
    [
        ({"command": ""}, new_session_id(), 400, "ValidationException"),
        ({"command": "true", "timeout": 0}, new_session_id(), 400, "ValidationException"),
        ({"command": "true", "extra": 1}, new_session_id(), 400, "ValidationException"),
        ({"command": "true"}, "short", 400, "ValidationException"),
        ({"command": "true"}, None, 400, "ValidationException"),
    ],
    ids=["empty", "zero-timeout", "extra-member", "short-session", "no-session"],
)
def test_command_requests_are_checked(
    emulator: AgentCoreEmulator,
    body: dict[str, Any],
    session_id: str | None,
    status: int,
    error_type: str,
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    url = f"{emulator.data_url}/runtimes/{quote(arn, safe='')}/commands"
    headers = {} if session_id is None else {SESSION_HEADER: session_id}
    aws_error(client.request("POST", url, body, headers=headers), status, error_type)
    assert emulator.commands == []


def test_unknown_runtimes_and_unencoded_arns_are_not_found(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    unknown = client.command(arn[:-10] + "zzzzzzzzzz", "true", new_session_id())
    aws_error(unknown, 404, "ResourceNotFoundException")
    raw = client.request(  # the "/" inside the ARN must be percent-encoded
        "POST",
        f"{emulator.data_url}/runtimes/{arn}/commands",
        {"command": "true"},
        headers={SESSION_HEADER: new_session_id()},
    )
    assert raw.status_code == 404


def test_close_kills_running_commands_and_removes_the_workdir() -> None:
    emu = AgentCoreEmulator()
    workdir = emu.workdir
    assert workdir is not None
    assert os.path.isdir(workdir)
    client = Client(emu)
    arn = runtime_arn(emu, emu.add_harness())
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(client.command(arn, "sleep 30", new_session_id()).content)
        except requests.RequestException as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    assert emu.wait_until(lambda: emu.commands)
    time.sleep(0.2)  # let the shell start
    started = time.monotonic()
    emu.close()
    assert time.monotonic() - started < 3
    thread.join(5)
    assert outcome
    assert not os.path.exists(workdir)


# --- control plane ------------------------------------------------------------------------------


def create(client: Client, name: str, **extra: Any) -> requests.Response:
    return client.control(
        "POST", "/harnesses", {"harnessName": name, "executionRoleArn": ROLE, **extra}
    )


def test_harness_lifecycle(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    environment = {
        "agentCoreRuntimeEnvironment": {
            "filesystemConfigurations": [{"sessionStorage": {"mountPath": "/mnt/data"}}],
            "networkConfiguration": {"networkMode": "PUBLIC"},
        }
    }
    tool = {
        "type": "inline_function",
        "name": "get_weather",
        "config": {"inlineFunction": {"description": "Weather", "inputSchema": {"type": "object"}}},
    }
    created = create(
        client,
        "my_harness",
        systemPrompt=[{"text": "Be brief."}],
        tools=[tool],
        environment=environment,
        timeoutSeconds=300,
    )
    assert created.status_code == 201, created.text
    harness = created.json()["harness"]
    harness_id = harness["harnessId"]
    assert harness_id.startswith("my_harness-")
    assert len(harness_id) == len("my_harness-") + 10
    assert harness["arn"] == (
        f"arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/{harness_id}"
    )
    assert harness["status"] == "CREATING"
    assert harness["executionRoleArn"] == ROLE
    assert harness["systemPrompt"] == [{"text": "Be brief."}]
    assert harness["tools"] == [tool]
    assert harness["timeoutSeconds"] == 300
    runtime = harness["environment"]["agentCoreRuntimeEnvironment"]
    assert runtime["filesystemConfigurations"] == [{"sessionStorage": {"mountPath": "/mnt/data"}}]
    assert runtime["agentRuntimeArn"].startswith("arn:aws:bedrock-agentcore:us-east-1:")
    datetime.fromisoformat(harness["createdAt"].replace("Z", "+00:00"))  # the model's iso8601

    not_ready = client.invoke(harness["arn"], [user("x")], new_session_id())
    aws_error(not_ready, 400, "ValidationException")
    got = client.control("GET", f"/harnesses/{harness_id}").json()["harness"]
    assert got["status"] == "READY"
    assert text_of(frames(client.invoke(got["arn"], [user("x")], new_session_id())))

    aws_error(create(client, "my_harness"), 409, "ConflictException")
    deleted = client.control("DELETE", f"/harnesses/{harness_id}")
    assert deleted.status_code == 200
    assert deleted.json()["harness"]["status"] == "DELETING"
    assert client.control("GET", f"/harnesses/{harness_id}").json()["harness"]["status"] == (
        "DELETING"
    )
    aws_error(create(client, "my_harness"), 409, "ConflictException")  # still deleting
    gone = client.control("GET", f"/harnesses/{harness_id}")
    aws_error(gone, 404, "ResourceNotFoundException")
    assert client.control("GET", "/harnesses").json() == {}, "no member, as live, when none"
    assert emulator.harnesses() == []
    assert create(client, "my_harness").status_code == 201


@pytest.mark.parametrize("delete_after", [0, 2])
def test_delete_after_counts_get_and_list_observations(delete_after: int) -> None:
    with AgentCoreEmulator(delete_after=delete_after) as emu:
        client = Client(emu)
        harness_id = create(client, "doomed").json()["harness"]["harnessId"]
        assert client.control("DELETE", f"/harnesses/{harness_id}").status_code == 200
        sightings = 0
        while client.control("GET", "/harnesses").json().get("harnesses"):
            sightings += 1
        assert sightings == delete_after
        aws_error(
            client.control("GET", f"/harnesses/{harness_id}"), 404, "ResourceNotFoundException"
        )


def test_a_client_token_makes_create_idempotent(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    token = str(uuid.uuid4())
    first = create(client, "once", clientToken=token).json()["harness"]
    again = create(client, "once", clientToken=token)
    assert again.status_code == 201
    assert again.json()["harness"]["harnessId"] == first["harnessId"]
    assert len(emulator.harnesses()) == 1


def test_status_scripts(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)

    def statuses(harness_id: str, count: int) -> list[str]:
        path = f"/harnesses/{harness_id}"
        return [client.control("GET", path).json()["harness"]["status"] for _ in range(count)]

    emulator.harness_statuses(["CREATING", "CREATE_FAILED"])
    emulator.harness_statuses(["SOMETHING_NEW"], name="odd")
    failed = create(client, "failing").json()["harness"]["harnessId"]
    assert statuses(failed, 3) == ["CREATE_FAILED"] * 3
    odd = create(client, "odd").json()["harness"]
    assert odd["status"] == "SOMETHING_NEW"
    assert statuses(odd["harnessId"], 1) == ["SOMETHING_NEW"]
    normal = create(client, "normal").json()["harness"]["harnessId"]
    assert statuses(normal, 2) == ["READY", "READY"]
    emulator.harness_statuses(["CREATING", "DELETING"], name="normal")  # a live one
    assert statuses(normal, 2) == ["DELETING", "DELETING"]
    with pytest.raises(ValueError, match="non-empty"):
        emulator.harness_statuses([])


def test_list_harnesses_pages(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arns = [emulator.add_harness(name=f"h{n}") for n in range(23)]

    def walk(page_size: int | None) -> list[int]:
        sizes, seen, token = [], [], None
        while True:
            query = [f"maxResults={page_size}"] if page_size else []
            query += [f"nextToken={quote(token, safe='')}"] if token else []
            page = client.control("GET", "/harnesses?" + "&".join(query)).json()
            sizes.append(len(page["harnesses"]))
            seen += [h["arn"] for h in page["harnesses"]]
            assert set(page["harnesses"][0]) == {
                "harnessId",
                "harnessName",
                "arn",
                "status",
                "createdAt",
                "updatedAt",
            }
            token = page.get("nextToken")
            if token is None:
                assert seen == arns
                return sizes

    assert walk(None) == [10, 10, 3]
    assert walk(7) == [7, 7, 7, 2]
    aws_error(client.control("GET", "/harnesses?nextToken=forged"), 400, "ValidationException")
    aws_error(client.control("GET", "/harnesses?maxResults=0"), 400, "ValidationException")
    aws_error(client.control("GET", "/harnesses?maxResults=101"), 400, "ValidationException")


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"harnessName": "has-hyphen", "executionRoleArn": ROLE}, {"harnessName"}),
        ({"harnessName": "ok"}, {"executionRoleArn"}),
        ({"harnessName": "ok", "executionRoleArn": None}, {"executionRoleArn"}),
        ({"harnessName": "ok", "executionRoleArn": ROLE, "name": "x"}, {"name"}),
        (
            {"harnessName": "ok", "executionRoleArn": ROLE, "timeoutSeconds": "300"},
            {"timeoutSeconds"},
        ),
        ({"harnessName": "ok", "executionRoleArn": ROLE, "systemPrompt": "x"}, {"systemPrompt"}),
        ({"harnessName": "ok", "executionRoleArn": "not-an-arn"}, {"executionRoleArn"}),
    ],
)
def test_create_bodies_are_checked_against_the_model(
    emulator: AgentCoreEmulator, body: dict[str, Any], fields: set[str]
) -> None:
    response = Client(emulator).control("POST", "/harnesses", body)
    error = aws_error(response, 400, "ValidationException")
    assert {f["name"] for f in error["fieldList"]} == fields
    assert error["message"].startswith(f"{len(fields)} validation error")
    assert emulator.harnesses() == []


def test_unparseable_bodies(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    url = emulator.control_url + "/harnesses"
    response = client.request("POST", url, None, headers={"content-type": "application/json"})
    assert aws_error(response, 400, "ValidationException")["reason"] == "CannotParse"


def test_add_harness_refuses_bad_or_taken_names(emulator: AgentCoreEmulator) -> None:
    emulator.add_harness(name="taken")
    with pytest.raises(ValueError, match="already exists"):
        emulator.add_harness(name="taken")
    with pytest.raises(ValueError, match="harness names"):
        emulator.add_harness(name="no-hyphens")


# --- what real AWS clients make of it -----------------------------------------------------------


def botocore_stream(response: requests.Response, service: str, operation: str) -> Any:
    """The response parsed by botocore's own rest-json parser, as an AWS SDK would."""
    output_shape = (
        botocore.session.get_session()
        .get_service_model(service)
        .operation_model(operation)
        .output_shape
    )
    return create_parser("rest-json").parse(
        {
            "status_code": response.status_code,
            "headers": response.headers,
            "body": response.raw,
            "context": {"operation_name": operation},
        },
        output_shape,
    )


def test_botocore_parses_the_frames(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    body = {"messages": [user("x")], "tools": TOOLS}
    response = client.request("POST", url, body, headers={SESSION_HEADER: session_id}, stream=True)
    parsed = list(botocore_stream(response, "bedrock-agentcore", "InvokeHarness")["stream"])
    ours = frames(client.invoke(arn, [user("x")], new_session_id()))
    assert [next(iter(event)) for event in parsed] == [kind for kind, _ in ours]
    assert parsed[0] == {"messageStart": {"role": "assistant"}}
    assert parsed[-2] == {"messageStop": {"stopReason": "tool_use"}}
    assert parsed[-1]["metadata"]["usage"]["totalTokens"] == 15

    only_results = {"messages": [results([{"toolUseId": "tooluse_x"}], ["y"])]}
    rejected = client.request(
        "POST", url, only_results, headers={SESSION_HEADER: session_id}, stream=True
    )
    with pytest.raises(EventStreamError) as raised:
        list(botocore_stream(rejected, "bedrock-agentcore", "InvokeHarness")["stream"])
    assert raised.value.response["Error"]["Code"] == "runtimeClientError"
    assert "exceeds the number of toolUse blocks" in raised.value.response["Error"]["Message"]

    streamed = client.request(
        "POST",
        f"{emulator.data_url}/runtimes/{quote(runtime_arn(emulator, arn), safe='')}/commands",
        {"command": "echo hi; echo oops >&2; exit 3"},
        headers={SESSION_HEADER: session_id},
        stream=True,
    )
    parsed_command = botocore_stream(streamed, "bedrock-agentcore", "InvokeAgentRuntimeCommand")
    assert parsed_command["runtimeSessionId"] == session_id
    assert list(parsed_command["stream"]) == [
        {"chunk": {"contentStart": {}}},
        {"chunk": {"contentDelta": {"stdout": "hi\n"}}},
        {"chunk": {"contentDelta": {"stderr": "oops\n"}}},
        {"chunk": {"contentStop": {"exitCode": 3, "status": "COMPLETED"}}},
    ]


def test_a_botocore_client_drives_both_planes() -> None:
    with AgentCoreEmulator(["Hi from the emulator."], session_token="temporary") as emu:
        session = botocore.session.get_session()
        credentials = {
            "region_name": emu.region,
            "aws_access_key_id": emu.access_key_id,
            "aws_secret_access_key": emu.secret_access_key,
            "aws_session_token": emu.session_token,
        }
        control = session.create_client(
            "bedrock-agentcore-control", endpoint_url=emu.control_url, **credentials
        )
        data = session.create_client("bedrock-agentcore", endpoint_url=emu.data_url, **credentials)
        harness = control.create_harness(harnessName="sdk", executionRoleArn=ROLE)["harness"]
        assert isinstance(harness["createdAt"], datetime)
        assert control.get_harness(harnessId=harness["harnessId"])["harness"]["status"] == "READY"
        listed = control.list_harnesses(maxResults=5)["harnesses"]
        assert [h["harnessName"] for h in listed] == ["sdk"]
        session_id = new_session_id()
        invoked = data.invoke_harness(
            harnessArn=harness["arn"],
            runtimeSessionId=session_id,
            messages=[{"role": "user", "content": [{"text": "Hello"}]}],
        )
        texts = [
            e["contentBlockDelta"]["delta"]["text"]
            for e in invoked["stream"]
            if "contentBlockDelta" in e
        ]
        assert "".join(texts) == "Hi from the emulator."
        ran = data.invoke_agent_runtime_command(
            agentRuntimeArn=harness["environment"]["agentCoreRuntimeEnvironment"][
                "agentRuntimeArn"
            ],
            runtimeSessionId=session_id,
            body={"command": "echo ok"},
        )
        assert [e["chunk"] for e in ran["stream"]][1] == {"contentDelta": {"stdout": "ok\n"}}
        deleted = control.delete_harness(harnessId=harness["harnessId"])["harness"]
        assert deleted["status"] == "DELETING"
        with pytest.raises(ClientError) as raised:
            control.create_harness(harnessName="bad-name", executionRoleArn=ROLE)
        assert raised.value.response["Error"]["Code"] == "ValidationException"
        assert emu.signature_failures == []


# --- StopRuntimeSession ---------------------------------------------------------------------------


def runtime_arn(emulator: AgentCoreEmulator, harness_arn: str) -> str:
    """The ARN of the runtime behind a harness, read without a request."""
    (harness,) = [h for h in emulator.harnesses() if h["arn"] == harness_arn]
    return str(harness["environment"]["agentCoreRuntimeEnvironment"]["agentRuntimeArn"])


def runtime_of(emulator: AgentCoreEmulator, harness_arn: str) -> str:
    """The runtime ARN a client finds in GetHarness."""
    client = Client(emulator)
    harness_id = harness_arn.rsplit("/", 1)[1]
    response = client.control("GET", f"/harnesses/{harness_id}")
    assert response.status_code == 200, response.text
    runtime = response.json()["harness"]["environment"]["agentCoreRuntimeEnvironment"]
    return str(runtime["agentRuntimeArn"])


def test_get_harness_shows_the_runtime_behind_every_harness(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    added = emulator.add_harness(name="added")
    created = create(client, "created").json()["harness"]["arn"]
    shape = botocore.session.get_session().get_service_model("bedrock-agentcore-control")
    harness_shape = shape.shape_for("Harness")
    runtimes = set()
    for arn in (added, created):
        harness_id = arn.rsplit("/", 1)[1]
        view = client.control("GET", f"/harnesses/{harness_id}").json()["harness"]
        errors: list[tuple[str, str]] = []
        _check_structure(harness_shape, view, "", errors)
        assert errors == []  # every required member, in the model's shapes
        runtime = view["environment"]["agentCoreRuntimeEnvironment"]
        assert re.fullmatch(
            rf"arn:aws:bedrock-agentcore:{emulator.region}:{emulator.account_id}:runtime/"
            r"harness_[a-z]+-[a-zA-Z0-9]{10}",
            runtime["agentRuntimeArn"],
        )
        assert runtime["agentRuntimeArn"].endswith("/" + runtime["agentRuntimeId"])
        runtimes.add(runtime["agentRuntimeArn"])
        # The runtime ARN addresses the harness's commands, as the harness ARN does.
        ran = command_frames(
            client.command(runtime["agentRuntimeArn"], "echo hi", new_session_id())
        )
        assert joined(ran, "stdout") == "hi\n"
    assert len(runtimes) == 2


def test_stopping_a_session_cuts_its_stream_and_forgets_its_conversation(
    emulator: AgentCoreEmulator,
) -> None:
    script = [ConverseTurn(text="first"), ConverseTurn(text="slow turn", delay=0.2)]
    client = Client(emulator)
    arn = emulator.add_harness(script)
    runtime = runtime_of(emulator, arn)
    session_id, other = new_session_id(), new_session_id()
    assert text_of(frames(client.invoke(arn, [user("one")], session_id))) == "first"
    assert text_of(frames(client.invoke(arn, [user("one")], other))) == "first"

    url = f"{emulator.data_url}/harnesses/invoke?harnessArn={quote(arn, safe='')}"
    slow = client.request(
        "POST", url, {"messages": [user("two")]}, headers={SESSION_HEADER: session_id}, stream=True
    )
    decoder = EventStreamDecoder()
    chunks = slow.iter_content(chunk_size=None)
    received = decoder.feed(next(chunks))
    assert [m.headers[":event-type"] for m in received] == ["messageStart"]

    stopped = client.stop(runtime, session_id, {"clientToken": str(uuid.uuid4())})
    assert stopped.status_code == 200, stopped.text
    assert stopped.json() == {}
    assert stopped.headers[SESSION_HEADER] == session_id

    def read_rest() -> None:
        for chunk in chunks:
            received.extend(decoder.feed(chunk))

    with pytest.raises(requests.RequestException):  # the connection is cut mid-body
        read_rest()
    assert "messageStop" not in [m.headers.get(":event-type") for m in received]
    assert [c.end for c in emulator.stream_connections(session_id)][-1] == "stopped"
    assert emulator.stopped_sessions == [StoppedSession(runtime, session_id, None, 1)]

    # The conversation is gone: the script starts over; other sessions keep theirs.
    assert emulator.turn_frames(arn, session_id) == []
    assert text_of(frames(client.invoke(arn, [user("again")], session_id))) == "first"
    assert text_of(frames(client.invoke(arn, [user("two")], other))) == "slow turn"


def test_a_stopped_session_cannot_resume_its_tool_calls(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    first = frames(client.invoke(arn, [user("weather?")], session_id))
    uses = tool_uses(first)
    stopped = client.stop(runtime_of(emulator, arn), session_id, qualifier="DEFAULT")
    assert stopped.status_code == 200, stopped.text
    assert emulator.stopped_sessions[-1].qualifier == "DEFAULT"
    assert emulator.stopped_sessions[-1].streams_cut == 0
    resumed = client.invoke(
        arn, [user("weather?"), echo(uses), results(uses, ["18C", "14:00"])], session_id
    )
    ((kind, payload),) = frames(resumed)
    assert kind == "exception:runtimeClientError"
    assert "expected: none" in payload["message"]


def test_stopping_a_session_never_invoked_or_twice_is_fine(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    session_id = new_session_id()
    for _ in range(2):
        assert client.stop(runtime_arn(emulator, arn), session_id).status_code == 200
    refused = aws_error(client.stop(arn, session_id), 404, "ResourceNotFoundException")
    assert "agentRuntimeArn" in refused["message"], "a harness ARN is not a runtime's"
    assert [s.streams_cut for s in emulator.stopped_sessions] == [0, 0]


@pytest.mark.parametrize(
    ("body", "session_id", "field"),
    [
        (None, "short", "runtimeSessionId"),
        (None, None, "runtimeSessionId"),
        (None, "x" * 257, "runtimeSessionId"),
        ({"clientToken": "short"}, new_session_id(), "clientToken"),
        ({"clientToken": "-" * 40}, new_session_id(), "clientToken"),
        ({"extra": 1}, new_session_id(), "extra"),
    ],
    ids=["short", "missing", "long", "short-token", "bad-token", "extra-member"],
)
def test_stop_requests_are_checked_against_the_model(
    emulator: AgentCoreEmulator, body: Any, session_id: str | None, field: str
) -> None:
    client = Client(emulator)
    arn = emulator.add_harness()
    error = aws_error(client.stop(arn, session_id, body), 400, "ValidationException")
    assert [f["name"] for f in error["fieldList"]] == [field]
    assert emulator.stopped_sessions == []


def test_stopping_an_unknown_runtime_is_not_found(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    runtime = runtime_of(emulator, emulator.add_harness())
    unknown = runtime[:-10] + "zzzzzzzzzz"
    aws_error(client.stop(unknown, new_session_id()), 404, "ResourceNotFoundException")
    assert emulator.stopped_sessions == []


def test_stop_requests_must_be_signed(emulator: AgentCoreEmulator) -> None:
    arn = emulator.add_harness()
    response = Client(emulator, secret="x" * 40).stop(arn, new_session_id())
    aws_error(response, 403, "InvalidSignatureException")
    assert emulator.stopped_sessions == []
    assert emulator.signature_failures[-1][1].endswith("/stopruntimesession")


def test_a_botocore_client_stops_a_runtime_session() -> None:
    with AgentCoreEmulator(["Hi."]) as emu:
        arn = emu.add_harness()
        data = botocore.session.get_session().create_client(
            "bedrock-agentcore",
            endpoint_url=emu.data_url,
            region_name=emu.region,
            aws_access_key_id=emu.access_key_id,
            aws_secret_access_key=emu.secret_access_key,
        )
        session_id = new_session_id()
        runtime = runtime_of(emu, arn)
        answer = data.stop_runtime_session(agentRuntimeArn=runtime, runtimeSessionId=session_id)
        assert answer["runtimeSessionId"] == session_id
        assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
        (stopped,) = emu.stopped_sessions
        assert (stopped.runtime_arn, stopped.runtime_session_id) == (runtime, session_id)
        body = emu.requests[-1].body
        assert len(body["clientToken"]) >= 33  # botocore fills the idempotency token in
        assert emu.signature_failures == []


# --- packaging ----------------------------------------------------------------------------------


def test_importing_the_testing_package_does_not_import_botocore() -> None:
    code = (
        "import sys, req_managed_agents.testing, req_managed_agents.testing.pytest_plugin\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_pytest_fixture(agentcore_emulator: AgentCoreEmulator) -> None:
    arn = agentcore_emulator.add_harness(["From the fixture."])
    events = frames(Client(agentcore_emulator).invoke(arn, [user("x")], new_session_id()))
    assert text_of(events) == "From the fixture."


# --- UpdateHarness, ListHarnessVersions, declared tools -----------------------------------------


def test_update_harness_makes_a_new_version(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    harness = create(client, "versioned", systemPrompt=[{"text": "v1"}]).json()["harness"]
    harness_id = harness["harnessId"]
    path = f"/harnesses/{harness_id}"
    assert harness["harnessVersion"] == "1"
    not_ready = client.request("PATCH", emulator.control_url + path, {"maxTokens": 10})
    aws_error(not_ready, 409, "ConflictException")  # still CREATING
    assert client.control("GET", path).json()["harness"]["status"] == "READY"

    token = str(uuid.uuid4())
    change = {
        "clientToken": token,
        "systemPrompt": [{"text": "v2"}],
        "environment": {
            "agentCoreRuntimeEnvironment": {"lifecycleConfiguration": {"maxLifetime": 3600}}
        },
        "memory": {
            "optionalValue": {
                "agentCoreMemoryConfiguration": {
                    "arn": "arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/m-abcdefghij"
                }
            }
        },
    }
    updated = client.request("PATCH", emulator.control_url + path, change)
    assert updated.status_code == 200, updated.text
    view = updated.json()["harness"]
    assert (view["status"], view["harnessVersion"]) == ("UPDATING", "2")
    assert view["systemPrompt"] == [{"text": "v2"}]
    runtime = view["environment"]["agentCoreRuntimeEnvironment"]
    assert runtime["lifecycleConfiguration"]["maxLifetime"] == 3600
    assert (
        runtime["agentRuntimeArn"]
        == (harness["environment"]["agentCoreRuntimeEnvironment"]["agentRuntimeArn"])
    )
    assert "agentCoreMemoryConfiguration" in view["memory"]
    again = client.request("PATCH", emulator.control_url + path, change)  # a retry
    assert again.json()["harness"]["harnessVersion"] == "2"
    assert client.control("GET", path).json()["harness"]["status"] == "READY"
    cleared = client.request("PATCH", emulator.control_url + path, {"memory": {}})
    assert "memory" not in cleared.json()["harness"]
    assert client.control("GET", path).json()["harness"]["harnessVersion"] == "3"

    first = client.control("GET", f"{path}?harnessVersion=1").json()["harness"]
    assert (first["harnessVersion"], first["systemPrompt"]) == ("1", [{"text": "v1"}])
    aws_error(client.control("GET", f"{path}?harnessVersion=9"), 404, "ResourceNotFoundException")
    page = client.control("GET", f"{path}/versions?maxResults=2").json()
    assert [v["harnessVersion"] for v in page["harnessVersions"]] == ["3", "2"]
    rest = client.control("GET", f"{path}/versions?nextToken={page['nextToken']}").json()
    assert [v["harnessVersion"] for v in rest["harnessVersions"]] == ["1"]
    assert "nextToken" not in rest
    model = botocore.session.get_session().get_service_model("bedrock-agentcore-control")
    errors: list[tuple[str, str]] = []
    _check_structure(model.operation_model("ListHarnessVersions").output_shape, page, "", errors)
    _check_structure(model.shape_for("Harness"), first, "", errors)
    assert errors == []
    bad = client.request("PATCH", emulator.control_url + path, {"harnessName": "renamed"})
    aws_error(bad, 400, "ValidationException")  # not an UpdateHarness member


def test_botocore_updates_and_lists_versions(emulator: AgentCoreEmulator) -> None:
    session = botocore.session.get_session()
    control = session.create_client(
        "bedrock-agentcore-control",
        region_name=emulator.region,
        endpoint_url=emulator.control_url,
        aws_access_key_id=emulator.access_key_id,
        aws_secret_access_key=emulator.secret_access_key,
        aws_session_token=emulator.session_token,
    )
    arn = emulator.add_harness(name="botocore_updated")
    harness_id = arn.rsplit("/", 1)[1]
    updated = control.update_harness(harnessId=harness_id, maxIterations=4)["harness"]
    assert (updated["harnessVersion"], updated["maxIterations"]) == ("2", 4)
    versions = control.list_harness_versions(harnessId=harness_id)["harnessVersions"]
    assert [v["harnessVersion"] for v in versions] == ["2", "1"]
    assert emulator.signature_failures == []


def test_create_harness_checks_the_environment_as_the_model_says(
    emulator: AgentCoreEmulator,
) -> None:
    client = Client(emulator)
    flat = {"networkConfiguration": {"networkMode": "PUBLIC"}}  # not under the union member
    aws_error(create(client, "flat", environment=flat), 400, "ValidationException")
    aws_error(create(client, "empty", environment={}), 400, "ValidationException")
    short = {"agentCoreRuntimeEnvironment": {"lifecycleConfiguration": {"maxLifetime": 5}}}
    aws_error(create(client, "short", environment=short), 400, "ValidationException")
    nested = {"agentCoreRuntimeEnvironment": {"networkConfiguration": {"networkMode": "VPC"}}}
    made = create(client, "nested", environment=nested)
    assert made.status_code == 201, made.text
    runtime = made.json()["harness"]["environment"]["agentCoreRuntimeEnvironment"]
    assert runtime["networkConfiguration"] == {"networkMode": "VPC"}


def test_a_call_of_an_undeclared_tool_is_refused_mid_stream(emulator: AgentCoreEmulator) -> None:
    client = Client(emulator)
    arn = emulator.add_harness([ConverseTurn(text="Let me look.", tool_calls=[call("lookup")])])
    session_id = new_session_id()
    events = frames(client.invoke(arn, [user("x")], session_id, tools=[inline_tool("other")]))
    assert text_of(events) == "Let me look."
    kind, payload = events[-1]
    assert kind == "exception:runtimeClientError"
    assert "'lookup'" in payload["message"]
    assert "other" in payload["message"]
    assert emulator.turn_frames(arn, session_id) == []  # never committed
    declared = frames(client.invoke(arn, [user("x")], session_id, tools=[inline_tool("lookup")]))
    assert declared[-2] == ("messageStop", {"stopReason": "tool_use"})
    mcp = {"type": "remote_mcp", "name": "docs", "config": {"remoteMcp": {"url": "https://m"}}}
    other_session = new_session_id()
    assert frames(client.invoke(arn, [user("x")], other_session, tools=[mcp]))[-2][0] == (
        "messageStop"
    )  # an MCP server may bring any tool
