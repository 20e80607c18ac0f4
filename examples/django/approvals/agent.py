"""The approvals' side of the agent: the decisions store, the Redis client the clicks'
progress goes to, and how a yes or a no answers each kind of decision.

Each is built on first use, once per process, like chat.agent's provider (which the
approvals share): a process that imports the project but serves nothing builds none.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from req_managed_agents import ToolLedger
from req_managed_agents.model import PendingDecision
from req_managed_agents.stores import RedisStore

# Every key the library writes starts with this, away from Celery's own keys.
STORE_PREFIX = "agentsite:"

_lock = threading.Lock()
_store: RedisStore | None = None
_ledger: ToolLedger | None = None
_redis: Any = None


def decisions() -> RedisStore:
    """The ``decisions=`` store: the run that defers writes its questions here, the page
    lists them, and the worker that answers claims them here (first answer wins)."""
    global _store
    with _lock:
        if _store is None:
            _store = RedisStore(settings.REDIS_URL, prefix=STORE_PREFIX)
        return _store


def ledger() -> ToolLedger:
    """The tool ledger in the same Redis: a retried task never runs a finished tool again."""
    global _ledger
    store = decisions()
    with _lock:
        if _ledger is None:
            _ledger = ToolLedger(store)
        return _ledger


def redis_client() -> Any:
    """A plain Redis client (thread-safe, pooled) for the clicks' progress records."""
    global _redis
    with _lock:
        if _redis is None:
            import redis  # here, not at import: the chat pages run without it

            _redis = redis.Redis.from_url(
                settings.REDIS_URL, socket_timeout=10, socket_connect_timeout=10
            )
        return _redis


KINDS = ("confirmation", "elicitation", "tool_result")


def answer_options(kind: str, allow: bool, message: str) -> dict[str, Any]:
    """``answer()``'s arguments for a yes or a no from the page, whatever the decision's
    ``kind``: a confirmation or an elicitation is allowed or not; a deferred tool gets a
    result saying so (an error for a no, with the person's message)."""
    if kind == "tool_result":
        if allow:
            return {"result": "approved by a person"}
        return {
            "result": f"denied by a person: {message}" if message else "denied by a person",
            "is_error": True,
        }
    return {"allow": allow, "message": message or None}


def describe(decision: PendingDecision) -> str:
    """What a decision asks, in one line for the page."""
    if decision.elicitation is not None:
        asked = decision.elicitation
        link = f" at {asked.url}" if asked.url else ""  # shown as text, never fetched
        return f"{asked.server_name} asks: {asked.message}{link}"
    use = decision.tool_use
    assert use is not None
    where = f" ({use.mcp_server})" if use.mcp_server else ""
    verb = "run" if decision.kind == "confirmation" else "finish"
    return f"{verb} {use.name}{where} with {dict(use.input)}"
