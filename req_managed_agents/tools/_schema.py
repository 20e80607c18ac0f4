"""JSON Schema for a tool, read off the function's type hints and docstring.

The agent only ever sees a tool's name, description and input schema, so the schema must be
exact: every parameter typed, required exactly when it has no default, and described when
the docstring says something about it. Unsupported hints fail at registration, not when the
model first calls the tool; so do hints whose Python value could not be built from every JSON
value the schema allows (a set of dicts, a dataclass needing an ``InitVar``), because
:meth:`FunctionSchema.coerce` must not fail on input that passed validation.
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

from req_managed_agents.tools._validation import is_valid, same_scalar

__all__ = ["FunctionSchema", "function_schema", "parse_docstring"]

_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Attributes|Keyword Args):\s*$")
_ANY_HEADER = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")

_PRIMITIVES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_UNION_TYPES: tuple[Any, ...] = (Union,) + (
    (types.UnionType,) if sys.version_info >= (3, 10) else ()
)

# Turns a JSON value that fits a hint's schema into the Python value the hint asks for.
Converter = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    """What a tool declares: description, input schema, and where to inject the context.

    ``converters`` holds, per parameter whose JSON value is not already the Python value
    (a dataclass, an Enum, a tuple, a set, ...), the function that builds it.
    """

    description: str
    input_schema: dict[str, Any]
    context_parameter: str | None
    hints: Mapping[str, Any]
    converters: Mapping[str, Converter]

    def coerce(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The Python values for arguments that passed validation against ``input_schema``."""
        return {
            name: self.converters[name](value) if name in self.converters else value
            for name, value in arguments.items()
        }


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
    converters: dict[str, Converter] = {}
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
        try:
            schema = type_schema(hint, where)
            converter = _converter(hint, where)
        except RecursionError:
            raise TypeError(f"{where}: type hint {hint!r} contains itself") from None
        if converter is not None:
            converters[param.name] = converter
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
    return FunctionSchema(description, input_schema, context_parameter, hints, converters)


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
            element = args[0] if args else Any
            if not _hashable(element):
                raise TypeError(
                    f"{where}: set items must be hashable, not {element!r}; use str, int, "
                    "float, bool, an Enum, a Literal, or a tuple or frozen dataclass of those"
                )
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
        fields, required = _dataclass_fields(hint, where)
        return _record_schema(hint, where, fields, required=required)
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
    kinds = {_PRIMITIVES.get(type(v)) for v in schema["enum"]}
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


def _dataclass_fields(hint: type, where: str) -> tuple[dict[str, Any], set[str]]:
    """The hints of the fields a dataclass is built from, and which of them are required."""
    fields = [f for f in dataclasses.fields(hint) if f.init]
    hints = typing.get_type_hints(hint, include_extras=True)
    names = {f.name for f in fields}
    unsendable = [
        name
        for name, p in inspect.signature(hint).parameters.items()
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and name not in names
    ]
    if unsendable:
        raise TypeError(
            f"{where}: {hint.__name__} cannot be built from JSON: it also needs "
            f"{', '.join(unsendable)}, which is not a field"
        )
    required = {
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    return {f.name: hints[f.name] for f in fields}, required


def _hashable(hint: Any) -> bool:
    """Whether the Python value built for ``hint`` can always go into a set."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _hashable(args[0])
    if origin in _UNION_TYPES or origin is tuple:
        return all(_hashable(arg) for arg in args if arg is not Ellipsis)
    if origin is frozenset:
        return bool(args) and _hashable(args[0])
    if origin is typing.Literal or hint is None or hint is type(None) or hint in _PRIMITIVES:
        return True
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return True
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = typing.get_type_hints(hint, include_extras=True)
        hashed = [f for f in dataclasses.fields(hint) if (f.compare if f.hash is None else f.hash)]
        return hint.__hash__ is not None and all(_hashable(hints[f.name]) for f in hashed)
    return False


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, enum.Enum))


def _json_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _converter(hint: Any, where: str) -> Converter | None:
    """How to build the value ``hint`` asks for from JSON that fits its schema; ``None`` when
    that JSON already is the value. Built once per tool, so a call only runs the result."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _converter(args[0], where)
    if origin in _UNION_TYPES:
        return _union_converter([arg for arg in args if arg is not type(None)], where)
    if origin is typing.Literal:
        members = [arg for arg in args if isinstance(arg, enum.Enum)]
        if not members:
            return None
        return lambda value: next((m for m in members if same_scalar(m.value, value)), value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        fields = _field_converters(_dataclass_fields(hint, where)[0], where)
        return lambda value: hint(**_convert_fields(value, fields))
    if _is_typeddict(hint):
        fields = _field_converters(typing.get_type_hints(hint, include_extras=True), where)
        return (lambda value: _convert_fields(value, fields)) if fields else None
    if hint is tuple:
        return tuple
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        parts = [_converter(arg, where) for arg in args]
        return lambda value: tuple(v if c is None else c(v) for v, c in zip(value, parts))
    if origin in (list, Sequence, tuple, set, frozenset):
        item = _converter(args[0], where) if args else None
        if item is None:
            return None if origin in (list, Sequence) else origin
        collect: Callable[[Any], Any] = list if origin is Sequence else origin
        return lambda value: collect(item(v) for v in value)
    if origin in (dict, Mapping) and len(args) == 2:
        value_converter = _converter(args[1], where)
        if value_converter is None:
            return None
        return lambda value: {k: value_converter(v) for k, v in value.items()}
    return None


def _union_converter(members: list[Any], where: str) -> Converter | None:
    """Build the value as the first member it fits (a union's schema cannot say which)."""
    converters = [_converter(member, where) for member in members]
    if all(c is None for c in converters):
        return None
    choices = [(type_schema(m, where), c) for m, c in zip(members, converters)]

    def convert(value: Any) -> Any:
        if value is None:
            return None
        for schema, member_converter in choices:
            # A valid value that is not null fits a lone member without checking.
            if len(choices) == 1 or is_valid(value, schema):
                return value if member_converter is None else member_converter(value)
        return value  # fits no member: reachable only for input that was never validated

    return convert


def _field_converters(hints: Mapping[str, Any], where: str) -> dict[str, Converter]:
    converters = {name: _converter(hint, where) for name, hint in hints.items()}
    return {name: c for name, c in converters.items() if c is not None}


def _convert_fields(
    value: Mapping[str, Any], converters: Mapping[str, Converter]
) -> dict[str, Any]:
    return {k: converters[k](v) if k in converters else v for k, v in value.items()}
