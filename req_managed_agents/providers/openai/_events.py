"""OpenAI Agents session events in the canonical vocabulary, and the inputs we post.

A session moves ``in_progress`` -> ``requires_action`` | ``idle`` | ``failed`` |
``budget_reached``, announcing each move with an ``agent.session.<status>`` event that
carries the whole session: its status, the ``required_actions`` it waits for (function
calls, MCP approvals) and its error. Those session events are the boundaries our turns end
at. Inside, the service's own turns (``agent.session.turn.*``, root or subagent) run and
add items: messages (streamed as ``output_text.delta``), function calls, MCP calls, ...
A function call keeps its service turn open, ``waiting``; the tool results resume it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    Image,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.providers._base import call_arguments, count
from req_managed_agents.transport._json import MAX_ID_CHARS, checked_id

__all__ = [
    "BOUNDARIES",
    "ITEM_ADDED",
    "ITEM_DONE",
    "TEXT_DELTA",
    "TURN_CREATED",
    "TURN_ENDS",
    "approval_result",
    "cancel",
    "message",
    "normalize",
    "required_uses",
    "tool_result",
    "usage_of",
]

_log = get_logger(__name__)

IDLE = "agent.session.idle"
REQUIRES_ACTION = "agent.session.requires_action"
FAILED = "agent.session.failed"
BUDGET_REACHED = "agent.session.budget_reached"
BOUNDARIES = frozenset({IDLE, REQUIRES_ACTION, FAILED, BUDGET_REACHED})
# The session status each boundary announces (a catch-up rebuilds the boundary from it).
BOUNDARY_OF_STATUS = {
    "idle": IDLE,
    "requires_action": REQUIRES_ACTION,
    "failed": FAILED,
    "budget_reached": BUDGET_REACHED,
}

TURN_CREATED = "agent.session.turn.created"
TURN_ENDS = {
    "agent.session.turn.completed": "completed",
    "agent.session.turn.failed": "failed",
    "agent.session.turn.cancelled": "cancelled",
}
ITEM_ADDED = "agent.session.turn.item.added"
ITEM_DONE = "agent.session.turn.item.done"
TEXT_DELTA = "agent.session.turn.output_text.delta"

TOOL_RESULT = "agent.session.input.tool_result"
APPROVAL_RESULT = "agent.session.input.mcp_approval_request_result"
# A tuple: an item type of the wrong type, nested where no boundary checked it, is not among them.
_OBSERVED_TOOL_ITEMS = ("mcp_call", "web_search_call", "command_execution")

Event = Mapping[str, Any]


def message(text: str) -> dict[str, Any]:
    """A user message that starts a turn."""
    content = [{"type": "input_text", "text": text}]
    return {
        "type": "agent.session.input.message",
        "input": [{"type": "message", "role": "user", "content": content}],
    }


def cancel() -> dict[str, Any]:
    """Cancel the session's active turn."""
    return {"type": "agent.session.input.cancel"}


def tool_result(use: ToolUse, result: ToolResult) -> dict[str, Any]:
    """The answer to one function call: its output, or (``is_error``) its error text."""
    event: dict[str, Any] = {
        "type": TOOL_RESULT,
        "turn_id": use.turn_id,
        "call_id": use.id,
        "success": not result.is_error,
    }
    if result.is_error:
        event["error"] = result.content or "the tool failed"
    elif result.blocks:
        event["output"] = [_content(block) for block in result.blocks if block != ""]
    else:
        event["output"] = result.content
    return event


def _content(block: object) -> dict[str, Any]:
    """A function output part: text, or an image as a data URL. The API takes no
    documents: a document's text (or a note that a PDF was left out) is sent instead."""
    if isinstance(block, str):
        return {"type": "input_text", "text": block}
    if isinstance(block, Image):
        data = base64.b64encode(block.data).decode("ascii")
        return {"type": "input_image", "image_url": f"data:{block.media_type};base64,{data}"}
    media_type = getattr(block, "media_type", "")
    if media_type == "text/plain":
        return {"type": "input_text", "text": getattr(block, "data", b"").decode("utf-8")}
    title = getattr(block, "title", None) or "untitled"
    return {"type": "input_text", "text": f"[a PDF document ({title}) was left out]"}


