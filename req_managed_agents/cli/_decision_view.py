"""How ``rma`` shows a decision left for a person, and an answer given to one: a line for
people (what it asks, the command that answers it) and an object for ``--json``.

Nothing here imports the drivers or a provider: the error report of ``rma`` uses it too.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from req_managed_agents.model._vocabulary import (
    Allow,
    Deny,
    ElicitationAccept,
    ElicitationDecline,
    PendingDecision,
    ToolResult,
)

__all__ = [
    "answer_json",
    "answering_command",
    "decision_json",
    "decision_lines",
    "question",
    "said",
    "utc",
]

_CLIP = 200  # characters of a tool's input shown on a decision's line


def utc(moment: datetime | None) -> str | None:
    """``2025-06-01T12:00:00Z`` (None stays None)."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def question(decision: PendingDecision) -> str:
    """What the decision asks, in a few words: the tool call waiting, or the MCP server's
    question (its text and link are the server's own: shown, never followed)."""
    asked = decision.elicitation
    if asked is not None:
        what = f"{asked.server_name} asks" + (f": {asked.message}" if asked.message else "")
        if asked.url:
            return f"{what} (at {asked.url})"
        return f"{what} (a form)" if asked.requested_schema is not None else what
    use = decision.tool_use
    assert use is not None  # a confirmation or a deferred tool names its call
    call = f"{use.name} {_clip(json.dumps(dict(use.input), default=str))}"
    if decision.kind == "tool_result":
        return f"{call} waits for its result"
    return f"{call} asks permission"


def answering_command(decision: PendingDecision, decisions: str) -> str:
    """The ``rma pending`` command line that answers the decision."""
    if decision.kind == "tool_result":
        return f"rma pending answer {decision.token} --result TEXT --decisions {decisions}"
    return f"rma pending approve|deny {decision.token} --decisions {decisions}"


def decision_lines(decision: PendingDecision) -> list[str]:
    """``rma pending list``'s two lines for a decision: who asks and when, then what."""
    expires = utc(decision.expires) or "never"
    state = " (expired)" if decision.expired else ""
    why = f" ({decision.reason})" if decision.reason else ""
    return [
        f"{decision.token}  {decision.kind}  {decision.runtime} session {decision.session_id}"
        f"  created {utc(decision.created)}  expires {expires}{state}",
        f"  {question(decision)}{why}",
    ]


def said(answer: Any) -> str:
    """An answer in a few words: ``allowed``, ``denied: MESSAGE``, ``result 'TEXT'``..."""
    if isinstance(answer, Allow):
        return "allowed"
    if isinstance(answer, Deny):
        return f"denied: {answer.message}" if answer.message else "denied"
    if isinstance(answer, ToolResult):
        return f"{'error' if answer.is_error else 'result'} {_clip(answer.content)!r}"
    if isinstance(answer, ElicitationAccept):
        return "accepted" if answer.content is None else f"accepted with {dict(answer.content)}"
    return "declined" if isinstance(answer, ElicitationDecline) else "cancelled"


def answer_json(answer: Any) -> dict[str, Any]:
    """An answer as ``rma pending show --json`` prints it, in the terms that give it:
    ``{"allow": true}``, ``{"allow": false, "message": ...}``, ``{"result": ...,
    "is_error": ...}``, or an MCP server's ``{"action": "accept", "content": ...}``."""
    if isinstance(answer, Allow):
        return {"allow": True}
    if isinstance(answer, Deny):
        return {"allow": False, "message": answer.message}
    if isinstance(answer, ToolResult):
        return {"result": answer.content, "is_error": answer.is_error}
    content = answer.content if isinstance(answer, ElicitationAccept) else None
    return {"action": answer.type, "content": None if content is None else dict(content)}


def decision_json(decision: PendingDecision, status: str, answer: Any = None) -> dict[str, Any]:
    """One decision as ``rma pending list|show --json`` prints it: every key each time.
    ``status`` is ``waiting`` or ``answered``; ``answer`` the answer given, or None."""
    use, asked = decision.tool_use, decision.elicitation
    return {
        "token": decision.token,
        "kind": decision.kind,
        "session_id": decision.session_id,
        "runtime": decision.runtime,
        "tool_use": None
        if use is None
        else {
            "id": use.id,
            "name": use.name,
            "input": dict(use.input),
            "mcp_server": use.mcp_server,
        },
        "elicitation": None
        if asked is None
        else {
            "id": asked.id,
            "server_name": asked.server_name,
            "tool_use_id": asked.tool_use_id,
            "url": asked.url,
            "message": asked.message,
            "requested_schema": None
            if asked.requested_schema is None
            else dict(asked.requested_schema),
        },
        "reason": decision.reason,
        "created": utc(decision.created),
        "expires": utc(decision.expires),
        "expired": decision.expired,
        "status": status,
        "answer": None if answer is None else answer_json(answer),
    }


def _clip(text: str) -> str:
    return text if len(text) <= _CLIP else text[: _CLIP - 3] + "..."
