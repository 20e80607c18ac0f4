"""Incremental decoder for ``text/event-stream`` bodies (server-sent events).

It implements the WHATWG HTML rules for interpreting an event stream:

* the bytes are UTF-8 (invalid sequences become U+FFFD) and one BOM at the very start of the
  stream is dropped;
* lines end at CRLF, LF or CR and nowhere else, even when a CRLF is split across chunks;
* a blank line dispatches the event being built; a line starting with ``:`` is a comment;
* other lines are ``name:value``: split at the first colon, with one leading space dropped from
  the value; a line without a colon is a field with an empty value; unknown names are ignored;
* ``data`` appends its value plus a newline to the data buffer (the final newline is removed at
  dispatch); ``event`` sets the type (``message`` when empty); ``id`` sets the last event id
  unless the value contains NUL; ``retry`` counts only when it is all ASCII digits;
* dispatching first commits the last event id; a block without data then dispatches nothing;
* an event that the stream ends before terminating is discarded, and its id is not committed.

For speed, the complete blocks of each chunk are decoded and interpreted together: column-wise
when they all repeat one shape (the usual case), line by line otherwise.

Memory is bounded, since a peer can send an event that never ends. The event still waiting for
its blank line is held as its undecoded bytes, about one byte of memory per byte of input, and
may not grow past ``max_event_size`` bytes (16 MiB by default). The size of an event is what the
decoder must hold until its blank line arrives: its bytes from the end of the blank line before
it (or the start of the stream) to the end of its last line, each line end counting one byte;
blank lines between events hold nothing.
A line belongs to an event, so the limit bounds a long line too. An event over the limit makes
:meth:`SSEDecoder.feed` raise :class:`~req_managed_agents.errors.EventTooLargeError`, however the
stream is chunked; the decoder then drops what it holds and refuses the rest of that stream.
"""

from __future__ import annotations

import json
from codecs import utf_8_decode as _utf8_decode
from collections import deque
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from itertools import repeat
from typing import Any, NoReturn

from req_managed_agents.errors import EventTooLargeError

__all__ = ["DEFAULT_MAX_EVENT_SIZE", "SSEDecoder", "ServerSentEvent"]

DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024
"""The default ``max_event_size``, in bytes: far above any event these APIs send, yet a small
fraction of a process's memory."""

# Decoding column-wise has a fixed cost; measured, it pays off from about this many blocks in
# one chunk, whatever their shape.
_MIN_COLUMNAR_BLOCKS = 10

# Pending chunks shorter than this share one buffer, so that their per-object overhead (some
# 40 bytes) stays a few percent of what they hold.
_MIN_PIECE = 1024

