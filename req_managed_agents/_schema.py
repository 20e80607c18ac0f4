"""JSON Schema for a tool, read off the function's type hints and docstring.

The agent only ever sees a tool's name, description and input schema, so the schema must be
exact: every parameter typed, required exactly when it has no default, and described when
the docstring says something about it. Unsupported hints fail at registration, not when the
model first calls the tool.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

__all__ = ["FunctionSchema", "coerce_arguments", "function_schema", "parse_docstring"]

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Attributes|Keyword Args):\s*$")
_ANY_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")

_PRIMITIVES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_UNION_TYPES: tuple[Any, ...] = (Union,) + (
    (types.UnionType,) if sys.version_info >= (3, 10) else ()
)


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    """What a tool declares: description, input schema, and where to inject the context."""

    description: str
    input_schema: dict[str, Any]
    context_parameter: str | None
    hints: Mapping[str, Any]


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (first paragraph, {parameter: description}).

    Google style (``Args:`` with ``name (type): text``) and reST (``:param name: text``) are
    understood; continuation lines are joined with single spaces.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADER.match(line.strip()):
            break
        summary.append(line.strip())
    params: dict[str, str] = {}
    current: str | None = None
    in_section = False
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        rest = _REST_PARAM.match(stripped)
        if rest:
            current = rest.group(1)
            params[current] = rest.group(2).strip()
            in_section = False
            continue
        if _ARGS_HEADER.match(stripped) and line == stripped:
            in_section, current, base_indent = True, None, -1
            continue
        if not in_section:
            if current and stripped and line.startswith(" ") and not stripped.startswith(":"):
                params[current] = f"{params[current]} {stripped}".strip()
            elif not stripped or stripped.startswith(":"):
                current = None
            continue
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and _ANY_HEADER.match(stripped):
            in_section, current = False, None
            continue
        if base_indent < 0:
            base_indent = indent
        match = _ARG_LINE.match(stripped)
        if indent <= base_indent and match:
            current = match.group(1).lstrip("*")
            params[current] = match.group(2).strip()
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(summary), params


def function_schema(
    fn: Callable[..., Any], *, context_type: type, tool_name: str
) -> FunctionSchema:
    """Build the tool declaration for ``fn``; raise ``TypeError`` for what JSON cannot say."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"cannot read the type hints of tool {tool_name!r}: {exc}") from exc
    description, param_docs = parse_docstring(fn.__doc__)
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_parameter = None
    for param in inspect.signature(fn).parameters.values():
        where = f"parameter {param.name!r} of tool {tool_name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"{where}: tools take named parameters only")
        if param.name not in hints:
            raise TypeError(f"{where} has no type hint; the agent needs one to call it")
        hint = hints[param.name]
        if hint is context_type:
            context_parameter = param.name
            continue
        schema = type_schema(hint, where)
        doc = param_docs.get(param.name)
        if doc and "description" not in schema:
            schema["description"] = doc
        if param.default is param.empty:
            required.append(param.name)
        elif _is_json_scalar(param.default):
            schema["default"] = _json_value(param.default)
        properties[param.name] = schema
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False
    return FunctionSchema(description, input_schema, context_parameter, hints)


