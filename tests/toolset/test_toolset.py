"""AgentToolset as a worker sees it: a Handler that names its tools, validates its
settings up front, and answers every call - even a wrong one - with a result."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import ConfigurationError
from req_managed_agents.model import ToolUse
from req_managed_agents.tools import Handler
from req_managed_agents.tools._handler import invoke_tool
from req_managed_agents.toolset import AGENT_TOOL_NAMES, AgentToolset
from req_managed_agents.toolset._files import FileTools
from tests.toolset.conftest import call, context, unconfined


def test_it_is_a_handler_naming_the_six_built_in_tools(toolset: AgentToolset) -> None:
    assert isinstance(toolset, Handler)
    assert (
        toolset.names
        == AGENT_TOOL_NAMES
        == frozenset({"bash", "read", "write", "edit", "glob", "grep"})
    )


def test_a_call_through_the_handler_seam_carries_its_tool_use_id(
    toolset: AgentToolset, workdir: Path
) -> None:
    (workdir / "a.txt").write_text("hi")
    result = invoke_tool(toolset, ToolUse("toolu_9", "read", {"file_path": "a.txt"}), context())
    assert (result.tool_use_id, result.content, result.is_error) == ("toolu_9", "hi", False)


@pytest.mark.parametrize("name", ["web_fetch", "", "Read"])
def test_an_unknown_tool_is_an_error_result(toolset: AgentToolset, name: str) -> None:
    result = call(toolset, name, {})
    assert result.is_error
    assert "answers bash, edit, glob, grep, read, write" in result.content


@pytest.mark.parametrize("input", [None, [], "file_path=a.txt", 3])
def test_an_input_that_is_not_an_object_is_an_error_result(
    toolset: AgentToolset, input: Any
) -> None:
    result = call(toolset, "read", input)
    assert (result.content, result.is_error) == ("read: the input must be an object", True)


def test_fields_it_does_not_know_are_ignored(toolset: AgentToolset, workdir: Path) -> None:
    (workdir / "a.txt").write_text("hi")
    assert call(toolset, "read", {"file_path": "a.txt", "added_later": 1}).content == "hi"


def test_a_defect_of_ours_is_an_error_result_naming_only_its_type(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> object:
        raise ValueError("/home/someone/.secrets/token=abc")

    monkeypatch.setattr(FileTools, "read", broken)
    result = call(unconfined(workdir), "read", {"file_path": "a.txt"})
    assert (result.content, result.is_error) == (
        "read: failed unexpectedly (ValueError)",
        True,
    )


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"sandbox": "docker"}, "sandbox must be one of auto, bwrap, none"),
        ({"sandbox": None}, "sandbox must be a string"),
        ({"network": "yes"}, "network must be True or False"),
        ({"bash_timeout": 0}, "bash_timeout"),
        ({"bash_timeout": -1.0}, "bash_timeout"),
        ({"bash_timeout": math.nan}, "bash_timeout"),
        ({"bash_timeout": math.inf}, "bash_timeout"),
        ({"bash_timeout": True}, "bash_timeout"),
        ({"bash_timeout": "30"}, "bash_timeout"),
        ({"max_output": 999}, "max_output"),
        ({"max_output": 5000.0}, "max_output"),
        ({"max_output": True}, "max_output"),
        ({"env": {"BAD NAME": "x"}}, "not a variable name"),
        ({"env": {"A=B": "x"}}, "not a variable name"),
        ({"env": {"OK": 1}}, "must be a string"),
        ({"env": {"OK": "a\x00b"}}, "without NUL"),
        ({"env": ["PATH=/bin"]}, "env must be a mapping"),
    ],
)
def test_bad_settings_are_refused_up_front(
    workdir: Path, options: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        AgentToolset(workdir, **options)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: tmp / "missing", "not an existing directory"),
        (lambda tmp: tmp / "file.txt", "not an existing directory"),
        (lambda tmp: "/", "root"),
        (lambda tmp: 42, "must be a path"),
        (lambda tmp: str(tmp) + "\x00x", "NUL"),
    ],
)
def test_a_workdir_must_be_an_existing_directory_other_than_the_root(
    tmp_path: Path, make: Any, expected: str
) -> None:
    (tmp_path / "file.txt").write_text("")
    with pytest.raises(ConfigurationError, match=expected):
        AgentToolset(make(tmp_path), sandbox="none")


def test_defaults_and_repr(workdir: Path) -> None:
    toolset = unconfined(workdir)
    # unconfined, bash reaches the network whatever network= says
    assert (toolset.workdir, toolset.network) == (str(workdir.resolve()), True)
    assert repr(toolset) == f"AgentToolset({str(workdir.resolve())!r}, sandbox='none')"
