"""Gemini interaction events in the canonical vocabulary, and the inputs we create with.

An interaction streams ``interaction.created`` (naming it), ``interaction.status_update``,
its steps (``step.start`` with the step, ``step.delta`` pieces - text, a function call's
``arguments`` as JSON fragments - and ``step.stop``), and ends every hop with
``interaction.completed``, whatever its status - ``requires_action`` included. An
:class:`InteractionFold` folds one interaction's events (or, after a catch-up, the steps the
interaction recorded, which win) into its steps, status and usage; :func:`turn_of` folds the
hops of one of our turns - an interaction and the continuations that followed it - into a
:class:`~req_managed_agents.model.TurnResult`.

Statuses: ``requires_action`` waits for our ``function_result`` steps; ``completed`` ends
the turn (``end_turn``); ``failed``, ``cancelled``, ``incomplete`` and ``budget_exceeded``
end it ``terminated``, the status in ``stop_reason``; ``requires_continuation`` is
continued by the conversation, not a turn's end.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from req_managed_agents._redact import get_logger
from req_managed_agents.model._vocabulary import (
    Image,
    Terminal,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.providers._base import call_arguments, count
from req_managed_agents.transport._json import MAX_ID_CHARS

__all__ = [
    "COMPLETED",
    "CONTINUES",
    "CREATED",
    "ENDED",
    "RECORDED",
    "InteractionFold",
    "function_result",
    "turn_of",
    "usage_of",
    "user_input",
]

_log = get_logger(__name__)

CREATED = "interaction.created"
COMPLETED = "interaction.completed"
STATUS_UPDATE = "interaction.status_update"
STEP_START = "step.start"
STEP_DELTA = "step.delta"
STEP_STOP = "step.stop"
ERROR = "error"
# A catch-up's event: ``{"event_type": RECORDED, "interaction": <GET>}``, what the service
# recorded; the turn takes its steps over the streamed ones.
RECORDED = "rma.interaction.recorded"

CONTINUES = "requires_continuation"
# Where an interaction stops for good or waits for us: our turn ends there.
ENDED = frozenset(
    {"requires_action", "completed", "failed", "cancelled", "incomplete", "budget_exceeded"}
)
# Steps that are an interaction's input, not what the agent did.
_INPUT_STEPS = frozenset({"user_input", "function_result"})
# Steps of tools the service ran itself (observed only), by their call step's type.
_SERVER_CALLS = frozenset(
    {
        "code_execution_call",
        "file_search_call",
        "google_maps_call",
        "google_search_call",
        "mcp_server_tool_call",
        "retrieval_call",
        "tool_search_call",
        "url_context_call",
    }
)

Event = Mapping[str, Any]


def user_input(text: str) -> list[dict[str, Any]]:
    """A user message as an interaction's ``input``: one ``user_input`` step."""
    return [{"type": "user_input", "content": [{"type": "text", "text": text}]}]


def function_result(use: ToolUse, result: ToolResult) -> dict[str, Any]:
    """The ``function_result`` step answering one function call."""
    value: Any = result.content
    if result.blocks:
        value = [_content(block) for block in result.blocks if block != ""]
    return {
        "type": "function_result",
        "call_id": use.id,
        "name": use.name,
        "result": value,
        "is_error": result.is_error,
    }


