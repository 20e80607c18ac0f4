"""Each session's folder (named safely, made private, never a planted link), how a session's
calls are routed (built-in names to the toolset, the rest to the user's handler, hooks
passed through), and when a session needs the worker."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents import Allow, ConfigurationError, ToolContext, ToolResult, Tools
from req_managed_agents.model import SessionInfo, ToolUse
from req_managed_agents.tools._handler import ConfirmationHandler, EventHandler
from req_managed_agents.toolset import AGENT_TOOL_NAMES
from req_managed_agents.worker._activity import SessionLook
from req_managed_agents.worker._folders import session_folder
from req_managed_agents.worker._handler import route_tools

# --- folders ------------------------------------------------------------------------------


def test_a_sessions_folder_is_made_private_and_found_again(tmp_path: Path) -> None:
    folder = session_folder(tmp_path, "sesn_01-AB")
    assert folder == tmp_path / "sesn_01-AB"
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    (folder / "kept").write_text("x")
    assert session_folder(tmp_path, "sesn_01-AB") == folder
    assert (folder / "kept").read_text() == "x"


@pytest.mark.parametrize(
    "session_id",
    ["", ".", "..", "a/b", "../up", "/abs", "a\x00b", "x" * 129, "sesn.1", "sesn 1", "sé"],
)
def test_a_session_id_that_could_not_name_one_folder_is_refused(
    tmp_path: Path, session_id: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(ConfigurationError, match="cannot name a folder"):
        session_folder(work, session_id)
    assert list(tmp_path.iterdir()) == [work]
    assert list(work.iterdir()) == []


def test_a_planted_link_or_file_is_not_taken_for_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    os.chmod(outside, 0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "sesn_link").symlink_to(outside)
    (work / "sesn_file").write_text("")
    with pytest.raises(ConfigurationError, match="not a folder"):
        session_folder(work, "sesn_link")
    with pytest.raises(ConfigurationError, match="not a folder"):
        session_folder(work, "sesn_file")
    assert oct(outside.stat().st_mode & 0o777) == oct(0o755), "the link's target untouched"


def test_a_folder_left_wider_is_made_private_again(tmp_path: Path) -> None:
    (tmp_path / "sesn_1").mkdir(mode=0o755)
    os.chmod(tmp_path / "sesn_1", 0o755)
    folder = session_folder(tmp_path, "sesn_1")
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)


# --- routing ------------------------------------------------------------------------------


class Recorder:
    """A handler recording the calls it gets."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.calls: list[str] = []

    def handle_tool_call(self, name: str, input: Mapping[str, Any], context: ToolContext) -> str:
        self.calls.append(name)
        return f"{self.label}:{name}"


class Hooked(Recorder):
    def __init__(self) -> None:
        super().__init__("user")
        self.events: list[Mapping[str, Any]] = []

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        self.events.append(event)

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Allow:
        return Allow()


def context() -> ToolContext:
    return ToolContext("toolu_1", SessionInfo("sesn_1", "claude"), threading.Event())


def test_built_in_names_go_to_the_toolset_and_the_rest_to_the_handler() -> None:
    user, toolset = Recorder("user"), Recorder("toolset")
    router = route_tools(user, toolset)
    for name in sorted(AGENT_TOOL_NAMES):
        assert router.handle_tool_call(name, {}, context()) == f"toolset:{name}"
    assert router.handle_tool_call("lookup", {}, context()) == "user:lookup"
    assert toolset.calls == sorted(AGENT_TOOL_NAMES)
    assert user.calls == ["lookup"]


def test_without_a_handler_a_custom_call_is_an_unknown_tool_error() -> None:
    toolset = Recorder("toolset")
    router = route_tools(None, toolset)
    result = router.handle_tool_call("lookup", {}, context())
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert "unknown tool 'lookup'" in result.content
    assert router.handle_tool_call("bash", {}, context()) == "toolset:bash"


def test_the_users_hooks_pass_through_only_when_it_has_them() -> None:
    plain = route_tools(Recorder("user"), Recorder("toolset"))
    assert not isinstance(plain, ConfirmationHandler)  # the confirm policy decides then
    plain.handle_event({"type": "session.status_idle"}, SessionInfo("sesn_1", "claude"))
    hooked = Hooked()
    router = route_tools(hooked, Recorder("toolset"))
    assert isinstance(router, ConfirmationHandler)
    assert isinstance(router, EventHandler)
    router.handle_event({"type": "agent.message"}, SessionInfo("sesn_1", "claude"))
    assert hooked.events == [{"type": "agent.message"}]
    use = ToolUse("toolu_1", "bash", {"command": "ls"})
    assert router.handle_confirmation(use, context()) == Allow()
    tools = Tools()  # a registry has no hooks: still routed
    assert not isinstance(route_tools(tools, Recorder("toolset")), ConfirmationHandler)


# --- when a session needs the worker ------------------------------------------------------


def idle(reason: str, event_id: str = "sevt_9") -> dict[str, Any]:
    return {"id": event_id, "type": "session.status_idle", "stop_reason": {"type": reason}}


@pytest.mark.parametrize(
    ("look", "served", "needed"),
    [
        (SessionLook("running", {"id": "sevt_1", "type": "agent.message"}), None, True),
        (SessionLook("rescheduling", None), None, True),
        (SessionLook("idle", idle("requires_action")), None, True),
        (SessionLook("idle", idle("requires_action")), "sevt_9", False),  # tried already
        (SessionLook("idle", idle("requires_action", "sevt_10")), "sevt_9", True),
        (SessionLook("idle", idle("end_turn")), None, False),
        (SessionLook("idle", None), None, False),  # never prompted: never started by us
        (SessionLook("terminated", idle("requires_action")), None, False),
        (SessionLook(None), None, False),
    ],
)
def test_a_session_is_driven_only_when_it_needs_the_worker(
    look: SessionLook, served: str | None, needed: bool
) -> None:
    assert look.needs_serving(served) is needed
    assert look.ended is (look.status in (None, "terminated"))
