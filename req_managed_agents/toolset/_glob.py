"""Doublestar glob patterns (``**/*.py``, ``src/{a,b}/[!_]*.ts``), matched without
regular expressions.

The agent writes the pattern, so its matching must stay cheap whatever it writes: a
regular expression built from ``*a*a*a*b`` backtracks exponentially, while the matcher
here takes time proportional to the pattern times the name. ``*`` and ``?`` stay inside
one name, ``**`` as a whole name spans any number of directories, ``[...]`` is a class
(``[!...]`` or ``[^...]`` negated), ``{a,b}`` are alternatives and ``\\`` escapes; names
starting with a dot match like any other.
"""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass
from typing import Union

from req_managed_agents.toolset._failure import ToolFailure

__all__ = ["GlobPattern", "compile_glob"]

MAX_ALTERNATIVES = 64
"""The most alternatives ``{...}`` may expand a pattern into."""


@dataclass(frozen=True)
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]

    def accepts(self, char: str) -> bool:
        return any(low <= char <= high for low, high in self.ranges) != self.negated


class _Wild(enum.Enum):
    STAR = "*"
    ANY = "?"
    GLOBSTAR = "**"


_NOT_IN_NAMES = (0, ord("/"))

_Token = Union[str, _Wild, _Class]  # a literal character, STAR, ANY or a class
_Segment = Union[_Wild, tuple[_Token, ...]]  # GLOBSTAR, or the tokens of one name


@dataclass(frozen=True)
class GlobPattern:
    """A compiled pattern: where its walk starts (``start``, names with no wildcard),
    how deep below it a match can lie (``None``: any depth) and what matches there."""

    start: tuple[str, ...]
    depth: int | None
    alternatives: tuple[tuple[_Segment, ...], ...]

    def matches(self, names: tuple[str, ...]) -> bool:
        """Whether the path ``names`` (below ``start``) matches."""
        return any(_match_path(segments, names) for segments in self.alternatives)


def compile_glob(pattern: str) -> GlobPattern:
    """Compile ``pattern``, refusing absolute ones and ``..``, which would leave the root."""
    expanded = _expand(pattern)
    split = [_split(alternative) for alternative in expanded]
    if any(_names_only(_compile_name(name), "..") for names in split for name in names):
        raise ToolFailure("pattern may not contain '..'")
    if any(alternative.startswith("/") for alternative in expanded):
        raise ToolFailure(
            "pattern must be relative: give a relative pattern and, to "
            "search elsewhere in the working directory, a path"
        )
    start: list[str] = []
    while all(len(names) > len(start) + 1 for names in split):
        name = split[0][len(start)]
        if _is_magic(name) or any(names[len(start)] != name for names in split):
            break
        start.append(name)
    alternatives = tuple(
        tuple(_compile_name(name) for name in names[len(start) :]) for names in split
    )
    depth: int | None = max(len(segments) for segments in alternatives)
    if any(_Wild.GLOBSTAR in segments for segments in alternatives):
        depth = None
    return GlobPattern(tuple(_unescaped(name) for name in start), depth, alternatives)


def _split(pattern: str) -> list[str]:
    return [name for name in pattern.split("/") if name not in ("", ".")]


def _names_only(segment: _Segment, name: str) -> bool:
    """Whether ``segment`` matches ``name`` and nothing else, however it is spelled:
    ``..``, ``\\.\\.``, ``[.][.]``, ``.[.]``... (a wildcard that matches ``..`` among
    other names is no way out: the walk never lists ``..``)."""
    tokens = () if isinstance(segment, _Wild) else segment
    return len(tokens) == len(name) and all(map(_accepts_only, tokens, name))


def _accepts_only(token: _Token, char: str) -> bool:
    """Whether ``token`` accepts ``char`` and no other character a name can hold."""
    if isinstance(token, str):
        return token == char
    if not isinstance(token, _Class):
        return False
    spans: list[tuple[int, int]] = []  # the code points the class accepts
    lowest = 0
    for low, high in sorted((ord(low), ord(high)) for low, high in token.ranges if low <= high):
        if not token.negated:
            spans.append((low, high))
        elif low > lowest:
            spans.append((lowest, low - 1))
        lowest = max(lowest, high + 1)
    if token.negated and lowest <= sys.maxunicode:
        spans.append((lowest, sys.maxunicode))
    for impossible in _NOT_IN_NAMES:  # a negated class accepts them, names never hold them
        spans = [
            piece
            for low, high in spans
            for piece in ((low, min(high, impossible - 1)), (max(low, impossible + 1), high))
            if piece[0] <= piece[1]
        ]
    return bool(spans) and all(span == (ord(char), ord(char)) for span in spans)


def _is_magic(name: str) -> bool:
    return any(char in name for char in "*?[")


def _unescaped(name: str) -> str:
    """A name with no wildcard, its escapes removed."""
    segment = _compile_name(name)
    tokens = () if isinstance(segment, _Wild) else segment
    return "".join(token for token in tokens if isinstance(token, str))


