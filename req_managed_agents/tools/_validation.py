"""Check a tool's arguments against the JSON Schema it declared, before the tool runs.

The model's tool input is untrusted, and the declared schema is exactly what the model was
told, so the input is held to it: a value that does not fit never reaches the function, and
the problems come back as short ``path: what`` strings the model can act on.

Only the subset that :mod:`req_managed_agents.tools._schema` emits is understood: ``type`` (a name
or a list of names), ``enum`` (of JSON scalars), ``properties``, ``required``,
``additionalProperties`` (``false`` or a schema), ``items``, ``prefixItems``, ``minItems``,
``maxItems``, ``uniqueItems`` and ``anyOf``; ``{}`` allows anything. Other keywords
(``default``, ``description``, whatever a hand-written schema adds) are ignored, and a schema
that is not a mapping constrains nothing.

Values are JSON as :func:`json.loads` returns it. ``bool`` is neither ``integer`` nor
``number``; ``integer`` means ``int``, so ``3.0`` is rejected (a float cannot carry every
integer exactly, and a tool hinted ``int`` must get one); NaN and the infinities are not
numbers; arrays are lists. Values are equal (``enum``, ``uniqueItems``) only when they also
have the same JSON type: ``True`` is not ``1`` and ``1.0`` is not ``1``.

Hostile input stays cheap: nesting deeper than :data:`MAX_DEPTH` is a problem rather than a
``RecursionError``, the walk stops after :data:`MAX_PROBLEMS`, and echoed values and names
are cut short.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_PROBLEMS", "is_valid", "preview", "same_scalar", "validate"]

# Nesting levels the walk follows; generated schemas never come close.
MAX_DEPTH = 64
# Problems listed before the rest are summarised as "...".
MAX_PROBLEMS = 10

_PREVIEW_CHARS = 40
_PATH_CHARS = 100
_NAMES_SHOWN = 5
_CHOICES_SHOWN = 10
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}\Z")


class _Full(Exception):
    """Ends a walk that has found as many problems as it may report."""


class _TooDeep(Exception):
    """A value nests deeper than :data:`MAX_DEPTH`."""


def validate(value: Any, schema: Any) -> list[str]:
    """Every problem with ``value`` (``[]`` if it fits), ending with ``"..."`` when cut short."""
    walk = _Walk(MAX_PROBLEMS, [])
    walk.run(value, schema, 0)
    return walk.problems + (["..."] if walk.truncated else [])


def is_valid(value: Any, schema: Any) -> bool:
    """Whether ``value`` fits ``schema``; stops at the first problem."""
    walk = _Walk(0, [])
    walk.run(value, schema, 0)
    return not walk.truncated


def same_scalar(a: Any, b: Any) -> bool:
    """JSON scalar equality that tells ``True``, ``1`` and ``1.0`` apart."""
    kind = _kind(a)
    return kind in _SCALARS and kind == _kind(b) and a == b


def preview(value: Any, limit: int = _PREVIEW_CHARS) -> str:
    """A repr of ``value`` cut at about ``limit`` characters, in time and stack that ``limit``
    bounds (a plain ``repr`` of a huge or deeply nested value is slow or raises)."""
    pieces: list[str] = []
    size = 0

    def emit(text: str) -> bool:
        nonlocal size
        pieces.append(text)
        size += len(text)
        return size <= limit

    def render(item: Any) -> bool:
        """Append ``item``; ``False`` once the budget is spent, which stops every level."""
        if isinstance(item, list):
            if not emit("["):
                return False
            for index, element in enumerate(item):
                if (index and not emit(", ")) or not render(element):
                    return False
            return emit("]")
        if isinstance(item, Mapping):
            if not emit("{"):
                return False
            for index, (key, element) in enumerate(item.items()):
                if (index and not emit(", ")) or not (render(key) and emit(": ")):
                    return False
                if not render(element):
                    return False
            return emit("}")
        return emit(_scalar_repr(item, limit))

    render(value)
    text = "".join(pieces)
    return text if len(text) <= limit else text[:limit] + "..."


_SCALARS = frozenset({"null", "boolean", "integer", "number", "string"})


def _kind(value: Any) -> str | None:
    """The JSON type of ``value``; ``None`` for what JSON cannot hold (NaN, a set, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return None


def _accepts(names: Sequence[Any], kind: str | None) -> bool:
    return kind in names or (kind == "integer" and "number" in names)


class _Walk:
    """One pass over a value; ``path`` is where the walk is, for the messages."""

    def __init__(self, limit: int, path: list[Any]) -> None:
        self.limit = limit
        self.path = path
        self.problems: list[str] = []
        self.truncated = False

    def run(self, value: Any, schema: Any, depth: int) -> None:
        try:
            self.check(value, schema, depth)
        except _Full:
            self.truncated = True

    def add(self, problem: str) -> None:
        if len(self.problems) >= self.limit:
            raise _Full
        self.problems.append(problem)

    def report(self, text: str) -> None:
        where = _render_path(self.path)
        self.add(f"{where}: {text}" if where else text)

    def check(self, value: Any, schema: Any, depth: int) -> None:
        if not isinstance(schema, Mapping):
            return
        if depth > MAX_DEPTH:
            self.report(f"nests deeper than {MAX_DEPTH} levels")
            return
        kind = _kind(value)
        names = _type_names(schema)
        choices = schema.get("enum")
        if (names is not None and not _accepts(names, kind)) or (
            isinstance(choices, list) and not any(same_scalar(value, c) for c in choices)
        ):
            self.report(f"expected {_describe(schema, nested=True)}, got {preview(value)}")
            return
        options = schema.get("anyOf")
        if isinstance(options, list):
            self.any_of(value, options, depth)
        if kind == "object":
            self.object(value, schema, depth)
        elif kind == "array":
            self.array(value, schema, depth)

    def descend(self, segment: Any, value: Any, schema: Any, depth: int) -> None:
        self.path.append(segment)
        self.check(value, schema, depth + 1)
        self.path.pop()

    def any_of(self, value: Any, options: list[Any], depth: int) -> None:
        """Pass if one option fits; else report the problems of the closest option of the
        value's type, or name all the options when none has its type."""
        kind = _kind(value)
        best: _Walk | None = None
        for option in options:
            if not _may_accept(option, kind):
                continue
            attempt = _Walk(self.limit, list(self.path))
            attempt.run(value, option, depth + 1)
            if not attempt.problems and not attempt.truncated:
                return
            if best is None or _count(attempt) < _count(best):
                best = attempt
        if best is None:
            alternatives = {_describe(option, nested=False): None for option in options}
            self.report(f"expected {_either(list(alternatives))}, got {preview(value)}")
            return
        for problem in best.problems:
            self.add(problem)
        if best.truncated:
            raise _Full

    def object(self, value: Mapping[Any, Any], schema: Mapping[str, Any], depth: int) -> None:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        extra = schema.get("additionalProperties")
        if isinstance(required, list):
            missing = [name for name in required if name not in value]
            if missing:
                self.report(f"missing {_names(missing)}")
        if extra is False:
            unexpected = [key for key in value if key not in properties]
            if unexpected:
                self.report(f"unexpected {_names(unexpected)}")
        if not properties and not isinstance(extra, Mapping):
            return
        for key, item in value.items():
            item_schema = properties.get(key, extra)
            if isinstance(item_schema, Mapping):
                self.descend(key, item, item_schema, depth)

    def array(self, value: list[Any], schema: Mapping[str, Any], depth: int) -> None:
        least, most = schema.get("minItems"), schema.get("maxItems")
        count = len(value)
        if isinstance(least, int) and least == most and count != least:
            self.report(f"expected exactly {_items(least)}, got {count}")
        elif isinstance(least, int) and count < least:
            self.report(f"expected at least {_items(least)}, got {count}")
        elif isinstance(most, int) and count > most:
            self.report(f"expected at most {_items(most)}, got {count}")
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        rest = schema.get("items")
        if prefix or isinstance(rest, Mapping):
            for index, item in enumerate(value):
                self.descend(index, item, prefix[index] if index < len(prefix) else rest, depth)
        if schema.get("uniqueItems") is True:
            self.unique(value, depth)

    def unique(self, value: list[Any], depth: int) -> None:
        first_seen: dict[Hashable, int] = {}
        try:
            for index, item in enumerate(value):
                first = first_seen.setdefault(_canonical(item, depth + 1), index)
                if first != index:
                    self.report(f"items must be unique, but [{index}] repeats [{first}]")
        except _TooDeep:
            self.report(f"nests deeper than {MAX_DEPTH} levels")


def _count(walk: _Walk) -> int:
    return len(walk.problems) + walk.truncated


def _type_names(schema: Mapping[str, Any]) -> list[Any] | None:
    names = schema.get("type")
    if isinstance(names, str):
        return [names]
    return names if isinstance(names, list) else None


def _may_accept(schema: Any, kind: str | None) -> bool:
    """Whether ``schema``'s own ``type`` or ``enum`` lets a value of this kind through."""
    if not isinstance(schema, Mapping):
        return True
    names = _type_names(schema)
    if names is not None:
        return _accepts(names, kind)
    choices = schema.get("enum")
    if isinstance(choices, list):
        return any(_kind(choice) == kind for choice in choices)
    return True


def _canonical(value: Any, depth: int) -> Hashable:
    """A key equal for equal JSON values (same types, any key order)."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    kind = _kind(value)
    if kind == "array":
        return kind, tuple(_canonical(item, depth + 1) for item in value)
    if kind == "object":
        return kind, frozenset((k, _canonical(v, depth + 1)) for k, v in value.items())
    if kind is None:
        return kind, id(value)
    return kind, value


def _describe(schema: Any, *, nested: bool) -> str:
    """What ``schema`` asks for, in a few words; ``nested`` also spells out ``anyOf``."""
    if not isinstance(schema, Mapping):
        return "anything"
    choices = schema.get("enum")
    if isinstance(choices, list):
        if len(choices) == 1:
            return preview(choices[0])
        shown = [preview(choice) for choice in choices[:_CHOICES_SHOWN]]
        more = f", ... ({len(choices)} choices)" if len(choices) > _CHOICES_SHOWN else ""
        return f"one of {', '.join(shown)}{more}"
    names = _type_names(schema)
    if names is not None:
        return _either([str(name) for name in names])
    options = schema.get("anyOf")
    if isinstance(options, list):
        if not nested:
            return "another alternative"
        return _either([_describe(option, nested=False) for option in options])
    return "anything"


def _either(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words) or "nothing"
    return f"{', '.join(words[:-1])} or {words[-1]}"


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


def _names(keys: list[Any]) -> str:
    shown = ", ".join(_name(key) for key in keys[:_NAMES_SHOWN])
    hidden = len(keys) - _NAMES_SHOWN
    return f"{shown} and {hidden} more" if hidden > 0 else shown


def _name(key: Any) -> str:
    """A property name as is when it is a short identifier, else quoted and cut short."""
    return key if isinstance(key, str) and _IDENTIFIER.match(key) else preview(key)


def _render_path(path: list[Any]) -> str:
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, int) and not isinstance(segment, bool):
            parts.append(f"[{segment}]")
        elif isinstance(segment, str) and _IDENTIFIER.match(segment):
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{preview(segment)}]")
    text = "".join(parts)
    return text if len(text) <= _PATH_CHARS else text[:_PATH_CHARS] + "..."


def _scalar_repr(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return repr(value[: limit + 1])
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, int):
        try:
            return repr(value)
        except ValueError:  # more digits than int-to-str conversion allows
            return f"<{value.bit_length()}-bit integer>"
    return f"<{type(value).__name__}>"
