"""Request validation for the AgentCore emulator against the botocore service models.

A value is checked member by member against its botocore shape: required members present,
no unknown members, no nulls, the right types, lengths, enums and patterns. Each problem is
collected as ``(path, message)``, in AWS's words, for one ``ValidationException`` naming
them all. botocore is imported when a service model is first loaded.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._wire import _invalid, _json_object

if TYPE_CHECKING:
    from req_managed_agents.testing.server import RecordedRequest


@functools.cache
def _service_model(name: str) -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model(name)


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    """The model's (Java) pattern compiled for Python; None for the few Python cannot read."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _join(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)


def _check_size(
    shape: Any, size: float, path: str, what: str, errors: list[tuple[str, str]]
) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        errors.append((path, f"Member must have {what} greater than or equal to {low}"))
    if high is not None and size > high:
        errors.append((path, f"Member must have {what} less than or equal to {high}"))


def _check_structure(
    shape: Any, value: Any, path: str, errors: list[tuple[str, str]], *, body_only: bool = False
) -> None:
    """Check a JSON object; ``body_only`` skips members bound to headers, query or path."""
    if not isinstance(value, dict):
        errors.append((path or "body", "Member must be a structure (a JSON object)"))
        return
    members = {
        name: member
        for name, member in shape.members.items()
        if not (body_only and "location" in member.serialization)
    }
    for key in value:
        if key not in members:
            errors.append((_join(path, key), f"Member is not a known member of {shape.name}"))
    for name in shape.required_members:
        if name in members and name not in value:
            errors.append((_join(path, name), "Member must not be null"))
    present = [key for key in value if key in members]
    for key in present:
        _check_shape(members[key], value[key], _join(path, key), errors)
    if shape.metadata.get("union") and len(present) != 1:
        errors.append((path, f"Member must have exactly one member set, not {len(present)}"))


def _checked_body(model: Any, operation: str, request: RecordedRequest) -> dict[str, Any]:
    """A request's JSON body checked against its operation's input shape in ``model``; one
    ValidationException naming every problem."""
    body = _json_object(request)
    errors: list[tuple[str, str]] = []
    _check_structure(model.operation_model(operation).input_shape, body, "", errors, body_only=True)
    if errors:
        raise _invalid(errors)
    return body


def _check_shape(shape: Any, value: Any, path: str, errors: list[tuple[str, str]]) -> None:
    """Append (path, problem) for each way ``value`` breaks the botocore ``shape``."""
    if value is None:
        errors.append((path, "Member must not be null"))
        return
    if shape.metadata.get("document"):
        return  # any JSON value
    kind = shape.type_name
    if kind == "structure":
        _check_structure(shape, value, path, errors)
    elif kind == "list":
        if not isinstance(value, list):
            errors.append((path, "Member must be a list"))
            return
        _check_size(shape, len(value), path, "length", errors)
        for index, item in enumerate(value):
            _check_shape(shape.member, item, _join(path, index), errors)
    elif kind == "map":
        if not isinstance(value, dict):
            errors.append((path, "Member must be a map (a JSON object)"))
            return
        _check_size(shape, len(value), path, "length", errors)
        for key, item in value.items():
            _check_shape(shape.key, key, _join(path, key), errors)
            _check_shape(shape.value, item, _join(path, key), errors)
    elif kind == "string":
        if not isinstance(value, str):
            errors.append((path, "Member must be a string"))
            return
        _check_size(shape, len(value), path, "length", errors)
        enum = shape.metadata.get("enum")
        if enum and value not in enum:
            errors.append((path, f"Member must satisfy enum value set: [{', '.join(enum)}]"))
        raw_pattern = shape.metadata.get("pattern")
        pattern = _pattern(raw_pattern) if raw_pattern else None
        if pattern is not None and not pattern.fullmatch(value):
            errors.append(
                (path, f"Member must satisfy regular expression pattern: {pattern.pattern}")
            )
    elif kind in ("integer", "long", "float", "double"):
        types = (int,) if kind in ("integer", "long") else (int, float)
        if isinstance(value, bool) or not isinstance(value, types):
            errors.append((path, f"Member must be of type {kind}"))
            return
        _check_size(shape, value, path, "value", errors)
    elif kind == "boolean":
        if not isinstance(value, bool):
            errors.append((path, "Member must be a boolean"))
    elif kind == "timestamp":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            errors.append((path, "Member must be a timestamp"))
    elif not isinstance(value, str):  # a blob travels base64-encoded
        errors.append((path, "Member must be a base64 string"))
