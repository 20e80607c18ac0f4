"""Claude Managed Agents events: the ones we send, and how a turn's events fold into a
:class:`~req_managed_agents.model.TurnResult`. Pure functions, no I/O.

A turn ends at ``session.status_idle``, ``session.status_terminated``, ``session.deleted`` or
a ``session.error`` the server has stopped retrying (an error whose ``retry_status`` is
``retrying`` is followed by more work, so it does not end the turn). Unknown event types are
never dropped: they ride along in ``TurnResult.events``.

A ``requires_action`` idle names the events it waits on: custom tool uses (answered with
results) and provider tool uses whose ``evaluated_permission`` is ``ask`` (answered with
confirmations). In a turn working toward an outcome, a ``needs_revision`` evaluation rejects
the draft before it: the turn's text is what the agent wrote after the last one.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from req_managed_agents.model._vocabulary import (
    Allow,
    ContentBlock,
    Decision,
    Elicitation,
    ElicitationAnswer,
    Image,
    Outcome,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.providers._base import count

__all__ = [
    "OUTCOME_SETTLED",
    "asks_permission",
    "custom_tool_result",
    "define_outcome",
    "elicitation_of",
    "elicitation_response",
    "interrupt",
    "is_boundary",
    "normalize",
    "sandbox_tool_result",
    "text_of",
    "tool_confirmation",
    "tool_use_of",
    "unanswered_tool_uses",
    "user_message",
]

Event = Mapping[str, Any]

CUSTOM_TOOL_USE = "agent.custom_tool_use"
CUSTOM_TOOL_RESULT = "user.custom_tool_result"
TOOL_CONFIRMATION = "user.tool_confirmation"
MCP_ELICITATION = "agent.mcp_elicitation"  # Claude on Bedrock
ELICITATION_RESPONSE = "user.mcp_elicitation_response"
DEFINE_OUTCOME = "user.define_outcome"
OUTCOME_EVALUATION_END = "span.outcome_evaluation_end"
SANDBOX_TOOL_USE = "agent.tool_use"
SANDBOX_TOOL_RESULT = "user.tool_result"
SERVER_TOOL_USES = frozenset({SANDBOX_TOOL_USE, "agent.mcp_tool_use"})
# Evaluation results after which no more grading follows for that outcome (a tuple: a result
# of the wrong type, a list say, is simply not among them).
OUTCOME_SETTLED = ("satisfied", "failed", "max_iterations_reached", "interrupted")
_ENDING_TYPES = frozenset(
    {"session.status_idle", "session.status_terminated", "session.deleted", "session.error"}
)


def user_message(text: str) -> dict[str, Any]:
    """A ``user.message`` with one text block."""
    return {"type": "user.message", "content": [{"type": "text", "text": text}]}


def custom_tool_result(result: ToolResult) -> dict[str, Any]:
    """The answer to one ``agent.custom_tool_use`` (an empty text is sent as no content:
    empty text blocks are not accepted). It names no thread, not even a subagent's: the
    params declare no such field, and the service routes the answer by its tool use id
    (the echo names the thread it went to)."""
    return {
        "type": CUSTOM_TOOL_RESULT,
        "custom_tool_use_id": result.tool_use_id,
        "is_error": result.is_error,
        **_result_content(result),
    }


def sandbox_tool_result(result: ToolResult) -> dict[str, Any]:
    """The answer to a built-in tool's ``agent.tool_use`` that the sandbox - here, in a
    self-hosted environment - ran."""
    return {
        "type": SANDBOX_TOOL_RESULT,
        "tool_use_id": result.tool_use_id,
        "is_error": result.is_error,
        **_result_content(result),
    }


def _result_content(result: ToolResult) -> dict[str, Any]:
    """A result's ``content`` (none for an empty text: empty text blocks are refused)."""
    if result.blocks:
        return {"content": [_content_block(block) for block in result.blocks if block != ""]}
    if result.content:
        return {"content": [{"type": "text", "text": result.content}]}
    return {}


