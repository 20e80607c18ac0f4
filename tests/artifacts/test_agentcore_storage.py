"""AgentCoreSessionStorage against the AgentCore emulator, whose commands run in a real shell."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from req_managed_agents import BedrockAgentCore, ToolContext, Tools, run_to_completion
from req_managed_agents.artifacts import AgentCoreSessionStorage, ArtifactStore, for_session
from req_managed_agents.errors import ArtifactNotFoundError, InvalidArtifactNameError
from req_managed_agents.model import SessionInfo
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call

SESSION = "rma-" + "0123456789abcdef" * 2


@pytest.fixture
def emulator() -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: AgentCoreEmulator) -> Iterator[BedrockAgentCore]:
    with emulator.provider() as provider:
        yield provider


@pytest.fixture
def storage(provider: BedrockAgentCore, emulator: AgentCoreEmulator) -> AgentCoreSessionStorage:
    assert emulator.workdir is not None
    return AgentCoreSessionStorage(
        provider.client, emulator.add_harness(), SESSION, f"{emulator.workdir}/data"
    )


def test_round_trip_of_binary_content_with_nul_bytes_and_a_mebibyte(
    storage: AgentCoreSessionStorage,
) -> None:
    small = b"\x00nul\x00\xff\xfe binary \n\r\n"
    large = os.urandom(1024 * 1024)
    storage.put("small.bin", small)
    storage.put("large.bin", large)
    storage.put("empty.txt", b"")
    assert [(a.name, a.size) for a in storage.list()] == [
        ("empty.txt", 0),
        ("large.bin", len(large)),
        ("small.bin", len(small)),
    ]
    assert storage.fetch("small.bin") == small
    assert storage.fetch("large.bin") == large
    assert storage.fetch("empty.txt") == b""
    storage.delete("small.bin")
    assert [a.name for a in storage.list()] == ["empty.txt", "large.bin"]
    with pytest.raises(ArtifactNotFoundError):
        storage.fetch("small.bin")
    with pytest.raises(ArtifactNotFoundError):
        storage.delete("small.bin")


def test_put_replaces_and_leaves_no_temporary_files(
    storage: AgentCoreSessionStorage, emulator: AgentCoreEmulator
) -> None:
    storage.put("report.txt", b"first version, longer than the second")
    storage.put("report.txt", b"second")
    assert storage.fetch("report.txt") == b"second"
    assert os.listdir(f"{emulator.workdir}/data") == ["report.txt"]


def test_large_content_is_chunked_within_the_command_limit(
    storage: AgentCoreSessionStorage, emulator: AgentCoreEmulator
) -> None:
    storage.put("chunked.bin", os.urandom(200_000))
    assert all(len(command.command) <= 65_536 for command in emulator.commands)
    assert len(emulator.commands) >= 5, "create, several chunks, then the move"


@pytest.mark.parametrize(
    "name",
    [
        "../etc/passwd",
        "a;rm -rf /",
        "$(id)",
        "`id`",
        "a\nb",
        "a b",
        "",
        ".hidden",
        "a/b",
        "x" * 201,
    ],
)
def test_hostile_names_are_rejected_before_any_request(
    storage: AgentCoreSessionStorage, emulator: AgentCoreEmulator, name: str
) -> None:
    for operation in (storage.fetch, storage.delete, lambda n: storage.put(n, b"x")):
        with pytest.raises(InvalidArtifactNameError):
            operation(name)
    assert emulator.commands == []


def test_files_the_agent_wrote_with_odd_names_still_list(
    storage: AgentCoreSessionStorage, emulator: AgentCoreEmulator
) -> None:
    folder = f"{emulator.workdir}/data"
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "odd name\twith tab.txt"), "wb") as handle:
        handle.write(b"12345")
    assert [(a.name, a.size) for a in storage.list()] == [("odd name\twith tab.txt", 5)]


def test_a_failing_command_is_a_named_error_with_stderr(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    from req_managed_agents.errors import CommandFailedError

    storage = AgentCoreSessionStorage(
        provider.client, emulator.add_harness(), SESSION, "/proc/definitely/not/writable"
    )
    with pytest.raises(CommandFailedError) as caught:
        storage.put("x.txt", b"data")
    assert caught.value.exit_code not in (0, None)
    assert caught.value.stderr


def test_a_tool_fetches_an_artifact_of_its_own_session(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    mount = f"{emulator.workdir}/data"
    script = [
        ConverseTurn(tool_calls=[call("read_note", name="note.txt")]),
        ConverseTurn(text=lambda results: f"The note says: {results[0]}"),
    ]
    harness_arn = emulator.add_harness(script)
    AgentCoreSessionStorage(provider.client, harness_arn, SESSION, mount).put(
        "note.txt", b"meet at noon"
    )
    seen: list[SessionInfo] = []
    tools = Tools()

    @tools.tool
    def read_note(name: str, context: ToolContext) -> str:
        """Read a note from this session's storage."""
        seen.append(context.session)
        store = for_session(provider, context.session, mount=mount)
        assert isinstance(store, ArtifactStore)
        return store.fetch(name).decode()

    result = run_to_completion(
        provider,
        "What does the note say?",
        handler=tools,
        harness_arn=harness_arn,
        runtime_session_id=SESSION,
        timeout=20,
    )
    assert result.text == "The note says: meet at noon"
    assert seen[0].session_id == SESSION
    assert seen[0].metadata["harness_arn"] == harness_arn


