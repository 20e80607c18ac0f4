"""The text tracker's delta path: a provider that reports each piece of text as it comes
(``append``) gets exactly the items it would get by reporting the message's whole text so far
each time - the rules ``tests/drivers/test_stream.py`` checks - at the cost of the piece.

``Reference`` below is those rules written over whole texts, as the tracker applied them
before it took pieces; every sequence of reports, pieces and restarts must give the same
items through both.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents.model._stream import (
    MessageDone,
    StreamItem,
    TextDelta,
    TextReset,
    TextTracker,
)


class Reference:
    """Exactly-once text items from "the whole text of message M so far" reports."""

    def __init__(self) -> None:
        self.items: list[StreamItem] = []
        self.shown: dict[str, str] = {}
        self.done: set[str] = set()

    def update(self, message: str, text: str, final: bool) -> None:
        if message in self.done:
            return
        shown = self.shown.get(message, "")
        if text.startswith(shown):
            if len(text) > len(shown):
                self.items.append(TextDelta(text[len(shown) :], message))
                self.shown[message] = text
        elif not shown.startswith(text) or final:
            self.items.append(TextReset(message))
            if text:
                self.items.append(TextDelta(text, message))
            self.shown[message] = text
        if final:
            self.done.add(message)
            self.shown.pop(message, None)
            self.items.append(MessageDone(text, message))


def test_pieces_appended_to_a_message_yield_each_piece() -> None:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    for piece in ("Hel", "lo", "", "!"):
        tracker.append("m", piece)
    tracker.update("m", "Hello!", True)
    assert items == [
        TextDelta("Hel", "m"),
        TextDelta("lo", "m"),
        TextDelta("!", "m"),
        MessageDone("Hello!", "m"),
    ]


def test_a_restarted_message_replays_its_pieces_silently_then_goes_on() -> None:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    tracker.append("m", "Hello ")
    tracker.append("m", "wor")
    tracker.update("m", "", False)  # a reconnect's event_start: the preview starts over
    tracker.append("m", "Hel")
    tracker.append("m", "lo world")  # catches up, then goes past what was shown
    tracker.update("m", "Hello world", True)
    assert items == [
        TextDelta("Hello ", "m"),
        TextDelta("wor", "m"),
        TextDelta("ld", "m"),
        MessageDone("Hello world", "m"),
    ]


def test_a_replayed_piece_that_says_something_else_resets_the_message() -> None:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    tracker.append("m", "Hello wor")
    tracker.update("m", "", False)  # a retried attempt...
    tracker.append("m", "Hel")
    tracker.append("m", "p!")  # ...that wrote something else
    tracker.append("m", " Now")
    tracker.update("m", "Help! Now", True)
    assert items == [
        TextDelta("Hello wor", "m"),
        TextReset("m"),
        TextDelta("Help!", "m"),
        TextDelta(" Now", "m"),
        MessageDone("Help! Now", "m"),
    ]


def test_pieces_of_a_finished_message_yield_nothing() -> None:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    tracker.update("m", "Hi", True)
    tracker.append("m", " again")
    assert items == [TextDelta("Hi", "m"), MessageDone("Hi", "m")]


# Reports over two messages: a piece appended, the whole text so far (a restart to "", a
# prefix of it, or anything else), or the final text.
_TEXT = st.text(alphabet="ab", max_size=4)
_REPORT = st.tuples(
    st.sampled_from(["m", "n"]),
    st.sampled_from(["append", "whole", "restart", "prefix", "final"]),
    _TEXT,
    st.integers(min_value=0, max_value=8),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_REPORT, max_size=24))
def test_pieces_yield_what_whole_texts_would(
    reports: list[tuple[str, str, str, int]],
) -> None:
    items: list[StreamItem] = []
    tracker = TextTracker(items.append)
    reference = Reference()
    so_far: dict[str, str] = {}  # each message's text so far, as the provider has it
    for message, kind, text, cut in reports:
        if kind == "append":
            so_far[message] = so_far.get(message, "") + text
            tracker.append(message, text)
            reference.update(message, so_far[message], False)
            continue
        if kind == "restart":
            text = ""
        elif kind == "prefix":
            text = so_far.get(message, "")[:cut]
        final = kind == "final"
        so_far[message] = "" if final else text
        tracker.update(message, text, final)
        reference.update(message, text, final)
    assert items == reference.items
