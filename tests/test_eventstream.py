"""Tests for the AWS event-stream decoder and encoder."""

from __future__ import annotations

import contextlib
import struct
import uuid
import zlib
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from req_managed_agents.errors import EventStreamError
from req_managed_agents.eventstream import (
    EventStreamDecoder,
    EventStreamMessage,
    Int8,
    Int16,
    Int32,
    Int64,
    encode_message,
)

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_HEADERS = 128 * 1024
MAX_PAYLOAD = 16 * 1024 * 1024


# --- helpers ----------------------------------------------------------------------------------


def decode(chunks: list[bytes]) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder()
    messages = [message for chunk in chunks for message in decoder.feed(chunk)]
    decoder.close()
    return messages


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def typed(headers: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    """Headers with each value's type, so that ``True == 1`` cannot hide a wrong type."""
    return {name: (type(value), value) for name, value in headers.items()}


def expected(headers: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    """What decoding ``encode_message(headers)`` must give: plain ints, UTC datetimes."""
    out: dict[str, Any] = {}
    for name, value in headers.items():
        if isinstance(value, int) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(value, datetime):
            value = value.astimezone(UTC)
        out[name] = value
    return typed(out)


def prelude(total: int, headers_length: int) -> bytes:
    """A prelude with a valid CRC, whatever its lengths claim."""
    head = struct.pack(">II", total, headers_length)
    return head + struct.pack(">I", zlib.crc32(head))


def frame(block: bytes, payload: bytes = b"") -> bytes:
    """A message around a raw headers block, with correct lengths and CRCs."""
    body = prelude(len(block) + len(payload) + 16, len(block)) + block + payload
    return body + struct.pack(">I", zlib.crc32(body))


def raw_header(name: bytes, kind: int, value: bytes = b"") -> bytes:
    return bytes([len(name)]) + name + bytes([kind]) + value


def assert_rejects(data: bytes, match: str) -> None:
    """``data`` must be rejected, fed whole and fed a byte at a time, closing included."""
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        with pytest.raises(EventStreamError, match=match):
            decode(chunks)


# --- strategies -------------------------------------------------------------------------------

header_values = st.one_of(
    st.booleans(),
    st.integers(-(2**7), 2**7 - 1).map(Int8),
    st.integers(-(2**15), 2**15 - 1).map(Int16),
    st.integers(-(2**31), 2**31 - 1).map(Int32),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.integers(-(2**63), 2**63 - 1),
    st.binary(max_size=300),
    st.text(max_size=80),
    st.datetimes(
        min_value=datetime(1, 1, 1),
        max_value=datetime(9999, 12, 31, 23, 59, 59, 999000),
        timezones=st.just(UTC),
    ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    st.uuids(),
)
header_maps = st.dictionaries(st.text(max_size=40), header_values, max_size=8)
messages = st.tuples(header_maps, st.binary(max_size=2000))


# --- round trips ------------------------------------------------------------------------------

ROUND_TRIPS = [
    (True, 0),
    (False, 1),
    (Int8(-128), 2),
    (Int8(127), 2),
    (Int16(-32768), 3),
    (Int16(32767), 3),
    (Int32(-(2**31)), 4),
    (Int32(2**31 - 1), 4),
    (Int64(-(2**63)), 5),
    (Int64(2**63 - 1), 5),
    (Int64(0), 5),
    (0, 4),
    (-1, 4),
    (2**31 - 1, 4),
    (-(2**31), 4),
    (2**31, 5),
    (-(2**31) - 1, 5),
    (2**63 - 1, 5),
    (-(2**63), 5),
    (b"", 6),
    (bytes(range(256)), 6),
    (b"\xff" * 0xFFFF, 6),
    ("", 7),
    ("héllo ✓ 𝄞 日本", 7),
    ("x" * 0xFFFF, 7),
    (EPOCH, 8),
    (datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), 8),
    (datetime(1, 1, 1, tzinfo=UTC), 8),
    (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), 8),
    (datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone(timedelta(hours=-7))), 8),
    (uuid.UUID(int=0), 9),
    (uuid.UUID(int=2**128 - 1), 9),
    (uuid.UUID("12345678-1234-5678-1234-567812345678"), 9),
]


