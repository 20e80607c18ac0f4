"""JSON from and to peers we do not control.

A server's body or a stream frame may be huge, not JSON at all, or nest deeper than Python's
parser can follow (``json.loads`` then raises ``RecursionError``, which no caller expects).
:func:`loads` turns every such failure into a ``ValueError`` that says what was wrong, and
:func:`excerpt` shows a bounded prefix of a body in a message without decoding all of it
(``requests``' ``Response.text`` runs charset detection over the whole body first: seconds
of CPU for a large one).

:func:`dumps_utf8` is the other direction: compact UTF-8 bytes that can always be encoded,
even when a tool's text holds a lone surrogate (then those characters are escaped).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Union

from req_managed_agents.errors import APIError

if TYPE_CHECKING:
    import requests

__all__ = [
    "MAX_DEPTH",
    "TOO_DEEP",
    "dumps_utf8",
    "excerpt",
    "holds_too_deep",
    "json_object",
    "loads",
]

MAX_DEPTH = 100
"""Levels of nesting a document keeps when it nests too deeply for Python's parser."""
TOO_DEEP = f"(cut: nested more than {MAX_DEPTH} levels deep)"
"""What stands for a value :func:`loads` had to cut."""

# How much of an unexpected body an error message shows.
EXCERPT_BYTES = 200

Raw = Union[bytes, bytearray, str]


def loads(data: Raw, *, cut_deep: bool = False) -> Any:
    """Parse JSON text (bytes in UTF-8, -16 or -32, or str); ``ValueError`` if it is not.

    A document nesting deeper than Python's parser can follow is a ``ValueError`` - or,
    with ``cut_deep`` (for the events that carry a model's tool input), parses with every
    value deeper than :data:`MAX_DEPTH` levels replaced by :data:`TOO_DEEP`, so that one
    absurd tool input becomes that call's error instead of the loss of its event."""
    try:
        return json.loads(data)
    except RecursionError:
        if not cut_deep:
            raise ValueError("the JSON nests too deeply to parse") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"the JSON is not valid UTF-8 ({exc.reason})") from None
    text = data if isinstance(data, str) else bytes(data).decode(json.detect_encoding(data))
    try:
        return json.loads(_cut_below(text, MAX_DEPTH))
    except RecursionError:  # pragma: no cover - the cut text nests MAX_DEPTH levels at most
        raise ValueError("the JSON nests too deeply to parse") from None


def holds_too_deep(value: Any) -> bool:
    """Whether a parsed value had parts cut by :func:`loads` (walked without recursion)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if item == TOO_DEEP:
            return True
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _cut_below(text: str, limit: int) -> str:
    """``text`` with every array or object opening deeper than ``limit`` levels replaced by
    the :data:`TOO_DEEP` string (one pass, no recursion; strings are skipped whole)."""
    marker = json.dumps(TOO_DEEP)
    parts: list[str] = []
    depth = kept_from = 0
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if char in "[{":
            depth += 1
            if depth > limit:
                parts.append(text[kept_from:index])
                parts.append(marker)
                index = kept_from = _container_end(text, index)
                depth -= 1
                continue
        elif char in "]}":
            depth -= 1
        index += 1
    parts.append(text[kept_from:])
    return "".join(parts)


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opening at ``start``."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == '"':
            return index + 1
        else:
            index += 1
    return index


def _container_end(text: str, start: int) -> int:
    """The index after the array or object opening at ``start``."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return index


def excerpt(data: Raw, limit: int = EXCERPT_BYTES) -> str:
    """The first ``limit`` bytes (or characters) of a body, decoded leniently, for messages."""
    text = data if isinstance(data, str) else bytes(data[:limit]).decode("utf-8", "replace")
    return text[:limit] + ("..." if len(data) > limit else "")


def dumps_utf8(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes (sent as is, for example to be signed).

    Non-ASCII text stays readable; only text that UTF-8 cannot carry (a lone surrogate from
    a tool or from the model's own escapes) falls back to ``\\u`` escapes, which every JSON
    parser accepts, instead of crashing after the tool already ran.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def json_object(
    response: requests.Response,
    what: str,
    *,
    request_id_header: str = "request-id",
    cut_deep: bool = False,
) -> dict[str, Any]:
    """A successful response's JSON object; an empty body (a 202, say) is ``{}``. Anything
    else is an :class:`APIError` quoting a bounded prefix of the body and the request id
    the service sent in ``request_id_header``."""
    if not response.content:
        return {}
    request_id = response.headers.get(request_id_header)
    try:
        data = loads(response.content, cut_deep=cut_deep)
    except ValueError as exc:
        raise APIError(
            response.status_code,
            None,
            f"expected JSON from {what} ({exc}), got {excerpt(response.content)!r}",
            request_id,
        ) from None
    if not isinstance(data, dict):
        raise APIError(
            response.status_code, None, f"expected a JSON object from {what}", request_id
        )
    return data
