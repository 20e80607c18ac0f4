"""A conversation of the AgentCore emulator: one runtime session of one harness, and how far
its script has played.

Each committed turn keeps the frames written for it, for tests to check what a client must
have seen; the invocations playing a turn of it are tracked, so that StopRuntimeSession can
cut them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from req_managed_agents.testing.agentcore._converse import _ToolUse
    from req_managed_agents.testing.server import ChunkedStream


class _Conversation:
    """Where one runtime session of one harness is in its script."""

    def __init__(self) -> None:
        self.turns_played = 0
        self.pending: tuple[_ToolUse, ...] = ()  # the tool calls awaiting results
        self.generation = 0  # changes on every advance, so a stale invocation cannot commit
        # The frames written for each committed turn, as {event type: payload}.
        self.frames: list[list[dict[str, Any]]] = []
        self.streams: set[ChunkedStream] = set()  # the invocations playing a turn of it
        self.stopped = False  # StopRuntimeSession ended it; it is no longer in the registry
