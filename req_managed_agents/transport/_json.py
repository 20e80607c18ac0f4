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
from typing import Any, Union

__all__ = ["dumps_utf8", "excerpt", "loads"]

# How much of an unexpected body an error message shows.
EXCERPT_BYTES = 200

Raw = Union[bytes, bytearray, str]


def loads(data: Raw) -> Any:
    """Parse JSON text (bytes in UTF-8, -16 or -32, or str); ``ValueError`` if it is not."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("the JSON nests too deeply to parse") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"the JSON is not valid UTF-8 ({exc.reason})") from None


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
