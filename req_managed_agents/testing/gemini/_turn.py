"""A scripted hop of a Gemini agent: what the agent does for one interaction."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import ToolCall

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable, Literal

ENDS = ("completed", "failed", "incomplete", "budget_exceeded", "requires_continuation")


@dataclass(frozen=True)
class GeminiTurn:
    """One scripted hop, played by the interaction that the next create of the conversation
    makes (its first message, the complete set of ``function_result`` steps answering the
    previous hop, or a ``continuation_token``).

    ``text`` may be a function of the texts that triggered the hop: the user input's text
    parts (one string per ``user_input`` step), the results in the previous hop's call
    order (a string as sent, anything else as JSON), or, for a continuation, the inputs of
    the hop it continues.

    ``tool_calls`` are custom functions the client runs: the hop ends ``requires_action``
    with a ``function_call`` step per call. Each must name a function the interaction
    declares (its ``tools``, an earlier hop's, or its agent's): a call to another ends the
    hop ``failed``, as no model calls a tool it was not given. ``mcp_calls`` are calls the
    agent makes to a remote MCP server (each :class:`ToolCall` names its ``mcp_server``):
    an ``mcp_server_tool_call`` step and its ``mcp_server_tool_result`` (the call's
    ``result``). ``steps`` are other server-side steps, logged as given (a
    ``google_search_call`` and its result, say): the emulator checks only their ``type``.
    ``thinking`` adds a ``thought`` step first. ``usage`` is ``(input_tokens,
    output_tokens)``; ``delay`` how long the hop "thinks" before its output.

    ``end`` is how a hop without tool calls ends: ``"completed"``, ``"failed"`` (an
    ``error`` event, the interaction's ``errors``), ``"incomplete"``, ``"budget_exceeded"``
    or ``"requires_continuation"`` (a ``continuation_token``: the next create continues
    with it, and plays the next turn).
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    mcp_calls: Sequence[ToolCall] = ()
    steps: Sequence[Mapping[str, Any]] = ()
    thinking: bool = False
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal[
        "completed", "failed", "incomplete", "budget_exceeded", "requires_continuation"
    ] = "completed"

    def __post_init__(self) -> None:
        if self.end not in ENDS:
            raise ValueError(f"end must be one of {ENDS}, not {self.end!r}")
        if self.tool_calls and self.end != "completed":
            raise ValueError("a hop with tool calls ends requires_action: leave end 'completed'")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        if len(self.usage) != 2 or any(n < 0 for n in self.usage):
            raise ValueError("usage is (input_tokens, output_tokens), neither negative")
        for mcp_call in self.mcp_calls:
            if mcp_call.mcp_server is None:
                raise ValueError(f"MCP call {mcp_call.name!r} must name its mcp_server")
        steps = []
        for step in self.steps:
            if not isinstance(step, Mapping) or not isinstance(step.get("type"), str):
                raise ValueError(f"a scripted step is a mapping with its type: {step!r}")
            steps.append(MappingProxyType(copy.deepcopy(dict(step))))
        # Tuples, so a script cannot change under a running interaction.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "mcp_calls", tuple(self.mcp_calls))
        object.__setattr__(self, "steps", tuple(steps))


SCRIPT_FINISHED = GeminiTurn(text="(script finished)")
