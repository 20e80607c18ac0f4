"""How providers report the agent's text to their ``on_text`` sink: each delta once, as a
piece (``append``), and a message's whole text only where it must be - a restart, a delta
that lands before the end of the text, the recorded message - so that showing a message of
``n`` deltas costs time linear in its length. What a consumer sees of it is the tracker's
items, checked here through a real :class:`TextTracker` and over the emulators."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from req_managed_agents.errors import APIError
from req_managed_agents.model._stream import (
    MessageDone,
    StreamItem,
    TextDelta,
    TextReset,
    TextTracker,
)
from req_managed_agents.providers._base import Opening
from req_managed_agents.providers._previews import Previews
from req_managed_agents.providers.agentcore._conversation import AgentCoreConversation
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    ConverseTurn,
    OpenAIAgentsEmulator,
    OpenAITurn,
    Turn,
)

TEXT = "The quick brown fox jumps over the lazy dog, twice over."


class Recorded:
    """A text sink that records every report and passes it on to a real tracker."""

    def __init__(self) -> None:
        self.whole: list[tuple[str, str, bool]] = []
        self.pieces: list[tuple[str, str]] = []
        self.items: list[StreamItem] = []
        self._tracker = TextTracker(self.items.append)

    def __call__(self, message: str, text: str, final: bool) -> None:
        self.whole.append((message, text, final))
        self._tracker.update(message, text, final)

    def append(self, message: str, text: str) -> None:
        self.pieces.append((message, text))
        self._tracker.append(message, text)


# -- over the emulators ------------------------------------------------------------------------


def _claude(sink: Recorded) -> Iterator[Any]:
    with ClaudeEmulator([Turn(text=TEXT)]) as emulator, emulator.provider() as provider:
        options = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
        yield provider.open_conversation(options, Opening(lambda e: None, on_text=sink))


def _openai(sink: Recorded) -> Iterator[Any]:
    with OpenAIAgentsEmulator() as emulator, emulator.provider() as provider:
        options = {"agent_id": emulator.add_agent([OpenAITurn(text=TEXT)])}
        yield provider.open_conversation(
            options, Opening(lambda e: None, on_text=sink, prompt="go")
        )


def _agentcore(sink: Recorded) -> Iterator[Any]:
    pytest.importorskip("botocore")
    with AgentCoreEmulator([ConverseTurn(text=TEXT)]) as emulator, emulator.provider() as provider:
        options = {"harness_arn": emulator.add_harness()}
        yield provider.open_conversation(options, Opening(lambda e: None, on_text=sink))


@pytest.mark.parametrize(
    "opened", [_claude, _openai, _agentcore], ids=["claude", "openai", "agentcore"]
)
def test_each_delta_is_reported_once_as_a_piece_and_the_whole_text_once_at_the_end(
    opened: Callable[[Recorded], Iterator[Any]],
) -> None:
    sink = Recorded()
    conversations = opened(sink)
    conversation = next(conversations)
    try:
        turn = conversation.send_prompt("go")
    finally:
        conversation.close()
        conversations.close()
    assert turn.text == TEXT
    (message,) = {m for m, _ in sink.pieces}
    assert len(sink.pieces) > 1, "the text streamed in pieces"
    assert "".join(text for _, text in sink.pieces) == TEXT
    # Nothing else is the whole text but the recorded message (and restarts, which are "").
    assert [report for report in sink.whole if report[1]] == [(message, TEXT, True)]
    handed = sum(len(t) for _, t in sink.pieces) + sum(len(t) for _, t, _ in sink.whole)
    assert handed == 2 * len(TEXT), "each character handed over twice: as it came, and recorded"
    assert "".join(i.text for i in sink.items if isinstance(i, TextDelta)) == TEXT
    assert sink.items[-1] == MessageDone(TEXT, message)


# -- content blocks, restarts and the recorded text --------------------------------------------


def previewed(*steps: tuple[str, int, str]) -> Recorded:
    """``steps`` through :class:`Previews` of message ``m``: ``("add", index, text)``,
    ``("restart", 0, "")`` or ``("finish", 0, text)``."""
    sink = Recorded()
    previews = Previews(sink)
    for kind, index, text in steps:
        if kind == "add":
            previews.add("m", index, text)
        elif kind == "restart":
            previews.restart("m")
        else:
            previews.finish("m", text)
    return sink


def test_blocks_written_in_order_are_appended() -> None:
    sink = previewed(
        ("add", 0, "Hel"), ("add", 0, "lo."), ("add", 1, " Bye."), ("finish", 0, "Hello. Bye.")
    )
    assert sink.items == [
        TextDelta("Hel", "m"),
        TextDelta("lo.", "m"),
        TextDelta(" Bye.", "m"),
        MessageDone("Hello. Bye.", "m"),
    ]
    assert sink.whole == [("m", "Hello. Bye.", True)]


def test_a_delta_to_an_earlier_block_rewrites_the_text_shown() -> None:
    sink = previewed(
        ("add", 1, "world"),
        ("add", 0, "Hello "),  # lands before what was shown: the text changed under it
        ("add", 1, "!"),
        ("finish", 0, "Hello world!"),
    )
    assert sink.items == [
        TextDelta("world", "m"),
        TextReset("m"),
        TextDelta("Hello world", "m"),
        TextDelta("!", "m"),
        MessageDone("Hello world!", "m"),
    ]


def test_a_restarted_preview_shows_only_what_it_adds() -> None:
    sink = previewed(
        ("add", 0, "Hello "),
        ("add", 0, "wor"),
        ("restart", 0, ""),  # a reconnect's event_start: the deltas come again from the start
        ("add", 0, "Hello world"),
        ("finish", 0, "Hello world"),
    )
    assert sink.items == [
        TextDelta("Hello ", "m"),
        TextDelta("wor", "m"),
        TextDelta("ld", "m"),
        MessageDone("Hello world", "m"),
    ]


def test_a_recorded_text_that_differs_from_the_previews_replaces_them() -> None:
    sink = previewed(("add", 0, "Hello wor"), ("add", 1, "ld"), ("finish", 0, "Hello"))
    assert sink.items == [
        TextDelta("Hello wor", "m"),
        TextDelta("ld", "m"),
        TextReset("m"),
        TextDelta("Hello", "m"),
        MessageDone("Hello", "m"),
    ]


# -- AgentCore: an attempt invoked again writes its blocks from the start -----------------------


class RefusedOnce:
    """An AgentCore client whose first invocation streams ``first`` and is then refused (as
    a throttle the service retries), and whose second streams ``second`` to the end."""

    def __init__(self, first: str, second: str) -> None:
        self.texts = [first, second]

    def invoke_harness(
        self, *args: Any, on_event: Callable[[Mapping[str, Any]], None], **kwargs: Any
    ) -> list[Mapping[str, Any]]:
        text = self.texts.pop(0)
        events: list[Mapping[str, Any]] = [
            {"messageStart": {"role": "assistant"}},
            *(
                {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": piece}}}
                for piece in (text[:3], text[3:])
            ),
        ]
        for event in events:
            on_event(event)
        if self.texts:
            raise APIError(429, "ThrottlingException", "slow down", retry_after=0.01)
        for event in (
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "end_turn"}},
        ):
            on_event(event)
        return events


@pytest.mark.parametrize(
    ("second", "shown"),
    [("Hello world", ["Hel", "lo wor", "ld"]), ("Help!", ["Hel", "lo wor", None, "Help!"])],
    ids=["same-text", "other-text"],
)
def test_a_retried_invocation_shows_only_what_it_adds_or_resets_what_it_changed(
    second: str, shown: list[str | None]
) -> None:
    sink = Recorded()
    conversation = AgentCoreConversation(
        RefusedOnce("Hello wor", second),  # type: ignore[arg-type]
        "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/h",
        "s" * 33,
        request_options={},
        idle_timeout=5.0,
        invoke_retries=1,
        qualifier=None,
        on_event=lambda event: None,
        metadata={},
        telemetry_metadata={},
        on_text=sink,
    )
    assert conversation.send_prompt("go").text == second
    texts = [
        i.text if isinstance(i, TextDelta) else None
        for i in sink.items
        if isinstance(i, (TextDelta, TextReset))
    ]
    assert texts == shown
    assert sink.items[-1] == MessageDone(second, "turn-1-block-0")