def test_for_session_needs_the_mount_for_agentcore(provider: BedrockAgentCore) -> None:
    info = SessionInfo(SESSION, "agentcore", {"harness_arn": "arn"})
    with pytest.raises(ValueError, match="mount"):
        for_session(provider, info)


def test_the_mount_itself_is_validated(provider: BedrockAgentCore) -> None:
    for mount in ("relative", "/mnt/../etc", "/mnt/a b", "/mnt/$(id)"):
        with pytest.raises(ValueError, match="mount"):
            AgentCoreSessionStorage(provider.client, "arn", SESSION, mount)


def test_commands_go_to_the_runtime_arn_resolved_once_from_the_harness(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    """``InvokeAgentRuntimeCommand`` takes the runtime's ARN; the storage keeps taking the
    harness ARN and finds the runtime behind it (one GetHarness), as callers always did."""
    harness_arn = emulator.add_harness(name="stored")
    (harness,) = emulator.harnesses()
    runtime_arn = harness["environment"]["agentCoreRuntimeEnvironment"]["agentRuntimeArn"]
    storage = AgentCoreSessionStorage(
        provider.client, harness_arn, SESSION, f"{emulator.workdir}/data"
    )
    storage.put("a.txt", b"1")
    storage.put("b.txt", b"2")
    assert [a.name for a in storage.list()] == ["a.txt", "b.txt"]
    assert storage.runtime_arn == runtime_arn
    assert {command.arn for command in emulator.commands} == {runtime_arn}
    gets = [r for r in emulator.requests if r.method == "GET"]
    assert [r.path for r in gets] == [f"/harnesses/{harness['harnessId']}"]


def test_the_emulator_refuses_a_command_sent_to_a_harness_arn(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    from req_managed_agents.errors import NotFoundError

    harness_arn = emulator.add_harness(name="strict")
    with pytest.raises(NotFoundError, match="agentRuntimeArn"):
        provider.client.invoke_agent_runtime_command(harness_arn, SESSION, "true")
    assert emulator.commands == []


def test_a_runtime_arn_is_used_as_it_is(
    provider: BedrockAgentCore, emulator: AgentCoreEmulator
) -> None:
    emulator.add_harness(name="direct")
    (harness,) = emulator.harnesses()
    runtime_arn = harness["environment"]["agentCoreRuntimeEnvironment"]["agentRuntimeArn"]
    storage = AgentCoreSessionStorage(
        provider.client, runtime_arn, SESSION, f"{emulator.workdir}/data"
    )
    storage.put("c.txt", b"3")
    assert "GET" not in {r.method for r in emulator.requests}, "no GetHarness"
