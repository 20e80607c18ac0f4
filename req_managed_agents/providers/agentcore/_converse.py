"""Bedrock AgentCore Harness turns in Converse shape: frames in, ``TurnResult`` out, and the
messages that resume a turn. Pure functions, no I/O.

Each event-stream frame names its Converse member in the ``:event-type`` header and carries
that member's JSON unwrapped; :func:`envelope` rebuilds ``{"contentBlockDelta": {...}}`` so
raw events read the same as in the Converse API. Frames whose ``:message-type`` is
``exception`` or ``error`` are failures, checked before the event type.

Only ``text`` deltas are the agent's text: ``reasoningContent``, ``toolResult`` and
``toolResultMetadata`` deltas are kept in the events, never shown as what the agent said.
``hookEvent`` frames become the turn's :class:`~req_managed_agents.HookEvent` list.

Tool blocks are keyed by ``toolUseId``, and input deltas go to the block currently open at
their ``contentBlockIndex``: the live service has reused one index for two tools, which an
index-keyed fold turns into one merged tool and a rejected resume ("duplicate Ids").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ProviderStreamError, StreamError
from req_managed_agents.eventstream import EventStreamMessage
from req_managed_agents.model._vocabulary import (
    Document,
    HookEvent,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.providers._base import count
from req_managed_agents.transport._json import checked_id, excerpt, loads

__all__ = [
    "ConverseFold",
    "envelope",
    "inline_function",
    "resume_messages",
    "terminal_of",
    "user_message",
]

_log = get_logger(__name__)

_END_TURN = frozenset({"end_turn", "stop_sequence"})
# Tool kinds the harness runs itself: observed, never handed to local code.
_SERVER_TOOL_KINDS = frozenset({"server_tool_use", "mcp_tool_use"})
# How much of an exception frame's message an error quotes.
_MESSAGE_CHARS = 2000
# A toolResult text block must not be empty (the API's minimum length is 1).
EMPTY_RESULT_TEXT = "(no output)"

Envelope = dict[str, Any]


def envelope(message: EventStreamMessage) -> Envelope:
    """The Converse event a frame carries; raises :class:`ProviderStreamError` for
    exception and error frames (the provider's final word on this request)."""
    headers = message.headers
    kind = headers.get(":message-type")
    if kind == "exception":
        exception_type = str(headers.get(":exception-type") or "exception")
        raise ProviderStreamError(exception_type, _exception_message(message.payload))
    if kind == "error":
        code = str(headers.get(":error-code") or "error")
        raise ProviderStreamError(code, str(headers.get(":error-message") or ""))
    payload = _decode_payload(message.payload)
    event_type = headers.get(":event-type")
    if isinstance(event_type, str) and event_type:
        return {event_type: payload}
    return payload if isinstance(payload, dict) else {"payload": payload}


def _decode_payload(payload: bytes) -> Any:
    if not payload:
        return {}
    try:
        return loads(payload, cut_deep=True)
    except ValueError:
        return {"raw": payload.decode("utf-8", "replace")}


def _exception_message(payload: bytes) -> str:
    """The message of an exception frame, no longer than an error should quote."""
    decoded = _decode_payload(payload)
    if isinstance(decoded, dict):
        message = decoded.get("message") or decoded.get("Message")
        if isinstance(message, str):
            return excerpt(message, _MESSAGE_CHARS)
        return excerpt(json.dumps(decoded), _MESSAGE_CHARS)
    return excerpt(str(decoded), _MESSAGE_CHARS)


def terminal_of(stop_reason: str | None) -> Terminal:
    """``end_turn``/``stop_sequence`` end the turn, ``tool_use`` asks for tools, all else
    (``max_tokens``, ``timeout_exceeded``, ...) terminates; the raw reason is kept."""
    if stop_reason in _END_TURN:
        return "end_turn"
    if stop_reason == "tool_use":
        return "requires_action"
    return "terminated"


class ConverseFold:
    """Accumulates one invocation's Converse events."""

    def __init__(self) -> None:
        self.text: list[str] = []
        # The pieces of each text block so far, by contentBlockIndex (joined when read).
        self.text_blocks: dict[int, list[str]] = {}
        self.stop_reason: str | None = None
        self.usage = Usage()
        self._inputs: dict[str, list[str]] = {}
        self._names: dict[str, str] = {}
        self._kinds: dict[str, str] = {}
        self._active: dict[int, str] = {}
        self.hook_events: list[HookEvent] = []

    def add(self, event: Mapping[str, Any]) -> None:
        for name, body in event.items():
            if isinstance(body, Mapping):
                self._add(name, body)

    def _add(self, name: str, body: Mapping[str, Any]) -> None:
        if name == "contentBlockStart":
            start = body.get("start")
            tool = start.get("toolUse") if isinstance(start, Mapping) else None
            if isinstance(tool, Mapping):
                try:
                    tool_use_id = checked_id(tool.get("toolUseId"), "toolUse.toolUseId")
                except ValueError as exc:
                    raise StreamError(f"a tool use the harness began is unusable: {exc}") from None
                self._names[tool_use_id] = str(tool.get("name", ""))
                self._kinds[tool_use_id] = str(tool.get("type") or "tool_use")
                self._inputs[tool_use_id] = []  # a reopened id keeps its first position
                self._active[_index(body)] = tool_use_id
        elif name == "contentBlockDelta":
            delta = body.get("delta")
            if not isinstance(delta, Mapping):
                return
            if isinstance(delta.get("text"), str):
                self.text.append(delta["text"])
                index = _index(body)
                self.text_blocks.setdefault(index, []).append(delta["text"])
            tool_delta = delta.get("toolUse")
            if isinstance(tool_delta, Mapping) and isinstance(tool_delta.get("input"), str):
                active = self._active.get(_index(body))
                if active is not None:
                    self._inputs[active].append(tool_delta["input"])
        elif name == "contentBlockStop":
            self._active.pop(_index(body), None)
        elif name == "messageStop":
            reason = body.get("stopReason")
            self.stop_reason = str(reason) if reason is not None else None
        elif name == "metadata":
            self.usage = _usage(body.get("usage"))
        elif name == "hookEvent":
            self.hook_events.append(_hook_event(body))

    def block_text(self, index: int) -> str:
        """The text of content block ``index`` so far (``""`` for none)."""
        return "".join(self.text_blocks.get(index, ()))

    def tool_uses(self) -> tuple[list[ToolUse], list[ToolUse]]:
        """``(custom, server)`` tool uses, in first-seen order."""
        custom: list[ToolUse] = []
        server: list[ToolUse] = []
        for tool_use_id, fragments in self._inputs.items():
            tool_use = ToolUse(tool_use_id, self._names[tool_use_id], _input(fragments))
            (server if self._kinds[tool_use_id] in _SERVER_TOOL_KINDS else custom).append(tool_use)
        return custom, server

    def result(self, events: Sequence[Mapping[str, Any]]) -> TurnResult:
        terminal = terminal_of(self.stop_reason)
        custom, server = self.tool_uses()
        return TurnResult(
            terminal=terminal,
            text="".join(self.text),
            tool_uses=tuple(custom) if terminal == "requires_action" else (),
            server_tool_uses=tuple(server),
            usage=self.usage,
            stop_reason=self.stop_reason,
            events=tuple(events),
            hook_events=tuple(self.hook_events),
        )


def _hook_event(body: Mapping[str, Any]) -> HookEvent:
    def text(key: str) -> str | None:
        value = body.get(key)
        return value if isinstance(value, str) else None

    return HookEvent(
        text("hookEventId") or "",
        text("name") or "",
        text("type") or "",
        text("decision"),
        text("reason"),
    )


def _index(body: Mapping[str, Any]) -> int:
    index = body.get("contentBlockIndex")
    return index if isinstance(index, int) else -1


def _input(fragments: list[str]) -> dict[str, Any]:
    raw = "".join(fragments)
    if not raw.strip():
        return {}
    try:
        decoded = loads(raw, cut_deep=True)
    except ValueError as exc:
        _log.warning("a tool use carried input that is not JSON (%s); passing {} to the tool", exc)
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    return Usage(
        count(raw, "inputTokens"),
        count(raw, "outputTokens"),
        count(raw, "cacheWriteInputTokens"),
        count(raw, "cacheReadInputTokens"),
    )


def user_message(text: str) -> dict[str, Any]:
    """The user message that starts a turn."""
    return {"role": "user", "content": [{"text": text}]}


def resume_messages(
    tool_uses: Sequence[ToolUse], results: Sequence[ToolResult]
) -> list[dict[str, Any]]:
    """The two messages that answer a ``tool_use`` turn.

    The harness does not keep the model's streamed tool-use message, so the assistant message
    echoing every ``toolUse`` must precede the user message with the ``toolResult``s; results
    alone are rejected.
    """
    by_id = {result.tool_use_id: result for result in results}
    assistant = [
        {"toolUse": {"toolUseId": use.id, "name": use.name, "input": dict(use.input)}}
        for use in tool_uses
    ]
    user = []
    for use in tool_uses:
        result = by_id[use.id]
        user.append(
            {
                "toolResult": {
                    "toolUseId": use.id,
                    "content": _result_content(result),
                    "status": "error" if result.is_error else "success",
                }
            }
        )
    return [{"role": "assistant", "content": assistant}, {"role": "user", "content": user}]


def _result_content(result: ToolResult) -> list[dict[str, Any]]:
    """A result as harness ``toolResult`` content, which carries text (and JSON) only: a
    text document goes as its text, an image or a PDF as a note saying it was left out."""
    if not result.blocks:
        return [{"text": result.content or EMPTY_RESULT_TEXT}]
    content: list[dict[str, Any]] = []
    for block in result.blocks:
        if isinstance(block, str):
            text = block
        elif isinstance(block, Document) and block.media_type == "text/plain":
            text = block.data.decode()
        else:
            _log.warning(
                "AgentCore tool results carry text only: a %s was left out", block.media_type
            )
            size = len(block.data)
            text = f"[{block.media_type}, {size} bytes, not sent: this runtime takes text only]"
        if text:
            content.append({"text": text})
    return content or [{"text": EMPTY_RESULT_TEXT}]


def inline_function(declaration: Mapping[str, Any]) -> dict[str, Any]:
    """A provider-neutral tool declaration as a return-of-control ``inline_function`` tool."""
    return {
        "type": "inline_function",
        "name": declaration["name"],
        "config": {
            "inlineFunction": {
                "description": declaration["description"],
                "inputSchema": declaration["input_schema"],
            }
        },
    }
