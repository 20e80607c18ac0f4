"""Session threads of the Claude emulator: ``/v1/sessions/{id}/threads`` and below.

Every session has a primary thread (``parent_thread_id`` null) whose log is the session's;
turns scripted with ``Turn(thread=...)`` add subagent threads (``_subagents``). The
threads are listed oldest first (``statuses[]`` filters), read, archived (never the primary
one, nor a running one: both are 400s; archiving twice is harmless), and each has its own
paged history and stream (``.../threads/{id}/events`` and ``.../threads/{id}/stream``, with
``event_deltas[]``; stream faults target the thread id). A thread reports its own status,
stats and token usage; the primary one's are the session's.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import (
    _MAX_EVENTS_PAGE,
    ID,
    SESSION_PATH,
    _archive,
    _invalid,
    _json_object,
    _not_found,
    _query_values,
)

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._model import _Session, _Thread
    from req_managed_agents.testing.claude._state import ClaudeState
    from req_managed_agents.testing.claude._stream import EventStream
    from req_managed_agents.testing.server import Exchange, Route

_STATUSES = ("running", "idle", "rescheduling", "terminated")


def _thread_view(session: _Session, thread: _Thread) -> dict[str, Any]:
    """A thread as the API answers it (a copy)."""
    view = copy.deepcopy(thread.record)
    if thread.primary:
        view["agent"].pop("multiagent", None)  # a thread's agent names no roster
        view["usage"] = copy.deepcopy(session.record["usage"])
    return view


class Threads:
    """The thread routes."""

    def __init__(self, state: ClaudeState, stream: EventStream) -> None:
        self._state = state
        self._stream = stream

    def routes(self) -> list[Route]:
        thread = f"{SESSION_PATH}/threads/{ID}"
        return [
            ("GET", f"{SESSION_PATH}/threads", self._list_threads),
            ("GET", thread, self._get_thread),
            ("POST", f"{thread}/archive", self._archive_thread),
            ("GET", f"{thread}/events", self._list_thread_events),
            ("GET", f"{thread}/stream", self._stream_thread),
        ]

    def _thread(self, session_id: str, thread_id: str) -> tuple[_Session, _Thread]:
        session = self._state.sessions.find(session_id)
        thread = session.threads.get(thread_id)
        if thread is None:
            raise _not_found("session thread", thread_id)
        return session, thread

    def _list_threads(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        request = exchange.request
        statuses = _query_values(request, "statuses", _STATUSES)
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            threads = [
                _thread_view(session, t)
                for t in session.threads.values()
                if not statuses or t.record["status"] in statuses
            ]
            return self._state.page(request, threads)

    def _get_thread(self, exchange: Exchange, session_id: str, thread_id: str) -> dict[str, Any]:
        with self._state.condition:
            return _thread_view(*self._thread(session_id, thread_id))

    def _archive_thread(
        self, exchange: Exchange, session_id: str, thread_id: str
    ) -> dict[str, Any]:
        _json_object(exchange.request, optional=True)
        with self._state.condition:
            session, thread = self._thread(session_id, thread_id)
            if thread.primary:
                raise _invalid("the primary thread cannot be archived; archive the session")
            if thread.record["status"] in ("running", "rescheduling"):
                raise _invalid("a running thread cannot be archived; interrupt it first")
            _archive(thread.record)
            return _thread_view(session, thread)

    def _list_thread_events(
        self, exchange: Exchange, session_id: str, thread_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            _, thread = self._thread(session_id, thread_id)
            return self._state.page(
                exchange.request,
                thread.log,
                max_limit=_MAX_EVENTS_PAGE,
            )

    def _stream_thread(self, exchange: Exchange, session_id: str, thread_id: str) -> None:
        with self._state.condition:
            session, thread = self._thread(session_id, thread_id)
        scope = session_id if thread.primary else thread_id
        self._stream.serve(exchange, session, thread.log, scope)
