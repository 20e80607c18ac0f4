"""A scripted step of an OpenAI agent: what the agent does for one input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from req_managed_agents.testing._script import ToolCall, frozen_events
from req_managed_agents.testing.openai._wire import NAMED_EVENTS

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable, Literal

    from req_managed_agents.testing._script import ScriptedEvent

_ENDS = ("completed", "turn_failed", "session_failed")


@dataclass(frozen=True)
class OpenAITurn:
    """One scripted step, played when the session gets its next input.

    An input is a user message, or the complete set of answers to what the previous step
    paused on. ``text`` may be a function of the texts that triggered the step: the user
    messages' texts (one string per message), or the function outputs of the answers in
    call order (a failed result's ``error``) followed by ``"approved"``, ``"denied"`` or
    ``"cancelled"`` per MCP approval in call order.

    ``tool_calls`` are function calls the client runs: the API turn pauses in status
    ``waiting`` until each has its ``agent.session.input.tool_result``. ``mcp_calls`` are
    calls to a remote MCP server (each :class:`ToolCall` names its ``mcp_server``): an
    ``"allow"`` call runs at once with its ``result`` as output, a ``"deny"`` call fails,
    and an ``"ask"`` call pauses for an ``agent.session.input.mcp_approval_request_result``.
    ``usage`` is ``(input_tokens, output_tokens)``; ``delay`` how long the step "thinks"
    before its output. ``end``: ``"completed"`` (the API turn completes when the step
    makes no calls), ``"turn_failed"`` (the turn fails after the step's output; the session
    stays usable) or ``"session_failed"`` (the turn and the session fail). ``subagent``
    names the subagent that plays the step in a turn of its own (None: the root agent);
    consecutive steps of one name continue that subagent's turn.

    ``events`` are logged in order in the step's turn right after its message (before its
    calls), for the SDK's event types no behaviour of the emulator produces and for types a
    handler must survive: a name from :attr:`named_events` (an environment's lifecycle, a
    subagent ``active`` or ``closed``, reasoning summaries, a command's output deltas) is
    filled in with what its model requires; a mapping is logged with its fields (over a
    named type's), whatever its ``type``, one the SDK does not know included. Each gets its
    ``event_id``; the emulator's state does not change for them.
    """

    named_events: ClassVar[frozenset[str]] = NAMED_EVENTS

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    mcp_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal["completed", "turn_failed", "session_failed"] = "completed"
    subagent: str | None = None
    events: Sequence[ScriptedEvent] = ()

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        if any(n < 0 for n in self.usage) or len(self.usage) != 2:
            raise ValueError("usage is (input_tokens, output_tokens), neither negative")
        if self.subagent is not None and (not isinstance(self.subagent, str) or not self.subagent):
            raise ValueError("subagent must name a subagent (or be None)")
        for mcp_call in self.mcp_calls:
            if mcp_call.mcp_server is None:
                raise ValueError(f"MCP call {mcp_call.name!r} must name its mcp_server")
        # Tuples, so a script cannot change under a running session.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "mcp_calls", tuple(self.mcp_calls))
        object.__setattr__(self, "events", frozen_events(self.events, NAMED_EVENTS))


SCRIPT_FINISHED = OpenAITurn(text="(script finished)")