def _expand(pattern: str) -> list[str]:
    """The alternatives of the first ``{a,b}`` in ``pattern``, each expanded in turn."""
    done: list[str] = []
    todo = [pattern]
    while todo:
        current = todo.pop()
        found = _first_braces(current)
        if found is None:
            done.append(current)
        else:
            opening, commas, closing = found
            edges = [opening, *commas, closing]
            head, tail = current[:opening], current[closing + 1 :]
            todo.extend(
                head + current[edges[i] + 1 : edges[i + 1]] + tail for i in range(len(edges) - 1)
            )
        if len(done) + len(todo) > MAX_ALTERNATIVES:
            raise ToolFailure(f"pattern expands to more than {MAX_ALTERNATIVES} alternatives")
    return sorted(done)


def _first_braces(pattern: str) -> tuple[int, list[int], int] | None:
    """The first ``{...}`` holding a comma at its own level: where it opens, its commas
    and where it closes; ``None`` when there is none (braces without one are literal)."""
    index = 0
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "{":
            depth, scan = 0, index
            commas: list[int] = []
            while scan < len(pattern):
                char = pattern[scan]
                if char == "\\":
                    scan += 2
                    continue
                if char == "{":
                    depth += 1
                elif char == "}":
                    depth -= 1
                    if depth == 0:
                        if commas:
                            return index, commas, scan
                        break
                elif char == "," and depth == 1:
                    commas.append(scan)
                scan += 1
        index += 1
    return None


def _compile_name(name: str) -> _Segment:
    if name == "**":
        return _Wild.GLOBSTAR
    tokens: list[_Token] = []
    index = 0
    while index < len(name):
        char = name[index]
        if char == "\\" and index + 1 < len(name):
            tokens.append(name[index + 1])
            index += 2
        elif char == "*":
            if not tokens or tokens[-1] is not _Wild.STAR:
                tokens.append(_Wild.STAR)
            index += 1
        elif char == "?":
            tokens.append(_Wild.ANY)
            index += 1
        elif char == "[":
            parsed = _parse_class(name, index + 1)
            if parsed is None:
                tokens.append("[")
                index += 1
            else:
                tokens.append(parsed[0])
                index = parsed[1]
        else:
            tokens.append(char)
            index += 1
    return tuple(tokens)


def _parse_class(name: str, index: int) -> tuple[_Class, int] | None:
    """The class starting after ``[`` at ``index`` and where it ends, or ``None`` if
    it never closes (then ``[`` is literal)."""
    negated = index < len(name) and name[index] in "!^"
    index += negated
    ranges: list[tuple[str, str]] = []
    first = True
    while index < len(name):
        char = name[index]
        if char == "]" and not first:
            return _Class(negated, tuple(ranges)), index + 1
        first = False
        if char == "\\" and index + 1 < len(name):
            index += 1
            char = name[index]
        if index + 2 < len(name) and name[index + 1] == "-" and name[index + 2] != "]":
            ranges.append((char, name[index + 2]))
            index += 3
        else:
            ranges.append((char, char))
            index += 1
    return None


def _match_name(tokens: tuple[_Token, ...], name: str) -> bool:
    """Match one name, backtracking only to the last ``*`` (time: tokens x name)."""
    token_at = name_at = 0
    star_token, star_name = -1, 0
    while name_at < len(name):
        if token_at < len(tokens) and tokens[token_at] is _Wild.STAR:
            star_token, star_name = token_at, name_at
            token_at += 1
        elif token_at < len(tokens) and _accepts(tokens[token_at], name[name_at]):
            token_at += 1
            name_at += 1
        elif star_token >= 0:
            star_name += 1
            token_at, name_at = star_token + 1, star_name
        else:
            return False
    while token_at < len(tokens) and tokens[token_at] is _Wild.STAR:
        token_at += 1
    return token_at == len(tokens)


def _accepts(token: _Token, char: str) -> bool:
    if isinstance(token, _Class):
        return token.accepts(char)
    return token is _Wild.ANY or token == char


def _match_path(segments: tuple[_Segment, ...], names: tuple[str, ...]) -> bool:
    """Match a path name by name, carrying the set of pattern positions reached."""
    reached = _past_globstars(segments, {0})
    for name in names:
        following: set[int] = set()
        for at in reached:
            if at == len(segments):
                continue
            segment = segments[at]
            if segment is _Wild.GLOBSTAR:
                following.add(at)
            elif not isinstance(segment, _Wild) and _match_name(segment, name):
                following.add(at + 1)
        reached = _past_globstars(segments, following)
        if not reached:
            return False
    return len(segments) in reached


def _past_globstars(segments: tuple[_Segment, ...], reached: set[int]) -> set[int]:
    """``reached`` plus every position a ``**`` matching no name at all leads to."""
    more = set(reached)
    for at in sorted(reached):
        while at < len(segments) and segments[at] is _Wild.GLOBSTAR:
            at += 1
            more.add(at)
    return more
