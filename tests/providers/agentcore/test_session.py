"""The drivers against the AgentCore Harness emulator, over real loopback sockets.

Each test plays a scripted harness and checks what a user relies on: the result, that each
tool ran once, what reaches the service (bodies, headers, signatures), which failures are
retried and which are final, and that timeouts return on time and close the stream.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from req_managed_agents import (
    ConfigurationError,
    SessionResult,
    SessionTimeoutError,
    Tools,
    run_to_completion,
    telemetry,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    IdleTimeoutError,
    InvocationOutcomeUnknownError,
    NotFoundError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
)
from req_managed_agents.providers._base import Opening
from req_managed_agents.providers.agentcore import (
    BedrockAgentCore,
    _conversation,
    new_runtime_session_id,
)
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call
from tests.support.tools import CountingTools

pytest.importorskip("botocore")

ROLE = "arn:aws:iam::123456789012:role/harness"
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLE//SESSIONTOKEN+/=="
INVOKE_PATH = "/harnesses/invoke"

TWO_TOOL_TURNS = [
    ConverseTurn(text="Adding.", tool_calls=[call("add", a=1, b=2), call("add", a=10, b=20)]),
    ConverseTurn(tool_calls=[call("add", a=3, b=4)]),
    ConverseTurn(text=lambda results: f"The answer is {results[0]}.", usage=(7, 3)),
]


def make_provider(emulator: AgentCoreEmulator, *, secret: str | None = None) -> BedrockAgentCore:
    if secret is None:
        return emulator.provider(timeout=5)
    credentials = {"access_key_id": emulator.access_key_id, "secret_access_key": secret}
    return BedrockAgentCore(
        emulator.region,
        credentials={**credentials, "session_token": emulator.session_token},
        endpoint_url=emulator.data_url,
        control_endpoint_url=emulator.control_url,
        timeout=5,
    )


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator(TWO_TOOL_TURNS) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: AgentCoreEmulator) -> Iterator[BedrockAgentCore]:
    with make_provider(emulator) as provider:
        yield provider


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink the invocation retry backoff (its length is not what these tests check)."""
    monkeypatch.setattr(_conversation, "INVOKE_RETRY", _conversation.INVOKE_RETRY.but(base=0.01))


def run(
    provider: BedrockAgentCore,
    emulator: AgentCoreEmulator,
    handler: Tools,
    script: list[ConverseTurn] | None = None,
    **options: Any,
) -> SessionResult:
    arn = emulator.add_harness(script, name=f"h{uuid.uuid4().hex[:12]}")
    return run_to_completion(
        provider, "Add things", handler=handler, harness_arn=arn, timeout=20, **options
    )


def invoke_requests(emulator: AgentCoreEmulator) -> list[Any]:
    """Every InvokeHarness request received, including those answered with an error."""
    return [r for r in emulator.requests if r.method == "POST" and r.path == INVOKE_PATH]


# --- the happy path -----------------------------------------------------------------------


