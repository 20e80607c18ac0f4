"""Reading one field of a tool call's input, refusing the wrong type by name.

The toolset receives the agent's JSON as it came; a field of the wrong type is the
agent's mistake to fix, so it gets a message naming the field, not a ``TypeError``.
Fields the shape does not name are ignored: the API adds fields as it grows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from req_managed_agents.toolset._failure import ToolFailure

__all__ = ["optional_flag", "optional_integer", "optional_text", "required_text"]


def required_text(input: Mapping[str, Any], field: str) -> str:
    """The string ``field``; missing or not a string is refused."""
    if field not in input or input[field] is None:
        raise ToolFailure(f"{field} is required")
    return _text(input[field], field)


def optional_text(input: Mapping[str, Any], field: str) -> str | None:
    """The string ``field``, or ``None`` when absent or null."""
    value = input.get(field)
    return None if value is None else _text(value, field)


def optional_flag(input: Mapping[str, Any], field: str) -> bool:
    """The boolean ``field``; absent or null is ``False``."""
    value = input.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolFailure(f"{field} must be true or false, not {_kind(value)}")
    return value


def optional_integer(input: Mapping[str, Any], field: str) -> int | None:
    """The integer ``field`` (a boolean is not one), or ``None`` when absent or null."""
    value = input.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolFailure(f"{field} must be an integer, not {_kind(value)}")
    return value


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise ToolFailure(f"{field} must be a string, not {_kind(value)}")
    return value


def _kind(value: object) -> str:
    """The JSON name of ``value``'s type, as the agent wrote it."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return names.get(type(value), type(value).__name__)
