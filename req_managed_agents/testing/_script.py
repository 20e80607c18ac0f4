"""Script building blocks shared by the emulators: the tool calls a scripted turn makes.

Each emulator has its own turn type (its API's endings and options differ), but a tool call
is the same everywhere, so a test can reuse its calls when it runs against several providers.
So is the handling of scripts: plain strings stand for text-only turns
(:func:`as_script`), a turn's text may be a function of the texts that triggered the turn,
evaluated by :func:`scripted_text`, streamed text goes out in a few pieces
(:func:`text_pieces`), as a model's output does, and the events a turn names or gives are
checked and frozen as it is made (:func:`frozen_events`) and filled in as it plays
(:func:`scripted_event`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, Union

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from typing import Callable, Literal

__all__ = ["PERMISSIONS", "ToolCall", "as_script", "call", "scripted_text", "text_pieces"]

logger = logging.getLogger(__name__)

_Turn = TypeVar("_Turn")


# An event a turn scripts: a type the emulator fills in, or the event itself (its fields).
ScriptedEvent = Union[str, Mapping[str, Any]]

# The permission a server tool call is evaluated to; "allow" runs it at once.
PERMISSIONS = ("allow", "ask", "deny")


@dataclass(frozen=True)
class ToolCall:
    """A tool call a scripted turn makes: ``name`` and its ``input``.

    The other fields only matter for tools the emulated agent runs itself (the Claude
    emulator's ``Turn.server_tool_calls``); client-side tools ignore them, as their results
    come from the client. ``result`` is the tool's output. ``permission`` is what the
    session's permission policy makes of the call: ``"allow"`` runs it, ``"deny"`` refuses it
    with an error result, and ``"ask"`` pauses the turn for a ``user.tool_confirmation``.
    ``mcp_server`` names the MCP server the tool comes from (an ``agent.mcp_tool_use``
    rather than an ``agent.tool_use``). ``elicitation_url`` makes that server ask a person
    first (Claude on Bedrock's ``agent.mcp_elicitation``, with this link): the turn pauses
    until a ``user.mcp_elicitation_response``; ``accept`` runs the call, ``decline`` and
    ``cancel`` end it with an error result.
    """

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    result: str = ""
    permission: Literal["allow", "ask", "deny"] = "allow"
    mcp_server: str | None = None
    elicitation_url: str | None = None

    def __post_init__(self) -> None:
        if self.elicitation_url is not None and self.mcp_server is None:
            raise ValueError("only an MCP server's call (mcp_server=) can ask for an elicitation")
        if self.permission not in PERMISSIONS:
            raise ValueError(f"permission must be one of {PERMISSIONS}, not {self.permission!r}")
        if self.mcp_server == "":
            raise ValueError("mcp_server must name a server (or be None)")


def call(tool_name: str, /, **tool_input: Any) -> ToolCall:
    """Shorthand: ``call("get_weather", city="Paris")`` (any argument name works, ``name`` too)."""
    return ToolCall(tool_name, tool_input)


def as_script(
    script: Sequence[_Turn | str] | None, text_turn: Callable[[str], _Turn]
) -> tuple[_Turn, ...]:
    """A script as a tuple of turns, with plain strings made into text-only turns."""
    return tuple(text_turn(t) if isinstance(t, str) else t for t in script or ())


def scripted_text(text: str | Callable[[list[str]], str], inputs: list[str]) -> tuple[str, str]:
    """A turn's text, and why it failed (``""`` if it did not).

    ``text`` is called with ``inputs`` when it is a function. It is user code: call this
    without the emulator's lock held. When it raises, the error is logged and the failure
    message returned instead of the text.
    """
    if not callable(text):
        return str(text), ""
    try:
        result = text(inputs)
    except Exception as error:
        logger.exception("the scripted text of a turn raised")
        return "", f"the scripted turn text raised {error!r}"
    return str(result), ""


def text_pieces(text: str, count: int) -> list[str]:
    """``text`` cut into at most ``count`` non-empty pieces of about the same size."""
    if not text:
        return []
    size = -(-len(text) // min(count, len(text)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def frozen_events(
    events: Sequence[ScriptedEvent], named: Collection[str]
) -> tuple[ScriptedEvent, ...]:
    """A turn's scripted ``events``, checked and frozen: a name must be one of ``named``
    (the types the emulator fills in), a mapping must give its ``type`` (any)."""
    if isinstance(events, (str, Mapping)):
        raise TypeError("events is a sequence of event types or events, not one of them")
    frozen: list[ScriptedEvent] = []
    for event in events:
        if isinstance(event, str):
            if event not in named:
                choices = ", ".join(sorted(named))
                raise ValueError(
                    f"no event type {event!r} to fill in; give its fields, or one of: {choices}"
                )
            frozen.append(event)
        elif isinstance(event, Mapping):
            kind = event.get("type")
            if not isinstance(kind, str) or not kind:
                raise ValueError(f"a scripted event needs its type: {event!r}")
            frozen.append(MappingProxyType(copy.deepcopy(dict(event))))
        else:
            raise TypeError(f"a scripted event is a type name or a mapping, not {event!r}")
    return tuple(frozen)


def scripted_event(
    scripted: ScriptedEvent, named: Collection[str], filled: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """The event to log for what a turn scripts (without its id): a type of ``named``
    with what ``filled(type)`` gives it, or the given event, its fields over those its type
    is filled with when it is one of ``named``."""
    if isinstance(scripted, str):
        return {"type": scripted, **filled(scripted)}
    kind = str(scripted["type"])
    given = copy.deepcopy(dict(scripted))
    return {"type": kind, **(filled(kind) if kind in named else {}), **given}