def approval_result(use: ToolUse, decision: Decision) -> dict[str, Any]:
    """The answer to an MCP approval request (a ``Deny`` message cannot be passed on)."""
    verdict = "approve" if isinstance(decision, Allow) else "deny"
    return {
        "type": APPROVAL_RESULT,
        "request_id": use.id,
        "response": {"type": "mcp_tool_call", "decision": verdict},
    }


def answered_id(event: Event) -> str:
    """The call (or approval request) an input answers."""
    if event.get("type") == APPROVAL_RESULT:
        return str(event.get("request_id"))
    return str(event.get("call_id"))


def usage_of(raw: object) -> Usage:
    """OpenAI counts cached input inside ``input_tokens``; ours keeps it apart."""
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("input_tokens_details")
    cached = count(details, "cached_tokens") if isinstance(details, Mapping) else 0
    return Usage(
        input_tokens=max(count(raw, "input_tokens") - cached, 0),
        output_tokens=count(raw, "output_tokens"),
        cache_read_input_tokens=cached,
    )


def required_uses(
    session: object, threads: Mapping[str, str | None]
) -> tuple[list[ToolUse], list[ToolUse]]:
    """The function calls and MCP approval requests a session waits for, from its
    ``required_actions``; ``threads`` maps a turn to the subagent that ran it."""
    actions = session.get("required_actions") if isinstance(session, Mapping) else None
    calls: list[ToolUse] = []
    asks: list[ToolUse] = []
    for action in actions if isinstance(actions, list) else ():
        if not isinstance(action, Mapping):
            continue
        kind = action.get("type")
        turn = action.get("turn_id")
        turn_id = turn if isinstance(turn, str) and len(turn) <= MAX_ID_CHARS else None
        named = action.get("call_id" if kind == "function_call" else "request_id")
        try:
            checked_id(named, f"a required {kind}'s id")
        except ValueError as exc:
            _log.warning("leaving out an action the session waits for: %s", exc)
            continue  # nothing could answer it: the turn ends as an unsupported action
        if kind == "function_call":
            calls.append(
                ToolUse(
                    str(action.get("call_id", "")),
                    str(action.get("name", "")),
                    call_arguments(action.get("arguments")),
                    session_thread_id=threads.get(turn_id or ""),
                    turn_id=turn_id,
                )
            )
        elif kind == "mcp_approval_request":
            request = action.get("request")
            request = request if isinstance(request, Mapping) else {}
            raw = request.get("arguments")
            server = request.get("server_label")
            asks.append(
                ToolUse(
                    str(action.get("request_id", "")),
                    str(request.get("name") or ""),
                    call_arguments(raw),
                    mcp_server=server if isinstance(server, str) else None,
                    turn_id=turn_id,
                )
            )
    return calls, asks


def assistant_text(item: object) -> str | None:
    """The text of an assistant message item (None for any other item)."""
    return _message_text(item, "assistant", "output_text")


def user_text(item: object) -> str | None:
    """The text of a user message item (None for any other item)."""
    return _message_text(item, "user", "input_text")


def _message_text(item: object, role: str, part_type: str) -> str | None:
    if not isinstance(item, Mapping) or item.get("type") != "message":
        return None
    if item.get("role", "assistant") != role:
        return None
    content = item.get("content")
    parts = content if isinstance(content, list) else []
    return "".join(
        str(part.get("text", ""))
        for part in parts
        if isinstance(part, Mapping) and part.get("type") == part_type
    )


def _answered(item: object) -> str | None:
    """The call (or request) an item answers, when it records an answer we gave: a
    function's output, a computer-use approval."""
    if not isinstance(item, Mapping):
        return None
    if item.get("type") == "function_call_output":
        return str(item.get("call_id"))
    if item.get("type") == "computer_use_approval_request_result":
        return str(item.get("request_id"))
    return None


