"""The hostile answers of the sweep: bodies no client can use, for each shape of answer a
route has (one resource, a page of them, the events a post recorded), and stream frames.

Each is a success (200) a broken service, or a proxy in front of it, might send: empty, not
JSON, JSON of the wrong type, an object whose id is missing, of the wrong type or far over
any real id's size, whose ``type`` is not a string, whose scalars are huge. A huge value is
a megabyte: over every limit on ids and names, under the limits on whole answers and
events (a 60 MB one is measured on its own, in ``test_reported``).
"""

from __future__ import annotations

import json
from typing import Any

HUGE = "x" * 1_000_000


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


# Answers that cannot be the JSON object any route answers.
_NOT_AN_OBJECT = {
    "empty": b"",
    "not-json": b"<html>captive portal</html>",
    "truncated": b'{"id": "sesn_1", "type": "ses',
    "list": b"[]",
    "string": b'"ok"',
    "null": b"null",
}

RESOURCE_ANSWERS: dict[str, bytes] = {
    **_NOT_AN_OBJECT,
    "no-id": _json({"type": "session"}),
    "id-not-string": _json({"id": 5, "type": "session"}),
    "id-list": _json({"id": ["sesn_1"], "type": "session"}),
    "huge-id": _json({"id": "sesn_" + HUGE, "type": "session"}),
    "type-not-string": _json({"id": "sesn_1", "type": ["session"]}),
    "huge-type": _json({"id": "sesn_1", "type": HUGE}),
    "huge-status": _json({"id": "sesn_1", "type": "session", "status": HUGE}),
    "huge-other-id": _json({"id": "sesn_1", "type": "session", "agent_id": HUGE}),
}
"""Answers a route that answers one resource (with its ``id``) cannot use."""

PAGE_ANSWERS: dict[str, bytes] = {
    **_NOT_AN_OBJECT,
    "no-data": _json({"has_more": False}),
    "data-not-list": _json({"data": {"id": "x"}}),
    "item-not-object": _json({"data": [1]}),
    "item-no-id": _json({"data": [{"type": "x", "name": "n"}]}),
    "item-id-not-string": _json({"data": [{"id": 5, "type": "x"}]}),
    "item-huge-id": _json({"data": [{"id": HUGE, "type": "x"}]}),
    "item-type-not-string": _json({"data": [{"id": "x_1", "type": {"a": 1}}]}),
    "huge-cursor": _json({"data": [], "next_page": HUGE, "has_more": True, "last_id": HUGE}),
}
"""Answers a route that answers a page (``{"data": [...]}``) cannot use."""

POSTED_ANSWERS: dict[str, bytes] = {
    **_NOT_AN_OBJECT,
    "data-not-list": _json({"data": "events"}),
    "item-not-object": _json({"data": ["user.message"]}),
    "item-type-not-string": _json({"data": [{"id": "sevt_1", "type": 5}]}),
    "item-huge-id": _json({"data": [{"id": HUGE, "type": "user.message"}]}),
}
"""Answers a post of events (``{"data": [the events as recorded]}``) cannot use."""

FRAMES: dict[str, str] = {
    "not-json": "{",
    "list": "[1]",
    "string": '"agent.message"',
    "null": "null",
    "type-number": json.dumps({"type": 5, "id": "sevt_hostile"}),
    "type-list": json.dumps({"type": ["agent.message"], "id": "sevt_hostile"}),
    "type-object": json.dumps({"type": {"a": 1}, "event_id": "evt_hostile"}),
    "huge-type": json.dumps({"type": HUGE}),
    "id-list": json.dumps({"type": "agent.message", "id": ["sevt_1"], "event_id": ["evt_1"]}),
    "huge-id": json.dumps({"type": "agent.message", "id": HUGE, "event_id": HUGE}),
    "huge-turn-id": json.dumps({"type": "agent.session.turn.created", "turn_id": HUGE}),
}
"""What a stream frame may carry in place of an event: each is unreadable as one."""
