"""What a served session is doing now, read from its status and its newest event.

A worker drives a session only when the session needs it: a turn is under way (``running``,
or ``rescheduling``), or the session went idle waiting on calls this machine answers
(``requires_action``). It never starts a turn itself - a fresh session that nobody has
prompted yet is left alone - and an idle session whose last turn ended waits for new input.
Between runs the worker looks again at a growing interval (``ACTIVITY_POLL``) until its
``idle_grace`` passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents.errors import NotFoundError
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.transport._backoff import RetryPolicy

__all__ = ["ACTIVITY_POLL", "SessionLook", "look_at"]

ACTIVITY_POLL = RetryPolicy.poll(2.0, first=0.1)
"""How often an idle session is looked at: from 0.1 s, doubling up to every 2 s."""

_BUSY = frozenset({"running", "rescheduling"})


@dataclass(frozen=True)
class SessionLook:
    """A session's ``status`` (None once deleted) and its ``newest`` event (None if none)."""

    status: str | None
    newest: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def ended(self) -> bool:
        """Terminated, archived or deleted: nothing more will happen in it."""
        return self.status is None or self.status == "terminated"

    @property
    def busy(self) -> bool:
        """A turn is under way."""
        return self.status in _BUSY

    @property
    def newest_id(self) -> str | None:
        return str(self.newest.get("id")) if self.newest is not None else None

    @property
    def waits_on_us(self) -> bool:
        """Idle, waiting for tool results or confirmations (ours to give)."""
        if self.newest is None or self.newest.get("type") != "session.status_idle":
            return False
        reason = self.newest.get("stop_reason")
        return isinstance(reason, Mapping) and reason.get("type") == "requires_action"

    def needs_serving(self, served: str | None) -> bool:
        """Whether to drive the session now; ``served`` is the newest event id when it was
        last driven, so a wait the worker could not answer is not tried again and again."""
        if self.ended:
            return False
        return self.busy or (self.waits_on_us and self.newest_id != served)


def look_at(client: ClaudeClient, session_id: str, tags: Mapping[str, Any]) -> SessionLook:
    """The session now: its newest event, then its status (a status read second cannot be
    older than the event, so a turn that just began is seen as ``running``)."""
    try:
        newest = next(
            iter(
                client.iter_events(session_id, order="desc", page_size=1, telemetry_metadata=tags)
            ),
            None,
        )
        status = client.get_session(session_id, telemetry_metadata=tags).get("status")
    except NotFoundError:
        return SessionLook(None)
    return SessionLook(str(status) if status is not None else "", newest)
