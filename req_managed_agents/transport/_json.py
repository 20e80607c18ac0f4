"""JSON from and to peers we do not control.

A server's body or a stream frame may be huge, not JSON at all, or nest deeper than Python's
parser can follow (``json.loads`` then raises ``RecursionError``, which no caller expects).
:func:`loads` turns every such failure into a ``ValueError`` that says what was wrong, and
:func:`excerpt` shows a bounded prefix of a body in a message without decoding all of it
(``requests``' ``Response.text`` runs charset detection over the whole body first: seconds
of CPU for a large one).

Parsed is not usable: an object's ``id`` may be missing, a list or 60 MB long, its ``type``
a number. :func:`check_fields` refuses, where the answer comes in, what no caller could use
(the sizes are :data:`MAX_ID_CHARS` and :data:`MAX_NAME_CHARS`), so that nothing downstream
meets a ``KeyError`` or ``TypeError``, nor copies a huge id into URLs, thread names and logs;
:func:`json_object` reads a successful answer with those checks, each failure a
:class:`~req_managed_agents.errors.MalformedResponseError` that names what was wrong.

:func:`dumps_utf8` is the other direction: compact UTF-8 bytes that can always be encoded,
even when a tool's text holds a lone surrogate (then those characters are escaped).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Union

from req_managed_agents.errors import MalformedResponseError

if TYPE_CHECKING:
    import requests

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "TOO_DEEP",
    "check_fields",
    "checked_id",
    "describe",
    "dumps_utf8",
    "excerpt",
    "holds_too_deep",
    "json_object",
    "loads",
    "malformed",
]

MAX_DEPTH = 100
"""Levels of nesting a document keeps when it nests too deeply for Python's parser."""
TOO_DEEP = f"(cut: nested more than {MAX_DEPTH} levels deep)"
"""What stands for a value :func:`loads` had to cut."""

# How much of an unexpected body an error message shows.
EXCERPT_BYTES = 200

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest answer read into memory (a streamed one is read piece by piece instead): four
times the largest event a stream may carry (``sse.DEFAULT_MAX_EVENT_SIZE``), room for a page
of a thousand large events, while a hostile body cannot take the process's memory."""
MAX_ID_CHARS = 4096
"""The longest id, ARN or page cursor taken from a service: twice AWS's longest ARN and page
token (2048), where the Claude and OpenAI ids are under 100 characters. An id goes back out
in URLs and headers and into logs, thread names and stores: a longer one is refused."""
MAX_NAME_CHARS = 256
"""The longest ``type`` or ``status`` taken from a service: the words of its vocabulary
(``agent.session.turn.output_text.delta`` is among the longest) are under 64 characters."""

# How much of a refused value a message quotes.
_QUOTED_CHARS = 60

Raw = Union[bytes, bytearray, str]

