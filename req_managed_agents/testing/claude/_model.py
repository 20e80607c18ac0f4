"""The Claude emulator's data model: sessions, their threads, what their turns wait on,
stored files, and the work items of self-hosted environments.

A session carries what its scripted agent is doing: its queued inputs, the tool uses its
paused turn waits on, the outcome it works toward and its threads (the primary one, whose
log is the session's, and the subagent threads scripted turns create). A stored file is a
Files API file: its metadata and its bytes. The emulator's state
(:class:`~req_managed_agents.testing.claude._state.ClaudeState`) holds them, under its lock.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.server import new_id, utc_timestamp

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing.claude._turn import Turn


@dataclass(frozen=True)
class _Input:
    """What plays a session's next turn: the texts its scripted text receives, the events
    logged as it opens (the results of the tool calls confirmations settled), the outcome
    it starts working toward, if it is a ``user.define_outcome``, and the echoes of the
    queued user events it processes (their ``processed_at`` is set as it opens)."""

    texts: list[str]
    opening: tuple[tuple[_Thread | None, dict[str, Any]], ...] = ()  # (where, event)
    outcome: _Outcome | None = None
    echoes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Awaited:
    """A tool use the paused turn waits on, by what answers it: a custom tool use its
    ``user.custom_tool_result`` (``kind`` ``"custom"``), a server tool use whose permission
    is ``ask`` its ``user.tool_confirmation`` (``"confirm"``), a built-in tool use of a
    self-hosted environment its ``user.tool_result`` (``"result"``), an MCP server's
    ``agent.mcp_elicitation`` its ``user.mcp_elicitation_response`` (``"elicit"``; then
    ``use_id`` is the waiting ``agent.mcp_tool_use``).

    ``answer`` is what the next turn's scripted text receives for it once answered;
    ``result`` is the tool result event a confirmation produced, logged when the turn
    resumes; ``thread`` is the session thread the use was made on.
    """

    kind: str
    call: ToolCall | None = None
    thread: _Thread | None = None
    answer: str | None = None
    result: dict[str, Any] | None = None
    use_id: str | None = None


@dataclass
class _Outcome:
    """The outcome a session works toward; ``record`` is its entry in the session's
    ``outcome_evaluations``. ``final``: the grader gave up (``max_iterations_reached``) and
    one last, unevaluated turn plays."""

    record: dict[str, Any]
    max_iterations: int
    final: bool = False


class _Clock:
    """How long something has existed and how long it has been running (seconds), for the
    ``stats`` of sessions and threads; they are taken at each status change, so that two
    reads in between answer the same object."""

    def __init__(self) -> None:
        self.created = time.monotonic()
        self.active = 0.0
        self.running_since: float | None = None
        self.frozen: float | None = None  # the duration, once terminated

    def set_running(self, running: bool) -> None:
        now = time.monotonic()
        if running and self.running_since is None:
            self.running_since = now
        elif not running and self.running_since is not None:
            self.active += now - self.running_since
            self.running_since = None

    def stats(self) -> dict[str, float]:
        now = time.monotonic()
        running = 0.0 if self.running_since is None else now - self.running_since
        duration = self.frozen if self.frozen is not None else now - self.created
        return {
            "active_seconds": round(self.active + running, 3),
            "duration_seconds": round(duration, 3),
        }


class _Thread:
    """A session thread: its REST object and its own event log.

    The primary thread's log is the session's; a subagent thread's holds what it did, and
    the events that need the client (its tool uses) are cross-posted to the primary log.
    """

    def __init__(self, record: dict[str, Any], log: list[dict[str, Any]]) -> None:
        self.record = record
        self.log = log
        self.clock = _Clock()

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def name(self) -> str:
        return str(self.record["agent"]["name"])

    @property
    def primary(self) -> bool:
        return self.record["parent_thread_id"] is None


class _Session:
    """A session's REST object plus what the emulator needs to play its script."""

    def __init__(
        self,
        record: dict[str, Any],
        script: tuple[Turn, ...],
        *,
        self_hosted: bool = False,
        bedrock: bool = False,
    ) -> None:
        self.record = record
        self.script = script
        self.self_hosted = self_hosted  # built-in tools wait for the client's results
        self.bedrock = bedrock  # Claude on Bedrock: the inputs its params declare
        self.log: list[dict[str, Any]] = []
        self.clock = _Clock()
        now = record["created_at"]
        primary = {
            "id": new_id("sthr"),
            "type": "session_thread",
            "session_id": record["id"],
            "parent_thread_id": None,
            "agent": record["agent"],
            "status": record["status"],
            "stats": self.clock.stats(),
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
            "workflow_run_id": None,
        }
        record["stats"] = self.clock.stats()
        self.threads: dict[str, _Thread] = {primary["id"]: _Thread(primary, self.log)}
        self.turns_played = 0
        self.queued_inputs: deque[_Input] = deque()
        self.busy = False  # a turn is being played
        self.interrupted = False
        self.gave_up = False  # fail_turn ended the running turn already
        # The tool uses the last turn paused on, by event id in log order.
        self.awaiting: dict[str, _Awaited] = {}
        self.answered: set[str] = set()  # tool use ids answered (results or confirmations)
        self.outcome: _Outcome | None = None  # the outcome being worked toward
        self.turn_thread: _Thread | None = None  # the subagent thread of the current turn
        self.turn_name: str | None = None  # the subagent the last scripted turn is for
        self.budget_removed = False  # a budget, once removed, cannot come back
        self.deleted = False

    @property
    def status(self) -> str:
        return str(self.record["status"])

    @property
    def primary(self) -> _Thread:
        return next(iter(self.threads.values()))

    def new_thread(self, agent: dict[str, Any]) -> _Thread:
        """Start a subagent thread running ``agent``, a child of the primary thread."""
        now = utc_timestamp()
        record = {
            "id": new_id("sthr"),
            "type": "session_thread",
            "session_id": self.record["id"],
            "parent_thread_id": self.primary.id,
            "agent": agent,
            "status": "idle",
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0},
            "stats": {"active_seconds": 0.0, "duration_seconds": 0.0, "startup_seconds": 0.0},
            "created_at": now,
            "updated_at": now,
            "archived_at": None,
            "workflow_run_id": None,
        }
        thread = _Thread(record, [])
        self.threads[thread.id] = thread
        return thread

    def add_usage(
        self, input_tokens: int, output_tokens: int, thread: _Thread | None = None
    ) -> None:
        """Count tokens in the session's usage (and the subagent ``thread``'s, if any)."""
        for usage in (self.record["usage"], thread.record["usage"] if thread else None):
            if usage is not None:
                usage["input_tokens"] += input_tokens
                usage["output_tokens"] += output_tokens

    def outcome_open(self) -> bool:
        """Whether an outcome was defined and has not reached a verdict yet."""
        records: list[dict[str, Any]] = self.record["outcome_evaluations"]
        return any(r["completed_at"] is None for r in records)

    def view(self) -> dict[str, Any]:
        """The session as the API answers it (a copy)."""
        return copy.deepcopy(self.record)


@dataclass
class _StoredFile:
    """A Files API file: the metadata the API answers, and the bytes behind it."""

    record: dict[str, Any]
    data: bytes = field(repr=False)

    @property
    def scope_id(self) -> str | None:
        scope = self.record.get("scope")
        return None if scope is None else str(scope["id"])


@dataclass
class _WorkItem:
    """A work item: its REST object (``secret`` always null there) and its lease.

    ``polled_at`` is when a poll handed it out, while it is not acknowledged; ``expires_at``
    is when its lease ends (``starting``, ``active`` and ``stopping`` items); ``token`` is
    the sessions token of the last poll, until revoked.
    """

    record: dict[str, Any]
    session: _Session
    ttl: int
    polled_at: float | None = None
    expires_at: float | None = None
    token: str | None = None

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def state(self) -> str:
        return str(self.record["state"])

    @property
    def environment_id(self) -> str:
        return str(self.record["environment_id"])

    def view(self) -> dict[str, Any]:
        """The item as the API answers it (a copy, with no secret)."""
        return copy.deepcopy(self.record)
