"""What became of each click on the page, kept in Redis for the page to poll.

The Celery task writes a click's record as the answer goes on (queued, finishing with the
agent's words so far, then done, already answered or failed); the page asks
``GET clicks/<id>`` every half second until the record says it is over. Polling a small
JSON record rather than holding a server-sent-events stream open keeps the page working
behind any proxy, across server processes and page reloads, and holds no server thread
while a session finishes: the worker, not the web server, is where the session runs.
"""

from __future__ import annotations

import json
from typing import Any

from .agent import STORE_PREFIX, redis_client

# A click's record outlives the page that made it by a day, then Redis forgets it.
KEPT_FOR = 24 * 3600
OVER = ("done", "already_answered", "failed")


def _key(click: str) -> str:
    return f"{STORE_PREFIX}click:{click}"


def record(click: str, state: str, headline: str, text: str = "", **more: Any) -> None:
    """Replace the click's record (one writer per click: the task handling it)."""
    body = {"state": state, "headline": headline, "text": text, **more}
    redis_client().set(_key(click), json.dumps(body), ex=KEPT_FOR)


def read(click: str) -> dict[str, Any] | None:
    """The click's record, or None if there is none (unknown, or long forgotten)."""
    raw = redis_client().get(_key(click))
    return None if raw is None else dict(json.loads(raw))