# The scanner of a default decoder: ``scan(text, index)`` is ``(value, end)`` for the JSON
# value starting exactly at ``index``; the C one where CPython has it, as for ``json.loads``.
# (Set by JSONDecoder.__init__, which typeshed does not declare.)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(data: Raw, *, cut_deep: bool = False) -> Any:
    """Parse JSON text (bytes in UTF-8, -16 or -32, or str); ``ValueError`` if it is not.

    A document nesting deeper than Python's parser can follow is a ``ValueError`` - or,
    with ``cut_deep`` (for the events that carry a model's tool input), parses with every
    value deeper than :data:`MAX_DEPTH` levels replaced by :data:`TOO_DEEP`, so that one
    absurd tool input becomes that call's error instead of the loss of its event."""
    if type(data) is str:
        # The usual frame, a document with no whitespace around it, goes straight to the
        # scanner ``json.loads`` ends in, skipping its three Python layers (a third of the
        # time for an event). Anything else - whitespace, a BOM, an error - takes the full
        # path below, which decides it exactly as before.
        try:
            value, end = _scan(data, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if end == len(data):
                return value
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


def malformed(
    status: int, what: str, problem: str, request_id: str | None = None
) -> MalformedResponseError:
    """The error for an answer to ``what`` (``"GET /v1/agents"``) that cannot be used."""
    return MalformedResponseError(status, None, f"{what}: {problem}", request_id)


def describe(value: Any) -> str:
    """A refused value as a message may show it: short text quoted, long text by its
    length and first characters, anything else by its JSON type."""
    if isinstance(value, str):
        if len(value) <= _QUOTED_CHARS:
            return repr(value)
        return f"a string of {len(value)} characters ({value[:_QUOTED_CHARS]!r}...)"
    return _JSON_TYPES.get(type(value), type(value).__name__)


_JSON_TYPES = {
    dict: "an object",
    list: "a list",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def checked_id(value: Any, field: str = "id") -> str:
    """``value`` if it is a usable id (a non-empty string of at most :data:`MAX_ID_CHARS`),
    else a ``ValueError`` naming ``field`` and what it held."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ValueError(
            f"{field} must be a string of 1 to {MAX_ID_CHARS} characters, not {describe(value)}"
        )
    return value


# Page cursors, which go back out in a URL like an id (Anthropic's, AWS's, Gemini's).
_CURSORS = frozenset({"next_page", "nextToken", "next_page_token"})

# What check_fields looks at in a field, by its name: an id, a type or status, or nothing.
_PLAIN, _ID, _NAME = 0, 1, 2
# The role of each field name met so far: services repeat a few dozen names, and a lookup
# costs less than working the role out again. Bounded, since a peer picks the names.
_ROLES: dict[str, int] = {}
_ROLES_KEPT = 4096


def _is_id_field(key: str) -> bool:
    """``id``, ``arn``, a page cursor, and names ending in ``_id``, ``Id`` or ``Arn``."""
    return key in ("id", "arn") or key in _CURSORS or key.endswith(("_id", "Id", "Arn"))


def _role(key: str) -> int:
    role = _ID if _is_id_field(key) else _NAME if key in ("type", "status") else _PLAIN
    if len(_ROLES) < _ROLES_KEPT:
        _ROLES[key] = role
    return role


def check_fields(value: Any, where: str = "", *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``value``, an object a service sent, if its fields can be used; else a
    ``ValueError`` naming its first field no caller could use: an ``id`` (or ``*_id``,
    ``*Id``, ``arn``, ``*Arn``, a page cursor) that is not a string of at most
    :data:`MAX_ID_CHARS` (an empty or null one only where the field is not ``required``),
    a ``type`` or ``status`` that is not a string of at most :data:`MAX_NAME_CHARS` (a null
    status is let through), or a ``required`` field missing.

    Only the object's own fields are looked at: what they hold is the reader's to check."""
    if not isinstance(value, dict):
        raise ValueError(f"{where or 'the answer'} is {describe(value)}, not a JSON object")
    for field in required:
        if field not in value:
            raise ValueError(f"{where or 'the answer'} has no {field}")
    roles = _ROLES
    for key, item in value.items():
        role = roles.get(key)
        if role is None:
            role = _role(key)
        if role == _PLAIN:
            continue
        # The usual field, a string that fits, passes on its first test.
        if type(item) is str and 0 < len(item) <= (MAX_ID_CHARS if role == _ID else MAX_NAME_CHARS):
            continue
        _check_field(key, item, role, where, required)
    return value


def _check_field(key: str, item: Any, role: int, where: str, required: tuple[str, ...]) -> None:
    """The rest of :func:`check_fields`' rules for one id, type or status field."""
    prefix = f"{where}." if where else ""
    if role == _ID:
        if (item is None or item == "") and key not in required:
            return
        checked_id(item, prefix + key)
    else:
        if item is None and key == "status":
            return
        if not isinstance(item, str) or len(item) > MAX_NAME_CHARS:
            raise ValueError(
                f"{prefix}{key} must be a string of at most {MAX_NAME_CHARS} characters, "
                f"not {describe(item)}"
            )


def json_object(
    response: requests.Response,
    what: str,
    *,
    request_id_header: str = "request-id",
    cut_deep: bool = False,
    required: tuple[str, ...] = (),
    listing: str | None = None,
    item_required: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A successful response's JSON object, its fields checked (:func:`check_fields`);
    ``required`` names the fields it must have, such as the ``id`` of a resource.
    ``listing`` names the member that lists items (``data`` of a page): when present (it
    must be, if ``required`` names it) a list of objects, whose fields are checked too,
    ``item_required`` naming those each must have. A 202 or 204 may have no body (``{}``).

    Anything else is a :class:`MalformedResponseError` saying what was wrong, quoting no
    more than a bounded prefix of the body, with the request id the service sent in
    ``request_id_header``."""
    status = response.status_code
    request_id = response.headers.get(request_id_header)
    if not response.content:
        if status in (202, 204):  # "accepted", "no content": nothing to describe
            return {}
        raise malformed(status, what, "the answer is empty", request_id)
    try:
        data = loads(response.content, cut_deep=cut_deep)
    except ValueError as exc:
        problem = f"expected JSON ({exc}), got {excerpt(response.content)!r}"
        raise malformed(status, what, problem, request_id) from None
    try:
        checked = check_fields(data, required=required)
        items = checked.get(listing) if listing is not None else None
        if (items is not None or listing in required) and not isinstance(items, list):
            raise ValueError(f"{listing} is {describe(items)}, not a list")
        for index, item in enumerate(items or ()):
            check_fields(item, f"{listing}[{index}]", required=item_required)
    except ValueError as exc:
        raise malformed(status, what, str(exc), request_id) from None
    return checked
