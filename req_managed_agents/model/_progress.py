"""Where a long wait stands: the value ``progress=`` callbacks receive.

Provisioning an AgentCore harness, a batch before its results come in, a worker between
work items: each can wait minutes with nothing to show. Each takes a ``progress`` callback
and calls it, on the thread that waits, whenever its wait loop comes round (a poll, a tick
of the batch, a worker's poll for work), with a :class:`Progress`. ``str(progress)`` is the
line a person reads; the fields are for code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Progress", "ProgressCallback", "format_elapsed"]


@dataclass(frozen=True)
class Progress:
    """One report of a long wait.

    ``what`` says what is waited for, in words (``"waiting for harness h-1 to be READY
    (CREATING)"``); ``elapsed`` is the seconds since the wait began; ``done`` of ``total``
    count how far it came, in ``unit`` (``"poll"``, ``"prompt done"``: singular, its first
    word takes the plural), ``total`` None when the wait has no end in sight, ``done`` None
    when there is nothing to count.
    """

    what: str
    elapsed: float
    done: int | None = None
    total: int | None = None
    unit: str = ""

    def __str__(self) -> str:
        parts = [self.what]
        if self.done is not None:
            count = str(self.done) if self.total is None else f"{self.done}/{self.total}"
            number = self.done if self.total is None else self.total
            parts.append(f"{count} {_plural(self.unit, number)}".rstrip())
        parts.append(format_elapsed(self.elapsed))
        return ", ".join(parts)


ProgressCallback = Callable[[Progress], None]
"""What ``progress=`` takes: called with each :class:`Progress` on the waiting thread; what
it raises ends the wait as Ctrl-C would."""


def format_elapsed(seconds: float) -> str:
    """``"7 s"``, ``"2 min 05 s"``, ``"1 h 02 min"``: whole units, as a clock on a wall."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _plural(unit: str, number: int) -> str:
    if number == 1 or not unit:
        return unit
    first, _, rest = unit.partition(" ")
    return f"{first}s {rest}".rstrip()