def _asks(item: object) -> str | None:
    """The call (or request) an item makes, which an answer names."""
    if not isinstance(item, Mapping):
        return None
    if item.get("type") == "function_call":
        return str(item.get("call_id"))
    if item.get("type") == "browser_authentication_request":
        return str(item.get("request_id"))
    return None


def _observed(item: Mapping[str, Any]) -> ToolUse:
    """A tool the service ran itself (MCP, web search, a command), observed only."""
    server = item.get("server_label")
    return ToolUse(
        str(item.get("id", "")),
        str(item.get("name") or item.get("type") or ""),
        call_arguments(item.get("arguments")),
        mcp_server=server if isinstance(server, str) else None,
        turn_id=item.get("turn_id") if isinstance(item.get("turn_id"), str) else None,
    )


def normalize(
    batch: Sequence[Event], root_turns: set[str], threads: Mapping[str, str | None]
) -> TurnResult:
    """Fold the events of one of our turns - from the input's effect to a session
    boundary - into a :class:`TurnResult`. ``root_turns`` are the service turns of the root
    agent: only their messages are the agent's text (for a reattached session's whole
    service turn, those after the calls the batch answers), and how the last of them ended
    decides between ``end_turn`` and ``terminated`` at an idle.

    An answer is placed where the service's item order puts it - right after the calls it
    answers, before the step they resume - not where it arrived: a catch-up rebuilds an
    answer the stream never carried after messages of the step it resumed."""
    boundary = next(event for event in reversed(batch) if event.get("type") in BOUNDARIES)
    session = boundary.get("session")
    session = session if isinstance(session, Mapping) else {}
    texts: list[tuple[int, str]] = []
    asked_at: dict[str, int] = {}
    answered: set[str] = set()
    usage = Usage()
    observed: list[ToolUse] = []
    ended: tuple[str, Any] | None = None
    for position, event in enumerate(batch):
        kind = event.get("type")
        item = event.get("item")
        if kind in (ITEM_ADDED, ITEM_DONE):
            asked = _asks(item)
            if asked is not None:
                asked_at.setdefault(asked, position)
            answer = _answered(item)
            if answer is not None:
                answered.add(answer)
        if kind == ITEM_DONE:
            text = assistant_text(item)
            if text and event.get("turn_id") in root_turns:
                texts.append((position, text))
            elif isinstance(item, Mapping) and item.get("type") in _OBSERVED_TOOL_ITEMS:
                observed.append(_observed(item))
        elif kind in TURN_ENDS:
            usage = usage + usage_of(event.get("usage"))
            if event.get("turn_id") in root_turns:
                turn = event.get("turn")
                error = turn.get("error") if isinstance(turn, Mapping) else None
                ended = (TURN_ENDS[str(kind)], error)
    # What the agent wrote before the calls the batch answers belongs to an earlier turn.
    resumed = max((asked_at.get(call, -1) for call in answered), default=-1)
    terminal, stop_reason = _terminal(str(boundary.get("type")), session, ended)
    calls, asks = required_uses(session, threads) if terminal == "requires_action" else ([], [])
    return TurnResult(
        terminal,
        text="\n".join(text for position, text in texts if position > resumed),
        tool_uses=tuple(calls),
        server_tool_uses=tuple(observed),
        usage=usage,
        stop_reason=stop_reason,
        events=tuple(batch),
        confirmations=tuple(asks),
    )


def _terminal(
    kind: str, session: Mapping[str, Any], ended: tuple[str, Any] | None
) -> tuple[Terminal, Any]:
    if kind == REQUIRES_ACTION:
        return "requires_action", {"type": "requires_action"}
    if kind == FAILED:
        return "terminated", {"type": "session_failed", "error": session.get("error")}
    if kind == BUDGET_REACHED:
        spend = session.get("spend_control")
        return "terminated", {"type": "budget_reached", "spend_control": spend}
    if ended is not None and ended[0] == "failed":
        return "terminated", {"type": "turn_failed", "error": ended[1]}
    if ended is not None and ended[0] == "cancelled":
        return "terminated", {"type": "turn_cancelled"}
    return "end_turn", {"type": "end_turn"}
