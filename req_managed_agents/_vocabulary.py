"""The canonical turn vocabulary shared by every provider.

Providers fold their native events into these values; drivers and users only ever branch on
them. Provider-native payloads (raw events, stop reasons) ride along verbatim as plain dicts
so nothing the provider said is lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "Artifact",
    "SessionInfo",
    "SessionResult",
    "Terminal",
    "ToolResult",
    "ToolUse",
    "TurnResult",
    "Usage",
]

Terminal = Literal["end_turn", "requires_action", "terminated"]
"""How a turn ended: the agent finished, it waits for tool results, or it stopped otherwise."""


@dataclass(frozen=True)
class Usage:
    """Token counts; add two with ``+`` to accumulate over turns."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Every token billed: input (fresh, cache writes, cache reads) plus output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


@dataclass(frozen=True)
class ToolUse:
    """One call the agent asks a tool to make (``input`` is the decoded JSON arguments)."""

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResult:
    """The text answer to one :class:`ToolUse`; ``is_error`` tells the agent it failed."""

    tool_use_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class TurnResult:
    """One provider turn folded into the canonical vocabulary.

    ``tool_uses`` are the custom tools the agent wants run locally; ``server_tool_uses`` are
    tools the provider ran itself (observed only). ``stop_reason`` and ``events`` are the
    provider's own values, verbatim.
    """

    terminal: Terminal
    text: str = ""
    tool_uses: tuple[ToolUse, ...] = ()
    server_tool_uses: tuple[ToolUse, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: Any = None
    events: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class SessionResult:
    """The outcome of driving a session until it stopped needing tool results.

    ``text`` is the final turn's text (the agent's answer, not the narration of earlier tool
    turns); ``usage`` sums every turn, ``turn_usage`` keeps each turn's share; ``events`` are
    all raw provider events of the run, deduplicated, in order. ``tool_uses`` and
    ``tool_results`` list the local tool calls the run made and what they answered.
    """

    terminal: Terminal
    text: str
    usage: Usage
    turns: int
    turn_usage: tuple[Usage, ...]
    session_id: str | None
    stop_reason: Any
    events: tuple[Mapping[str, Any], ...]
    tool_uses: tuple[ToolUse, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class SessionInfo:
    """Which session a tool call or event belongs to; ``metadata`` holds caller tags."""

    session_id: str
    provider: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Artifact:
    """A file stored in a session's artifact store (``id`` is the provider's reference)."""

    name: str
    size: int | None
    id: str
    created_at: datetime | None = None
    media_type: str | None = None
