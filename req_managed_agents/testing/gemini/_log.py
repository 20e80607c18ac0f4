"""Interactions' event logs: each event logged with its ``event_id``, in its interaction's
log and its conversation's, waking the streams that follow it; and the endings of a hop.

Every hop's log begins with ``interaction.created`` and ends with ``interaction.status_update``
(the final status, with the hop's usage) then ``interaction.completed``, whatever the status,
``requires_action`` included (after ``interaction.completed`` nothing more is logged: a
waiting interaction cancelled later changes its status only). A failure logs an ``error``
event first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.gemini._wire import now
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._model import Interaction
    from req_managed_agents.testing.server import Lifecycle


class InteractionLog:
    """Logs interactions' events; every method is called with the lifecycle's lock held."""

    def __init__(self, lifecycle: Lifecycle) -> None:
        self._lifecycle = lifecycle

    def append(self, hop: Interaction, event_type: str, **fields: Any) -> None:
        """Log one event (a fresh ``event_id``) in ``hop``'s log and wake what follows it."""
        interaction = hop
        event = {"event_type": event_type, "event_id": new_id("evt"), **fields}
        log = interaction.conversation.log
        interaction.event_ids[event["event_id"]] = len(interaction.events)
        interaction.positions.append(len(log))
        interaction.events.append(event)
        log.append(event)
        self._lifecycle.announce(interaction.id)

    def created(self, interaction: Interaction) -> None:
        self.append(interaction, "interaction.created", interaction=interaction.event_view())

    def end(
        self, interaction: Interaction, status: str, error: dict[str, str] | None = None
    ) -> None:
        """End the hop in ``status``: its ``error`` (if any), the status update, and
        ``interaction.completed``."""
        interaction.status = status
        interaction.updated = now()
        if error is not None:
            interaction.errors.append(error)
            self.append(interaction, "error", error=dict(error))
        update: dict[str, Any] = {"interaction_id": interaction.id, "status": status}
        if interaction.usage is not None:
            update["usage"] = dict(interaction.usage)
        if interaction.continuation_token is not None:
            update["continuation_token"] = interaction.continuation_token
        self.append(interaction, "interaction.status_update", **update)
        self.append(interaction, "interaction.completed", interaction=interaction.event_view())

    def cancel(self, interaction: Interaction) -> None:
        """Cancel a running hop (logged) or a waiting one (its status only: its log is over)."""
        if interaction.status in ("in_progress", "queued"):
            self.end(interaction, "cancelled")
        else:
            interaction.status = "cancelled"
            interaction.updated = now()
            self._lifecycle.announce(interaction.id)
        interaction.pending_calls.clear()
        interaction.continuation_token = None