def type_schema(hint: Any, where: str) -> dict[str, Any]:
    """The JSON Schema for one type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        annotated: dict[str, Any] = type_schema(args[0], where)
        notes = [note for note in args[1:] if isinstance(note, str)]
        if notes:
            annotated["description"] = " ".join(notes)
        return annotated
    if hint is Any or hint is object:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint], where)
    if hint in _PRIMITIVES:
        return {"type": _PRIMITIVES[hint]}
    if origin in _UNION_TYPES:
        return _union_schema(args, where)
    if origin is typing.Literal:
        return _enum_schema(list(args), where)
    if hint in (list, tuple, set, frozenset) or origin in (list, set, frozenset, Sequence):
        schema: dict[str, Any] = {"type": "array"}
        if args:
            schema["items"] = type_schema(args[0], where)
        if hint in (set, frozenset) or origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], where)}
        items = [type_schema(arg, where) for arg in args]
        return {
            "type": "array",
            "prefixItems": items,
            "minItems": len(items),
            "maxItems": len(items),
        }
    if hint is dict or origin in (dict, Mapping):
        if not args:
            return {"type": "object"}
        if args[0] is not str:
            raise TypeError(f"{where}: JSON object keys are strings, not {args[0]!r}")
        return {"type": "object", "additionalProperties": type_schema(args[1], where)}
    if _is_typeddict(hint):
        return _record_schema(
            hint,
            where,
            typing.get_type_hints(hint, include_extras=True),
            required=set(hint.__required_keys__),
        )
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        fields = {f.name: f for f in dataclasses.fields(hint) if f.init}
        hints = typing.get_type_hints(hint, include_extras=True)
        required = {
            name
            for name, f in fields.items()
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        return _record_schema(hint, where, {n: hints[n] for n in fields}, required=required)
    raise TypeError(
        f"{where}: type hint {hint!r} has no JSON Schema; use str, int, float, bool, "
        "Optional, Literal, an Enum, list, dict, a TypedDict or a dataclass"
    )


def _union_schema(args: tuple[Any, ...], where: str) -> dict[str, Any]:
    options = [type_schema(arg, where) for arg in args if arg is not type(None)]
    nullable = len(options) < len(args)
    simple = [o.get("type") for o in options if set(o) == {"type"} and isinstance(o["type"], str)]
    if len(simple) == len(options):
        kinds = simple + (["null"] if nullable else [])
        return {"type": kinds[0] if len(kinds) == 1 else kinds}
    if nullable:
        options.append({"type": "null"})
    return options[0] if len(options) == 1 else {"anyOf": options}


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    if not all(_is_json_scalar(v) for v in values):
        raise TypeError(f"{where}: choices must be JSON scalars, got {values!r}")
    schema: dict[str, Any] = {"enum": [_json_value(v) for v in values]}
    kinds = {_PRIMITIVES.get(type(v)) for v in values if v is not None}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _record_schema(
    hint: type, where: str, fields: Mapping[str, Any], *, required: set[str]
) -> dict[str, Any]:
    _, docs = parse_docstring(hint.__doc__)
    properties = {}
    for name, field_hint in fields.items():
        schema = type_schema(field_hint, f"{where} (field {name!r} of {hint.__name__})")
        if docs.get(name) and "description" not in schema:
            schema["description"] = docs[name]
        properties[name] = schema
    schema = {"type": "object", "properties": properties}
    ordered_required = [name for name in fields if name in required]
    if ordered_required:
        schema["required"] = ordered_required
    schema["additionalProperties"] = False
    return schema


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, enum.Enum))


def _json_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def coerce_arguments(arguments: Mapping[str, Any], hints: Mapping[str, Any]) -> dict[str, Any]:
    """Turn JSON arguments into the Python values the hints ask for (dataclasses, enums)."""
    return {name: _coerce(value, hints.get(name, Any)) for name, value in arguments.items()}


def _coerce(value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _coerce(value, args[0])
    if value is None:
        return None
    if origin in _UNION_TYPES:
        for arg in args:
            if arg is not type(None) and _needs_coercion(arg):
                return _coerce(value, arg)
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, Mapping):
        field_hints = typing.get_type_hints(hint)
        return hint(**{k: _coerce(v, field_hints.get(k, Any)) for k, v in value.items()})
    if origin in (list, Sequence, set, frozenset) and isinstance(value, list) and args:
        items = [_coerce(item, args[0]) for item in value]
        return origin(items) if origin in (set, frozenset) else items
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(item, args[0]) for item in value)
        return tuple(_coerce(item, arg) for item, arg in zip(value, args))
    if origin in (dict, Mapping) and isinstance(value, Mapping) and len(args) == 2:
        return {k: _coerce(v, args[1]) for k, v in value.items()}
    return value


def _needs_coercion(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is not None:
        return any(_needs_coercion(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)
    return isinstance(hint, type) and (
        issubclass(hint, enum.Enum) or dataclasses.is_dataclass(hint)
    )
