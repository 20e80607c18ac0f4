"""The README's Python blocks, as the tests that run them see them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["README", "Block", "python_blocks"]

README = Path(__file__).resolve().parents[2] / "README.md"


@dataclass(frozen=True)
class Block:
    heading: str
    line: int
    code: str


def python_blocks() -> list[Block]:
    blocks: list[Block] = []
    heading = ""
    lines = README.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("## "):
            heading = line[3:].strip()
        if line.strip() == "```python":
            end = lines.index("```", index + 1)
            blocks.append(Block(heading, index + 1, "\n".join(lines[index + 1 : end]) + "\n"))
            index = end
        index += 1
    return blocks
