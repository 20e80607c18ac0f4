"""The items of a session (``AgentSessionItem``), as the emulator makes them.

User messages, assistant messages (``phase`` ``commentary`` when the step also makes calls,
``final_answer`` otherwise), function calls (``arguments`` a JSON string, as the Responses
API writes them; the SDK takes a string or an object), their outputs, MCP calls, and a
subagent's creation and its report to the root agent. Each gets an id of its own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing.openai._model import Turn


def _text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text}


def user_message(turn: Turn, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": new_id("msg"),
        "content": content,
        "phase": None,
        "role": "user",
        "status": "completed",
        "turn_id": turn.id,
        "type": "message",
    }


def assistant_message(turn: Turn, phase: str) -> dict[str, Any]:
    """An assistant message as it starts: no content yet."""
    return {
        "id": new_id("msg"),
        "content": [],
        "phase": phase,
        "role": "assistant",
        "status": "in_progress",
        "turn_id": turn.id,
        "type": "message",
    }


def arguments(call: ToolCall) -> str:
    return json.dumps(dict(call.input), separators=(",", ":"))


def function_call(turn: Turn, call: ToolCall) -> dict[str, Any]:
    return {
        "id": new_id("fc"),
        "arguments": arguments(call),
        "call_id": new_id("call"),
        "name": call.name,
        "status": "in_progress",
        "turn_id": turn.id,
        "type": "function_call",
    }


def function_call_output(turn_id: str, call_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """The output item of a posted ``agent.session.input.tool_result``."""
    success = result["success"]
    return {
        "id": new_id("fco"),
        "call_id": call_id,
        "error": None if success else result.get("error"),
        "output": result.get("output") if success else None,
        "status": "completed" if success else "failed",
        "turn_id": turn_id,
        "type": "function_call_output",
    }


def output_text(result: dict[str, Any]) -> str:
    """What a tool result tells the next step: its output's text, or its error."""
    if not result["success"]:
        return str(result.get("error") or "")
    output = result.get("output")
    if isinstance(output, list):
        return "".join(part.get("text", "") for part in output if part["type"] == "input_text")
    return output or ""


def mcp_call(turn: Turn, call: ToolCall) -> dict[str, Any]:
    return {
        "id": new_id("mcp"),
        "arguments": arguments(call),
        "error": None,
        "name": call.name,
        "output": None,
        "server_label": call.mcp_server,
        "status": "in_progress",
        "turn_id": turn.id,
        "type": "mcp_call",
    }


def create_subagent_call(turn: Turn, agent_id: str, task: str) -> dict[str, Any]:
    return {
        "id": new_id("csc"),
        "agent_id": agent_id,
        "content": [_text(task)],
        "model": None,
        "reasoning_effort": None,
        "status": "in_progress",
        "turn_id": turn.id,
        "type": "create_subagent_call",
    }


def agent_message(turn: Turn, sender: str, recipient: str, text: str) -> dict[str, Any]:
    """A subagent's report to the agent that created it."""
    return {
        "id": new_id("amsg"),
        "content": [_text(text)],
        "recipient_agent_id": recipient,
        "sender_agent_id": sender,
        "turn_id": turn.id,
        "type": "agent_message",
    }
