"""Decoder throughput against the peers, measured in the same run (by hand, not in CI).

    .venv/bin/python benchmarks/decoders.py [repeat]

Prints MB/s and events (messages) per second for our ``SSEDecoder`` against httpx-sse's
decoder and sseclient-py, and for our ``EventStreamDecoder`` against botocore's
``EventStreamBuffer``, with each row's ratio to the peer measured on the same input.
Targets: SSE >= 2x the fastest peer, event-stream >= 2x botocore (16 KiB chunks).
Missing peers are installed into ``benchmarks/.peers`` (see ``_peers.py``), else skipped with
a reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _peers


def _table(title: str, rows: list[tuple[str, float, float]], unit: str) -> None:
    print(f"\n{title}")
    print(f"{'case':<52}{'MB/s':>9}{unit + '/s':>14}{'ratio':>8}")
    by_case: dict[str, dict[str, float]] = {}
    for label, mb_s, _ in rows:
        case, _, who = label.rpartition(" [")
        by_case.setdefault(case, {})[who.rstrip("]")] = mb_s
    for label, mb_s, per_s in rows:
        case, _, who = label.rpartition(" [")
        peers = {k: v for k, v in by_case[case].items() if k != "ours"}
        ratio = f"{mb_s / max(peers.values()):.2f}x" if peers else "-"
        print(f"{label:<52}{mb_s:>9.1f}{per_s:>14,.0f}{ratio:>8}")


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    _peers.ensure_peers()
    import _eventstream_bench
    import _sse_bench

    _table("server-sent events (ratio: against the fastest peer)", _sse_bench.run(repeat), "events")
    _table("AWS event-stream (ratio: against botocore)", _eventstream_bench.run(repeat), "msgs")


if __name__ == "__main__":
    main()
