"""Throughput of our event-stream decoder against botocore's ``EventStreamBuffer``.

Both decoders run on the same bytes in the same process, so the ratio is meaningful even on a
noisy machine. ``run()`` is the entry point for ``benchmarks/decoders.py``; running this file
prints the table with the ratio to botocore.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator

from req_managed_agents.eventstream import EventStreamDecoder, encode_message

Decode = Callable[[list[bytes]], int]

_DELTA_HEADERS = {
    ":event-type": "contentBlockDelta",
    ":content-type": "application/json",
    ":message-type": "event",
}
_WORDS = ["the", "agent", "calls", "a", "tool", "and", "streams", "its", "answer", "token"]


def _delta_stream(count: int = 20_000, text_length: int = 139) -> bytes:
    """``count`` InvokeHarness-like ``contentBlockDelta`` messages of about 285 bytes each."""
    rng = random.Random(1234)
    messages = []
    for _ in range(count):
        text = " ".join(rng.choice(_WORDS) for _ in range(text_length))[:text_length]
        payload = json.dumps(
            {"contentBlockIndex": 0, "delta": {"text": text}}, separators=(",", ":")
        ).encode()
        messages.append(encode_message(_DELTA_HEADERS, payload))
    return b"".join(messages)


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _cases() -> Iterator[tuple[str, list[bytes]]]:
    stream = _delta_stream()
    yield "20k deltas, 16 KiB chunks", _chunks(stream, 16 * 1024)
    yield "20k deltas, 1 KiB chunks", _chunks(stream, 1024)
    yield "20k deltas, one feed", [stream]
    big = encode_message({":message-type": "event"}, bytes(range(256)) * (8 * 1024 * 4))
    yield "8 MiB message, 4 KiB chunks", _chunks(big, 4 * 1024)


def _ours(chunks: list[bytes]) -> int:
    decoder = EventStreamDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    decoder.close()
    return count


def _botocore() -> Decode | None:
    try:
        from botocore.eventstream import EventStreamBuffer
    except ImportError:
        print("botocore is not installed: skipping the botocore comparison")
        return None

    def decode(chunks: list[bytes]) -> int:
        buffer = EventStreamBuffer()
        count = 0
        for chunk in chunks:
            buffer.add_data(chunk)
            for _ in buffer:
                count += 1
        return count

    return decode


def _best(decode: Decode, chunks: list[bytes], repeat: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = decode(chunks)
        best = min(best, time.perf_counter() - start)
    return best, count


def run(repeat: int = 3) -> list[tuple[str, float, float]]:
    """Return ``(label, MB/s, messages/s)`` rows, best of ``repeat``; MB is 10**6 bytes."""
    decoders: list[tuple[str, Decode]] = [("ours", _ours)]
    boto = _botocore()
    if boto is not None:
        decoders.append(("botocore", boto))
    rows: list[tuple[str, float, float]] = []
    for case, chunks in _cases():
        size = sum(map(len, chunks))
        for name, decode in decoders:
            seconds, count = _best(decode, chunks, repeat)
            rows.append((f"{case} [{name}]", size / seconds / 1e6, count / seconds))
    return rows


def _main() -> None:
    rows = run()
    by_label = {label: mb for label, mb, _ in rows}
    print(f"{'case':<42} {'MB/s':>9} {'msgs/s':>12} {'vs botocore':>12}")
    for label, mb, msgs in rows:
        boto = by_label.get(label.replace("[ours]", "[botocore]"))
        ratio = f"{mb / boto:.1f}x" if label.endswith("[ours]") and boto else ""
        print(f"{label:<42} {mb:>9.1f} {msgs:>12,.0f} {ratio:>12}")


if __name__ == "__main__":
    _main()