# Searching bytes for an int skips the failed int conversion a one-byte needle costs first.
_CR = ord("\r")


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event; ``id`` is the last event id in force when it was dispatched."""

    # Slots make instances small and let the decoder fill whole batches column-wise.
    __slots__ = ("data", "event", "id", "retry")

    event: str
    data: str
    id: str | None
    retry: int | None

    def json(self) -> Any:
        """Parse ``data`` as JSON, the payload format of the APIs this SDK talks to."""
        return json.loads(self.data)

    def __reduce__(self) -> tuple[Any, ...]:
        # The default slot-state restore assigns attributes, which a frozen class refuses.
        return (ServerSentEvent, (self.event, self.data, self.id, self.retry))


# Batch construction: allocate instances and store each field with the slot descriptors,
# the same raw writes the generated frozen ``__init__`` makes, but driven by C-level ``map``
# instead of one Python call per event.
_new_instance = object.__new__
_set_event = vars(ServerSentEvent)["event"].__set__
_set_data = vars(ServerSentEvent)["data"].__set__
_set_id = vars(ServerSentEvent)["id"].__set__
_set_retry = vars(ServerSentEvent)["retry"].__set__
_consume = deque[object](maxlen=0).extend


def _decode_pieces(pieces: list[bytes | bytearray]) -> str:
    """Decode consecutive pieces of UTF-8 ending with a line end into one string, without
    joining the bytes first: that would copy a large event once more."""
    texts: list[str] = []
    carry: bytes | bytearray = b""
    for piece in pieces:
        if carry:
            piece = carry + piece
        text, used = _utf8_decode(piece, "replace", False)
        texts.append(text)
        carry = piece[used:]
    return "".join(texts)


def _build_events(
    count: int, types: Iterable[str], datas: Iterable[str], ids: Iterable[str | None]
) -> list[ServerSentEvent]:
    events: list[ServerSentEvent] = list(map(_new_instance, repeat(ServerSentEvent, count)))
    _consume(map(_set_event, events, types))
    _consume(map(_set_data, events, datas))
    _consume(map(_set_id, events, ids))
    _consume(map(_set_retry, events, repeat(None, count)))
    return events


def _past_blank_lines(chunk: bytes, start: int) -> int:
    """The offset of the first byte at or after ``start`` that is not an LF."""
    while chunk[start : start + 1] == b"\n":
        start += 1
    return start


class SSEDecoder:
    """Turn the chunks of one event stream into events; no I/O, any chunk boundaries.

    ``max_event_size`` caps the bytes of one event (see the module docstring for how they are
    counted); a positive number is required, as input from the network must stay bounded.
    When an event goes over it, :meth:`feed` raises ``EventTooLargeError`` before applying any
    of that chunk: events it completed are not returned and :attr:`last_event_id` stays at the
    last event returned, so a reconnection resumes from there. The buffered event is dropped at
    once, and every later :meth:`feed` raises again until :meth:`close`: the rest of the stream
    cannot be parsed without the oversized event.

    After :meth:`close` the decoder may be fed the next stream (a reconnection); only
    :attr:`last_event_id` carries over.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_event_size < 1:
            raise ValueError(f"max_event_size must be a positive byte count, not {max_event_size}")
        self._max_event_size = max_event_size
        self._last_event_id: str | None = None
        self._start_stream()

    def _start_stream(self) -> None:
        self._at_stream_start = True
        # The previous chunk ended in CR, so an LF opening this one completes that CRLF.
        self._skip_lf = False
        # The bytes of the event still waiting for its blank line, line ends already turned
        # to LF, not yet decoded (a UTF-8 sequence split across chunks waits here for its
        # end), and their count. Nothing in them is interpreted before that line arrives,
        # which changes nothing a caller can see: an event and its id only take effect when
        # it is dispatched. Chunks are kept as they came, except that small ones are copied
        # into a shared buffer: an object per tiny chunk would take many times its bytes.
        self._pending: list[bytes | bytearray] = []
        self._pending_size = 0
        # An event went over the limit: what follows it cannot be parsed.
        self._overflowed = False

    @property
    def last_event_id(self) -> str | None:
        """The id committed by the latest dispatch, to send as ``Last-Event-ID`` on reconnect."""
        return self._last_event_id

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Decode the next chunk and return the events it completes.

        Raises ``EventTooLargeError`` if an event goes over ``max_event_size``.
        """
        if self._overflowed:
            raise EventTooLargeError(
                "the event stream had an event over the decoder's limit of "
                f"{self._max_event_size} bytes; close() the decoder and reconnect",
                limit=self._max_event_size,
            )
        # Line ends are ASCII and an ASCII byte is never part of a UTF-8 sequence, valid or
        # not: the bytes can be split into lines and blocks before they are decoded.
        if self._skip_lf or _CR in chunk:
            chunk = self._normalize_line_ends(chunk)
        pending = self._pending
        if not pending and chunk[:1] == b"\n":
            # Blank lines between events dispatch nothing, so nothing holds them.
            chunk = chunk.lstrip(b"\n")
            self._at_stream_start = False
        size = self._pending_size + len(chunk)
        # Within the limit, nothing that includes this chunk can be over it.
        if size > self._max_event_size:
            self._check_event_sizes(chunk)
        end = chunk.rfind(b"\n\n") + 2
        # Without a blank line inside the chunk, one may still straddle the previous chunk.
        if end == 1 and (chunk[:1] != b"\n" or not self._pending_ends_line()):
            self._pending_size = size
            if len(chunk) >= _MIN_PIECE:
                pending.append(chunk)
            elif pending and type(pending[-1]) is bytearray:
                pending[-1] += chunk
            elif chunk:
                pending.append(bytearray(chunk))
            return []
        blocks = chunk[:end]
        if len(pending) > 1:
            pending.append(blocks)
            text = _decode_pieces(pending)
        else:
            # The blocks end with a line end, so no UTF-8 sequence continues past them: they
            # decode on their own (``bytes.decode`` costs a fraction of ``utf_8_decode``).
            text = (pending[0] + blocks if pending else blocks).decode("utf-8", "replace")
        pending.clear()
        self._pending_size = len(chunk) - end
        if end < len(chunk):
            pending.append(chunk[end:])
        # The blocks decoded first start where the stream does.
        if self._at_stream_start:
            self._at_stream_start = False
            if text[0] == "\ufeff":
                text = text[1:]
        # Splitting leaves an empty string after the final LF: one more blank line, which
        # dispatches nothing.
        lines = text.split("\n")
        events: list[ServerSentEvent] = []
        # A block has at least two lines: a field and the blank line.
        if len(lines) <= 2 * _MIN_COLUMNAR_BLOCKS or not self._interpret_columns(
            lines, len(text), events
        ):
            self._interpret(lines, events)
        return events

    def close(self) -> list[ServerSentEvent]:
        """End the stream: an unterminated event is discarded and its id is not committed."""
        self._start_stream()
        return []

    def _normalize_line_ends(self, chunk: bytes) -> bytes:
        """Turn every CRLF and lone CR into LF, the only line end the rest expects."""
        if not chunk:
            return chunk
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        # A CR ends its line at once (waiting could stall a complete event); an LF opening
        # the next chunk then belongs to it.
        self._skip_lf = chunk.endswith(b"\r")
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def _pending_ends_line(self) -> bool:
        """Whether an LF opening the next chunk makes a blank line (pieces are never empty)."""
        return bool(self._pending) and self._pending[-1].endswith(b"\n")

    def _check_event_sizes(self, chunk: bytes) -> None:
        """Raise unless each event the chunk holds or adds to is within the limit.

        Only called when the pending bytes and the chunk add up to more than the limit; it
        scans the chunk once, like the search for its last blank line.
        """
        limit = self._max_event_size
        # Offsets into the chunk; the pending bytes, which hold no blank line, come before it.
        start = -self._pending_size
        if self._pending_ends_line() and chunk[:1] == b"\n":
            start = _past_blank_lines(chunk, 1)  # the pending bytes were an event
        while (end := chunk.find(b"\n\n", max(start, 0))) >= 0:
            if end + 1 - start > limit:
                self._overflow(end + 1 - start)
            start = _past_blank_lines(chunk, end + 2)  # blank lines hold nothing
        if len(chunk) - start > limit:
            self._overflow(len(chunk) - start)

    def _overflow(self, size: int) -> NoReturn:
        """Drop the buffered event at once and refuse the rest of the stream."""
        self._pending.clear()
        self._pending_size = 0
        self._overflowed = True
        raise EventTooLargeError(
            f"a server-sent event reached {size} bytes, over the decoder's limit of "
            f"{self._max_event_size} bytes (max_event_size)",
            limit=self._max_event_size,
        )

    def _interpret(self, lines: list[str], events: list[ServerSentEvent]) -> None:
        """Apply the rules line by line; ``lines`` are whole blocks, each ending in a blank line."""
        id_buffer = self._last_event_id
        data_lines: list[str] = []
        event_type = ""
        retry: int | None = None
        for line in lines:
            if not line:
                if data_lines:
                    event = _new_instance(ServerSentEvent)
                    _set_event(event, event_type or "message")
                    _set_data(event, "\n".join(data_lines))
                    _set_id(event, id_buffer)
                    _set_retry(event, retry)
                    events.append(event)
                    data_lines = []
                event_type = ""
                retry = None
                continue
            # Usually a colon and a space end the name; only then is a space to be dropped.
            name, separator, value = line.partition(": ")
            if not separator or ":" in name:
                name, _, value = line.partition(":")
            if name == "data":
                data_lines.append(value)
            elif name == "event":
                event_type = value
            elif name == "id":
                if "\0" not in value:
                    id_buffer = value
            elif name == "retry" and value.isascii() and value.isdigit():
                # Python refuses integers of thousands of digits: such a field is ignored.
                with suppress(ValueError):
                    retry = int(value)
        # The lines end with a blank line, whose dispatch committed the id buffer.
        self._last_event_id = id_buffer

    def _interpret_columns(
        self, lines: list[str], text_length: int, events: list[ServerSentEvent]
    ) -> bool:
        """Decode whole blocks column-wise when they all share one simple shape.

        Most streams repeat one shape (say ``event``, ``id``, ``data``, each written
        ``name: value``). Then line ``k`` of every block is the same field and the rules
        reduce to: strip the ``name: `` prefix, default an empty type to ``message``, and
        commit the last block's id. Anything else returns False before any state changes,
        and the caller applies the general rules.
        """
        period = lines.index("") + 1
        count, leftover = divmod(len(lines) - 1, period)
        if (
            period == 1
            or count < _MIN_COLUMNAR_BLOCKS
            or leftover
            or any(lines[period - 1 :: period])
        ):
            return False
        types: list[str] | None = None
        ids: list[str] | None = None
        data_columns: list[list[str]] = []
        prefix_length = value_length = 0
        for position in range(period - 1):
            column = lines[position:-1:period]
            name, colon, _ = column[0].partition(":")
            if not colon or name == "retry" or (name == "id" and "\0" in "".join(column)):
                return False
            prefix = name + ": "
            values = list(map(str.removeprefix, column, repeat(prefix)))
            prefix_length += len(prefix)
            value_length += len("".join(values))  # one copy beats a len() call per value
            if name == "data":
                data_columns.append(values)
            elif name == "event":
                types = values
            elif name == "id":
                ids = values
            # Any other name is an unknown field, or a comment when empty: ignored.
        # removeprefix shortens a line only when the prefix is there, so the characters left
        # add up to this exactly when every line of every column had its prefix.
        if value_length != text_length - (len(lines) - 1) - count * prefix_length:
            return False
        if not data_columns:
            return False
        if len(data_columns) == 1:
            datas = data_columns[0]
        else:
            datas = list(map("\n".join, zip(*data_columns)))
        if types is None:
            type_column: Iterable[str] = repeat("message", count)
        elif "" in types:
            type_column = [event_type or "message" for event_type in types]
        else:
            type_column = types
        if ids is None:
            events += _build_events(count, type_column, datas, repeat(self._last_event_id))
        else:
            events += _build_events(count, type_column, datas, ids)
            self._last_event_id = ids[-1]
        return True
