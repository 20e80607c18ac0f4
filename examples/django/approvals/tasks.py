"""The task a click on Approve or Deny enqueues: answer the decision, continuing its session
here, in the worker, to its next stop; and tell the page how it went (approvals.progress).

``answer()`` claims the decision before it sends anything, so of two clicks (two tabs, two
people) one wins and the other learns the first answer from ``AlreadyAnsweredError``: the
session is never continued twice. A task delivered again after its worker died answers the
same again, which takes over where the dead worker stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from chat.agent import get_provider
from django.conf import settings

from req_managed_agents import Tools, answer
from req_managed_agents.drivers import AlreadyAnsweredError, DecisionNotFoundError
from req_managed_agents.errors import (
    ManagedAgentsError,
    RateLimitError,
    ServerError,
    StreamError,
    TransportError,
)
from req_managed_agents.model import Allow, Deny, SessionInfo, ToolResult

from . import progress
from .agent import answer_options, decisions, ledger
from .celery import app

log = logging.getLogger(__name__)
RETRIED = (TransportError, ServerError, RateLimitError, StreamError)


class Progress(Tools):
    """The handler the rest of the session runs with: no tools of its own (add yours: they
    run here), and ``handle_event`` to tell the page what happens as it happens."""

    def __init__(self, click: str, item: str, verb: str) -> None:
        super().__init__()
        self._click = click
        self._item = item  # the id of the call or question the decision is about
        self._verb = verb
        self._seen: set[str] = set()
        self._answered = False  # the session's history is replayed first: skip its words
        self._texts: list[str] = []

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        """Called for each raw event, at least once: the first means the decision is ours
        (a claim refused raises before the session is continued)."""
        if not self._seen:
            self._show()
        event_id = str(event.get("id") or "")
        if event_id in self._seen:
            return
        self._seen.add(event_id)
        kind = str(event.get("type") or "")
        if kind.startswith("user.") and self._item in event.values():
            self._answered = True  # our answer, as the session recorded it
        elif kind == "agent.message" and self._answered:
            content = event.get("content") or []
            self._texts.append("".join(b.get("text", "") for b in content if isinstance(b, dict)))
            self._show()

    def _show(self) -> None:
        headline = f"{self._verb}, the session is finishing"
        progress.record(self._click, "finishing", headline, "\n".join(self._texts))


@app.task(autoretry_for=RETRIED, retry_backoff=True, retry_backoff_max=60, max_retries=5)
def answer_decision(
    click: str, token: str, kind: str, item: str, allow: bool, message: str = ""
) -> None:
    """Answer ``token`` (a decision of ``kind`` about ``item``, as the page listed it) with
    the page's yes or no; ``click`` names the page's progress record."""
    verb = "approved" if allow else "denied"
    try:
        result = answer(
            get_provider(),
            token,
            handler=Progress(click, item, verb),
            decisions=decisions(),
            ledger=ledger(),
            confirm="defer",  # a later question waits for a person too
            timeout=settings.AGENT_RUN_TIMEOUT,
            **answer_options(kind, allow, message),
        )
    except AlreadyAnsweredError as exc:
        first = f"already answered by someone else: {_said(exc.first)}{_at(exc.answered_at)}"
        progress.record(click, "already_answered", first)
        return
    except DecisionNotFoundError:
        progress.record(click, "failed", "no such decision (never made, or long forgotten)")
        return
    except RETRIED as exc:
        progress.record(
            click, "finishing", f"{verb}; the provider failed ({type(exc).__name__}), trying again"
        )
        raise
    except ManagedAgentsError as exc:
        log.warning("answering %s... failed: %s", token[:8], exc)
        progress.record(click, "failed", f"{verb}, but the session failed: {type(exc).__name__}")
        return
    if result.terminal == "requires_action":
        headline = "the session stopped again: it waits for another decision (reload the page)"
    else:
        headline = f"{verb}; the session finished ({result.terminal})"
    progress.record(click, "done", headline, result.text, session_id=result.session_id)


def _said(first: Any) -> str:
    """The first answer, as the page shows it."""
    if isinstance(first, Allow):
        return "approved"
    if isinstance(first, Deny):
        return f"denied ({first.message!r})" if first.message else "denied"
    if isinstance(first, ToolResult):
        return f"answered {'with an error ' if first.is_error else ''}{first.content!r}"
    return f"answered ({first.type})"  # an elicitation's accept, decline or cancel


def _at(when: datetime | None) -> str:
    return f" at {when:%H:%M:%S} UTC" if when is not None else ""
