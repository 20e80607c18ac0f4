"""Converse turns for the AgentCore emulator: the script, a turn's stream, conversation rules.

A harness plays :class:`ConverseTurn` objects, one per invocation. A turn goes out as
ConverseStream events (``messageStart``, text and tool-use content blocks in a few deltas
each, ``messageStop``, ``metadata``), see :func:`_turn_events`. Before a turn plays, the
invocation's messages must be a conversation the provider accepts, and a tool-result
message must follow the assistant's echoed ``toolUse`` blocks, see
:func:`_conversation_input`; what it rejects comes back as a ``runtimeClientError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import ToolCall, text_pieces

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

_TEXT_PIECES = 3  # deltas a text or a tool input is split into (fewer when it is shorter)
_MODEL_REJECTED = "Received a model error: ValidationException: "


@dataclass(frozen=True)
class ConverseTurn:
    """One scripted harness turn, played by the next invocation of a conversation.

    ``text`` may be a function of the texts that triggered the turn: the user message's text,
    or each tool result's text in call order. ``tool_calls`` are handed back to the client
    (return of control), except calls of a deployed built-in or MCP tool: the harness runs
    those itself and streams each :class:`ToolCall`'s ``result``. ``usage`` is
    ``(input_tokens, output_tokens)``. ``stop_reason`` overrides the ending (default
    ``tool_use`` with calls handed back, else ``end_turn``).
    ``reuse_block_index`` gives every tool block the same ``contentBlockIndex``, as the live
    service once did. ``delay`` is the pause, in seconds, before each frame: a slow turn
    keeps its connection busy rather than silent.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    stop_reason: str | None = None
    reuse_block_index: bool = False
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        calls = tuple(self.tool_calls)
        for tool_call in calls:
            json.dumps(dict(tool_call.input))  # a non-JSON input fails here, not mid-stream
        object.__setattr__(self, "tool_calls", calls)


_SCRIPT_FINISHED = ConverseTurn(text="(script finished)")


@dataclass(frozen=True)
class _ToolUse:
    """A tool call of a played turn. ``kind`` is ``tool_use`` for a call handed back to the
    client, ``server_tool_use`` or ``mcp_tool_use`` for one the harness runs itself (a
    deployed built-in or MCP tool), whose ``result`` it streams."""

    id: str
    name: str
    input: dict[str, Any]
    kind: str = "tool_use"
    result: str = ""

    @property
    def handed_back(self) -> bool:
        return self.kind == "tool_use"


def _turn_events(
    turn: ConverseTurn, text: str, uses: Sequence[_ToolUse]
) -> list[tuple[str, dict[str, Any]]]:
    """The (event type, payload) pairs of one turn, in stream order: the text, every tool
    call, then the results of those the harness ran itself."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    first_tool_block = 0
    if text:
        for piece in text_pieces(text, _TEXT_PIECES):
            events.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}}))
        events.append(("contentBlockStop", {"contentBlockIndex": 0}))
        first_tool_block = 1
    for number, use in enumerate(uses):
        index = first_tool_block + (0 if turn.reuse_block_index else number)
        tool: dict[str, Any] = {"toolUseId": use.id, "name": use.name}
        if not use.handed_back:
            tool["type"] = use.kind
        start = {"toolUse": tool}
        events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        for piece in text_pieces(json.dumps(use.input, separators=(",", ":")), _TEXT_PIECES):
            delta = {"toolUse": {"input": piece}}
            events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    index = first_tool_block + len(uses)
    for use in uses:
        if use.handed_back:
            continue
        start = {"toolResult": {"toolUseId": use.id, "status": "success"}}
        result = [{"text": use.result or "(no output)"}]
        events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        events.append(
            ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolResult": result}})
        )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    handed_back = any(use.handed_back for use in uses)
    stop_reason = turn.stop_reason or ("tool_use" if handed_back else "end_turn")
    events.append(("messageStop", {"stopReason": stop_reason}))
    input_tokens, output_tokens = turn.usage
    usage = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }
    events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 0}}))
    return events


# --- conversations --------------------------------------------------------------------------


class _Rejected(Exception):
    """A conversation the model provider refuses; answered as a runtimeClientError frame."""


def _blocks(message: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [block[kind] for block in message["content"] if kind in block]


def _text_of(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The text a scripted turn receives for a message's or a tool result's content."""
    texts = [
        b["text"] if "text" in b else json.dumps(b["json"])
        for b in blocks
        if "text" in b or "json" in b
    ]
    return "\n".join(texts)


def _conversation_input(
    messages: Sequence[Mapping[str, Any]], pending: Sequence[_ToolUse]
) -> list[str]:
    """The texts that trigger the next turn; raises _Rejected as the provider would."""
    for number, message in enumerate(messages):
        for kind in ("toolUse", "toolResult"):
            ids = [block["toolUseId"] for block in _blocks(message, kind)]
            if len(set(ids)) != len(ids):
                raise _Rejected(
                    f"{_MODEL_REJECTED}The {kind} blocks contain duplicate Ids at "
                    f"messages.{number}.content."
                )
    for number, message in enumerate(messages):
        results = _blocks(message, "toolResult")
        if not results:
            continue
        previous = messages[number - 1] if number else None
        uses = _blocks(previous, "toolUse") if previous and previous["role"] == "assistant" else []
        if len(results) > len(uses):
            raise _Rejected(
                f"{_MODEL_REJECTED}The number of toolResult blocks at messages.{number}.content "
                "exceeds the number of toolUse blocks of previous turn."
            )
        missing = sorted({u["toolUseId"] for u in uses} - {r["toolUseId"] for r in results})
        if missing:
            raise _Rejected(
                f"{_MODEL_REJECTED}Expected toolResult blocks at messages.{number}.content "
                f"for the following Ids: {', '.join(missing)}"
            )
    last = len(messages) - 1
    if messages[last]["role"] != "user":
        raise _Rejected(
            f"{_MODEL_REJECTED}The final message at messages.{last} must be a user turn."
        )
    answers = {r["toolUseId"]: r for r in _blocks(messages[last], "toolResult")}
    if not answers:
        return [_text_of(messages[last]["content"])]
    echoed = {u["toolUseId"]: u for u in _blocks(messages[last - 1], "toolUse")}
    expected = {use.id: use for use in pending}
    if echoed.keys() != expected.keys() or any(
        echoed[i]["name"] != use.name or echoed[i]["input"] != use.input
        for i, use in expected.items()
    ):
        calls = ", ".join(f"{use.name} {use.id}" for use in pending) or "none"
        raise _Rejected(
            f"{_MODEL_REJECTED}The toolUse blocks at messages.{last - 1}.content do not repeat "
            f"the tool calls of the previous turn (expected: {calls})."
        )
    return [_text_of(answers[use.id]["content"]) for use in pending]
