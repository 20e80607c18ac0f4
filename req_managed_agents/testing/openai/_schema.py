"""Checks of request bodies, built from small combinators, with OpenAI's error messages.

A :data:`Check` takes a decoded JSON value and its parameter path (``events[0].call_id``)
and returns the value (checked, never changed) or raises a 400 as the API words it: an
unknown field is ``unknown_parameter``, a missing one ``missing_required_parameter``, a
wrong JSON type ``invalid_type`` and a value outside its set ``invalid_value``. The
parameter shapes themselves (``_params``) are read off the ``openai`` SDK's ``*_params``
TypedDicts: a key is required where the SDK marks it ``Required``, nullable where it is
``Optional``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._wire import invalid

if TYPE_CHECKING:
    from collections.abc import Mapping

# Checks a value found at a parameter path; returns it, or raises the API's 400.
Check = Callable[[Any, str], Any]

_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _wrong_type(path: str, expected: str, value: Any) -> Exception:
    return invalid(
        f"Invalid type for '{path}': expected {expected}, but got {_kind(value)} instead.",
        param=path,
        code="invalid_type",
    )


def invalid_value(path: str, message: str) -> Exception:
    return invalid(f"Invalid value for '{path}': {message}", param=path, code="invalid_value")


def string(*, min_length: int = 0, max_length: int | None = None) -> Check:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise _wrong_type(path, "a string", value)
        if len(value) < min_length:
            raise invalid_value(path, f"must be at least {min_length} character(s) long.")
        if max_length is not None and len(value) > max_length:
            raise invalid_value(path, f"must be at most {max_length} characters long.")
        return value

    return check


def boolean(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise _wrong_type(path, "a boolean", value)
    return value


def integer(minimum: int | None = None) -> Check:
    def check(value: Any, path: str) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong_type(path, "an integer", value)
        if minimum is not None and value < minimum:
            raise invalid_value(path, f"must be at least {minimum}.")
        return value

    return check


def one_of(*choices: str) -> Check:
    def check(value: Any, path: str) -> Any:
        if value not in choices:
            supported = ", ".join(f"'{c}'" for c in choices)
            raise invalid(
                f"Invalid value: '{value}'. Supported values are: {supported}.",
                param=path,
                code="invalid_value",
            )
        return value

    return check


def nullable(inner: Check) -> Check:
    def check(value: Any, path: str) -> Any:
        return None if value is None else inner(value, path)

    return check


def array(item: Check, *, min_items: int = 0) -> Check:
    def check(value: Any, path: str) -> Any:
        if not isinstance(value, list):
            raise _wrong_type(path, "an array", value)
        if len(value) < min_items:
            raise invalid(
                f"Invalid '{path}': empty array. Expected an array with minimum length "
                f"{min_items}, but got an empty array instead.",
                param=path,
                code="empty_array",
            )
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]")
        return value

    return check


def json_object(value: Any, path: str) -> Any:
    """A free-form JSON object (a JSON schema, request metadata)."""
    if not isinstance(value, dict):
        raise _wrong_type(path, "an object", value)
    return value


def string_map(
    *, max_pairs: int | None = None, key_max: int | None = None, value_max: int | None = None
) -> Check:
    """An object of strings (metadata, headers, environment variables) within limits."""

    def check(value: Any, path: str) -> Any:
        json_object(value, path)
        if max_pairs is not None and len(value) > max_pairs:
            raise invalid_value(path, f"must have at most {max_pairs} pairs.")
        for key, item in value.items():
            if key_max is not None and not 1 <= len(key) <= key_max:
                raise invalid_value(path, f"keys must be 1 to {key_max} characters long.")
            string(max_length=value_max)(item, f"{path}.{key}")
        return value

    return check


def obj(
    required: Mapping[str, Check] | None = None,
    optional: Mapping[str, Check] | None = None,
) -> Check:
    """A JSON object with exactly these keys: every ``required`` one, any ``optional`` one."""
    required = dict(required or {})
    optional = dict(optional or {})

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _wrong_type(path or "body", "an object", value)
        for key in value:
            if key not in required and key not in optional:
                where = f"{path}.{key}" if path else key
                raise invalid(
                    f"Unknown parameter: '{where}'.", param=where, code="unknown_parameter"
                )
        for key, inner in {**required, **optional}.items():
            where = f"{path}.{key}" if path else key
            if key in value:
                inner(value[key], where)
            elif key in required:
                raise invalid(
                    f"Missing required parameter: '{where}'.",
                    param=where,
                    code="missing_required_parameter",
                )
        return value

    return check


def tagged(variants: Mapping[str, Check]) -> Check:
    """A union told apart by ``type``; each variant checks the whole object."""

    def check(value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _wrong_type(path, "an object", value)
        where = f"{path}.type" if path else "type"
        if "type" not in value:
            raise invalid(
                f"Missing required parameter: '{where}'.",
                param=where,
                code="missing_required_parameter",
            )
        return variants[one_of(*variants)(value["type"], where)](value, path)

    return check


def constant(expected: str) -> Check:
    return one_of(expected)


def either(expected: str, *alternatives: tuple[type, Check]) -> Check:
    """A value of one of several JSON types (``input``: a string or an array of messages),
    checked by the alternative for its type."""

    def check(value: Any, path: str) -> Any:
        for json_type, inner in alternatives:
            if isinstance(value, json_type):
                return inner(value, path)
        raise _wrong_type(path, expected, value)

    return check
