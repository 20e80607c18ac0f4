"""Every file tool refuses every path that leads out of the workdir, and the directory
beside it - holding a secret - is neither read nor changed. Paths that are wrong as text
are refused before any file system call at all."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from req_managed_agents.toolset import AgentToolset, _paths
from tests.toolset.conftest import call, snapshot

SENTINEL = "SENTINEL-SECRET"


def _input(tool: str, path: object) -> dict[str, Any]:
    """A call of ``tool`` that would read, change or list ``path``."""
    return {
        "read": {"file_path": path},
        "write": {"file_path": path, "content": "pwned"},
        "edit": {"file_path": path, "old_string": "SENTINEL", "new_string": "pwned"},
        "glob": {"pattern": "**", "path": path},
        "grep": {"pattern": "SENTINEL", "path": path},
    }[tool]


FILE_TOOLS = ["read", "write", "edit", "glob", "grep"]

# Paths wrong as text: each is refused before the disk is touched.
TEXT_REFUSED: list[tuple[str, Callable[[Path], object]]] = [
    ("absolute outside", lambda tmp: str(tmp / "outside" / "secret.txt")),
    ("absolute system file", lambda tmp: "/etc/passwd"),
    ("sibling with the workdir as prefix", lambda tmp: str(tmp / "work2" / "x.txt")),
    ("dot-dot", lambda tmp: "../outside/secret.txt"),
    ("dot-dot after a name", lambda tmp: "a/../../outside/secret.txt"),
    ("dot-dot staying inside", lambda tmp: "a/../x.txt"),
    ("absolute with dot-dot", lambda tmp: str(tmp / "work") + "/../outside/secret.txt"),
    ("name over NAME_MAX", lambda tmp: "x" * (_paths.NAME_MAX + 1)),
    ("path over PATH_MAX", lambda tmp: "a/" * (_paths.PATH_MAX // 2 + 1)),
    ("NUL byte", lambda tmp: "secret\x00.txt"),
    ("lone surrogate", lambda tmp: "bad\udcff\ud800"),
    ("empty", lambda tmp: ""),
    ("number", lambda tmp: 42),
    ("list", lambda tmp: ["secret.txt"]),
    ("object", lambda tmp: {"path": "secret.txt"}),
    ("boolean", lambda tmp: True),
]

# Paths fine as text that lead out through a link: refused on the walk.
LINK_REFUSED = [
    "link_file",
    "link_dir",
    "link_dir/secret.txt",
    "link_dir/new.txt",
    "dangling",
    "dangling_relative",
    "inner/escape",
    "inner/escape/secret.txt",
    "loop_a",
    "loop_a/x",
    "self_loop",
]


@pytest.fixture
def hostile_workdir(workdir: Path, outside: Path, tmp_path: Path) -> Path:
    (tmp_path / "work2").mkdir()
    (workdir / "inner").mkdir()
    (workdir / "link_file").symlink_to(outside / "secret.txt")
    (workdir / "link_dir").symlink_to(outside)
    (workdir / "dangling").symlink_to(outside / "created-through-dangling.txt")
    (workdir / "dangling_relative").symlink_to("../outside/created-relative.txt")
    (workdir / "inner" / "escape").symlink_to("../../outside")
    (workdir / "loop_a").symlink_to("loop_b")
    (workdir / "loop_b").symlink_to("loop_a")
    (workdir / "self_loop").symlink_to("self_loop")
    return workdir


def _no_disk(*args: object, **kwargs: object) -> Any:
    raise AssertionError("the file system was touched for a path refused as text")


@pytest.mark.parametrize("tool", FILE_TOOLS)
@pytest.mark.parametrize(("case", "make_path"), TEXT_REFUSED, ids=[c for c, _ in TEXT_REFUSED])
def test_paths_wrong_as_text_are_refused_before_touching_the_disk(
    toolset: AgentToolset,
    hostile_workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    case: str,
    make_path: Callable[[Path], object],
) -> None:
    path = make_path(tmp_path)
    before = snapshot(tmp_path)
    with monkeypatch.context() as patched:
        for name in ("open", "stat", "lstat", "mkdir", "readlink", "scandir", "replace"):
            patched.setattr(os, name, _no_disk)
        result = call(toolset, tool, _input(tool, path))
    assert result.is_error, result.content
    assert result.content.startswith(f"{tool}: path") or result.content.startswith(
        f"{tool}: file_path"
    ), result.content
    assert SENTINEL not in result.content
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("tool", FILE_TOOLS)
@pytest.mark.parametrize("path", LINK_REFUSED)
def test_links_that_lead_out_are_refused_and_nothing_outside_changes(
    toolset: AgentToolset, hostile_workdir: Path, tmp_path: Path, tool: str, path: str
) -> None:
    before = snapshot(tmp_path)
    result = call(toolset, tool, _input(tool, path))
    assert result.is_error, result.content
    expected = "symbolic links" if "loop" in path else "leads outside the working directory"
    assert expected in result.content
    assert SENTINEL not in result.content
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("tool", ["read", "write", "edit"])
def test_absolute_links_into_a_sibling_with_the_workdir_as_prefix_are_refused(
    toolset: AgentToolset, hostile_workdir: Path, tmp_path: Path, tool: str
) -> None:
    (tmp_path / "work2" / "secret.txt").write_text(SENTINEL)
    (hostile_workdir / "sibling").symlink_to(tmp_path / "work2" / "secret.txt")
    result = call(toolset, tool, _input(tool, "sibling"))
    assert result.is_error
    assert (tmp_path / "work2" / "secret.txt").read_text() == SENTINEL


def test_glob_and_grep_never_list_or_read_through_links_that_lead_out(
    toolset: AgentToolset, hostile_workdir: Path
) -> None:
    (hostile_workdir / "inner" / "own.txt").write_text("SENTINEL-but-mine\n")
    listed = call(toolset, "glob", {"pattern": "**"})
    assert not listed.is_error
    names = {
        Path(line).relative_to(toolset.workdir).as_posix() for line in listed.content.splitlines()
    }
    assert names == {"inner", "inner/own.txt"}
    found = call(toolset, "grep", {"pattern": "SENTINEL"})
    assert found.content == f"{toolset.workdir}/inner/own.txt:1:SENTINEL-but-mine"


def test_a_directory_swapped_for_a_link_after_its_check_is_not_followed(
    toolset: AgentToolset, workdir: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the descriptor walk exists for: ``sub`` is a directory when checked and a
    link to the outside when opened."""
    (workdir / "sub").mkdir()
    real_stat = os.stat

    def swap_after_check(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        info = real_stat(path, *args, **kwargs)
        if path == "sub" and (workdir / "sub").is_dir() and not (workdir / "sub").is_symlink():
            (workdir / "sub").rename(workdir / "moved")
            (workdir / "sub").symlink_to(outside)
        return info

    monkeypatch.setattr(os, "stat", swap_after_check)
    result = call(toolset, "write", {"file_path": "sub/secret.txt", "content": "pwned"})
    assert result.is_error
    assert "changed while in use" in result.content


@pytest.mark.parametrize("tool", ["read", "write"])
def test_a_file_swapped_for_a_link_after_its_check_is_not_followed(
    toolset: AgentToolset,
    workdir: Path,
    outside: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
) -> None:
    (workdir / "f.txt").write_text("mine")
    real_stat = os.stat

    def swap_after_check(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        info = real_stat(path, *args, **kwargs)
        if path == "f.txt" and not (workdir / "f.txt").is_symlink():
            (workdir / "f.txt").unlink()
            (workdir / "f.txt").symlink_to(outside / "secret.txt")
        return info

    monkeypatch.setattr(os, "stat", swap_after_check)
    result = call(toolset, tool, _input(tool, "f.txt"))
    if tool == "read":
        assert result.is_error
        assert SENTINEL not in result.content
    else:  # the rename replaces the link itself, never its target
        assert not (workdir / "f.txt").is_symlink()


def test_a_replaced_workdir_is_refused(toolset: AgentToolset, workdir: Path) -> None:
    workdir.rename(workdir.with_name("old"))
    workdir.mkdir()
    result = call(toolset, "read", {"file_path": "x"})
    assert result.is_error
    assert "replaced" in result.content
