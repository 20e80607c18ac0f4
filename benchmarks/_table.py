"""The report's table: its rows, the line saying where they were measured, and how a run's
rows land in ``benchmarks/README.md`` - the whole table after a full run, or merged into it
after a run of a few sections, the other rows kept with the line saying when they were
measured."""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import _peers

README = Path(__file__).parent / "README.md"
START, END = "<!-- report:start -->", "<!-- report:end -->"
_COLUMNS = "| | measure | ours | peer / baseline | ratio | target |"
_REMEASURED = " re-measured on "


@dataclass(frozen=True)
class Row:
    section: str
    measure: str
    ours: str
    peer: str = ""
    ratio: str = ""
    target: str = ""


def ratio(ours: float, peer: float) -> str:
    return f"{ours / peer:.2f}x"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    peers = ", ".join(f"{name} {version}" for name, version in sorted(_peers.versions().items()))
    return (
        f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"peers: {peers}"
    )


def markdown(rows: Sequence[Row], notes: Sequence[str]) -> str:
    lines = ["\n\n".join(notes), "", _COLUMNS, "|-" * 6 + "|"]
    for row in rows:
        cells = (row.section, row.measure, row.ours, row.peer, row.ratio, row.target)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def full_table(rows: Sequence[Row]) -> str:
    return markdown(rows, [f"Measured {machine()}."])


def merged_table(rows: Sequence[Row], order: Sequence[str]) -> str:
    """The README's table with the sections of ``rows`` replaced by them, in ``order`` (of
    row sections; unknown ones last), and a line saying when and where they were measured
    (replacing an earlier such line about no other section)."""
    notes, kept = _read_table()
    fresh = {row.section for row in rows}
    sections = [section for section in order if section in fresh]
    sections += sorted(fresh - set(sections))
    notes = [
        note
        for note in notes
        if _REMEASURED not in note or not set(note.split(_REMEASURED)[0].split(", ")) <= fresh
    ]
    notes.append(f"{', '.join(sections)}{_REMEASURED}{machine()}.")
    every = [row for row in kept if row.section not in fresh] + list(rows)
    rank = {section: n for n, section in enumerate(order)}
    every.sort(key=lambda row: rank.get(row.section, len(rank)))
    return markdown(every, notes)


def write_readme(table: str) -> None:
    text = README.read_text()
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    README.write_text(f"{before}{START}\n{table}{END}{after}")


def _read_table() -> tuple[list[str], list[Row]]:
    """The notes above the README's table and its rows."""
    block = README.read_text().partition(START)[2].partition(END)[0]
    notes: list[str] = []
    rows: list[Row] = []
    for line in block.strip().splitlines():
        if not line.startswith("|"):
            if line.strip():
                notes.append(line.strip())
        elif line != _COLUMNS and not line.startswith("|-"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows.append(Row(*cells))
    return notes, rows
