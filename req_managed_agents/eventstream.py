"""Incremental decoder (and a small encoder) for AWS ``application/vnd.amazon.eventstream``.

Bedrock streams its responses in this binary framing. The decoder does no I/O: hand it bytes
as they arrive and it returns every message those bytes complete.

Wire format (all integers big-endian)::

    offset 0   total length      u32   whole message, prelude and trailing CRC included
    offset 4   headers length    u32   size of the headers block
    offset 8   prelude CRC       u32   CRC32 of bytes 0..8
    offset 12  headers           headers length bytes
    ...        payload           total - headers length - 16 bytes
    total-4    message CRC       u32   CRC32 of bytes 0..total-4, i.e. everything before it
                                       (equivalently the prelude CRC continued over 8..total-4)

Each header is: name length u8, name (UTF-8), type u8, then a value by type:
0 true and 1 false (no bytes), 2 byte (int8), 3 short (int16), 4 integer (int32),
5 long (int64), 6 byte array (u16 length + bytes), 7 string (u16 length + UTF-8),
8 timestamp (int64 milliseconds since the Unix epoch), 9 uuid (16 bytes). Integers are signed.

The prelude CRC is checked before its lengths are trusted, so a corrupted length can never make
the decoder wait for gigabytes; headers are limited to 128 KiB and payloads to 16 MiB. A timestamp
outside ``datetime``'s range (years 1-9999) counts as corruption. Any corruption raises
:class:`~req_managed_agents.errors.EventStreamError`; the decoder is then unusable and every
later call raises again, because the stream has lost its framing and cannot be resynchronised.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from req_managed_agents.errors import EventStreamError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Callable, TypeAlias, Union

    _HeaderValue: TypeAlias = Union[bool, int, bytes, str, datetime, uuid.UUID]

__all__ = [
    "EventStreamDecoder",
    "EventStreamMessage",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "encode_message",
]

_PRELUDE_LENGTH = 12
_OVERHEAD = _PRELUDE_LENGTH + 4  # prelude plus the trailing message CRC
_MAX_HEADERS_LENGTH = 128 * 1024
_MAX_PAYLOAD_LENGTH = 16 * 1024 * 1024
_MAX_CACHED_BLOCKS = 64
_MAX_CACHED_BLOCK_LENGTH = 512

_PRELUDE = struct.Struct(">III")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MS = timedelta(milliseconds=1)

# Fixed-size header values: type -> (size, unpacker).
_FIXED: dict[int, tuple[int, Callable[[bytes, int], tuple[int, ...]]]] = {
    2: (1, struct.Struct(">b").unpack_from),
    3: (2, struct.Struct(">h").unpack_from),
    4: (4, struct.Struct(">i").unpack_from),
    5: (8, struct.Struct(">q").unpack_from),
    8: (8, struct.Struct(">q").unpack_from),
}


@dataclass(frozen=True)
class EventStreamMessage:
    """One decoded message: its typed headers and its raw payload."""

    headers: dict[str, bool | int | bytes | str | datetime | uuid.UUID]
    payload: bytes


class EventStreamDecoder:
    """Turns a byte stream into :class:`EventStreamMessage` objects, chunk by chunk.

    When nothing is buffered, messages are parsed straight out of the chunk; only an unfinished
    tail is kept, and it is joined to later bytes once, when its message completes, so the cost
    stays linear in the bytes fed however they are split.
    """

    __slots__ = ("_buf", "_cache", "_error", "_total")

    def __init__(self) -> None:
        self._buf = bytearray()  # the start of an unfinished message
        self._total = 0  # its total length once its prelude is buffered and checked, else 0
        self._error: str | None = None
        # Streams repeat the same few header blocks; parsing each once saves most header work.
        self._cache: dict[bytes, dict[str, _HeaderValue]] = {}

    def feed(self, chunk: bytes) -> list[EventStreamMessage]:
        """Add ``chunk`` and return the messages it completed (possibly none).

        Corruption anywhere in ``chunk`` raises, and the messages before it in that chunk are
        not returned: the stream is broken either way.
        """
        self._check_usable()
        buf = self._buf
        if buf:
            if len(buf) + len(chunk) < (self._total or _PRELUDE_LENGTH):
                buf += chunk  # completes neither the buffered prelude nor its message
                return []
            data = b"".join((buf, chunk))
            buf.clear()
        else:
            # Slicing bytes is the cheapest way to cut out small fields, so work on bytes.
            data = chunk if type(chunk) is bytes else bytes(chunk)
        out: list[EventStreamMessage] = []
        try:
            pos = self._decode_frames(data, out)
        except EventStreamError as exc:
            self._error = str(exc)
            raise
        buf += data[pos:]
        return out

    def close(self) -> None:
        """Check that the stream ended on a message boundary (it does not reset the decoder)."""
        self._check_usable()
        if self._buf:
            self._error = (
                f"event stream ended inside a message: got {len(self._buf)} of "
                f"{self._total or 'an unknown number of'} bytes"
            )
            raise EventStreamError(self._error)

    def _check_usable(self) -> None:
        if self._error is not None:
            raise EventStreamError(f"event-stream decoder unusable after an error: {self._error}")

    def _decode_frames(self, data: bytes, out: list[EventStreamMessage]) -> int:
        """Append each whole message in ``data``; return where a partial one starts."""
        crc32 = zlib.crc32
        prelude = _PRELUDE.unpack_from
        u32 = _U32.unpack_from
        cache = self._cache
        end = len(data)
        pos = 0
        self._total = 0
        with memoryview(data) as view:  # lets the message CRC run without copying the message
            while end - pos >= _PRELUDE_LENGTH:
                total, headers_length, prelude_crc = prelude(data, pos)
                actual = crc32(data[pos : pos + 8])
                if actual != prelude_crc:
                    raise EventStreamError(
                        f"event-stream prelude CRC mismatch: expected 0x{prelude_crc:08x}, "
                        f"computed 0x{actual:08x}"
                    )
                if total < _OVERHEAD:
                    raise EventStreamError(
                        f"event-stream message length {total} is below the minimum of {_OVERHEAD}"
                    )
                if headers_length > total - _OVERHEAD:
                    raise EventStreamError(
                        f"event-stream headers length {headers_length} does not fit in a "
                        f"message of {total} bytes"
                    )
                if headers_length > _MAX_HEADERS_LENGTH:
                    raise EventStreamError(
                        f"event-stream headers length {headers_length} exceeds the maximum of "
                        f"{_MAX_HEADERS_LENGTH}"
                    )
                if total - headers_length - _OVERHEAD > _MAX_PAYLOAD_LENGTH:
                    raise EventStreamError(
                        f"event-stream payload length {total - headers_length - _OVERHEAD} "
                        f"exceeds the maximum of {_MAX_PAYLOAD_LENGTH}"
                    )
                if end - pos < total:
                    self._total = total
                    break
                crc_at = pos + total - 4
                (expected,) = u32(data, crc_at)
                actual = crc32(view[pos + 8 : crc_at], prelude_crc)
                if actual != expected:
                    raise EventStreamError(
                        f"event-stream message CRC mismatch: expected 0x{expected:08x}, "
                        f"computed 0x{actual:08x}"
                    )
                headers_end = pos + _PRELUDE_LENGTH + headers_length
                if headers_length:
                    block = data[pos + _PRELUDE_LENGTH : headers_end]
                    parsed = cache.get(block)
                    if parsed is None:
                        parsed = _parse_headers(block)
                        if (
                            len(cache) < _MAX_CACHED_BLOCKS
                            and headers_length <= _MAX_CACHED_BLOCK_LENGTH
                        ):
                            cache[block] = parsed
                    headers = parsed.copy()  # values are immutable; the dict is the caller's own
                else:
                    headers = {}
                out.append(EventStreamMessage(headers, data[headers_end:crc_at]))
                pos += total
        return pos


def _parse_headers(block: bytes) -> dict[str, _HeaderValue]:
    """Decode a whole headers block, checking every length against the block's end."""
    headers: dict[str, _HeaderValue] = {}
    end = len(block)
    pos = 0
    while pos < end:
        name_end = pos + 1 + block[pos]
        if name_end >= end:  # the type byte must follow the name inside the block
            raise EventStreamError("event-stream header name runs past the headers block")
        name = _utf8(block[pos + 1 : name_end], "header name")
        kind = block[name_end]
        pos = name_end + 1
        value: _HeaderValue
        if kind == 0 or kind == 1:
            value = kind == 0
        elif kind == 6 or kind == 7:
            if pos + 2 > end:
                raise EventStreamError(f"event-stream header {name!r} runs past the headers block")
            value_end = pos + 2 + _U16.unpack_from(block, pos)[0]
            if value_end > end:
                raise EventStreamError(f"event-stream header {name!r} runs past the headers block")
            raw = block[pos + 2 : value_end]
            value = raw if kind == 6 else _utf8(raw, f"header {name!r} string value")
            pos = value_end
        elif kind == 9:
            if pos + 16 > end:
                raise EventStreamError(f"event-stream header {name!r} runs past the headers block")
            value = uuid.UUID(bytes=block[pos : pos + 16])
            pos += 16
        elif kind in _FIXED:
            size, unpack = _FIXED[kind]
            if pos + size > end:
                raise EventStreamError(f"event-stream header {name!r} runs past the headers block")
            value = unpack(block, pos)[0]
            if kind == 8:
                value = _timestamp(value, name)
            pos += size
        else:
            raise EventStreamError(f"event-stream header {name!r} has unknown type {kind}")
        if name in headers:
            raise EventStreamError(f"event-stream header {name!r} appears twice")
        headers[name] = value
    return headers


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventStreamError(f"event-stream {what} is not valid UTF-8: {exc.reason}") from None