@pytest.mark.parametrize(("value", "kind"), ROUND_TRIPS)
def test_round_trip_each_header_type(value: object, kind: int) -> None:
    data = encode_message({"h": value}, b"payload")
    assert data[14] == kind  # prelude (12), name length, name "h", then the type byte
    [message] = decode([data])
    assert typed(message.headers) == expected({"h": value})
    assert message.payload == b"payload"


def test_timestamps_come_back_aware_utc_datetimes() -> None:
    [message] = decode([encode_message({"t": datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)})])
    stamp = message.headers["t"]
    assert isinstance(stamp, datetime)
    assert stamp.tzinfo is UTC
    assert stamp == datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)


def test_sub_millisecond_parts_are_dropped_towards_the_past() -> None:
    data = encode_message(
        {
            "after": EPOCH + timedelta(microseconds=1999),
            "before": EPOCH - timedelta(microseconds=1),
        }
    )
    [message] = decode([data])
    assert message.headers == {
        "after": EPOCH + timedelta(milliseconds=1),
        "before": EPOCH - timedelta(milliseconds=1),
    }


def test_every_header_type_in_one_message_keeps_order() -> None:
    headers = {
        f"h{i}": value
        for i, (value, _) in enumerate(ROUND_TRIPS)
        if not isinstance(value, (str, bytes)) or len(value) < 1000  # stay under 128 KiB
    }
    [message] = decode([encode_message(headers, b"x")])
    assert typed(message.headers) == expected(headers)
    assert list(message.headers) == list(headers)


def test_no_headers_and_empty_payload() -> None:
    [message] = decode([encode_message({})])
    assert message == EventStreamMessage({}, b"")


@pytest.mark.parametrize("size", [1, 1024 * 1024, MAX_PAYLOAD])
def test_large_payloads(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + b"\x07" * (size % 256)
    [message] = decode(split(encode_message({":message-type": "event"}, payload), [12345, 777777]))
    assert message.payload == payload


def test_largest_headers_block_is_accepted() -> None:
    # Two byte arrays of 5 + 65535 and 5 + 65527 bytes fill the 128 KiB limit exactly.
    headers = {"a": b"\x01" * 65535, "b": b"\x02" * 65527}
    data = encode_message(headers)
    assert struct.unpack_from(">I", data, 4)[0] == MAX_HEADERS
    [message] = decode([data])
    assert message.headers == headers


def test_headers_dicts_are_not_shared_between_messages() -> None:
    data = encode_message({"k": "v"}) * 2
    first, second = decode([data])
    first.headers["k"] = "changed"
    assert second.headers == {"k": "v"}
    assert decode([data])[0].headers == {"k": "v"}


@given(messages)
def test_round_trip_generated(message: tuple[dict[str, Any], bytes]) -> None:
    headers, payload = message
    [decoded] = decode([encode_message(headers, payload)])
    assert typed(decoded.headers) == expected(headers)
    assert decoded.payload == payload


# --- encoder errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        Int8(128),
        Int8(-129),
        Int16(2**15),
        Int32(-(2**31) - 1),
        Int64(2**63),
        2**63,
        -(2**63) - 1,
        "x" * 0x10000,
        b"x" * 0x10000,
        datetime(2024, 1, 1),
    ],
    ids=lambda value: type(value).__name__,
)
def test_encode_rejects_values_the_format_cannot_carry(value: object) -> None:
    with pytest.raises(ValueError, match="header 'h'"):
        encode_message({"h": value})


def test_encode_rejects_long_names_and_oversized_parts() -> None:
    encode_message({"n" * 255: True})
    with pytest.raises(ValueError, match="255 bytes"):
        encode_message({"n" * 256: True})
    with pytest.raises(ValueError, match="255 bytes"):
        encode_message({"é" * 128: True})  # 128 characters but 256 bytes
    with pytest.raises(ValueError, match="headers take"):
        encode_message({"a": b"\x01" * 65535, "b": b"\x02" * 65528})
    with pytest.raises(ValueError, match="payload of"):
        encode_message({}, bytes(MAX_PAYLOAD + 1))


