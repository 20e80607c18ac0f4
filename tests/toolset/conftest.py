"""What the toolset tests share: a workdir beside a sentinel directory the tools must
never touch, toolsets in each sandbox mode, and a way to call a tool."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import ToolContext, ToolResult
from req_managed_agents.model import SessionInfo
from req_managed_agents.toolset import AgentToolset, UnsandboxedWarning
from req_managed_agents.toolset._sandbox import _bwrap_prefix

Snapshot = dict[str, tuple[str, str]]


def context(cancelled: threading.Event | None = None) -> ToolContext:
    return ToolContext("toolu_1", SessionInfo("sesn_1", "test"), cancelled or threading.Event())


def call(toolset: AgentToolset, name: str, input: Mapping[str, Any], **kw: Any) -> ToolResult:
    """One call, checked to come back as a ToolResult (never raised, never bare text)."""
    result = toolset.handle_tool_call(name, input, context(**kw))
    assert isinstance(result, ToolResult)
    return result


def unconfined(workdir: Path, **options: Any) -> AgentToolset:
    with pytest.warns(UnsandboxedWarning):
        return AgentToolset(workdir, sandbox="none", **options)


def snapshot(root: Path) -> Snapshot:
    """Every name under ``root`` with its kind and content (a link's target), links not
    followed: what "unchanged" means for a directory."""
    found: Snapshot = {}
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(directory) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = ("dir", "")
            else:
                found[key] = ("file", path.read_bytes().decode("latin-1"))
    return found


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A directory beside the workdir holding a secret; the test fails if it changed."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("SENTINEL-SECRET\n")
    before = snapshot(path)
    yield path
    assert snapshot(path) == before, "a tool changed the directory outside the workdir"


@pytest.fixture
def toolset(workdir: Path) -> AgentToolset:
    """A toolset whose sandbox does not matter to the test (the file tools)."""
    return unconfined(workdir)


@pytest.fixture(scope="session")
def bwrap_problem(tmp_path_factory: pytest.TempPathFactory) -> str | None:
    """Why bwrap cannot confine a command here, found by trying it; None when it can."""
    return _bwrap_prefix(str(tmp_path_factory.mktemp("probe")), network=False)[1]


@pytest.fixture
def needs_bwrap(bwrap_problem: str | None) -> None:
    if bwrap_problem is not None:
        pytest.skip(f"bwrap cannot run here: {bwrap_problem}")


@pytest.fixture(params=["none", "bwrap"])
def make_shell(
    request: pytest.FixtureRequest, workdir: Path, bwrap_problem: str | None
) -> Callable[..., AgentToolset]:
    """Builds toolsets whose bash runs unconfined, then (where it works) under bwrap."""
    if request.param == "bwrap" and bwrap_problem is not None:
        pytest.skip(f"bwrap cannot run here: {bwrap_problem}")

    def make(**options: Any) -> AgentToolset:
        if request.param == "none":
            return unconfined(workdir, **options)
        return AgentToolset(workdir, sandbox="bwrap", **options)

    return make
