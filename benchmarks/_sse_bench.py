"""Throughput of our server-sent events decoder against httpx-sse's and sseclient-py's.

All decoders run on the same chunks in the same process, taking turns on every repetition, so
the ratios are meaningful even on a noisy machine. ``run()`` is the entry point for
``benchmarks/decoders.py``; running this file prints the table, with each decoder's throughput
as a multiple of the fastest peer library's on the same case.

httpx-sse decodes only from an ``httpx.Response``; to feed it bare chunks this drives the two
internal classes its ``EventSource.iter_sse`` chains (``httpx_sse._decoders``), behind the
incremental UTF-8 decoder ``Response.iter_text`` would apply.
"""

from __future__ import annotations

import codecs
import json
import random
import string
import time
from collections.abc import Callable, Iterator

from req_managed_agents.sse import SSEDecoder

Decode = Callable[[list[bytes]], int]

_EVENT_TYPES = [
    "agent.message",
    "agent.thinking",
    "agent.tool_use",
    "agent.tool_result",
    "session.status_running",
    "session.status_idle",
]
_WORDS = ["the", "agent", "calls", "a", "tool", "and", "streams", "its", "answer", "token"]
_ID_ALPHABET = string.ascii_letters + string.digits


def _cma_stream(count: int = 20_000) -> bytes:
    """``count`` events shaped like the Claude Managed Agents stream, about 352 bytes each."""
    rng = random.Random(1234)
    events = []
    for _ in range(count):
        event_type = rng.choice(_EVENT_TYPES)
        event_id = "sevt_" + "".join(rng.choice(_ID_ALPHABET) for _ in range(24))
        text = " ".join(rng.choice(_WORDS) for _ in range(60))[: rng.randint(100, 156)]
        payload = {
            "type": event_type,
            "id": event_id,
            "processed_at": "2025-06-01T12:00:00.000000Z",
            "content": [{"type": "text", "text": text}],
        }
        events.append(
            f"event: {event_type}\nid: {event_id}\ndata: {json.dumps(payload)}\n\n".encode()
        )
    return b"".join(events)


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _cases() -> Iterator[tuple[str, list[bytes]]]:
    stream = _cma_stream()
    for kib in (1, 16, 64):
        yield f"20k CMA events, {kib} KiB reads", _chunks(stream, kib * 1024)
    big = b"data: " + json.dumps({"blob": "x" * (4 << 20)}).encode() + b"\n\n"
    yield "4 MiB event, 4 KiB chunks", _chunks(big, 4 * 1024)


def _ours(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.close())


def _httpx_sse() -> Decode | None:
    try:
        from httpx_sse._decoders import SSEDecoder as EventDecoder
        from httpx_sse._decoders import SSELineDecoder
    except ImportError as error:
        print(f"httpx-sse is not usable ({error}): skipping the httpx-sse comparison")
        return None

    def decode(chunks: list[bytes]) -> int:
        text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        line_decoder = SSELineDecoder()
        event_decoder = EventDecoder()
        count = 0
        for chunk in chunks:
            for line in line_decoder.decode(text_decoder.decode(chunk)):
                if event_decoder.decode(line.rstrip("\n")) is not None:
                    count += 1
        for line in line_decoder.flush():
            if event_decoder.decode(line.rstrip("\n")) is not None:
                count += 1
        return count

    return decode


def _sseclient_py() -> Decode | None:
    try:
        from sseclient import SSEClient
    except ImportError:
        print("sseclient-py is not installed: skipping the sseclient-py comparison")
        return None

    def decode(chunks: list[bytes]) -> int:
        return sum(1 for _ in SSEClient(iter(chunks)).events())

    return decode


def run(repeat: int = 3) -> list[tuple[str, float, float]]:
    """Return ``(label, MB/s, events/s)`` rows, best of ``repeat``; MB is 10**6 bytes.

    Labels read ``"<case> [<decoder>]"``, the decoder being ``ours`` or the peer's name.
    """
    decoders: list[tuple[str, Decode]] = [("ours", _ours)]
    for name, peer in (("httpx-sse", _httpx_sse()), ("sseclient-py", _sseclient_py())):
        if peer is not None:
            decoders.append((name, peer))
    rows: list[tuple[str, float, float]] = []
    for case, chunks in _cases():
        size = sum(map(len, chunks))
        best = dict.fromkeys((name for name, _ in decoders), float("inf"))
        counts: dict[str, int] = {}
        for _ in range(repeat):
            for name, decode in decoders:
                start = time.perf_counter()
                counts[name] = decode(chunks)
                best[name] = min(best[name], time.perf_counter() - start)
        for name, _ in decoders:
            seconds = best[name]
            rows.append((f"{case} [{name}]", size / seconds / 1e6, counts[name] / seconds))
    return rows


def _main() -> None:
    rows = run()
    fastest_peer: dict[str, float] = {}
    for label, mb, _ in rows:
        case, _, decoder = label.rpartition(" [")
        if decoder != "ours]":
            fastest_peer[case] = max(mb, fastest_peer.get(case, 0.0))
    print(f"{'case':<46} {'MB/s':>9} {'events/s':>12} {'vs fastest peer':>16}")
    for label, mb, events in rows:
        peer_mb = fastest_peer.get(label.rpartition(" [")[0])
        ratio = f"{mb / peer_mb:.2f}x" if peer_mb else ""
        print(f"{label:<46} {mb:>9.1f} {events:>12,.0f} {ratio:>16}")


if __name__ == "__main__":
    _main()
