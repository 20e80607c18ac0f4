"""The Gemini emulator's data model: conversations (chains of interactions) and the
interactions themselves, with the two ways the API shows one (an ``Interaction`` answer and
the lighter interaction carried by ``interaction.created`` / ``interaction.completed``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._turn import GeminiTurn

# What an Interaction answer echoes of its create request, when the request gave it.
ECHOED = (
    "agent_config",
    "response_format",
    "response_mime_type",
    "response_modalities",
    "safety_settings",
    "service_tier",
    "system_instruction",
    "tools",
    "webhook_config",
)


@dataclass
class Conversation:
    """A chain of interactions linked by ``previous_interaction_id``; its id is its first
    interaction's. ``log`` holds every event of every hop in the order logged: the
    positions stream faults name."""

    id: str
    log: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Interaction:
    """One interaction (one hop of a conversation) and its event log."""

    id: str
    agent: str
    conversation: Conversation
    script: tuple[GeminiTurn, ...]
    turn_index: int
    inputs: list[str]  # what the hop's scripted text is given
    request: dict[str, Any]
    functions: frozenset[str]  # the custom functions it may call
    created: str
    input_steps: list[dict[str, Any]]
    status: str = "in_progress"
    updated: str = ""
    output_steps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # each event's place in the log
    event_ids: dict[str, int] = field(default_factory=dict)
    pending_calls: list[str] = field(default_factory=list)  # ids, in call order
    usage: dict[str, int] | None = None
    errors: list[dict[str, str]] = field(default_factory=list)
    continuation_token: str | None = None
    environment_id: str | None = None
    continued: bool = False  # a later hop answered or continued it
    hidden_reads: int = 0  # GETs still answered 404 (not_found_after_create)
    deleted: bool = False

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created

    def view(self, include_input: bool = False) -> dict[str, Any]:
        """The interaction as ``GET /{v}/interactions/{id}`` answers it."""
        answer: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "agent": self.agent,
            "created": self.created,
            "updated": self.updated,
            "steps": copy.deepcopy(self.input_steps + self.output_steps),
        }
        for name in ECHOED:
            if name in self.request:
                answer[name] = copy.deepcopy(self.request[name])
        optional = {
            "previous_interaction_id": self.request.get("previous_interaction_id"),
            "labels": copy.deepcopy(self.request.get("labels")),
            "environment_id": self.environment_id,
            "usage": dict(self.usage) if self.usage is not None else None,
            "errors": copy.deepcopy(self.errors) or None,
            "continuation_token": self.continuation_token,
            "input": copy.deepcopy(self.request.get("input")) if include_input else None,
        }
        answer.update({name: value for name, value in optional.items() if value is not None})
        return answer

    def event_view(self) -> dict[str, Any]:
        """The interaction as ``interaction.created`` and ``interaction.completed`` carry it
        (``InteractionSseEventInteraction``: no labels, errors or steps)."""
        answer: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "agent": self.agent,
            "object": "interaction",
            "created": self.created,
            "updated": self.updated,
        }
        if self.usage is not None:
            answer["usage"] = dict(self.usage)
        if self.continuation_token is not None:
            answer["continuation_token"] = self.continuation_token
        return answer


def usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    """A hop's ``Usage``."""
    return {
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
