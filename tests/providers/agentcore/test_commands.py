"""``invoke_agent_runtime_command`` against the AgentCore emulator (real ``/bin/sh``, loopback).

A command's output streams to ``on_output`` in order and comes back whole in a
:class:`CommandResult`; a non-zero exit is a result, not an error; a command that overruns its
timeout is reported ``TIMED_OUT``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Literal

import pytest

from req_managed_agents.providers.agentcore import (
    AgentCoreClient,
    CommandResult,
    new_runtime_session_id,
)
from req_managed_agents.testing import AgentCoreEmulator

pytest.importorskip("botocore")

Output = list[tuple[Literal["stdout", "stderr"], str]]


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emulator:
        emulator.add_harness()
        yield emulator


@pytest.fixture
def client(emulator: AgentCoreEmulator) -> Iterator[AgentCoreClient]:
    with emulator.provider(timeout=5) as provider:
        yield provider.client


@pytest.fixture
def runtime_arn(emulator: AgentCoreEmulator) -> str:
    (harness,) = emulator.harnesses()
    return str(harness["environment"]["agentCoreRuntimeEnvironment"]["agentRuntimeArn"])


def test_output_streams_in_order_and_the_result_holds_it_all(
    client: AgentCoreClient, emulator: AgentCoreEmulator, runtime_arn: str
) -> None:
    session_id = new_runtime_session_id()
    seen: Output = []
    result = client.invoke_agent_runtime_command(
        runtime_arn,
        session_id,
        "printf 'out1\\n'; printf 'err1\\n' >&2; printf 'out2\\n'",
        on_output=lambda stream, text: seen.append((stream, text)),
    )
    assert result == CommandResult(0, "COMPLETED", "out1\nout2\n", "err1\n")
    assert seen == [("stdout", "out1\nout2\n"), ("stderr", "err1\n")]
    (record,) = emulator.commands
    assert (record.arn, record.runtime_session_id) == (runtime_arn, session_id)
    assert emulator.signature_failures == []


def test_a_non_zero_exit_is_a_result_not_an_error(
    client: AgentCoreClient, runtime_arn: str
) -> None:
    result = client.invoke_agent_runtime_command(
        runtime_arn, new_runtime_session_id(), "echo partial; echo oops >&2; exit 7"
    )
    assert result == CommandResult(7, "COMPLETED", "partial\n", "oops\n")


def test_large_output_arrives_complete_and_in_order(
    client: AgentCoreClient, runtime_arn: str
) -> None:
    pieces: Output = []
    result = client.invoke_agent_runtime_command(
        runtime_arn,
        new_runtime_session_id(),
        "seq 1 30000; printf 'h\\303\\251llo w\\303\\266rld\\n'",
        on_output=lambda stream, text: pieces.append((stream, text)),
    )
    expected = "".join(f"{n}\n" for n in range(1, 30001)) + "héllo wörld\n"
    assert len(expected.encode()) > 100 * 1024
    assert result.stdout == expected
    assert result.exit_code == 0
    assert len(pieces) > 1, "large output streams in several pieces"
    assert {stream for stream, _ in pieces} == {"stdout"}
    assert "".join(text for _, text in pieces) == expected


def test_a_command_that_overruns_its_timeout_is_timed_out(
    client: AgentCoreClient, emulator: AgentCoreEmulator, runtime_arn: str
) -> None:
    started = time.monotonic()
    result = client.invoke_agent_runtime_command(
        runtime_arn, new_runtime_session_id(), "echo started; sleep 10", timeout_seconds=1
    )
    assert time.monotonic() - started < 5
    assert result.status == "TIMED_OUT"
    assert result.stdout == "started\n"
    assert emulator.commands[-1].timeout == 1


@pytest.mark.parametrize(
    ("timeout_seconds", "body"),
    [(30, {"command": "true", "timeout": 30}), (None, {"command": "true"})],
    ids=["given", "absent"],
)
def test_timeout_seconds_reaches_the_body_as_timeout(
    client: AgentCoreClient,
    emulator: AgentCoreEmulator,
    runtime_arn: str,
    timeout_seconds: int | None,
    body: dict[str, object],
) -> None:
    result = client.invoke_agent_runtime_command(
        runtime_arn, new_runtime_session_id(), "true", timeout_seconds=timeout_seconds
    )
    assert result == CommandResult(0, "COMPLETED", "", "")
    (request,) = [r for r in emulator.requests if r.path.endswith("/commands")]
    assert request.body == body


def test_an_empty_command_is_refused_before_any_request(
    client: AgentCoreClient, emulator: AgentCoreEmulator, runtime_arn: str
) -> None:
    with pytest.raises(ValueError, match="empty"):
        client.invoke_agent_runtime_command(runtime_arn, new_runtime_session_id(), "")
    assert emulator.requests == []
