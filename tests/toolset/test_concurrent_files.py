"""write and edit of one file from many threads at once: every change that reports
success is in the file, whichever toolset, spelling or link the calls came through."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest

from req_managed_agents import ToolResult
from req_managed_agents.toolset import AgentToolset, _locks
from req_managed_agents.toolset._paths import Workdir
from tests.toolset.conftest import call, unconfined

THREADS = 8
EDITS_PER_THREAD = 6


def _race(calls: list[Callable[[], ToolResult]]) -> list[ToolResult]:
    """Run ``calls`` on as many threads, released together by a barrier."""
    barrier = threading.Barrier(len(calls))

    def released(one: Callable[[], ToolResult]) -> ToolResult:
        barrier.wait(timeout=30)
        return one()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(released, calls))


def _editor(toolset: AgentToolset, path: str, lines: list[str]) -> Callable[[], ToolResult]:
    """One thread's work: each of ``lines`` marked done, one edit call each, in turn."""

    def run() -> ToolResult:
        for line in lines:
            result = call(
                toolset,
                "edit",
                {"file_path": path, "old_string": f"{line} todo\n", "new_string": f"{line} done\n"},
            )
            if result.is_error:
                return result
        return result

    return run


def test_concurrent_edits_of_one_file_all_land(toolset: AgentToolset, workdir: Path) -> None:
    lines = [f"line {n:03}:" for n in range(THREADS * EDITS_PER_THREAD)]
    target = workdir / "shared.txt"
    for _ in range(3):
        target.write_text("".join(f"{line} todo\n" for line in lines))
        shares = [lines[n::THREADS] for n in range(THREADS)]
        results = _race([_editor(toolset, "shared.txt", share) for share in shares])
        assert [r.content for r in results if r.is_error] == []
        assert target.read_text() == "".join(f"{line} done\n" for line in lines)
    assert _locks.held_paths() == 0, "a path's lock outlived its last holder"


def test_edits_through_other_toolsets_spellings_and_links_are_serialized(
    tmp_path: Path, workdir: Path
) -> None:
    (workdir / "sub").mkdir()
    (tmp_path / "alias").symlink_to(workdir)
    (workdir / "sub" / "link.txt").symlink_to("shared.txt")
    lines = [f"line {n:03}:" for n in range(THREADS * EDITS_PER_THREAD)]
    target = workdir / "sub" / "shared.txt"
    target.write_text("".join(f"{line} todo\n" for line in lines))
    ways = [
        (unconfined(workdir), "sub/shared.txt"),
        (unconfined(tmp_path / "alias"), "sub/link.txt"),
        (unconfined(workdir / "sub"), "shared.txt"),
        (unconfined(tmp_path / "alias"), f"{tmp_path}/alias/sub/shared.txt"),
    ]
    shares = [lines[n::THREADS] for n in range(THREADS)]
    results = _race([_editor(*ways[n % len(ways)], share) for n, share in enumerate(shares)])
    assert [r.content for r in results if r.is_error] == []
    assert target.read_text() == "".join(f"{line} done\n" for line in lines)
    assert _locks.held_paths() == 0


def test_a_write_racing_an_edit_is_never_undone_by_it(toolset: AgentToolset, workdir: Path) -> None:
    """Whichever runs first, the written content is what stays: an edit after the write
    finds nothing to replace, and one before it is overwritten."""
    target = workdir / "raced.txt"
    for attempt in range(60):
        target.write_text("setting = old\n")
        written = f"written {attempt}\n"
        edit_input = {"file_path": "raced.txt", "old_string": "old", "new_string": "new"}
        write_input = {"file_path": "raced.txt", "content": written}
        edit, write = _race(
            [
                partial(call, toolset, "edit", edit_input),
                partial(call, toolset, "write", write_input),
            ]
        )
        assert not write.is_error, write.content
        assert edit.is_error == ("not found" in edit.content), edit.content
        assert target.read_text() == written, (
            f"round {attempt}: the write reported success and was undone (edit: {edit.content})"
        )
    assert _locks.held_paths() == 0


def test_a_change_waits_a_bounded_time_for_another(
    toolset: AgentToolset, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_locks, "LOCK_WAIT", 0.2)
    (workdir / "busy.txt").write_text("old\n")
    other = Workdir(workdir)
    with other.locate(["busy.txt"]) as location, _locks.holding(location):
        result = call(
            toolset, "edit", {"file_path": "busy.txt", "old_string": "old", "new_string": "new"}
        )
        assert result.is_error
        assert "another change of this file has not finished" in result.content
    assert (workdir / "busy.txt").read_text() == "old\n"
    assert _locks.held_paths() == 0
    assert not call(
        toolset, "edit", {"file_path": "busy.txt", "old_string": "old", "new_string": "new"}
    ).is_error