@pytest.mark.parametrize("value", [1.5, None, bytearray(b"x"), [1]])
def test_encode_rejects_unsupported_types(value: object) -> None:
    with pytest.raises(TypeError, match="unsupported type"):
        encode_message({"h": value})


# --- chunking ---------------------------------------------------------------------------------


def test_one_byte_chunks() -> None:
    stream = b"".join(encode_message({"i": i, "s": "x" * i}, bytes([i]) * i) for i in range(20))
    whole = decode([stream])
    assert len(whole) == 20
    assert decode([stream[i : i + 1] for i in range(len(stream))]) == whole


def test_empty_chunks_are_harmless() -> None:
    data = encode_message({"a": "b"}, b"c")
    assert decode([b"", data[:5], b"", data[5:], b""]) == decode([data])


def test_feed_accepts_bytearray_and_memoryview() -> None:
    data = encode_message({"a": "b"}, b"c")
    assert decode([bytearray(data[:20]), memoryview(data)[20:]]) == decode([data])  # type: ignore[list-item]


def test_feed_returns_only_completed_messages() -> None:
    first, second = encode_message({"n": 1}, b"one"), encode_message({"n": 2}, b"two")
    decoder = EventStreamDecoder()
    assert decoder.feed(first[:-1]) == []
    assert decoder.feed(first[-1:] + second[:3]) == [EventStreamMessage({"n": 1}, b"one")]
    assert decoder.feed(second[3:]) == [EventStreamMessage({"n": 2}, b"two")]
    decoder.close()


@settings(max_examples=200)
@given(st.lists(messages, min_size=1, max_size=6), st.lists(st.integers(min_value=0), max_size=30))
def test_any_split_gives_the_same_messages(
    generated: list[tuple[dict[str, Any], bytes]], cuts: list[int]
) -> None:
    stream = b"".join(encode_message(headers, payload) for headers, payload in generated)
    decoded = decode(split(stream, cuts))
    assert decoded == decode([stream])
    assert [(typed(m.headers), m.payload) for m in decoded] == [
        (expected(headers), payload) for headers, payload in generated
    ]


# --- agreement with botocore ------------------------------------------------------------------


def botocore_decode(data: bytes) -> list[tuple[dict[str, tuple[type, Any]], bytes]]:
    eventstream = pytest.importorskip(
        "botocore.eventstream", reason="botocore is not installed; it is the reference decoder"
    )
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    return [(typed(message.headers), message.payload) for message in buffer]


def as_botocore(message: EventStreamMessage) -> tuple[dict[str, tuple[type, Any]], bytes]:
    """Our message in botocore's representation.

    botocore returns timestamps as the raw int64 milliseconds and uuids as the raw 16 bytes;
    every other header type (bools, all integer widths as ``int``, byte arrays as ``bytes``,
    strings as ``str``) it represents exactly as we do.
    """
    headers: dict[str, Any] = {}
    for name, value in message.headers.items():
        if isinstance(value, datetime):
            value = (value - EPOCH) // timedelta(milliseconds=1)
        elif isinstance(value, uuid.UUID):
            value = value.bytes
        headers[name] = value
    return typed(headers), message.payload


@settings(max_examples=200)
@given(st.lists(messages, min_size=1, max_size=5))
def test_agrees_with_botocore(generated: list[tuple[dict[str, Any], bytes]]) -> None:
    stream = b"".join(encode_message(headers, payload) for headers, payload in generated)
    assert [as_botocore(m) for m in decode([stream])] == botocore_decode(stream)


