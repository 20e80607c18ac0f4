"""The scripted turns of the Claude emulator's agents: what a :class:`Turn` may say and do.

A session plays its agent's script one turn per input (see ``_player``); when the script
runs out, the agent answers ``(script finished)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from req_managed_agents.testing._script import frozen_events
from req_managed_agents.testing.claude._builtin_tools import check_sandbox_call
from req_managed_agents.testing.claude._wire import NAMED_EVENTS

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable, Literal

    from req_managed_agents.testing._script import ScriptedEvent, ToolCall

_ENDS = ("end_turn", "terminated", "error")
_VERDICTS = ("satisfied", "needs_revision", "failed")


@dataclass(frozen=True)
class Turn:
    """One scripted agent turn, played when the session gets its next input.

    ``text`` may be a function of the texts that triggered the turn: the user message (or the
    outcome's description); the custom tool results (and self-hosted tool results) in call
    order followed by ``"allowed"`` or ``"denied"`` / ``"denied: <deny_message>"`` per
    confirmed server tool call in call order; or, in an outcome's revision, the grader's
    explanation. ``usage`` is ``(input_tokens, output_tokens)``. ``delay`` is how long the
    turn "thinks" after it starts; ``thinking`` logs an ``agent.thinking`` before the
    message. ``server_tool_calls`` run on the service (see :class:`ToolCall` for their
    permissions); in a self-hosted environment an allowed call to a sandbox tool of the
    built-in toolset (``bash``, ``read``, ``write``, ``edit``, ``glob``, ``grep``, whose
    input must be one the API sends: ``call("bash", command="ls")``) waits for the client's
    ``user.tool_result`` instead. ``tool_calls`` are custom tools the client runs.
    ``end`` picks the ending: ``"end_turn"`` (idle; ``requires_action`` when calls wait on
    the client), ``"terminated"`` or ``"error"`` (a terminal ``session.error``, then
    terminated). ``outputs`` maps file names to the bytes the agent writes under
    ``/mnt/session/outputs/``; each becomes a downloadable file scoped to the session before
    the turn's final status event. ``evaluation`` and ``explanation`` are the grader's
    verdict on the turn when it ends an outcome's iteration. ``thread`` names the subagent
    that plays the turn on a session thread of its own (None: the coordinator, on the
    primary thread); consecutive turns of one name continue the same thread.

    ``events`` are logged in order right after the turn's message (before its tool calls),
    on the turn's thread, for the SDK's event types no behaviour of the emulator produces
    and for types a handler must survive: a name from :attr:`named_events` (the
    ``workflow_run.*`` family, ``session.status_rescheduled``,
    ``session.thread_status_rescheduled``, ``span.outcome_evaluation_ongoing``,
    ``agent.thread_context_compacted``) is filled in with what its model requires; a
    mapping is logged with its fields (over a named type's), whatever its ``type``, one the
    SDK does not know included. Each gets its ``id`` and ``processed_at``; the emulator's
    state does not change for them.
    """

    named_events: ClassVar[frozenset[str]] = NAMED_EVENTS

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    server_tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    delay: float = 0.0
    end: Literal["end_turn", "terminated", "error"] = "end_turn"
    outputs: Mapping[str, bytes] = field(default_factory=dict)
    thinking: bool = False
    evaluation: Literal["satisfied", "needs_revision", "failed"] = "satisfied"
    explanation: str = ""
    thread: str | None = None
    events: Sequence[ScriptedEvent] = ()

    def __post_init__(self) -> None:
        if self.end not in _ENDS:
            raise ValueError(f"end must be one of {_ENDS}, not {self.end!r}")
        if self.evaluation not in _VERDICTS:
            raise ValueError(f"evaluation must be one of {_VERDICTS}, not {self.evaluation!r}")
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        if self.thread is not None and (not isinstance(self.thread, str) or not self.thread):
            raise ValueError("thread must name a subagent (or be None)")
        # Tuples, so a script cannot change under a running session.
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        object.__setattr__(self, "server_tool_calls", tuple(self.server_tool_calls))
        object.__setattr__(self, "events", frozen_events(self.events, NAMED_EVENTS))
        for server_call in self.server_tool_calls:
            check_sandbox_call(server_call)
        outputs = {name: _output_bytes(name, data) for name, data in self.outputs.items()}
        object.__setattr__(self, "outputs", MappingProxyType(outputs))


_SCRIPT_FINISHED = Turn(text="(script finished)")


def _output_bytes(name: Any, data: Any) -> bytes:
    """Check an output the agent writes: a plain file name (no directories) and bytes."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name:
        raise ValueError(f"an output needs a plain file name, not {name!r}")
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"output {name!r} must be bytes, not {type(data).__name__}")
    return bytes(data)
