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
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import ToolCall, text_pieces

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

_TEXT_PIECES = 3  # deltas a text or a tool input is split into (fewer when it is shorter)
_HOOK_TYPES = ("before_tool_call", "after_tool_call", "before_invocation", "after_invocation")
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

    What else the live stream carries: ``reasoning`` streams as ``reasoningContent`` deltas
    in a block of its own before the text; ``hook_events`` (mappings with ``name``, ``type``
    and optionally ``decision`` and ``reason``) go out as ``hookEvent`` frames at the start of
    the turn, each given a ``hookEventId`` (a denying hook usually comes with
    ``stop_reason="hook_stopped"``); ``cache_tokens`` is ``(read, write)`` cache usage,
    reported in ``metadata`` when not zero.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    stop_reason: str | None = None
    reuse_block_index: bool = False
    delay: float = 0.0
    reasoning: str = ""
    hook_events: Sequence[Mapping[str, str]] = ()
    cache_tokens: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        hooks = tuple(dict(hook) for hook in self.hook_events)
        for hook in hooks:
            if not hook.get("name") or hook.get("type") not in _HOOK_TYPES:
                raise ValueError(f"a hook event needs a name and a type of {_HOOK_TYPES}: {hook}")
            if hook.get("decision") not in (None, "allow", "deny"):
                raise ValueError(
                    f"a hook's decision is 'allow' or 'deny', not {hook['decision']!r}"
                )
            if set(hook) - {"name", "type", "decision", "reason"}:
                raise ValueError(f"a hook event has name, type, decision and reason: {hook}")
        object.__setattr__(self, "hook_events", hooks)
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
    for hook in turn.hook_events:
        events.append(("hookEvent", {"hookEventId": f"hook-{secrets.token_hex(8)}", **hook}))
    block = 0
    if turn.reasoning:
        for piece in text_pieces(turn.reasoning, _TEXT_PIECES):
            delta = {"reasoningContent": {"text": piece}}
            events.append(("contentBlockDelta", {"contentBlockIndex": block, "delta": delta}))
        signed = {"reasoningContent": {"signature": "emulated-signature"}}
        events.append(("contentBlockDelta", {"contentBlockIndex": block, "delta": signed}))
        events.append(("contentBlockStop", {"contentBlockIndex": block}))
        block += 1
    if text:
        for piece in text_pieces(text, _TEXT_PIECES):
            text_delta = {"text": piece}
            events.append(("contentBlockDelta", {"contentBlockIndex": block, "delta": text_delta}))
        events.append(("contentBlockStop", {"contentBlockIndex": block}))
        block += 1
    first_tool_block = block
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
        result_deltas: list[dict[str, Any]] = [
            {"toolResult": result},
            {"toolResultMetadata": {"metadata": "{}"}},
        ]
        for result_delta in result_deltas:
            payload = {"contentBlockIndex": index, "delta": result_delta}
            events.append(("contentBlockDelta", payload))
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
    cache_read, cache_write = turn.cache_tokens
    if cache_read:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write:
        usage["cacheWriteInputTokens"] = cache_write
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