# Written out field by field from the format rules; the CRCs are CRC32 (zlib) of the bytes
# before them, which test_fixed_vector_crcs re-derives.
EMPTY_MESSAGE = bytes.fromhex(
    "00000010"  # total length 16: prelude + message CRC, nothing else
    "00000000"  # headers length 0
    "05c248eb"  # prelude CRC
    "7d98c8ff"  # message CRC
)
STRING_HEADER_MESSAGE = (
    bytes.fromhex(
        "0000003d"  # total length 61 = 12 + 32 + 13 + 4
        "00000020"  # headers length 32
        "07fd8396"  # prelude CRC
        "0c"  # name length 12
    )
    + b"content-type"
    + bytes.fromhex(
        "07"  # type 7, string
        "0010"  # value length 16
    )
    + b"application/json"
    + b'{"foo":"bar"}'  # payload
    + bytes.fromhex("70651433")  # message CRC
)
FIXED_VECTORS = [
    (EMPTY_MESSAGE, {}, b""),
    (STRING_HEADER_MESSAGE, {"content-type": "application/json"}, b'{"foo":"bar"}'),
]


@pytest.mark.parametrize(("data", "headers", "payload"), FIXED_VECTORS)
def test_fixed_vectors(data: bytes, headers: dict[str, Any], payload: bytes) -> None:
    assert decode([data]) == [EventStreamMessage(headers, payload)]
    assert encode_message(headers, payload) == data
    assert botocore_decode(data) == [(typed(headers), payload)]


@pytest.mark.parametrize(("data", "headers", "payload"), FIXED_VECTORS)
def test_fixed_vector_crcs(data: bytes, headers: dict[str, Any], payload: bytes) -> None:
    assert data[8:12] == struct.pack(">I", zlib.crc32(data[:8]))
    assert data[-4:] == struct.pack(">I", zlib.crc32(data[:-4]))
    # The message CRC is also the prelude CRC continued over the rest, as botocore checks it.
    assert data[-4:] == struct.pack(">I", zlib.crc32(data[8:-4], zlib.crc32(data[:8])))


# --- corrupt input ----------------------------------------------------------------------------

GOOD = encode_message({":event-type": "chunk", "n": 7}, b'{"bytes":"aGk="}')


