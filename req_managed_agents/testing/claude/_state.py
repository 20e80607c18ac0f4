"""The state every resource of the Claude emulator shares: its data, and the lock guarding it.

Each resource (agents, sessions, files, ...) keeps no data of its own: it reads and changes
the :class:`ClaudeState` it was given, under ``condition``, the emulator's one lock (see
:class:`~req_managed_agents.testing.server.Lifecycle`), notifying it when a waiter may care.
Besides the data, the state finds sessions (live ones for the API, deleted ones too for
tests) and cuts lists into pages behind opaque cursors, as every resource needs.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import _DEFAULT_PAGE, _invalid, _not_found
from req_managed_agents.testing.server import new_id, query_value

if TYPE_CHECKING:
    import threading

    from req_managed_agents.testing.claude._model import _Session, _StoredFile, _WorkItem
    from req_managed_agents.testing.claude._turn import Turn
    from req_managed_agents.testing.server import RecordedRequest

# Query parameters that move through a list rather than filter it (``beta=true``: the SDK's
# marker of beta paths).
_PAGING_PARAMETERS = frozenset({"limit", "page", "beta"})


class ClaudeState:
    """The Claude emulator's data, guarded by ``condition``."""

    def __init__(self, condition: threading.Condition) -> None:
        self.condition = condition
        self.bedrock = False  # Claude Managed Agents on Amazon Bedrock (its session shape)
        self.agents: dict[str, dict[str, Any]] = {}  # the latest version of each agent
        self.agent_versions: dict[str, list[dict[str, Any]]] = {}  # every version, oldest first
        self.agent_scripts: dict[str, tuple[Turn, ...]] = {}
        self.environments: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, _Session] = {}
        self.files: dict[str, _StoredFile] = {}  # oldest first
        # The creation time of the newest file, so that a newer one never ties with it.
        self.last_file_time = datetime.min.replace(tzinfo=timezone.utc)
        self.tokens: dict[str, str] = {}  # repository resource id -> its authorization token
        self.vaults: dict[str, dict[str, Any]] = {}
        self.credentials: dict[str, dict[str, Any]] = {}  # by credential id, across vaults
        self.memory_stores: dict[str, dict[str, Any]] = {}
        self.memories: dict[str, dict[str, dict[str, Any]]] = {}  # store id -> memory id -> it
        # store id -> version id -> version, oldest first
        self.memory_versions: dict[str, dict[str, dict[str, Any]]] = {}
        # Self-hosted environments: their work items (oldest first), their keys, the live
        # sessions token of each item handed out, and when each worker last polled.
        self.work: dict[str, _WorkItem] = {}
        self.environment_keys: dict[str, str] = {}  # environment id -> its key
        self.work_tokens: dict[str, str] = {}  # sessions token -> work item id
        self.workers_polling: dict[str, dict[str, float]] = {}  # env id -> worker -> time
        self._cursors: dict[str, tuple[str, int]] = {}  # page token -> (scope, offset)

    def known_session(self, session_id: str) -> _Session:
        """For the test-facing methods: deleted sessions stay observable."""
        session = self.sessions.get(session_id)
        if session is None:
            raise KeyError(f"no session {session_id!r} in this emulator")
        return session

    def live_session(self, session_id: str) -> _Session:
        """For the API: a deleted session is a 404."""
        session = self.sessions.get(session_id)
        if session is None or session.deleted:
            raise _not_found("session", session_id)
        return session

    def page(
        self,
        request: RecordedRequest,
        items: list[Any],
        *,
        scope: str,
        max_limit: int,
        with_prev: bool = False,
        default_limit: int = _DEFAULT_PAGE,
    ) -> dict[str, Any]:
        """Cut ``items`` into pages behind opaque cursors; a cursor only works in its scope
        and with the filters (every query parameter but the paging ones) it was made with."""
        filters = sorted(
            (name, values)
            for name, values in request.query.items()
            if name not in _PAGING_PARAMETERS
        )
        scope = f"{scope}?{filters}"
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
        token = new_id("page")
        self._cursors[token] = (scope, offset)
        return token