def test_two_tool_turns_complete_with_text_usage_and_results(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    tools = CountingTools()
    result = run(provider, emulator, tools)
    assert result.terminal == "end_turn"
    assert result.stop_reason == "end_turn"
    assert result.text == "The answer is 7."
    assert result.turns == 3
    assert [dict(use.input) for use in result.tool_uses] == [
        {"a": 1, "b": 2},
        {"a": 10, "b": 20},
        {"a": 3, "b": 4},
    ]
    assert [(r.content, r.is_error) for r in result.tool_results] == [
        ("3", False),
        ("30", False),
        ("7", False),
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10 + 10 + 7, 5 + 5 + 3)
    assert result.turn_usage[-1].output_tokens == 3
    assert sorted(tools.calls.values()) == [1, 1, 1], "each tool use ran exactly once"
    assert len(emulator.invocations) == 3
    assert tools.events == list(result.events), "handle_event saw every event, in order"


def test_a_reused_block_index_yields_two_distinct_tools(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    script = [
        ConverseTurn(
            tool_calls=[call("add", a=1, b=2), call("add", a=5, b=5)], reuse_block_index=True
        ),
        ConverseTurn(text=lambda results: ",".join(results)),
    ]
    tools = CountingTools()
    result = run(provider, emulator, tools, script)
    starts = [e["contentBlockStart"] for e in result.events if "contentBlockStart" in e]
    assert len({start["contentBlockIndex"] for start in starts}) == 1, "the index was reused"
    assert len({use.id for use in result.tool_uses}) == 2
    assert [dict(use.input) for use in result.tool_uses] == [{"a": 1, "b": 2}, {"a": 5, "b": 5}]
    assert result.text == "3,10", "the harness accepted the resume and saw both results"
    assert sorted(tools.calls.values()) == [1, 1]


def test_the_resume_body_echoes_the_tool_uses_then_carries_the_results(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    result = run(provider, emulator, CountingTools())
    first, second = result.tool_uses[0], result.tool_uses[1]
    assert emulator.invocations[0].body["messages"] == [
        {"role": "user", "content": [{"text": "Add things"}]}
    ]
    assert emulator.invocations[1].body["messages"] == [
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": first.id, "name": "add", "input": {"a": 1, "b": 2}}},
                {"toolUse": {"toolUseId": second.id, "name": "add", "input": {"a": 10, "b": 20}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": first.id,
                        "content": [{"text": "3"}],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": second.id,
                        "content": [{"text": "30"}],
                        "status": "success",
                    }
                },
            ],
        },
    ]


def test_a_failing_tool_is_sent_back_with_status_error_and_the_session_goes_on(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    tools = Tools()

    @tools.tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    script = [ConverseTurn(tool_calls=[call("explode")]), ConverseTurn(text=lambda r: r[0])]
    result = run(provider, emulator, tools, script)
    assert result.terminal == "end_turn"
    assert result.text.startswith("RuntimeError: disk on fire")
    sent = emulator.invocations[1].body["messages"][1]["content"][0]["toolResult"]
    assert sent["status"] == "error"


# --- failures inside the stream -------------------------------------------------------------


@pytest.mark.parametrize(
    ("inject", "exception_type", "message"),
    [
        pytest.param(
            lambda emu: emu.exception_frame(
                "modelStreamErrorException", "the model fell over", after_frames=2
            ),
            "modelStreamErrorException",
            "the model fell over",
            id="exception-frame",
        ),
        pytest.param(
            lambda emu: emu.error_frame("InternalFailure", "stream broke upstream", after_frames=2),
            "InternalFailure",
            "stream broke upstream",
            id="error-frame",
        ),
    ],
)
def test_an_in_stream_failure_raises_provider_stream_error_without_retry(
    provider: BedrockAgentCore,
    emulator: AgentCoreEmulator,
    inject: Any,
    exception_type: str,
    message: str,
) -> None:
    inject(emulator)
    tools = CountingTools()
    reported: list[tuple[str, dict[str, Any]]] = []
    detach = telemetry.attach(lambda name, _, metadata: reported.append((name, metadata)))
    try:
        with pytest.raises(ProviderStreamError) as caught:
            run(provider, emulator, tools)
    finally:
        detach()
    errors = [meta for name, meta in reported if name.endswith(".stream.error")]
    assert len(errors) == 1, "the broken stream is reported, at once"
    assert message in errors[0]["reason"]
    assert caught.value.exception_type == exception_type
    assert caught.value.message == message
    assert len(emulator.invocations) == 1, "the harness's final word is not retried"
    assert not tools.calls


def test_a_stream_cut_before_its_turn_ended_is_not_sent_again(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, fast_backoff: None
) -> None:
    # The harness may have committed the turn, tool calls pending, and keeps no history to
    # ask: invoking again could run the turn twice, or skip its calls and report success.
    emulator.truncate_stream(after_frames=3)
    tools = CountingTools()
    with pytest.raises(InvocationOutcomeUnknownError):
        run(provider, emulator, tools)
    assert len(invoke_requests(emulator)) == 1
    assert not tools.calls
    assert len(tools.events) == 3, "what arrived was delivered"


def test_a_stall_past_idle_timeout_raises_quickly_without_retry(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness()
    emulator.stall_stream(after_frames=2, seconds=10)
    seen: list[Mapping[str, Any]] = []
    conversation = provider.open_conversation(
        {"harness_arn": arn, "idle_timeout": 0.5}, Opening(seen.append)
    )
    started = time.monotonic()
    try:
        with pytest.raises(IdleTimeoutError) as caught:
            conversation.send_prompt("Add things")
    finally:
        conversation.close()
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, f"waited {elapsed:.2f} s for a 0.5 s idle timeout"
    assert caught.value.idle_timeout == 0.5
    assert len(seen) == 2, "the frames before the stall were delivered live"
    assert len(emulator.invocations) == 1, "a silent invocation may still run: no retry"


@pytest.mark.parametrize("run_timeout", [20.0, None], ids=["run-timeout", "no-run-timeout"])
def test_an_idle_timeout_reaches_the_caller_of_run_to_completion(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, run_timeout: float | None
) -> None:
    arn = emulator.add_harness()
    emulator.stall_stream(after_frames=2, seconds=10)
    started = time.monotonic()
    with pytest.raises(IdleTimeoutError):
        run_to_completion(
            provider,
            "Add things",
            handler=CountingTools(),
            harness_arn=arn,
            idle_timeout=0.5,
            timeout=run_timeout,
        )
    assert time.monotonic() - started < 2.5
    assert len(emulator.invocations) == 1


# --- signing ------------------------------------------------------------------------------


def test_a_bad_signature_is_rejected_as_an_authentication_error(
    emulator: AgentCoreEmulator,
) -> None:
    arn = emulator.add_harness()
    wrong = "x" * 40
    with (
        make_provider(emulator, secret=wrong) as provider,
        pytest.raises(AuthenticationError) as caught,
    ):
        run_to_completion(provider, "hi", handler=CountingTools(), harness_arn=arn, timeout=20)
    assert caught.value.status_code == 403
    assert caught.value.error_type == "InvalidSignatureException"
    assert len(emulator.signature_failures) == 1, "a rejected signature is not retried"
    assert emulator.invocations == []


def exercise_both_planes(provider: BedrockAgentCore, emulator: AgentCoreEmulator) -> None:
    """A full session (its GetHarness for the deployed tools), a command and harness CRUD:
    every kind of request the client sends."""
    arn = emulator.add_harness(TWO_TOOL_TURNS, name="session_harness")
    result = run_to_completion(
        provider, "Add things", handler=CountingTools(), harness_arn=arn, timeout=20
    )
    assert result.text == "The answer is 7."
    client = provider.client
    runtime_arn = emulator.harnesses()[0]["environment"]["agentCoreRuntimeEnvironment"][
        "agentRuntimeArn"
    ]
    command = client.invoke_agent_runtime_command(runtime_arn, str(result.session_id), "echo hi")
    assert command.stdout == "hi\n"
    created = client.create_harness({"harnessName": "crud_harness", "executionRoleArn": ROLE})
    assert client.get_harness(created["harnessId"])["arn"] == created["arn"]
    assert {h["harnessId"] for h in client.list_harnesses()} >= {created["harnessId"]}
    client.delete_harness(created["harnessId"])
    assert {r.listener for r in emulator.requests} == {"data", "control"}


def test_every_request_of_a_session_a_command_and_harness_crud_verifies(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    exercise_both_planes(provider, emulator)
    assert len(emulator.requests) == 9, "3 invocations, 1 command, 5 control-plane calls"
    assert emulator.signature_failures == []


@pytest.mark.parametrize("session_token", [SESSION_TOKEN, None], ids=["temporary", "long-term"])
def test_a_session_token_is_sent_on_every_request_and_only_then(
    session_token: str | None,
) -> None:
    with AgentCoreEmulator(session_token=session_token) as emulator:
        with make_provider(emulator) as provider:
            exercise_both_planes(provider, emulator)
        assert emulator.signature_failures == []
        tokens = [r.headers.get("x-amz-security-token") for r in emulator.requests]
    assert len(tokens) == 9
    assert tokens == [session_token] * len(tokens)


# --- retry rules --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (429, "ThrottlingException"),
        (400, "ThrottlingException"),  # AWS may throttle with a 400
        (503, "ServiceUnavailableException"),
    ],
)
def test_refusals_are_retried_and_succeed(
    provider: BedrockAgentCore,
    emulator: AgentCoreEmulator,
    fast_backoff: None,
    status: int,
    error_type: str,
) -> None:
    emulator.fail_requests("POST", INVOKE_PATH, status, error_type=error_type)
    tools = CountingTools()
    result = run(provider, emulator, tools)
    assert result.text == "The answer is 7."
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert len(invoke_requests(emulator)) == 4, "one failed request, then three turns"


def test_a_throttle_retry_waits_for_retry_after_instead_of_the_backoff(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = _conversation.INVOKE_RETRY.but(base=5.0)  # >= 3.75 s if used
    monkeypatch.setattr(_conversation, "INVOKE_RETRY", slow)
    emulator.fail_requests("POST", INVOKE_PATH, 429, retry_after=0.3)
    result = run(provider, emulator, CountingTools())
    assert result.text == "The answer is 7."
    first, second = invoke_requests(emulator)[:2]
    gap = second.received_at - first.received_at
    assert 0.29 <= gap < 2.0, gap


@pytest.mark.parametrize(
    ("status", "error_type", "error_class"),
    [
        (400, "ValidationException", BadRequestError),
        (403, "AccessDeniedException", AuthenticationError),
        (404, "ResourceNotFoundException", NotFoundError),
        # A bare 500 does not prove the turn did not start: not sent again.
        (500, "InternalServerException", ServerError),
    ],
)
def test_errors_that_do_not_prove_a_refusal_are_not_retried(
    provider: BedrockAgentCore,
    emulator: AgentCoreEmulator,
    fast_backoff: None,
    status: int,
    error_type: str,
    error_class: type[APIError],
) -> None:
    emulator.fail_requests("POST", INVOKE_PATH, status, error_type=error_type)
    with pytest.raises(error_class) as caught:
        run(provider, emulator, CountingTools())
    assert (caught.value.status_code, caught.value.error_type) == (status, error_type)
    assert len(invoke_requests(emulator)) == 1


@pytest.mark.parametrize(
    ("invoke_retries", "requests_sent", "last_status"), [(0, 1, 503), (2, 2, 500)]
)
def test_retries_give_up_after_invoke_retries_and_raise_the_last_error(
    provider: BedrockAgentCore,
    emulator: AgentCoreEmulator,
    fast_backoff: None,
    invoke_retries: int,
    requests_sent: int,
    last_status: int,
) -> None:
    emulator.fail_requests("POST", INVOKE_PATH, 503)
    emulator.fail_requests("POST", INVOKE_PATH, 500, times=10)
    with pytest.raises(ServerError) as caught:
        run(provider, emulator, CountingTools(), invoke_retries=invoke_retries)
    assert caught.value.status_code == last_status
    assert len(invoke_requests(emulator)) == requests_sent
    assert emulator.invocations == []


def test_a_throttle_asking_for_longer_than_max_retry_after_is_not_waited_out(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness()
    emulator.fail_requests("POST", INVOKE_PATH, 429, retry_after=90)
    started = time.monotonic()
    with pytest.raises(RateLimitError) as caught:
        run_to_completion(provider, "hi", handler=CountingTools(), harness_arn=arn, timeout=1.5)
    assert time.monotonic() - started < 1.0
    assert caught.value.retry_after == 90


# --- run timeout --------------------------------------------------------------------------


def test_run_timeout_returns_on_time_and_the_emulator_sees_the_stream_closed(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness([ConverseTurn(text="a slow answer", delay=0.4)])
    session = Session(provider, handler=CountingTools(), harness_arn=arn)
    started = time.monotonic()
    with pytest.raises(SessionTimeoutError):
        session.run("Take your time", timeout=0.5)
    assert time.monotonic() - started < 1.5
    session_id = session.session_id
    assert session_id is not None
    # AgentCoreEmulator has no public stream_connections(); the base class records them.
    assert emulator.wait_until(
        lambda: [c.end for c in emulator.stream_connections(session_id)] == ["client_closed"],
        timeout=3,
    ), emulator.stream_connections(session_id)
    assert len(emulator.invocations) == 1


# --- per-invocation options ---------------------------------------------------------------


def test_per_invocation_options_reach_every_body_under_their_member_names(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    tools = CountingTools()
    result = run(
        provider,
        emulator,
        tools,
        timeout_seconds=120,
        max_iterations=7,
        max_tokens=900,
        system_prompt="Be terse.",
        model="us.anthropic.claude-haiku-4-5-20251001-v1:0",
        tools=tools,
        allowed_tools=["add"],
        actor_id="user-42",
    )
    assert result.text == "The answer is 7."
    expected: dict[str, Any] = {
        "timeoutSeconds": 120,
        "maxIterations": 7,
        "maxTokens": 900,
        "systemPrompt": [{"text": "Be terse."}],
        "model": {"bedrockModelConfig": {"modelId": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}},
        "tools": [
            {
                "type": "inline_function",
                "name": "add",
                "config": {
                    "inlineFunction": {
                        "description": "Add two integers.",
                        "inputSchema": tools.schemas()[0]["input_schema"],
                    }
                },
            }
        ],
        "allowedTools": ["add"],
        "actorId": "user-42",
    }
    assert set(expected["tools"][0]["config"]["inlineFunction"]["inputSchema"]["properties"]) == {
        "a",
        "b",
    }, "the ToolContext parameter is not part of the schema"
    assert len(emulator.invocations) == 3
    for invocation in emulator.invocations:
        options = {k: v for k, v in invocation.body.items() if k != "messages"}
        assert options == expected


@pytest.mark.parametrize(
    "options",
    [
        {},
        {
            "timeout_seconds": None,
            "max_iterations": None,
            "max_tokens": None,
            "system_prompt": None,
            "model": None,
            "tools": None,
            "allowed_tools": None,
            "actor_id": None,
        },
    ],
    ids=["absent", "none"],
)
def test_absent_options_are_omitted_never_null(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, options: dict[str, Any]
) -> None:
    run(provider, emulator, CountingTools(), **options)
    for request in invoke_requests(emulator):
        assert set(request.body) == {"messages", "tools"}, "the handler's tools are declared"
        assert b"null" not in request.raw_body


def test_a_generated_runtime_session_id_is_valid_and_kept_for_the_whole_session(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness([*TWO_TOOL_TURNS, ConverseTurn(text="again")])
    with Session(provider, handler=CountingTools(), harness_arn=arn) as session:
        first = session.run("Add things", timeout=20)
        second = session.run("And again?", timeout=20)
    assert second.text == "again"
    session_id = first.session_id
    assert session_id is not None
    assert second.session_id == session_id
    assert len(session_id) >= 33
    assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_-]{32,99}", session_id)
    assert [i.runtime_session_id for i in emulator.invocations] == [session_id] * 4
    other = run_to_completion(provider, "hi", handler=CountingTools(), harness_arn=arn, timeout=20)
    assert other.session_id != session_id, "each new session gets its own id"


def test_a_given_runtime_session_id_reattaches_to_that_session(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness(["first answer", "second answer"])
    given = new_runtime_session_id()
    texts = []
    for prompt in ("one", "two"):
        result = run_to_completion(
            provider,
            prompt,
            handler=CountingTools(),
            harness_arn=arn,
            runtime_session_id=given,
            timeout=20,
        )
        assert result.session_id == given
        texts.append(result.text)
    assert texts == ["first answer", "second answer"], "the second run continued the session"
    headers = [
        r.headers["x-amzn-bedrock-agentcore-runtime-session-id"]
        for r in emulator.requests
        if r.listener == "data"
    ]
    assert headers == [given, given]


def test_a_runtime_session_id_with_a_trailing_newline_is_a_configuration_error(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness()
    with pytest.raises(ConfigurationError):
        run_to_completion(
            provider,
            "hi",
            handler=CountingTools(),
            harness_arn=arn,
            runtime_session_id="a" * 40 + "\n",
            timeout=20,
        )
    assert emulator.requests == []


def test_silence_before_the_response_head_is_an_idle_timeout_and_runs_once() -> None:
    with AgentCoreEmulator([ConverseTurn(text="hello")]) as emulator:
        provider = emulator.provider()
        arn = emulator.add_harness()
        emulator.before_requests("POST", "/harnesses/invoke", lambda: time.sleep(1.5))
        with pytest.raises(IdleTimeoutError):
            run_to_completion(provider, "hi", handler=Tools(), harness_arn=arn, idle_timeout=0.5)
        assert emulator.wait_until(lambda: len(emulator.invocations) == 1, timeout=3)
        time.sleep(0.3)
        assert len(emulator.invocations) == 1, "a turn that may be running is not started twice"


# --- a turn the harness has committed is never invoked again --------------------------------


@pytest.mark.parametrize("abrupt", [False, True], ids=["clean-end", "cut"])
def test_a_stream_ending_after_message_stop_keeps_the_turn_and_is_not_reinvoked(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator, fast_backoff: None, abrupt: bool
) -> None:
    emulator.truncate_after_commit(abrupt=abrupt)  # turn 1: its metadata frame never comes
    tools = CountingTools()
    result = run(provider, emulator, tools)
    assert (result.terminal, result.text) == ("end_turn", "The answer is 7.")
    assert len(invoke_requests(emulator)) == 3, "one invocation per turn, none replayed"
    assert sorted(tools.calls.values()) == [1, 1, 1]
    assert result.turn_usage[0].total_tokens == 0, "the lost metadata carried turn 1's usage"


def test_reattaching_without_a_prompt_invokes_nothing(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness(["first answer", "second answer"])
    given = new_runtime_session_id()
    run_to_completion(
        provider, "one", handler=CountingTools(), harness_arn=arn, runtime_session_id=given
    )
    result = run_to_completion(
        provider, handler=CountingTools(), harness_arn=arn, runtime_session_id=given, timeout=20
    )
    assert (result.terminal, result.text, result.turns) == ("end_turn", "", 0)
    assert len(invoke_requests(emulator)) == 1, "no 'Begin.' was sent into the conversation"
    follow_up = run_to_completion(
        provider, "two", handler=CountingTools(), harness_arn=arn, runtime_session_id=given
    )
    assert follow_up.text == "second answer"


def test_a_lone_surrogate_in_tool_input_or_result_is_sent_escaped(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    tools = Tools()

    @tools.tool
    def echo(text: str) -> str:
        """Echo the text back with a broken character of its own."""
        return text + " \udc80"

    script = [
        ConverseTurn(tool_calls=[call("echo", text="half a pair: \ud83d")]),
        ConverseTurn(text=lambda results: f"got {len(results[0])} characters"),
    ]
    result = run(provider, emulator, tools, script)
    assert (result.terminal, result.text) == ("end_turn", "got 16 characters")
    assert result.tool_results[0].content == "half a pair: \ud83d \udc80"
    resume = invoke_requests(emulator)[-1].raw_body
    assert b"\\ud83d" in resume  # the echoed input
    assert b"\\udc80" in resume  # the result


def test_without_tools_the_handlers_own_tools_are_declared(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    tools = CountingTools()
    run(provider, emulator, tools)
    declared = [tool["name"] for tool in emulator.invocations[0].body["tools"]]
    assert declared == ["add"]
    assert emulator.invocations[0].body["tools"][0]["type"] == "inline_function"


def test_explicit_tools_win_over_the_handlers(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    run(provider, emulator, CountingTools(), [ConverseTurn(text="no tools needed")], tools=[])
    assert emulator.invocations[0].body.get("tools") == []


def test_runtime_user_id_is_sent_on_every_invocation_and_checked(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    arn = emulator.add_harness(TWO_TOOL_TURNS, name="per_user")
    run_to_completion(
        provider, "Add", handler=CountingTools(), harness_arn=arn, runtime_user_id="user-42"
    )
    invocations = [r for r in emulator.requests if r.path == INVOKE_PATH]
    assert len(invocations) == 3
    assert {r.headers["x-amzn-bedrock-agentcore-runtime-user-id"] for r in invocations} == {
        "user-42"
    }
    with pytest.raises(ConfigurationError, match="runtime_user_id"):
        run_to_completion(
            provider, "Add", handler=CountingTools(), harness_arn=arn, runtime_user_id="  "
        )
