"""The shapes of the events a scripted turn logs: tool uses and their results, span usage and
text content."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from req_managed_agents.testing._script import ToolCall

# The ``evaluation`` of a server tool use, by its evaluated permission.
_EVALUATIONS: dict[str, dict[str, Any]] = {
    "allow": {"type": "always_allow"},
    "ask": {"type": "always_ask"},
    "deny": {"type": "auto", "evaluated_permission": {"type": "deny", "reason_code": "high_risk"}},
}


def _tool_use(call: ToolCall) -> dict[str, Any]:
    """The event of a server tool call: an MCP tool's, or a built-in tool's."""
    fields = {
        "name": call.name,
        "input": dict(call.input),
        "evaluated_permission": call.permission,
        "evaluation": copy.deepcopy(_EVALUATIONS[call.permission]),
    }
    if call.mcp_server is not None:
        return {"type": "agent.mcp_tool_use", "mcp_server_name": call.mcp_server, **fields}
    return {"type": "agent.tool_use", **fields}


def _tool_result(call: ToolCall, use_id: str, text: str, *, is_error: bool) -> dict[str, Any]:
    fields = {"content": [{"type": "text", "text": text}], "is_error": is_error}
    if call.mcp_server is not None:
        return {"type": "agent.mcp_tool_result", "mcp_tool_use_id": use_id, **fields}
    return {"type": "agent.tool_result", "tool_use_id": use_id, **fields}


def _denial(call: ToolCall, use_id: str, message: str | None = None) -> dict[str, Any]:
    """The error result of a refused call, with the client's reason when it gave one."""
    text = f"Permission to use {call.name} has been denied."
    return _tool_result(call, use_id, f"{text} {message}" if message else text, is_error=True)


def _span_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def _texts(texts: Sequence[str]) -> list[dict[str, str]]:
    return [{"type": "text", "text": "\n".join(texts)}]
