"""The state that every part of the Claude emulator shares: its sessions and its page cursors.

A session carries what its scripted agent is doing: its queued inputs, the tool uses its
paused turn waits on and the outcome it works toward.

:class:`_ClaudeBase` finds sessions (live ones for the API, deleted ones too for tests) and
cuts lists into pages behind opaque cursors. The parts of the API are layers over it, each
in a module of its own: agents and environments (``_claude_agents``), files and session
resources (``_claude_files``), session events and the scripted-turn player
(``_claude_player``), the event stream (``_claude_stream``);
:class:`~req_managed_agents.testing._claude.ClaudeEmulator` stacks
them and routes requests to them. One lock, the emulator's ``_condition``, guards all state;
the constructor of ``ClaudeEmulator`` sets every attribute the layers declare.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import _DEFAULT_PAGE, _invalid, _new_id, _not_found
from req_managed_agents.testing._server import LoopbackEmulator, query_value

if TYPE_CHECKING:
    from req_managed_agents.testing._claude_player import Turn
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing._server import RecordedRequest


@dataclass(frozen=True)
class _Input:
    """What plays a session's next turn: the texts its scripted text receives, the events
    logged as it opens (the results of the tool calls confirmations settled) and the outcome
    it starts working toward, if it is a ``user.define_outcome``."""

    texts: list[str]
    opening: tuple[dict[str, Any], ...] = ()
    outcome: _Outcome | None = None


@dataclass
class _Awaited:
    """A tool use the paused turn waits on: a custom tool use waits for its result, a server
    tool use (``call`` set) whose permission is ``ask`` for its confirmation.

    ``answer`` is what the next turn's scripted text receives for it once answered;
    ``result`` is the tool result event a confirmation produced, logged when the turn resumes.
    """

    call: ToolCall | None = None
    answer: str | None = None
    result: dict[str, Any] | None = None


@dataclass
class _Outcome:
    """The outcome a session works toward; ``record`` is its entry in the session's
    ``outcome_evaluations``. ``final``: the grader gave up (``max_iterations_reached``) and
    one last, unevaluated turn plays."""

    record: dict[str, Any]
    max_iterations: int
    final: bool = False


class _Session:
    """A session's REST object plus what the emulator needs to play its script."""

    def __init__(self, record: dict[str, Any], script: tuple[Turn, ...]) -> None:
        self.record = record
        self.script = script
        self.log: list[dict[str, Any]] = []
        self.turns_played = 0
        self.queued_inputs: deque[_Input] = deque()
        self.busy = False  # a turn is being played
        self.interrupted = False
        self.gave_up = False  # fail_turn ended the running turn already
        # The tool uses the last turn paused on, by event id in log order.
        self.awaiting: dict[str, _Awaited] = {}
        self.answered: set[str] = set()  # tool use ids answered (results or confirmations)
        self.outcome: _Outcome | None = None  # the outcome being worked toward
        self.deleted = False

    @property
    def status(self) -> str:
        return str(self.record["status"])

    def outcome_open(self) -> bool:
        """Whether an outcome was defined and has not reached a verdict yet."""
        records: list[dict[str, Any]] = self.record["outcome_evaluations"]
        return any(r["completed_at"] is None for r in records)


class _ClaudeBase(LoopbackEmulator):
    """Sessions by id and page cursors, under the emulator's lock."""

    _sessions: dict[str, _Session]
    _cursors: dict[str, tuple[str, int]]  # page token -> (scope, offset)

    def _known_session(self, session_id: str) -> _Session:
        """For the test-facing methods: deleted sessions stay observable."""
        session = self._sessions.get(session_id)
        if session is None:
            raise KeyError(f"no session {session_id!r} in this emulator")
        return session

    def _live_session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None or session.deleted:
            raise _not_found("session", session_id)
        return session

    def _page(
        self,
        request: RecordedRequest,
        items: list[Any],
        *,
        scope: str,
        max_limit: int,
        with_prev: bool = False,
        default_limit: int = _DEFAULT_PAGE,
    ) -> dict[str, Any]:
        """Cut ``items`` into pages behind opaque cursors; a cursor only works in its scope."""
        raw_limit = query_value(request, "limit")
        try:
            limit = default_limit if raw_limit is None else int(raw_limit)
        except ValueError:
            raise _invalid("limit: must be an integer") from None
        if not 1 <= limit <= max_limit:
            raise _invalid(f"limit: must be between 1 and {max_limit}")
        offset = 0
        page = query_value(request, "page")
        if page:
            cursor = self._cursors.get(page)
            if cursor is None or cursor[0] != scope:
                raise _invalid("page: invalid page cursor")
            offset = cursor[1]
        end = offset + limit
        result: dict[str, Any] = {
            "data": copy.deepcopy(items[offset:end]),
            "next_page": self._cursor(scope, end) if end < len(items) else None,
        }
        if with_prev:
            result["prev_page"] = self._cursor(scope, max(0, offset - limit)) if offset else None
        return result

    def _cursor(self, scope: str, offset: int) -> str:
        token = _new_id("page")
        self._cursors[token] = (scope, offset)
        return token
