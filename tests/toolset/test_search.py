"""glob and grep through the toolset: what they find, in what order, and their bounds."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from req_managed_agents.toolset import AgentToolset, _search
from tests.toolset.conftest import call, unconfined


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _relative(toolset: AgentToolset, listing: str) -> list[str]:
    return [os.path.relpath(line, toolset.workdir) for line in listing.splitlines()]


def test_glob_lists_matches_newest_first_as_absolute_paths(
    toolset: AgentToolset, workdir: Path
) -> None:
    _tree(workdir, {"a.py": "", "src/b.py": "", "src/deep/c.py": "", "src/d.txt": ""})
    for age, name in enumerate(["src/deep/c.py", "a.py", "src/b.py"]):
        os.utime(workdir / name, (1_000_000 - age * 1000, 1_000_000 - age * 1000))
    result = call(toolset, "glob", {"pattern": "**/*.py"})
    assert not result.is_error
    assert result.content.splitlines()[0] == f"{toolset.workdir}/src/deep/c.py"
    assert _relative(toolset, result.content) == ["src/deep/c.py", "a.py", "src/b.py"]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", None, ["a.py"]),
        ("src/*", None, ["src/b.py", "src/d.txt", "src/deep"]),
        ("*.py", "src", ["src/b.py"]),
        ("**/*.{py,txt}", "src", ["src/b.py", "src/d.txt", "src/deep/c.py"]),
        ("src/**/?.py", None, ["src/b.py", "src/deep/c.py"]),
        ("nothing/**", None, []),
    ],
)
def test_glob_patterns_and_the_path_to_search_under(
    toolset: AgentToolset, workdir: Path, pattern: str, path: str | None, expected: list[str]
) -> None:
    _tree(workdir, {"a.py": "", "src/b.py": "", "src/deep/c.py": "", "src/d.txt": ""})
    input = {"pattern": pattern} if path is None else {"pattern": pattern, "path": path}
    result = call(toolset, "glob", input)
    assert not result.is_error
    found = [] if result.content == "no matches" else sorted(_relative(toolset, result.content))
    assert found == expected


@pytest.mark.parametrize(
    ("input", "expected"),
    [
        ({"pattern": "/etc/*"}, "must be relative"),
        ({"pattern": "../*"}, "'..'"),
        ({"pattern": "\\.\\./*", "path": "sub"}, "'..'"),
        ({"pattern": "[.][.]/*", "path": "sub"}, "'..'"),
        ({"pattern": ""}, "pattern must be"),
        ({"pattern": 3}, "pattern must be a string"),
        ({"pattern": "*", "path": "missing"}, "no such file or directory"),
        ({"pattern": "*", "path": "a.py"}, "not a directory"),
    ],
)
def test_glob_refuses_bad_patterns_and_paths(
    toolset: AgentToolset, workdir: Path, input: dict[str, object], expected: str
) -> None:
    _tree(workdir, {"a.py": "", "sub/b.py": ""})
    result = call(toolset, "glob", input)
    assert result.is_error
    assert expected in result.content


def test_glob_answers_at_most_200_paths_and_says_how_many_more(
    toolset: AgentToolset, workdir: Path
) -> None:
    _tree(workdir, {f"f{n:03}.txt": "" for n in range(_search.GLOB_MAX_RESULTS + 10)})
    result = call(toolset, "glob", {"pattern": "*.txt"})
    lines = result.content.splitlines()
    assert len(lines) == _search.GLOB_MAX_RESULTS + 1
    assert lines[-1].startswith("[10 more matches not shown")


def test_glob_lists_links_that_stay_inside(toolset: AgentToolset, workdir: Path) -> None:
    _tree(workdir, {"real/a.txt": ""})
    (workdir / "alias.txt").symlink_to("real/a.txt")
    result = call(toolset, "glob", {"pattern": "*.txt"})
    assert _relative(toolset, result.content) == ["alias.txt"]


def test_grep_answers_path_line_and_text_for_a_regex(toolset: AgentToolset, workdir: Path) -> None:
    _tree(workdir, {"a.py": "def main():\n    return 42\n", "src/b.py": "x = 42\nmain()\n"})
    result = call(toolset, "grep", {"pattern": r"\bmain\(\)"})
    assert not result.is_error
    assert sorted(result.content.splitlines()) == [
        f"{toolset.workdir}/a.py:1:def main():",
        f"{toolset.workdir}/src/b.py:2:main()",
    ]


def test_grep_searches_under_a_directory_or_in_one_file(
    toolset: AgentToolset, workdir: Path
) -> None:
    _tree(workdir, {"a.py": "hit\n", "src/b.py": "hit\n", "src/c.txt": "hit\n"})
    under = call(toolset, "grep", {"pattern": "hit", "path": "src"})
    files = sorted(line.split(":")[0] for line in under.content.splitlines())
    assert _relative(toolset, "\n".join(files)) == ["src/b.py", "src/c.txt"]
    one = call(toolset, "grep", {"pattern": "hit", "path": "src/c.txt"})
    assert one.content == f"{toolset.workdir}/src/c.txt:1:hit"


def test_grep_skips_binary_files_git_and_node_modules(toolset: AgentToolset, workdir: Path) -> None:
    _tree(
        workdir,
        {".git/config": "needle\n", "node_modules/x/i.js": "needle\n", "ok.txt": "needle\n"},
    )
    (workdir / "image.bin").write_bytes(b"\x00\x01needle\n")
    result = call(toolset, "grep", {"pattern": "needle"})
    assert result.content == f"{toolset.workdir}/ok.txt:1:needle"


@pytest.mark.parametrize(
    ("input", "expected"),
    [
        ({"pattern": "("}, "invalid regular expression"),
        ({"pattern": "x" * (_search.MAX_PATTERN + 1)}, "longer than"),
        ({"pattern": "x", "path": "missing"}, "no such file or directory"),
        ({}, "pattern is required"),
    ],
)
def test_grep_refuses_bad_patterns_and_paths(
    toolset: AgentToolset, input: dict[str, object], expected: str
) -> None:
    result = call(toolset, "grep", input)
    assert result.is_error
    assert expected in result.content


def test_grep_without_matches_says_so(toolset: AgentToolset, workdir: Path) -> None:
    _tree(workdir, {"a.txt": "nothing here\n"})
    assert call(toolset, "grep", {"pattern": "absent"}).content == "no matches"


def test_grep_output_is_bounded_and_says_it_was_cut(workdir: Path) -> None:
    toolset = unconfined(workdir, max_output=1000)
    _tree(workdir, {"many.txt": "match this line\n" * 5000})
    result = call(toolset, "grep", {"pattern": "match"})
    assert not result.is_error
    assert len(result.content) <= 1200
    assert result.content.endswith("narrow the pattern or the path]")


def test_grep_shows_a_long_line_cut(toolset: AgentToolset, workdir: Path) -> None:
    _tree(workdir, {"min.js": "needle" + "x" * 5000 + "\n"})
    result = call(toolset, "grep", {"pattern": "needle"})
    assert result.content.endswith("[line cut at 2000 characters]")
    assert len(result.content) < 2200


def test_a_backtracking_regex_is_stopped_at_the_deadline(workdir: Path) -> None:
    toolset = unconfined(workdir, bash_timeout=1.0)
    _tree(workdir, {"evil.txt": "a" * 40 + "!\n"})
    started = time.monotonic()
    result = call(toolset, "grep", {"pattern": r"(a+)+$"})
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "ran out of time after 1s" in result.content


def test_a_cancelled_grep_stops(workdir: Path) -> None:
    toolset = unconfined(workdir)
    _tree(workdir, {"evil.txt": "a" * 40 + "!\n"})
    cancelled = threading.Event()
    threading.Timer(0.5, cancelled.set).start()
    started = time.monotonic()
    result = call(toolset, "grep", {"pattern": r"(a+)+$"}, cancelled=cancelled)
    assert time.monotonic() - started < 10
    assert (result.is_error, result.content) == (True, "grep: cancelled")
