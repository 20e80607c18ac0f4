"""read, write and edit inside the workdir: what the agent gets back, and what lands on disk."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from req_managed_agents.model import Document, Image
from req_managed_agents.toolset import AgentToolset, _files
from tests.toolset.conftest import call, unconfined

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def test_read_answers_the_whole_file_as_it_is(toolset: AgentToolset, workdir: Path) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\nthree\n")
    result = call(toolset, "read", {"file_path": "notes.txt"})
    assert (result.content, result.is_error) == ("one\ntwo\nthree\n", False)


@pytest.mark.parametrize(
    ("view_range", "expected"),
    [
        ([2, 3], "two\nthree"),
        ([2, 0], "two\nthree\nfour"),
        ([3, -1], "three\nfour"),
        ([1, 1], "one"),
        ([4, 99], "four"),
        ([9, 12], ""),
    ],
)
def test_read_view_range_selects_lines_one_based_and_inclusive(
    toolset: AgentToolset, workdir: Path, view_range: list[int], expected: str
) -> None:
    (workdir / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    result = call(toolset, "read", {"file_path": "notes.txt", "view_range": view_range})
    assert (result.content, result.is_error) == (expected, False)


@pytest.mark.parametrize("view_range", [[0, 2], [3, 2], [1], [1, 2, 3], "1-2", [True, 2], [1.0, 2]])
def test_read_refuses_a_malformed_view_range(
    toolset: AgentToolset, workdir: Path, view_range: object
) -> None:
    (workdir / "notes.txt").write_text("one\n")
    result = call(toolset, "read", {"file_path": "notes.txt", "view_range": view_range})
    assert result.is_error
    assert "view_range" in result.content


def test_read_of_a_file_over_max_output_points_to_view_range(workdir: Path) -> None:
    toolset = unconfined(workdir, max_output=1000)
    (workdir / "big.txt").write_text("".join(f"line {n}\n" for n in range(500)))
    whole = call(toolset, "read", {"file_path": "big.txt"})
    assert whole.is_error
    assert "view_range" in whole.content
    part = call(toolset, "read", {"file_path": "big.txt", "view_range": [10, 11]})
    assert part.content == "line 9\nline 10"


def test_read_cuts_a_huge_line_and_says_so(workdir: Path) -> None:
    toolset = unconfined(workdir, max_output=1000)
    (workdir / "minified.js").write_text("é" * 200_000 + "\nnext\n")
    result = call(toolset, "read", {"file_path": "minified.js", "view_range": [1, 0]})
    assert not result.is_error
    assert result.content.startswith("é" * 1000)
    assert "[output truncated at 1000 characters" in result.content
    assert len(result.content) < 1200


def test_read_refuses_what_is_not_utf8_text(toolset: AgentToolset, workdir: Path) -> None:
    (workdir / "blob.bin").write_bytes(b"\xff\xfe\x00garbage")
    result = call(toolset, "read", {"file_path": "blob.bin"})
    assert result.is_error
    assert "UTF-8" in result.content


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: os.mkfifo(p), "not a regular file"),
        (lambda p: None, "no such file or directory"),
    ],
)
def test_read_refuses_directories_fifos_and_missing_files_without_blocking(
    toolset: AgentToolset, workdir: Path, make: object, expected: str
) -> None:
    make(workdir / "thing")  # type: ignore[operator]
    result = call(toolset, "read", {"file_path": "thing"})
    assert result.is_error
    assert expected in result.content


def test_read_answers_images_and_pdfs_as_content_blocks(
    toolset: AgentToolset, workdir: Path
) -> None:
    (workdir / "shot.png").write_bytes(PNG)
    (workdir / "paper.pdf").write_bytes(b"%PDF-1.4 tiny")
    image = call(toolset, "read", {"file_path": "shot.png"})
    assert image.blocks == (Image(PNG, "image/png"),)
    document = call(toolset, "read", {"file_path": "paper.pdf"})
    assert document.blocks == (Document(b"%PDF-1.4 tiny", "application/pdf"),)
    ranged = call(toolset, "read", {"file_path": "shot.png", "view_range": [1, 2]})
    assert ranged.is_error


def test_read_refuses_an_empty_or_oversized_image(
    toolset: AgentToolset, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workdir / "empty.png").write_bytes(b"")
    assert call(toolset, "read", {"file_path": "empty.png"}).is_error
    monkeypatch.setattr(_files, "IMAGE_MAX_BYTES", 10)
    (workdir / "shot.png").write_bytes(PNG)
    result = call(toolset, "read", {"file_path": "shot.png"})
    assert result.is_error
    assert "larger than" in result.content


def test_absolute_paths_inside_the_workdir_are_allowed_as_spelled_or_resolved(
    tmp_path: Path, workdir: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workdir)
    toolset = unconfined(alias)
    assert toolset.workdir == str(workdir.resolve())
    (workdir / "f.txt").write_text("here")
    for spelled in (alias / "f.txt", workdir / "f.txt"):
        assert call(toolset, "read", {"file_path": str(spelled)}).content == "here"


def test_write_creates_parent_directories_and_counts_bytes(
    toolset: AgentToolset, workdir: Path
) -> None:
    result = call(toolset, "write", {"file_path": "a/b/c.txt", "content": "héllo"})
    assert (result.content, result.is_error) == ("wrote 6 bytes to a/b/c.txt", False)
    assert (workdir / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo"


def test_write_overwrites_keeps_the_mode_and_leaves_no_temporary_file(
    toolset: AgentToolset, workdir: Path
) -> None:
    target = workdir / "run.sh"
    target.write_text("old, longer content\n")
    target.chmod(0o751)
    assert not call(toolset, "write", {"file_path": "run.sh", "content": "new\n"}).is_error
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert sorted(os.listdir(workdir)) == ["run.sh"]


def test_write_replaces_a_hard_link_instead_of_writing_through_it(
    toolset: AgentToolset, workdir: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", workdir / "linked.txt")
    result = call(toolset, "write", {"file_path": "linked.txt", "content": "overwritten"})
    assert not result.is_error
    assert (workdir / "linked.txt").read_text() == "overwritten"
    # the outside fixture checks that secret.txt still holds its sentinel


@pytest.mark.parametrize(
    ("input", "expected"),
    [
        ({"file_path": "x.txt"}, "content is required"),
        ({"file_path": "x.txt", "content": 5}, "content must be a string"),
        ({"file_path": "x.txt", "content": "\udcff"}, "cannot be encoded"),
        ({"file_path": "sub", "content": "x"}, "is a directory"),
        ({"file_path": ".", "content": "x"}, "is a directory"),
    ],
)
def test_write_refuses_bad_content_and_directories(
    toolset: AgentToolset, workdir: Path, input: dict[str, object], expected: str
) -> None:
    (workdir / "sub").mkdir()
    result = call(toolset, "write", input)
    assert result.is_error
    assert expected in result.content
    assert sorted(os.listdir(workdir)) == ["sub"]


def test_edit_replaces_a_unique_string(toolset: AgentToolset, workdir: Path) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    result = call(
        toolset, "edit", {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}
    )
    assert (result.content, result.is_error) == ("edited app.py (1 replacement(s))", False)
    assert (workdir / "app.py").read_text() == "x = 1\ny = 3\n"


def test_edit_refuses_a_string_that_is_not_unique_unless_replace_all(
    toolset: AgentToolset, workdir: Path
) -> None:
    (workdir / "app.py").write_text("a a a\n")
    refused = call(toolset, "edit", {"file_path": "app.py", "old_string": "a", "new_string": "b"})
    assert refused.is_error
    assert "appears 3 times" in refused.content
    assert (workdir / "app.py").read_text() == "a a a\n"
    done = call(
        toolset,
        "edit",
        {"file_path": "app.py", "old_string": "a", "new_string": "b", "replace_all": True},
    )
    assert done.content == "edited app.py (3 replacement(s))"
    assert (workdir / "app.py").read_text() == "b b b\n"


@pytest.mark.parametrize(
    ("input", "expected"),
    [
        ({"file_path": "app.py", "old_string": "zzz", "new_string": "b"}, "not found"),
        ({"file_path": "app.py", "old_string": "", "new_string": "b"}, "old_string is empty"),
        ({"file_path": "app.py", "new_string": "b"}, "old_string is required"),
        ({"file_path": "app.py", "old_string": "a", "new_string": None}, "new_string is required"),
        (
            {"file_path": "app.py", "old_string": "a", "new_string": "b", "replace_all": "yes"},
            "replace_all must be true or false",
        ),
        ({"file_path": "nope.py", "old_string": "a", "new_string": "b"}, "no such file"),
    ],
)
def test_edit_refuses_what_it_cannot_do_and_leaves_the_file(
    toolset: AgentToolset, workdir: Path, input: dict[str, object], expected: str
) -> None:
    (workdir / "app.py").write_text("a\n")
    result = call(toolset, "edit", input)
    assert result.is_error
    assert expected in result.content
    assert (workdir / "app.py").read_text() == "a\n"


def test_edit_refuses_a_file_too_large_to_load(
    toolset: AgentToolset, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "EDIT_MAX_BYTES", 100)
    (workdir / "big.txt").write_text("a" * 101)
    result = call(toolset, "edit", {"file_path": "big.txt", "old_string": "a", "new_string": "b"})
    assert result.is_error
    assert "too large" in result.content
    grow = workdir / "small.txt"
    grow.write_text("a" * 60)
    result = call(
        toolset,
        "edit",
        {"file_path": "small.txt", "old_string": "a", "new_string": "bb", "replace_all": True},
    )
    assert result.is_error
    assert grow.read_text() == "a" * 60


def test_links_that_stay_inside_are_followed(toolset: AgentToolset, workdir: Path) -> None:
    (workdir / "real").mkdir()
    (workdir / "real" / "f.txt").write_text("inside")
    (workdir / "dir_link").symlink_to("real")
    (workdir / "file_link").symlink_to(workdir / "real" / "f.txt")
    (workdir / "real" / "up").symlink_to("../real/f.txt")
    for path in ("dir_link/f.txt", "file_link", "real/up"):
        assert call(toolset, "read", {"file_path": path}).content == "inside"
    assert not call(toolset, "write", {"file_path": "file_link", "content": "new"}).is_error
    assert (workdir / "file_link").is_symlink()
    assert (workdir / "real" / "f.txt").read_text() == "new"