def _content_block(block: ContentBlock) -> dict[str, Any]:
    """A tool-result content block in the Claude API's shape."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, Image):
        source = {"type": "base64", "media_type": block.media_type, "data": _base64(block.data)}
        return {"type": "image", "source": source}
    if block.media_type == "text/plain":
        source = {"type": "text", "media_type": "text/plain", "data": block.data.decode()}
    else:
        source = {"type": "base64", "media_type": block.media_type, "data": _base64(block.data)}
    document: dict[str, Any] = {"type": "document", "source": source}
    if block.title:
        document["title"] = block.title
    return document


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def elicitation_response(elicitation_id: str, answer: ElicitationAnswer) -> dict[str, Any]:
    """Answer an ``agent.mcp_elicitation`` (Claude on Bedrock)."""
    return {
        "type": ELICITATION_RESPONSE,
        "mcp_elicitation_id": elicitation_id,
        "response": {"type": answer.type},
    }


def elicitation_of(event: Event) -> Elicitation:
    """An ``agent.mcp_elicitation`` event as an :class:`Elicitation`."""
    request = event.get("request")
    request = request if isinstance(request, Mapping) else {}
    url = request.get("url")
    message = request.get("message")
    thread = event.get("session_thread_id")
    return Elicitation(
        str(event.get("id")),
        str(event.get("mcp_server_name") or ""),
        str(event.get("mcp_tool_use_id") or ""),
        url if isinstance(url, str) else None,
        message if isinstance(message, str) else "",
        thread if isinstance(thread, str) else None,
    )


def tool_confirmation(tool_use_id: str, decision: Decision) -> dict[str, Any]:
    """Allow or deny a provider tool use that waits for permission."""
    event: dict[str, Any] = {"type": TOOL_CONFIRMATION, "tool_use_id": tool_use_id}
    if isinstance(decision, Allow):
        event["result"] = "allow"
    else:
        event["result"] = "deny"
        if decision.message:
            event["deny_message"] = decision.message
    return event


def define_outcome(outcome: Outcome) -> dict[str, Any]:
    """The ``user.define_outcome`` event for ``outcome`` (a text rubric as a text object)."""
    rubric = outcome.rubric
    event: dict[str, Any] = {
        "type": DEFINE_OUTCOME,
        "description": outcome.description,
        "rubric": {"type": "text", "content": rubric} if isinstance(rubric, str) else dict(rubric),
    }
    if outcome.max_iterations is not None:
        event["max_iterations"] = outcome.max_iterations
    return event


def asks_permission(event: Event) -> bool:
    """Whether ``event`` is a provider tool use waiting for a confirmation."""
    return event.get("type") in SERVER_TOOL_USES and event.get("evaluated_permission") == "ask"


def interrupt() -> dict[str, Any]:
    """Ask the server to stop the running turn (it then idles with ``end_turn``)."""
    return {"type": "user.interrupt"}


def is_boundary(event: Event) -> bool:
    """Whether ``event`` ends the current turn."""
    kind = event.get("type")
    if kind not in _ENDING_TYPES:
        return False
    if kind == "session.error":
        error = event.get("error")
        retry = error.get("retry_status") if isinstance(error, Mapping) else None
        return not (isinstance(retry, Mapping) and retry.get("type") == "retrying")
    return True


def tool_use_of(event: Event) -> ToolUse:
    """The :class:`ToolUse` described by a tool-use event (non-object input becomes ``{}``)."""
    tool_input = event.get("input")
    server = event.get("mcp_server_name")
    thread = event.get("session_thread_id")
    return ToolUse(
        str(event.get("id", "")),
        str(event.get("name", "")),
        dict(tool_input) if isinstance(tool_input, Mapping) else {},
        mcp_server=server if isinstance(server, str) else None,
        session_thread_id=thread if isinstance(thread, str) and thread else None,
    )


def _terminal(boundary: Event | None) -> tuple[Terminal, Any]:
    if boundary is None:
        return "terminated", None
    kind = boundary.get("type")
    if kind == "session.status_idle":
        stop_reason = boundary.get("stop_reason")
        reason_type = stop_reason.get("type") if isinstance(stop_reason, Mapping) else None
        if reason_type == "end_turn":
            return "end_turn", stop_reason
        if reason_type == "requires_action":
            return "requires_action", stop_reason
        return "terminated", stop_reason
    if kind == "session.error":
        return "terminated", boundary.get("error")
    return "terminated", boundary.get("stop_reason", {"type": kind})


def text_of(event: Event) -> str:
    """The text of an event's ``content``: its text blocks, joined."""
    content = event.get("content")
    if not isinstance(content, list):
        return ""
    texts = []
    for block in content:
        # A parsed block is a dict: the exact test spares the abstract Mapping check.
        if type(block) is dict or isinstance(block, Mapping):
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _usage(event: Event) -> Usage:
    raw = event.get("model_usage")
    if not isinstance(raw, Mapping):
        raw = event.get("usage")
    if not isinstance(raw, Mapping):
        return Usage()
    return Usage(
        count(raw, "input_tokens"),
        count(raw, "output_tokens"),
        count(raw, "cache_creation_input_tokens"),
        count(raw, "cache_read_input_tokens"),
    )


