"""Tests for the server-sent events decoder, against the WHATWG event-stream rules."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import pickle
import re
import time
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents import sse
from req_managed_agents.errors import EventTooLargeError, StreamError
from req_managed_agents.sse import DEFAULT_MAX_EVENT_SIZE, ServerSentEvent, SSEDecoder

BOM = b"\xef\xbb\xbf"


# --- reference and helpers --------------------------------------------------------------------


def reference_decode(stream: bytes) -> tuple[list[ServerSentEvent], str | None]:
    """The WHATWG algorithm applied literally, one byte and one line at a time, to a whole stream.

    Returns the events and the last event id committed by the end of the stream.
    """
    if stream.startswith(BOM):
        stream = stream[len(BOM) :]
    lines: list[bytes] = []
    line_start = position = 0
    while position < len(stream):
        byte = stream[position : position + 1]
        if byte in (b"\r", b"\n"):
            lines.append(stream[line_start:position])
            if stream[position : position + 2] == b"\r\n":
                position += 1
            line_start = position + 1
        position += 1
    # Whatever follows the last line end is a line the stream ended inside of: dropped.

    events: list[ServerSentEvent] = []
    data_buffer = ""
    event_type_buffer = ""
    id_buffer: str | None = None
    retry: int | None = None
    last_event_id: str | None = None
    for raw_line in lines:
        line = raw_line.decode("utf-8", "replace")
        if line == "":
            last_event_id = id_buffer
            if data_buffer:
                event_type = event_type_buffer or "message"
                data = data_buffer[:-1]  # the buffer always ends with the LF a data line added
                events.append(ServerSentEvent(event_type, data, id_buffer, retry))
            data_buffer = event_type_buffer = ""
            retry = None
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = line, ""
        if name == "data":
            data_buffer += value + "\n"
        elif name == "event":
            event_type_buffer = value
        elif name == "id":
            if "\0" not in value:
                id_buffer = value
        elif name == "retry" and value and all(digit in "0123456789" for digit in value):
            retry = int(value)
    return events, last_event_id


@contextlib.contextmanager
def columnar_from(blocks: int) -> Iterator[None]:
    """Let chunks of only ``blocks`` blocks take the column-wise path, to test it on small input."""
    saved = sse._MIN_COLUMNAR_BLOCKS
    sse._MIN_COLUMNAR_BLOCKS = blocks
    try:
        yield
    finally:
        sse._MIN_COLUMNAR_BLOCKS = saved


def decode(chunks: list[bytes]) -> tuple[list[ServerSentEvent], str | None]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    events += decoder.close()
    return events, decoder.last_event_id


def events_of(*chunks: bytes) -> list[ServerSentEvent]:
    return decode(list(chunks))[0]


def message(data: str, id: str | None = None, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(event=event, data=data, id=id, retry=None)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cut % (len(data) + 1) for cut in cuts), len(data)]
    return [data[start:end] for start, end in zip(bounds, bounds[1:])]


def every_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# --- line ends --------------------------------------------------------------------------------


def test_lf_ends_lines() -> None:
    assert events_of(b"data: a\ndata: b\n\n") == [message("a\nb")]


def test_cr_ends_lines() -> None:
    assert events_of(b"data: a\rdata: b\r\r") == [message("a\nb")]


def test_crlf_ends_lines() -> None:
    assert events_of(b"data: a\r\ndata: b\r\n\r\n") == [message("a\nb")]


def test_cr_and_lf_in_different_chunks_are_one_line_end() -> None:
    # Were the LF a second line end, it would be a blank line dispatching "a" alone.
    assert events_of(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [message("a\nb")]


def test_cr_at_chunk_end_with_empty_chunks_between() -> None:
    assert events_of(b"data: a\r", b"", b"", b"\ndata: b\n\n") == [message("a\nb")]


@pytest.mark.parametrize("stream", [b"data: a\r\r\n", b"data: a\n\r\n", b"data: a\r\r"])
def test_mixed_line_ends_dispatch_without_waiting(stream: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(stream) == [message("a")]
    assert decoder.feed(b"\n") == []
    assert decoder.close() == []


def test_unicode_line_separators_are_not_line_ends() -> None:
    data = "a\u2028b\u2029c\x85d\x0be\x0cf"
    assert events_of(f"data: {data}\n\n".encode()) == [message(data)]


# --- bytes and characters ---------------------------------------------------------------------


def test_leading_bom_is_stripped() -> None:
    assert events_of(BOM + b"data: x\n\n") == [message("x")]


def test_leading_bom_split_across_chunks_is_stripped() -> None:
    assert events_of(*every_byte(BOM + b"data: x\n\n")) == [message("x")]
    assert events_of(BOM[:2], BOM[2:] + b"data: x\n\n") == [message("x")]


def test_second_bom_is_not_stripped() -> None:
    # The second BOM starts the field name, which makes the line an unknown field.
    assert events_of(BOM + BOM + b"data: x\n\n") == []
    assert events_of(BOM, BOM + b"data: x\n\n") == []


def test_bom_after_the_stream_start_is_not_stripped() -> None:
    assert events_of(b"data: a\n\n" + BOM + b"data: b\n\n") == [message("a")]


def test_bytes_that_only_begin_a_bom_are_kept() -> None:
    # EF BB followed by "d" is no BOM: the bytes stay, are invalid UTF-8 and start the name.
    assert events_of(b"\xef\xbb", b"data: x\n\n") == []
    assert events_of(b"\xef", b"\xbbdata: x\n\n\xef\xbb\xbfdata: y\n\n") == []


def test_utf8_sequence_split_across_chunks() -> None:
    text = "é€😀 ok"
    stream = f"data: {text}\nid: {text}\n\n".encode()
    assert events_of(*every_byte(stream)) == [message(text, id=text)]


def test_invalid_utf8_becomes_replacement_character() -> None:
    assert events_of(b"data: a\xffb\xfe\n\n") == [message("a\ufffdb\ufffd")]
    # A truncated sequence becomes one U+FFFD, and the line end after it still counts.
    assert events_of(b"data: \xe2\x82\n\n") == [message("\ufffd")]
    assert events_of(b"event: \xf0\x9f\ndata: x\n\n") == [message("x", event="\ufffd")]


# --- lines and fields -------------------------------------------------------------------------


def test_comments_are_ignored() -> None:
    stream = b": hello\n:\n:\0nul\0\n" + b":" + b"x" * 100_000 + b"\ndata: x\n\n"
    assert events_of(stream) == [message("x")]
    assert events_of(*split(stream, list(range(0, len(stream), 997)))) == [message("x")]


def test_comment_only_blocks_dispatch_nothing() -> None:
    assert events_of(b": ping\n\n: ping\n\n") == []


def test_field_without_colon_has_empty_value() -> None:
    assert events_of(b"data\n\n") == [message("")]


def test_two_bare_data_fields_give_one_newline() -> None:
    assert events_of(b"data\ndata\n\n") == [message("\n")]


def test_exactly_one_space_is_stripped() -> None:
    assert events_of(b"data:  x \n\n") == [message(" x ")]
    assert events_of(b"data:x\n\n") == [message("x")]
    assert events_of(b"data: \n\n") == [message("")]


def test_value_is_split_at_the_first_colon() -> None:
    assert events_of(b"data: a: b:c\n\n") == [message("a: b:c")]


def test_unknown_fields_are_ignored() -> None:
    assert events_of(b"foo: bar\nData: x\ndata : y\ndata: z\n\n") == [message("z")]


def test_empty_event_type_is_message() -> None:
    assert events_of(b"event:\ndata: x\n\n") == [message("x")]
    assert events_of(b"event: \ndata: x\n\n") == [message("x")]


def test_event_type_applies_to_its_block_only() -> None:
    assert events_of(b"event: add\ndata: 1\n\ndata: 2\n\n") == [
        message("1", event="add"),
        message("2"),
    ]


# --- ids --------------------------------------------------------------------------------------


def test_no_id_is_none() -> None:
    assert events_of(b"data: x\n\n") == [message("x", id=None)]
    assert SSEDecoder().last_event_id is None


def test_id_persists_across_events() -> None:
    events, last_event_id = decode([b"id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n"])
    assert events == [message("a", id="1"), message("b", id="1"), message("c", id="2")]
    assert last_event_id == "2"


@pytest.mark.parametrize("value", ["\0\0", "x\0", "\0x"])
def test_id_with_nul_is_ignored(value: str) -> None:
    stream = f"id: 1\ndata: a\n\nid: {value}\ndata: b\n\n".encode()
    events, last_event_id = decode([stream])
    assert events == [message("a", id="1"), message("b", id="1")]
    assert last_event_id == "1"


def test_empty_id_resets_to_empty_string() -> None:
    events, last_event_id = decode([b"id: 1\ndata: a\n\nid\ndata: b\n\nid:\ndata: c\n\n"])
    assert events == [message("a", id="1"), message("b", id=""), message("c", id="")]
    assert last_event_id == ""


def test_id_is_committed_by_a_block_without_data() -> None:
    events, last_event_id = decode([b"id: 7\n\n"])
    assert events == []
    assert last_event_id == "7"


def test_id_then_data_then_ping_yields_one_event() -> None:
    events, last_event_id = decode([b"id: 1\n\ndata: x\n\n: ping\n\n"])
    assert events == [message("x", id="1")]
    assert last_event_id == "1"


def test_id_is_committed_only_at_dispatch() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 1\ndata: a\n") == []
    assert decoder.last_event_id is None
    assert decoder.feed(b"\n") == [message("a", id="1")]
    assert decoder.last_event_id == "1"


# --- retry ------------------------------------------------------------------------------------


def test_retry_with_ascii_digits_is_reported_on_its_event() -> None:
    assert events_of(b"retry: 1000\ndata: a\n\ndata: b\n\n") == [
        ServerSentEvent("message", "a", None, 1000),
        message("b"),
    ]


@pytest.mark.parametrize("value", ["1000x", "-5", "+5", "", " 5", "5 ", "1e3", "١٢", "²"])
def test_retry_without_only_ascii_digits_is_ignored(value: str) -> None:
    stream = f"retry: 7\nretry: {value}\ndata: a\n\n".encode()
    assert events_of(stream) == [ServerSentEvent("message", "a", None, 7)]


def test_retry_too_long_to_parse_is_ignored() -> None:
    assert events_of(b"retry: " + b"9" * 5000 + b"\ndata: a\n\n") == [message("a")]


# --- dispatch ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stream", [b"id: 1\n\n", b"event: add\n\n", b"retry: 5\n\n", b"foo\n\n", b"\n\n\n"]
)
def test_block_without_data_dispatches_nothing(stream: bytes) -> None:
    assert events_of(stream) == []


def test_block_without_data_resets_the_event_type() -> None:
    assert events_of(b"event: add\n\ndata: x\n\n") == [message("x")]


def test_incomplete_event_at_close_is_discarded_and_its_id_not_committed() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n") == [message("a", id="1")]
    assert decoder.close() == []
    assert decoder.last_event_id == "1"


def test_unterminated_last_line_is_discarded() -> None:
    assert events_of(b"data: a\n\ndata: b") == [message("a")]


def test_decoder_is_reusable_after_close() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: half")
    decoder.close()
    # A new stream: the BOM is stripped again, and the uncommitted id 2 is gone.
    assert decoder.feed(BOM + b"data: b\n\n") == [message("b", id="1")]


# --- the examples of the WHATWG section -------------------------------------------------------


def test_spec_example_comment_ids_and_leading_space() -> None:
    stream = (
        b": test stream\n\n"
        b"data: first event\nid: 1\n\n"
        b"data:second event\nid\n\n"
        b"data:  third event\n"
    )
    first, second = message("first event", id="1"), message("second event", id="")
    # The last block is not followed by a blank line; the end of the stream does not do it.
    assert decode([stream]) == ([first, second], "")
    assert decode([stream + b"\n"]) == ([first, second, message(" third event", id="")], "")


def test_spec_example_empty_data() -> None:
    assert events_of(b"data\n\ndata\ndata\n\ndata:") == [message(""), message("\n")]


def test_spec_example_space_after_colon_is_optional() -> None:
    assert events_of(b"data:test\n\ndata: test\n\n") == [message("test"), message("test")]


def test_spec_example_event_types_and_multiline_data() -> None:
    stream = (
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\n"
        b"event: add\ndata: 113411\n\n"
        b"data: YHOO\ndata: +2\ndata: 10\n\n"
    )
    assert events_of(stream) == [
        message("73857293", event="add"),
        message("2153", event="remove"),
        message("113411", event="add"),
        message("YHOO\n+2\n10"),
    ]


# --- the event type ---------------------------------------------------------------------------


def test_event_json_parses_data() -> None:
    assert message('{"a": [1, null]}').json() == {"a": [1, None]}


def test_event_is_frozen_comparable_and_picklable() -> None:
    event = ServerSentEvent("add", "x", "1", 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "y"  # type: ignore[misc]
    assert event == ServerSentEvent("add", "x", "1", 5)
    assert hash(event) == hash(ServerSentEvent("add", "x", "1", 5))
    assert pickle.loads(pickle.dumps(event)) == event
    assert copy.deepcopy(event) == event
    assert dataclasses.replace(event, data="y").data == "y"
    assert [field.name for field in dataclasses.fields(event)] == ["event", "data", "id", "retry"]


def test_events_built_in_batches_equal_constructed_ones() -> None:
    stream = b"".join(b"event: e\nid: %d\ndata: %d\n\n" % (i, i) for i in range(50))
    events = events_of(stream)
    assert events == [message(str(i), id=str(i), event="e") for i in range(50)]
    assert repr(events[3]) == "ServerSentEvent(event='e', data='3', id='3', retry=None)"


# --- the column-wise path on realistic batches ------------------------------------------------


def cma_stream(count: int) -> bytes:
    events = []
    for i in range(count):
        payload = json.dumps({"type": "agent.message", "id": f"sevt_{i}", "text": "héllo " * 9})
        events.append(f"event: agent.message\nid: evt_{i}\ndata: {payload}\n\n")
    return "".join(events).encode()


@pytest.mark.parametrize(
    "stream",
    [
        cma_stream(40),
        cma_stream(40).replace(b"\n", b"\r\n"),
        cma_stream(40).replace(b"id: evt_7\n", b"id: evt_7\nretry: 10\n"),
        cma_stream(40).replace(b"id: evt_7\n", b"id: \0\n"),
        cma_stream(40).replace(b"id: evt_7\n", b"id:evt_7\n"),
        cma_stream(40).replace(b"event: agent.message\n", b"event: \n"),
        cma_stream(40).replace(b"event: agent.message\n", b"foo: bar\n"),
        cma_stream(40).replace(b"event: agent.message\n", b": keepalive\n"),
        cma_stream(40).replace(b"event: agent.message\n", b"data: first line\n"),
        cma_stream(40).replace(b"event: agent.message\n", b"id: early\n"),
        cma_stream(40).replace(b"id: evt_3\n", b"event: other\n"),
        cma_stream(40).replace(b"data: ", b"other: "),
        b"".join(b"data: %d\n\n" % i for i in range(40)),
        b"".join(b"id: %d\n\n" % i for i in range(40)),
    ],
)
def test_many_events_of_one_shape_match_the_reference(stream: bytes) -> None:
    expected = reference_decode(stream)
    assert decode([stream]) == expected
    assert decode(split(stream, list(range(0, len(stream), 1000)))) == expected


def test_many_events_of_one_shape_are_decoded_column_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fast path is what makes the decoder fast; make sure the usual stream takes it.
    def line_by_line(*args: object) -> None:
        raise AssertionError("the blocks were interpreted line by line")

    monkeypatch.setattr(SSEDecoder, "_interpret", line_by_line)
    assert decode([cma_stream(40)]) == reference_decode(cma_stream(40))


@pytest.mark.parametrize(
    "stream",
    [
        b"event: a\ndata: 1\n\nid: 7\ndata: 2\n\n",  # ids in some blocks only
        b"id: 1\ndata: 1\n\nid: 2\ndata: 2\n\ndata: 3\n\n",
        b"data: 1\n\ndata: 2\n\n\ndata: 3\n\n",  # a blank line more between two
        b"data: 1\n\ndata:2\n\n",
        b"id: 1\nevent: a\ndata: 1\n\n",
        b"event: \nid: \ndata: \n\n",
        b"data: a: b\n\ndata:  two spaces\n\n",
    ],
)
def test_few_blocks_in_a_chunk_match_the_reference(stream: bytes) -> None:
    # An id in force before them, for the blocks that set none.
    assert decode([b"id: before\n\n", stream]) == reference_decode(b"id: before\n\n" + stream)


# --- properties -------------------------------------------------------------------------------

value_text = st.text(
    st.one_of(
        st.sampled_from([" ", ":", "\0", "\u2028", "\x85", "\ufeff", "é", "😀", "1", "x"]),
        st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]),
    ),
    max_size=6,
)
field_name = st.sampled_from(["data", "event", "id", "retry", "", "foo", "Data", "\ufeffdata"])
line_end = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def any_line(draw: st.DrawFn) -> str:
    name = draw(field_name)
    separator = draw(st.sampled_from(["", ":", ": ", ":  "]))
    value = draw(value_text) if separator else ""
    if draw(st.booleans()) and draw(st.booleans()):
        return ""  # a blank line
    if name == "retry" and draw(st.booleans()):
        value = str(draw(st.integers(min_value=0, max_value=10**6)))
    return name + separator + value


@st.composite
def loose_streams(draw: st.DrawFn) -> bytes:
    """Any lines, each with its own line end: shapes the general rules must handle."""
    lines = draw(st.lists(st.tuples(any_line(), line_end), max_size=25))
    text = "".join(line + end for line, end in lines)
    stream = draw(st.sampled_from([b"", BOM])) + text.encode()
    if draw(st.booleans()):
        stream = stream[: draw(st.integers(min_value=0, max_value=len(stream)))]
    return stream


@st.composite
def uniform_streams(draw: st.DrawFn) -> bytes:
    """Blocks that repeat one shape of ``name: value`` lines: what the column-wise path takes.

    A few blocks may be altered so that the shape no longer holds everywhere.
    """
    shape = draw(st.lists(field_name, min_size=1, max_size=4))
    end = draw(line_end)
    blocks = []
    for _ in range(draw(st.integers(min_value=0, max_value=24))):
        lines = [f"{name}: {draw(value_text)}" for name in shape]
        if draw(st.integers(min_value=0, max_value=9)) == 0:
            lines.insert(draw(st.integers(0, len(lines))), draw(any_line()))
        blocks.append("".join(line + end for line in lines) + end)
    return "".join(blocks).encode()


byte_soup = st.lists(
    st.sampled_from(
        [
            *(b"data", b"data:", b": ", b"id: ", b"event:", b"retry: 9", b"x", b" ", b"\0"),
            *(b"\n", b"\r", b"\r\n", b"\n\n", BOM, b"\xc3\xa9", b"\xe2\x82", b"\xac", b"\xff"),
            b"\xed\xa0\x80",  # an encoded surrogate, which UTF-8 forbids
        ]
    ),
    max_size=40,
).map(b"".join)

streams = st.one_of(loose_streams(), uniform_streams(), byte_soup, st.binary(max_size=80))


@settings(max_examples=400, deadline=None)
@given(streams, st.lists(st.integers(min_value=0), max_size=12))
def test_any_chunking_gives_the_reference_events(stream: bytes, cuts: list[int]) -> None:
    expected = reference_decode(stream)
    assert decode([stream]) == expected
    assert decode(split(stream, cuts)) == expected
    assert decode(every_byte(stream)) == expected
    with columnar_from(1):
        assert decode([stream]) == expected
        assert decode(split(stream, cuts)) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(uniform_streams(), min_size=1, max_size=4), st.lists(st.integers(0), max_size=8))
def test_concatenated_uniform_runs_give_the_reference_events(
    runs: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(runs)
    expected = reference_decode(stream)
    with columnar_from(2):
        assert decode(split(stream, cuts)) == expected
    assert decode(split(stream, cuts)) == expected


# --- large events -----------------------------------------------------------------------------


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_large_single_line_event_in_small_chunks() -> None:
    payload = ("x" * 1023 + "é") * 4096  # 4 MiB of characters, a two-byte one every KiB
    stream = f"id: big\ndata: {payload}\n\ndata: after\n\n".encode()
    events = events_of(*chunked(stream, 4096))
    assert events == [message(payload, id="big"), message("after", id="big")]


def test_large_multiline_event_in_small_chunks() -> None:
    lines = [f"line {i} " + "y" * 90 for i in range(40_000)]
    stream = "".join(f"data: {line}\r\n" for line in lines).encode() + b"\r\n"
    assert events_of(*chunked(stream, 4096)) == [message("\n".join(lines))]


def test_large_event_in_tiny_chunks_takes_linear_time() -> None:
    payload = "z" * (2 << 20)
    chunks = chunked(f"data: {payload}\n\n".encode(), 16)
    start = time.perf_counter()
    events = events_of(*chunks)
    elapsed = time.perf_counter() - start
    assert events == [message(payload)]
    # Linear work takes well under a second; rescanning or copying the buffered event on
    # each of the 131,073 chunks would take minutes.
    assert elapsed < 10


# --- the size limit ---------------------------------------------------------------------------


def held_sizes(stream: bytes) -> list[int]:
    """What the decoder must hold for each event, by the documented rule, line by line.

    An event runs from the end of the blank line before it (or the stream start) to its last
    line end, each line end counting one byte; the unterminated rest of the stream counts too.
    Blank lines between events (or before the first) hold nothing.
    """
    *lines, rest = re.sub(rb"\r\n?", b"\n", stream).split(b"\n")
    sizes: list[int] = []
    size = line_count = 0
    for line in lines:
        if not line and line_count:
            sizes.append(size)
            size = line_count = 0
        elif not line:
            continue
        else:
            size += len(line) + 1
            line_count += 1
    return [*sizes, size + len(rest)]


def decode_until_too_large(
    chunks: list[bytes], limit: int
) -> tuple[list[ServerSentEvent], EventTooLargeError | None]:
    decoder = SSEDecoder(max_event_size=limit)
    events: list[ServerSentEvent] = []
    try:
        for chunk in chunks:
            events += decoder.feed(chunk)
    except EventTooLargeError as error:
        return events, error
    return events + decoder.close(), None


def sized_event(size: int) -> bytes:
    """An event of exactly ``size`` bytes, its blank line not counted; its data starts at 23."""
    head = b"event: big\nid: 1\ndata: "
    return head + b"x" * (size - len(head) - 1) + b"\n"


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_EVENT_SIZE == 16 * 1024 * 1024
    stream = sized_event(DEFAULT_MAX_EVENT_SIZE) + b"\n"
    assert decode_until_too_large(chunked(stream, 1 << 20), DEFAULT_MAX_EVENT_SIZE)[1] is None
    decoder = SSEDecoder()
    *below, over = chunked(b"x" + stream, 1 << 20)
    for chunk in below:
        decoder.feed(chunk)
    with pytest.raises(EventTooLargeError):
        decoder.feed(over)


@pytest.mark.parametrize("limit", [0, -1])
def test_limit_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match="max_event_size"):
        SSEDecoder(max_event_size=limit)


def test_error_is_a_stream_error_that_says_how_big_and_the_limit() -> None:
    events, error = decode_until_too_large([b"data: " + b"x" * 200], 100)
    assert events == []
    assert isinstance(error, EventTooLargeError)
    assert isinstance(error, StreamError)
    assert isinstance(error, ValueError)
    assert error.limit == 100
    assert "206 bytes" in str(error)
    assert "limit of 100 bytes" in str(error)


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 10_000])
def test_long_line_without_line_end_is_cut_off(chunk_size: int) -> None:
    decoder = SSEDecoder(max_event_size=100)
    line = b"data: " + b"x" * 94  # exactly the limit, no line end yet
    for chunk in chunked(line, chunk_size):
        assert decoder.feed(chunk) == []
    with pytest.raises(EventTooLargeError, match="101 bytes"):
        decoder.feed(b"x")


@pytest.mark.parametrize("chunk_size", [1, 8, 100, 100_000])
def test_many_data_lines_never_ending_are_cut_off(chunk_size: int) -> None:
    stream = b"data: x\n" * 10_000
    decoder = SSEDecoder(max_event_size=1000)
    fed = 0
    for chunk in chunked(stream, chunk_size):
        try:
            decoder.feed(chunk)
        except EventTooLargeError:
            break
        fed += len(chunk)
    # It raises with the chunk that goes over the limit, not later.
    assert fed <= 1000 < fed + chunk_size


@pytest.mark.parametrize(
    "stream",
    [
        sized_event(1000) + b"\n",
        b"data: a\n\n" + sized_event(1000) + b"\n",
        b"data: a\n\n" + sized_event(1000) + b"\ndata: b\n\n",
        sized_event(1000).replace(b"\n", b"\r\n") + b"\r\n",
        sized_event(1000).replace(b"\n", b"\r") + b"\r",
    ],
)
def test_event_exactly_at_the_limit_passes_however_chunked(stream: bytes) -> None:
    expected = reference_decode(stream)
    for size in (1, 2, 3, 999, 1000, 1001, len(stream)):
        assert decode_until_too_large(chunked(stream, size), 1000) == (expected[0], None)
    over = stream.replace(b"xxx", b"xxxx", 1)
    for size in (1, 2, 3, 999, 1000, 1001, len(over)):
        assert decode_until_too_large(chunked(over, size), 1000)[1] is not None


def test_event_completed_by_the_chunk_that_puts_it_over_the_limit_raises() -> None:
    decoder = SSEDecoder(max_event_size=1000)
    assert decoder.feed(sized_event(998)[:-1]) == []  # 997 bytes pending, line still open
    with pytest.raises(EventTooLargeError, match="1001 bytes"):
        decoder.feed(b"xyz\n\ndata: small\n\n")


def test_chunk_bigger_than_the_limit() -> None:
    small = b"".join(b"id: %d\ndata: %d\n\n" % (i, i) for i in range(100))
    assert decode_until_too_large([small], 30) == (reference_decode(small)[0], None)
    with pytest.raises(EventTooLargeError, match="31 bytes"):
        SSEDecoder(max_event_size=30).feed(small + sized_event(31) + b"\n" + small)


def test_after_the_error_the_stream_is_refused_until_close() -> None:
    decoder = SSEDecoder(max_event_size=100)
    assert decoder.feed(b"id: 1\ndata: a\n\n") == [message("a", id="1")]
    # The chunk's complete event is not returned, so its id is not committed either.
    with pytest.raises(EventTooLargeError):
        decoder.feed(b"id: 2\ndata: b\n\n" + b"data: " + b"x" * 100)
    assert decoder.last_event_id == "1"
    assert decoder._pending == []  # the buffered event is dropped at once
    # What follows the cut-off event cannot be parsed: the rest of the stream is refused.
    with pytest.raises(EventTooLargeError, match=r"close\(\)"):
        decoder.feed(b"x\n\ndata: c\n\n")
    assert decoder.close() == []
    assert decoder.feed(BOM + b"data: d\n\n") == [message("d", id="1")]


def test_size_counts_bytes_not_characters() -> None:
    line = "data: " + "é" * 47 + "\n"  # 54 characters, 101 bytes
    assert decode_until_too_large([line.encode() + b"\n"], 101)[1] is None
    assert decode_until_too_large(every_byte(line.encode()), 100)[1] is not None


@settings(max_examples=300, deadline=None)
@given(
    streams,
    st.lists(st.integers(min_value=0), max_size=12),
    st.integers(min_value=1, max_value=40),
)
def test_limit_holds_by_the_documented_rule_however_chunked(
    stream: bytes, cuts: list[int], limit: int
) -> None:
    too_large = max(held_sizes(stream)) > limit
    expected = reference_decode(stream)[0]
    for chunks in ([stream], split(stream, cuts), every_byte(stream)):
        events, error = decode_until_too_large(chunks, limit)
        assert (error is not None) == too_large
        # The events before the oversized one come out, unless its chunk also completed them.
        assert events == (expected[: len(events)] if too_large else expected)


def test_memory_stays_proportional_to_the_input_in_tiny_chunks() -> None:
    size = 1 << 20
    stream = sized_event(size)
    # Built before tracing starts: the chunks themselves are not the decoder's memory.
    chunks = chunked(stream, 2)
    feed = SSEDecoder().feed
    tracemalloc.start()
    try:
        start = time.perf_counter()
        for chunk in chunks:
            feed(chunk)
        elapsed = time.perf_counter() - start
        buffering_peak = tracemalloc.get_traced_memory()[1]
        events = feed(b"\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert events == [message(stream[23:-1].decode(), id="1", event="big")]
    # An object per chunk took some 30 bytes per byte of input; one buffer takes about one.
    assert buffering_peak < 1.5 * size
    # Dispatching makes the text, its line and the value: three copies at most.
    assert peak < 4 * size
    assert elapsed < 30  # linear, if slowed down by tracing; re-joining would take hours


def test_tiny_chunks_are_cut_off_at_the_limit() -> None:
    chunks = chunked(sized_event(1 << 20), 2)
    feed = SSEDecoder(max_event_size=(1 << 20) - 1).feed
    for chunk in chunks[:-1]:
        assert feed(chunk) == []
    with pytest.raises(EventTooLargeError, match=f"{1 << 20} bytes"):
        feed(chunks[-1])


@pytest.mark.parametrize("blank_lines", [1, 2, 5])
def test_blank_lines_between_events_never_count_toward_the_limit(blank_lines: int) -> None:
    second = b"data: " + b"y" * 33 + b"\n"
    stream = b"data: x\n\n" + b"\n" * blank_lines + second + b"\n"
    limit = len(second)  # exactly the second event: it fits, however the stream is chunked
    for chunks in ([stream], split(stream, [9]), every_byte(stream)):
        events, error = decode_until_too_large(chunks, limit)
        assert error is None
        assert [event.data for event in events] == ["x", "y" * 33]
