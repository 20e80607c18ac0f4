"""Script building blocks shared by the emulators: the tool calls a scripted turn makes.

Each emulator has its own turn type (its API's endings and options differ), but a tool call
is the same everywhere, so a test can reuse its calls when it runs against several providers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ToolCall", "call"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call a scripted turn makes: ``name`` and its ``input``.

    ``result`` is only used for tools the emulated agent runs itself (the Claude emulator's
    ``Turn.server_tool_calls``); the results of client-side tools come from the client.
    """

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    result: str = ""


def call(tool_name: str, /, **tool_input: Any) -> ToolCall:
    """Shorthand: ``call("get_weather", city="Paris")`` (any argument name works, ``name`` too)."""
    return ToolCall(tool_name, tool_input)