def normalize(
    batch: Sequence[Event],
    known_tool_uses: Mapping[str, ToolUse],
    known_asks: Mapping[str, ToolUse] | None = None,
    known_elicitations: Mapping[str, Elicitation] | None = None,
    known_sandbox: Mapping[str, ToolUse] | None = None,
) -> TurnResult:
    """Fold one turn's events into a :class:`TurnResult`.

    The latest boundary decides the terminal. For ``requires_action`` the events named by
    ``stop_reason.event_ids`` are looked up in this batch first, then in ``known_tool_uses``
    (every custom tool use seen earlier in the session), ``known_asks`` (provider tool
    uses waiting for permission), ``known_elicitations`` and ``known_sandbox`` (built-in
    tool uses), because an idle may point at an event delivered in an earlier batch. A
    built-in ``agent.tool_use`` the idle waits on without asking permission is the sandbox's
    call to run here (a self-hosted environment): it joins ``tool_uses``, answered with a
    ``user.tool_result``.
    """
    boundary = next((event for event in reversed(batch) if is_boundary(event)), None)
    terminal, stop_reason = _terminal(boundary)
    texts: list[str] = []
    usage = Usage()
    server_tool_uses: list[ToolUse] = []
    batch_tool_uses: dict[str, ToolUse] = {}
    batch_asks: dict[str, ToolUse] = {}
    batch_sandbox: dict[str, ToolUse] = {}
    batch_elicitations: dict[str, Elicitation] = {}
    outcome: Mapping[str, Any] | None = None
    for event in batch:
        kind = event.get("type")
        if kind == "agent.message":
            text = text_of(event)
            if text:
                texts.append(text)
        elif kind == "span.model_request_end":
            usage = usage + _usage(event)
        elif kind == CUSTOM_TOOL_USE:
            tool_use = tool_use_of(event)
            batch_tool_uses[tool_use.id] = tool_use
        elif kind in SERVER_TOOL_USES:
            tool_use = tool_use_of(event)
            server_tool_uses.append(tool_use)
            if asks_permission(event):
                batch_asks[tool_use.id] = tool_use
            elif kind == SANDBOX_TOOL_USE:
                batch_sandbox[tool_use.id] = tool_use
        elif kind == MCP_ELICITATION:
            elicitation = elicitation_of(event)
            batch_elicitations[elicitation.id] = elicitation
        elif kind == OUTCOME_EVALUATION_END:
            outcome = event
            if event.get("result") == "needs_revision":
                texts = []  # a rejected draft is not the answer
    tool_uses: list[ToolUse] = []
    confirmations: list[ToolUse] = []
    elicitations: list[Elicitation] = []
    if terminal == "requires_action" and isinstance(stop_reason, Mapping):
        event_ids = stop_reason.get("event_ids")
        for event_id in event_ids if isinstance(event_ids, list) else []:
            if not isinstance(event_id, str):
                continue  # names no event
            found = batch_tool_uses.get(event_id) or known_tool_uses.get(event_id)
            if found is not None and found not in tool_uses:
                tool_uses.append(found)
                continue
            ask = batch_asks.get(event_id) or (known_asks or {}).get(event_id)
            if ask is not None and ask not in confirmations:
                confirmations.append(ask)
                continue
            asked = batch_elicitations.get(event_id) or (known_elicitations or {}).get(event_id)
            if asked is not None and asked not in elicitations:
                elicitations.append(asked)
                continue
            local = batch_sandbox.get(event_id) or (known_sandbox or {}).get(event_id)
            if local is not None and local not in tool_uses:
                tool_uses.append(local)
        server_tool_uses = [use for use in server_tool_uses if use not in tool_uses]
    return TurnResult(
        terminal=terminal,
        text="\n".join(texts),
        tool_uses=tuple(tool_uses),
        server_tool_uses=tuple(server_tool_uses),
        usage=usage,
        stop_reason=stop_reason,
        events=tuple(batch),
        confirmations=tuple(confirmations),
        outcome=outcome,
        elicitations=tuple(elicitations),
    )


def unanswered_tool_uses(events: Iterable[Event]) -> list[ToolUse]:
    """Custom tool uses in ``events`` that no ``user.custom_tool_result`` answers, in order."""
    uses: dict[str, ToolUse] = {}
    answered: set[str] = set()
    for event in events:
        kind = event.get("type")
        if kind == CUSTOM_TOOL_USE:
            tool_use = tool_use_of(event)
            uses.setdefault(tool_use.id, tool_use)
        elif kind == CUSTOM_TOOL_RESULT:
            answered.add(str(event.get("custom_tool_use_id")))
    return [tool_use for tool_use_id, tool_use in uses.items() if tool_use_id not in answered]