def _timestamp(ms: int, name: str) -> datetime:
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        raise EventStreamError(
            f"event-stream header {name!r} timestamp {ms} ms is outside the datetime range"
        ) from None


class Int8(int):
    """An ``int`` header value to encode as a byte (int8)."""

    __slots__ = ()


class Int16(int):
    """An ``int`` header value to encode as a short (int16)."""

    __slots__ = ()


class Int32(int):
    """An ``int`` header value to encode as an integer (int32)."""

    __slots__ = ()


class Int64(int):
    """An ``int`` header value to encode as a long (int64)."""

    __slots__ = ()


# Explicit widths: class -> (type code, struct format).
_WIDTHS: dict[type, tuple[int, str]] = {
    Int8: (2, ">b"),
    Int16: (3, ">h"),
    Int32: (4, ">i"),
    Int64: (5, ">q"),
}


def encode_message(headers: Mapping[str, object], payload: bytes = b"") -> bytes:
    """Frame ``headers`` and ``payload`` as one message (for tests and local emulators).

    ``bool`` becomes true/false, ``int`` an int32 when it fits and an int64 otherwise (or the
    width of an ``Int8``..``Int64``), ``bytes`` a byte array, ``str`` a string, an aware
    ``datetime`` a timestamp (sub-millisecond parts dropped) and ``uuid.UUID`` a uuid.
    Raises ``ValueError`` for values the format cannot carry and ``TypeError`` for others.
    """
    block = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        if len(raw_name) > 255:
            raise ValueError(f"header name {name!r} is longer than 255 bytes in UTF-8")
        block.append(len(raw_name))
        block += raw_name
        block += _encode_value(name, value)
    if len(block) > _MAX_HEADERS_LENGTH:
        raise ValueError(f"headers take {len(block)} bytes, over the {_MAX_HEADERS_LENGTH} limit")
    if len(payload) > _MAX_PAYLOAD_LENGTH:
        raise ValueError(f"payload of {len(payload)} bytes is over the {_MAX_PAYLOAD_LENGTH} limit")
    prelude = struct.pack(">II", len(block) + len(payload) + _OVERHEAD, len(block))
    prelude += _U32.pack(zlib.crc32(prelude))
    message = prelude + block + payload
    return message + _U32.pack(zlib.crc32(message))


def _encode_value(name: str, value: object) -> bytes:
    if isinstance(value, bool):
        return b"\x00" if value else b"\x01"
    if isinstance(value, int):
        kind, fmt = next(
            (spec for cls, spec in _WIDTHS.items() if isinstance(value, cls)),
            (4, ">i") if -(2**31) <= value < 2**31 else (5, ">q"),
        )
        try:
            return bytes([kind]) + struct.pack(fmt, value)
        except struct.error:
            raise ValueError(f"header {name!r} value {value} does not fit its width") from None
    if isinstance(value, (bytes, str)):
        kind, raw = (6, value) if isinstance(value, bytes) else (7, value.encode("utf-8"))
        if len(raw) > 0xFFFF:
            raise ValueError(f"header {name!r} value is longer than 65535 bytes")
        return bytes([kind]) + _U16.pack(len(raw)) + raw
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError(f"header {name!r} timestamp must be timezone-aware")
        return b"\x08" + struct.pack(">q", (value - _EPOCH) // _ONE_MS)
    if isinstance(value, uuid.UUID):
        return b"\x09" + value.bytes
    raise TypeError(f"header {name!r} has unsupported type {type(value).__name__}")