def _content(block: object) -> dict[str, Any]:
    """A result part: text, or an image inline; a document's text (or a note that a PDF
    was left out) - a function result carries no documents."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, Image):
        data = base64.b64encode(block.data).decode("ascii")
        return {"type": "image", "data": data, "mime_type": block.media_type}
    if getattr(block, "media_type", "") == "text/plain":
        return {"type": "text", "text": getattr(block, "data", b"").decode("utf-8")}
    title = getattr(block, "title", None) or "untitled"
    return {"type": "text", "text": f"[a PDF document ({title}) was left out]"}


def usage_of(raw: object) -> Usage:
    """Gemini counts cached input inside ``total_input_tokens`` (ours keeps it apart), and
    tool-use prompts and thoughts apart (ours counts them as input and output)."""
    if not isinstance(raw, Mapping):
        return Usage()
    cached = count(raw, "total_cached_tokens")
    fresh = count(raw, "total_input_tokens") + count(raw, "total_tool_use_tokens")
    return Usage(
        input_tokens=max(fresh - cached, 0),
        output_tokens=count(raw, "total_output_tokens") + count(raw, "total_thought_tokens"),
        cache_read_input_tokens=cached,
    )


def _text(step: Mapping[str, Any]) -> str:
    content = step.get("content")
    return "".join(
        str(part.get("text", ""))
        for part in (content if isinstance(content, list) else ())
        if isinstance(part, Mapping) and part.get("type") == "text"
    )


@dataclass
class _Step:
    """One step as streamed: what ``step.start`` said, and the pieces its deltas added."""

    step: dict[str, Any]
    text: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)

    def value(self) -> dict[str, Any]:
        step = dict(self.step)
        if self.text:
            step["content"] = [{"type": "text", "text": _text(step) + "".join(self.text)}]
        if self.arguments:
            step["arguments"] = "".join(self.arguments)
        return step


class InteractionFold:
    """One interaction's steps, status and usage, from its events (``add``) or - after a
    catch-up - from what it recorded (``take``), which replaces the steps streamed."""

    def __init__(self, interaction_id: str) -> None:
        self.interaction_id = interaction_id
        self.status: str | None = None
        self.usage: object = None
        self.continuation_token: str | None = None
        self.error: object = None
        self.completed = False
        self._streamed: dict[int, _Step] = {}
        self._recorded: list[dict[str, Any]] | None = None
        # Each streamed model_output step's place among them: its preview's key.
        self._ordinals: dict[int, int] = {}

    def add(self, event: Event) -> tuple[str, str] | None:
        """Fold one event in (``completed`` once it is the interaction's end); for a text
        ``step.delta``, the preview key of its message and the text it adds."""
        kind = event.get("event_type")
        if kind == RECORDED and isinstance(event.get("interaction"), Mapping):
            self.take(event["interaction"])
        elif kind in (CREATED, COMPLETED):
            interaction = event.get("interaction")
            if isinstance(interaction, Mapping):
                self._status(interaction)
                steps = interaction.get("steps")
                if kind == COMPLETED and isinstance(steps, list) and steps:
                    self._recorded = [s for s in steps if isinstance(s, dict)]
            self.completed = self.completed or kind == COMPLETED
        elif kind == STATUS_UPDATE:
            self._status(event)
        elif kind == ERROR:
            self.error = event.get("error")
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            return None
        if kind == STEP_START and isinstance(event.get("step"), Mapping):
            step = dict(event["step"])
            self._streamed[index] = _Step(step)
            if step.get("type") == "model_output" and index not in self._ordinals:
                self._ordinals[index] = len(self._ordinals)
        elif kind == STEP_DELTA:
            return self._delta(index, event.get("delta"))
        return None

    def _delta(self, index: int, delta: object) -> tuple[str, str] | None:
        step = self._streamed.get(index)
        if step is None or not isinstance(delta, Mapping):
            return None
        kind = delta.get("type")
        if kind == "text" and isinstance(delta.get("text"), str):
            step.text.append(delta["text"])
            ordinal = self._ordinals.get(index)
            if ordinal is None:
                return None
            return f"{self.interaction_id}:{ordinal}", str(delta["text"])
        if kind == "arguments_delta" and isinstance(delta.get("arguments"), str):
            step.arguments.append(delta["arguments"])
        return None

    def take(self, interaction: Mapping[str, Any]) -> None:
        """What the interaction recorded (a catch-up's ``GET``): its status, usage and steps."""
        self._status(interaction)
        steps = interaction.get("steps")
        if isinstance(steps, list):
            self._recorded = [s for s in steps if isinstance(s, dict)]
        errors = interaction.get("errors")
        if errors:
            self.error = errors

    def _status(self, holder: Mapping[str, Any]) -> None:
        status = holder.get("status")
        if isinstance(status, str):
            self.status = status
        if holder.get("usage") is not None:
            self.usage = holder.get("usage")
        token = holder.get("continuation_token")
        if isinstance(token, str) and token:
            self.continuation_token = token

    def steps(self) -> list[dict[str, Any]]:
        """What the agent did, in order (the interaction's input left out, and any step
        whose ``type`` is not a string: nothing can be made of it)."""
        if self._recorded is not None:
            steps = self._recorded
        else:
            steps = [self._streamed[i].value() for i in sorted(self._streamed)]
        return [
            step
            for step in steps
            if isinstance(step.get("type"), str) and step["type"] not in _INPUT_STEPS
        ]

    def texts(self) -> list[tuple[str, str]]:
        """Each ``model_output`` step's preview key and text (the n-th such step, streamed
        or recorded, has the same key)."""
        outputs = [step for step in self.steps() if step.get("type") == "model_output"]
        return [(f"{self.interaction_id}:{n}", _text(step)) for n, step in enumerate(outputs)]


def _use(step: Mapping[str, Any]) -> ToolUse | None:
    call_id = step.get("id")
    if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_ID_CHARS:
        _log.warning("leaving out a call step without a usable id: %r", step.get("type"))
        return None
    server = step.get("server_name")
    return ToolUse(
        call_id,
        str(step.get("name") or step.get("type") or ""),
        call_arguments(step.get("arguments")),
        mcp_server=server if isinstance(server, str) else None,
    )


def turn_of(hops: Sequence[InteractionFold], events: Sequence[Event]) -> TurnResult:
    """One of our turns - an interaction and the continuations after it - as a
    :class:`TurnResult`: the last hop's status ends it; text, calls and usage add up."""
    texts: list[str] = []
    observed: list[ToolUse] = []
    usage = Usage()
    for hop in hops:
        usage = usage + usage_of(hop.usage)
        for step in hop.steps():
            kind = step.get("type")
            if kind == "model_output":
                text = _text(step)
                if text:
                    texts.append(text)
            elif kind in _SERVER_CALLS:
                use = _use(step)
                if use is not None:
                    observed.append(use)
    last = hops[-1]
    terminal, stop_reason = _terminal(last)
    uses: tuple[ToolUse, ...] = ()
    if terminal == "requires_action":
        uses = tuple(_uses_of(last))
        if not uses:
            terminal, stop_reason = "terminated", {"type": "unsupported_action"}
    return TurnResult(
        terminal,
        text="\n".join(texts),
        tool_uses=uses,
        server_tool_uses=tuple(observed),
        usage=usage,
        stop_reason=stop_reason,
        events=tuple(events),
    )


def _uses_of(hop: InteractionFold) -> list[ToolUse]:
    found = (_use(s) for s in hop.steps() if s.get("type") == "function_call")
    return [use for use in found if use is not None]


def _terminal(hop: InteractionFold) -> tuple[Terminal, Any]:
    status = hop.status
    if status == "requires_action":
        return "requires_action", {"type": "requires_action"}
    if status == "completed":
        return "end_turn", {"type": "end_turn"}
    reason: dict[str, Any] = {"type": status or "unknown"}
    if hop.error is not None:
        reason["error"] = hop.error
    return "terminated", reason
