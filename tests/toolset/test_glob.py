"""The glob matcher: doublestar semantics, and time linear in what the agent writes."""

from __future__ import annotations

import re
import time

import pytest

from req_managed_agents.toolset._failure import ToolFailure
from req_managed_agents.toolset._glob import MAX_ALTERNATIVES, compile_glob


def _matches(pattern: str, path: str) -> bool:
    compiled = compile_glob(pattern)
    names = tuple(path.split("/"))
    if names[: len(compiled.start)] != compiled.start:
        return False  # the walk never goes there
    return compiled.matches(names[len(compiled.start) :])


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "lib/a.py", False),
        ("src/**", "src/x/y", True),
        ("a/**/b/**/c", "a/b/c", True),
        ("a/**/b/**/c", "a/x/b/y/z/c", True),
        ("a/**/b/**/c", "a/x/y/c", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[abc].txt", "b.txt", True),
        ("[!abc].txt", "b.txt", False),
        ("[^abc].txt", "d.txt", True),
        ("[a-c]x", "bx", True),
        ("[a-c]x", "dx", False),
        ("[]]x", "]x", True),
        ("{a,b}.txt", "b.txt", True),
        ("{a,b}.txt", "c.txt", False),
        ("src/{lib,app}/*.ts", "src/app/x.ts", True),
        ("{src,lib}/**/*.{ts,tsx}", "lib/deep/x.tsx", True),
        ("*.py", ".hidden.py", True),
        ("\\*.txt", "*.txt", True),
        ("\\*.txt", "a.txt", False),
        ("[unclosed", "[unclosed", True),
        ("{single}", "{single}", True),
    ],
)
def test_patterns_match_as_doublestar_does(pattern: str, path: str, expected: bool) -> None:
    assert _matches(pattern, path) is expected


def test_the_walk_starts_below_the_literal_names_and_goes_only_as_deep_as_needed() -> None:
    compiled = compile_glob("src/app/*.py")
    assert (compiled.start, compiled.depth) == (("src", "app"), 1)
    assert compile_glob("src/**/x").depth is None
    assert compile_glob("{a,b}/c/*").start == ()


def test_a_pathological_pattern_is_matched_quickly() -> None:
    compiled = compile_glob("*a" * 40 + "*b")
    started = time.monotonic()
    assert not compiled.matches(("a" * 255,))
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("pattern", ["/etc/*", "../*", "a/../../b", "{a,..}/x", "{/etc,x}/*"])
def test_patterns_that_leave_the_root_are_refused(pattern: str) -> None:
    with pytest.raises(ToolFailure):
        compile_glob(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "\\.\\./x/*",
        "\\../*",
        ".\\./*",
        "a/\\.\\./\\.\\./b",
        "[.][.]/*",
        ".[.]/*",
        "[.]./*",
        "[.-.][\\.]/*",
        "[!\x01--0-\U0010ffff]./*",
        "[!\x00--0-\U0010ffff]./*",
        "{a,\\.\\.}/x",
        "{\\.,a}./x",
        "x/**/[.][.]",
    ],
)
def test_every_spelling_of_dot_dot_is_refused(pattern: str) -> None:
    with pytest.raises(ToolFailure, match=re.escape("may not contain '..'")):
        compile_glob(pattern)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [(".*", ".."), ("??", ".."), ("?.", ".."), ("..?", "..a"), (".[!.]*", ".git"), ("*", "..")],
)
def test_wildcards_that_could_match_dot_dot_are_still_patterns(pattern: str, path: str) -> None:
    """The walk never lists ``..``: a wildcard that would match it is no way out, and
    patterns such as ``.*`` (every hidden name) stay usable."""
    assert _matches(pattern, path)


def test_brace_expansion_is_bounded() -> None:
    with pytest.raises(ToolFailure, match=str(MAX_ALTERNATIVES)):
        compile_glob("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")
    assert len(compile_glob("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").alternatives) == 64
