"""The agent's text as a provider with content blocks streams it: Claude's ``event_delta``
previews (per content block ``index``), OpenAI's ``output_text.delta`` (per ``content_index``).

A message's text so far is its blocks in index order. Blocks are written one after the
other, so a delta almost always extends the last block - the end of the text - and goes to
the sink as a piece (:meth:`TextSink.append`), at its own cost. A delta to an earlier block
changes the text before its end: then, and only then, the message's whole text is reported.
"""

from __future__ import annotations

from req_managed_agents.providers._base import TextSink

__all__ = ["Previews"]


class _Blocks:
    """One message's text so far: the pieces of each block, and the last block's index."""

    __slots__ = ("last", "pieces")

    def __init__(self, index: int) -> None:
        self.last = index
        self.pieces: dict[int, list[str]] = {}

    def text(self) -> str:
        return "".join("".join(self.pieces[index]) for index in sorted(self.pieces))


class Previews:
    """The text of each message being written, reported to ``sink`` (one driving thread)."""

    def __init__(self, sink: TextSink) -> None:
        self._sink = sink
        self._messages: dict[str, _Blocks] = {}

    def add(self, message: str, index: int, text: str) -> None:
        """``text`` was written at the end of block ``index`` of ``message``."""
        blocks = self._messages.get(message)
        if blocks is None:
            blocks = self._messages[message] = _Blocks(index)
        blocks.pieces.setdefault(index, []).append(text)
        if index >= blocks.last:
            blocks.last = index
            self._sink.append(message, text)
        else:
            self._sink(message, blocks.text(), False)

    def restart(self, message: str) -> None:
        """The preview of ``message`` starts over (a reconnect's ``event_start``): its
        deltas come again from the start."""
        self._messages.pop(message, None)
        self._sink(message, "", False)

    def finish(self, message: str, text: str) -> None:
        """``message`` as the provider recorded it: its text is settled."""
        self._messages.pop(message, None)
        self._sink(message, text, True)
