"""ClaudeFiles against the Claude emulator's Files API and session resources."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from req_managed_agents import APIError, ClaudeManagedAgents, ToolContext, Tools, run_to_completion
from req_managed_agents.artifacts import ClaudeFiles, for_session
from req_managed_agents.errors import ArtifactNotFoundError, InvalidArtifactNameError
from req_managed_agents.testing import ClaudeEmulator, Turn, call


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator(downloadable_uploads=True) as emulator:
        yield emulator


@pytest.fixture
def provider(emulator: ClaudeEmulator) -> Iterator[ClaudeManagedAgents]:
    with emulator.provider() as provider:
        yield provider


@pytest.fixture
def files(provider: ClaudeManagedAgents, emulator: ClaudeEmulator) -> ClaudeFiles:
    session = provider.client.create_session(emulator.add_agent(), emulator.add_environment())
    return ClaudeFiles(provider.client, session["id"])


def test_outputs_round_trip_byte_identical(files: ClaudeFiles, emulator: ClaudeEmulator) -> None:
    small = b"\x00\x01nul inside\x00\xff"
    large = os.urandom(1024 * 1024)
    emulator.add_output(files.session_id, "small.bin", small)
    emulator.add_output(files.session_id, "large.bin", large)
    assert [(a.name, a.size) for a in files.list()] == [
        ("large.bin", len(large)),
        ("small.bin", len(small)),
    ]
    assert files.fetch("small.bin") == small
    assert files.fetch("large.bin") == large
    files.delete("small.bin")
    assert [a.name for a in files.list()] == ["large.bin"]
    with pytest.raises(ArtifactNotFoundError):
        files.fetch("small.bin")


def test_the_newest_of_repeated_names_wins(files: ClaudeFiles, emulator: ClaudeEmulator) -> None:
    emulator.add_output(files.session_id, "report.csv", b"old")
    emulator.add_output(files.session_id, "report.csv", b"new")
    assert [a.name for a in files.list()] == ["report.csv", "report.csv"]
    assert files.fetch("report.csv") == b"new"
    files.delete("report.csv")
    assert files.fetch("report.csv") == b"old"


def test_put_mounts_an_input_that_lists_fetches_and_detaches(
    files: ClaudeFiles, emulator: ClaudeEmulator
) -> None:
    data = b"\x00binary input\x00" * 1000
    artifact = files.put("input.bin", data)
    assert (artifact.name, artifact.size) == ("input.bin", len(data))
    resources = emulator_resources(files)
    assert resources[0]["mount_path"] == "/mnt/session/uploads/input.bin"
    assert [a.name for a in files.list()] == ["input.bin"]
    assert files.fetch("input.bin") == data
    files.delete("input.bin")
    assert files.list() == []


def emulator_resources(files: ClaudeFiles) -> list[dict[str, str]]:
    return list(files._client.list_session_resources(files.session_id))


def test_an_upload_is_not_downloadable_on_a_faithful_api(emulator: ClaudeEmulator) -> None:
    with (
        ClaudeEmulator() as strict,
        strict.provider() as provider,
    ):
        session = provider.client.create_session(strict.add_agent(), strict.add_environment())
        files = ClaudeFiles(provider.client, session["id"])
        files.put("input.txt", b"x")
        with pytest.raises(APIError, match="not downloadable"):
            files.fetch("input.txt")


@pytest.mark.parametrize("name", ["../etc/passwd", "a;rm -rf /", "$(id)", "`id`", "a\nb"])
def test_hostile_names_are_rejected_before_any_request(
    files: ClaudeFiles, emulator: ClaudeEmulator, name: str
) -> None:
    before = len(emulator.requests)
    for operation in (files.fetch, files.delete, lambda n: files.put(n, b"x")):
        with pytest.raises(InvalidArtifactNameError):
            operation(name)
    with pytest.raises(InvalidArtifactNameError):
        ClaudeFiles.output_path(name)
    assert len(emulator.requests) == before


def test_output_path_is_under_the_outputs_dir() -> None:
    assert ClaudeFiles.OUTPUTS_DIR == "/mnt/session/outputs"
    assert ClaudeFiles.output_path("report.csv") == "/mnt/session/outputs/report.csv"


def test_a_tool_fetches_an_output_of_its_own_session(
    provider: ClaudeManagedAgents, emulator: ClaudeEmulator
) -> None:
    script = [
        Turn(
            text="Writing it.",
            outputs={"summary.txt": b"all green"},
            tool_calls=[call("read_output", name="summary.txt")],
        ),
        Turn(text=lambda results: f"Read back: {results[0]}"),
    ]
    tools = Tools()

    @tools.tool
    def read_output(name: str, context: ToolContext) -> str:
        """Read a file the agent wrote in this session."""
        return for_session(provider, context.session).fetch(name).decode()

    result = run_to_completion(
        provider,
        "Summarise",
        handler=tools,
        agent_id=emulator.add_agent(script),
        environment_id=emulator.add_environment(),
        timeout=20,
    )
    assert result.text == "Read back: all green"
