"""Script building blocks shared by the emulators: the tool calls a scripted turn makes.

Each emulator has its own turn type (its API's endings and options differ), but a tool call
is the same everywhere, so a test can reuse its calls when it runs against several providers.
So is the handling of scripts: plain strings stand for text-only turns
(:func:`as_script`), and a turn's text may be a function of the texts that triggered the
turn, evaluated by :func:`scripted_text`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

__all__ = ["ToolCall", "as_script", "call", "scripted_text"]

logger = logging.getLogger(__name__)

_Turn = TypeVar("_Turn")


@dataclass(frozen=True)
class ToolCall:
    """A tool call a scripted turn makes: ``name`` and its ``input``.

    ``result`` is only used for tools the emulated agent runs itself (the Claude emulator's
    ``Turn.server_tool_calls``); the results of client-side tools come from the client.
    """

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    result: str = ""


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