def corrupt(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


@pytest.mark.parametrize("index", [0, 3, 4, 7, 8, 11])
def test_bad_prelude_crc(index: int) -> None:
    assert_rejects(corrupt(GOOD, index), "prelude CRC mismatch")


@pytest.mark.parametrize("index", [12, 20, len(GOOD) - 5, len(GOOD) - 1])
def test_bad_message_crc(index: int) -> None:
    assert_rejects(corrupt(GOOD, index), "message CRC mismatch")


@pytest.mark.parametrize("cut", [1, 11, 12, 13, len(GOOD) - 1])
def test_truncated_frame_is_reported_at_close(cut: int) -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(GOOD + GOOD[:cut]) == [
        EventStreamMessage({":event-type": "chunk", "n": 7}, b'{"bytes":"aGk="}')
    ]
    with pytest.raises(EventStreamError, match="ended inside a message"):
        decoder.close()


@pytest.mark.parametrize(
    ("total", "headers_length", "match"),
    [
        (0, 0, "below the minimum"),
        (15, 0, "below the minimum"),
        (2**32 - 1, 0, "payload length"),
        (2**32 - 1, 2**32 - 1, "does not fit"),
        (20, 5, "does not fit"),
        (16, 1, "does not fit"),
        (16 + MAX_HEADERS + 1, MAX_HEADERS + 1, "headers length 131073 exceeds"),
        (16 + MAX_PAYLOAD + 1, 0, "payload length 16777217 exceeds"),
    ],
)
def test_impossible_lengths_fail_on_the_prelude_alone(
    total: int, headers_length: int, match: str
) -> None:
    # The prelude CRC is valid, and only the prelude is fed: no waiting for the rest.
    head = prelude(total, headers_length)
    for chunks in ([head], [head[i : i + 1] for i in range(12)], [GOOD + head]):
        decoder = EventStreamDecoder()
        for chunk in chunks[:-1]:
            assert decoder.feed(chunk) == []
        with pytest.raises(EventStreamError, match=match):
            decoder.feed(chunks[-1])


@pytest.mark.parametrize(
    ("block", "match"),
    [
        (b"\x05ab", "name runs past"),
        (b"\x01a", "name runs past"),  # no type byte
        (raw_header(b"a", 7, b"\x00\x0aabc"), "'a' runs past"),
        (raw_header(b"a", 6, b"\x00"), "'a' runs past"),
        (raw_header(b"a", 4, b"\x00\x00"), "'a' runs past"),
        (raw_header(b"a", 5, b"\x00" * 7), "'a' runs past"),
        (raw_header(b"a", 8, b"\x00" * 7), "'a' runs past"),
        (raw_header(b"a", 9, b"\x00" * 15), "'a' runs past"),
        (raw_header(b"a", 2), "'a' runs past"),
        (raw_header(b"ok", 0) + raw_header(b"a", 3, b"\x00"), "'a' runs past"),
        (raw_header(b"a", 10), "unknown type 10"),
        (raw_header(b"a", 255, b"\x00" * 8), "unknown type 255"),
        (raw_header(b"a", 0) + raw_header(b"a", 1), "'a' appears twice"),
        (raw_header(b"\xff", 0), "name is not valid UTF-8"),
        (raw_header(b"a\xc3", 0), "name is not valid UTF-8"),
        (raw_header(b"a", 7, b"\x00\x02\xed\xa0"), "string value is not valid UTF-8"),
        (raw_header(b"t", 8, struct.pack(">q", 2**63 - 1)), "outside the datetime range"),
        (raw_header(b"t", 8, struct.pack(">q", -(2**63))), "outside the datetime range"),
    ],
)
def test_bad_headers(block: bytes, match: str) -> None:
    assert_rejects(frame(block, b"payload"), match)


def test_decoder_stays_broken_after_an_error() -> None:
    decoder = EventStreamDecoder()
    with pytest.raises(EventStreamError, match="prelude CRC"):
        decoder.feed(corrupt(GOOD, 0))
    for _ in range(2):
        with pytest.raises(EventStreamError, match=r"unusable after an error: .*prelude CRC"):
            decoder.feed(GOOD)
    with pytest.raises(EventStreamError, match="unusable"):
        decoder.close()


def test_decoder_stays_broken_after_close_finds_a_partial_frame() -> None:
    decoder = EventStreamDecoder()
    decoder.feed(GOOD[:5])
    with pytest.raises(EventStreamError, match="got 5 of an unknown number of bytes"):
        decoder.close()
    with pytest.raises(EventStreamError, match="unusable"):
        decoder.feed(GOOD[5:])


def test_messages_before_a_corrupt_one_are_returned_by_earlier_feeds() -> None:
    decoder = EventStreamDecoder()
    assert len(decoder.feed(GOOD)) == 1
    with pytest.raises(EventStreamError):
        decoder.feed(corrupt(GOOD, len(GOOD) - 1))


garbage = st.one_of(
    st.binary(max_size=400),
    # A valid prelude CRC over arbitrary lengths, so the length checks are reached.
    st.builds(
        lambda total, headers_length, rest: prelude(total, headers_length) + rest,
        st.integers(0, 2**32 - 1),
        st.integers(0, 2**32 - 1),
        st.binary(max_size=400),
    ),
    # Arbitrary header blocks inside otherwise valid frames, so the header parser is reached.
    st.builds(frame, st.binary(max_size=200), st.binary(max_size=50)),
    # Valid streams with a few bytes changed.
    st.builds(
        lambda data, edits: bytes(b ^ edits.get(i, 0) for i, b in enumerate(data)),
        st.lists(messages, min_size=1, max_size=3).map(
            lambda ms: b"".join(encode_message(h, p) for h, p in ms)
        ),
        st.dictionaries(st.integers(0, 300), st.integers(1, 255), max_size=3),
    ),
)


@settings(max_examples=500)
@given(st.lists(garbage, min_size=1, max_size=3), st.lists(st.integers(min_value=0), max_size=20))
def test_garbage_decodes_or_raises_event_stream_error(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    with contextlib.suppress(EventStreamError):
        decode(split(data, cuts))
