"""Frame faults of the AgentCore emulator: what happens to the next invocations' streams.

Each fault is for the next ``times`` invocations, in the order added, one per invocation:
after ``after_frames`` frames, an exception, error or corrupt frame ends the stream, or it is
truncated (before ``messageStop``, or right after it: ``after_commit``) or stalls.
"""

from __future__ import annotations


class _FrameFault:
    """A stream fault for the next invocation(s): what happens after ``after_frames``."""

    def __init__(
        self,
        kind: str,
        after_frames: int,
        times: int,
        frame: bytes = b"",
        seconds: float = 0.0,
        abrupt: bool = False,
    ) -> None:
        if after_frames < 0:
            raise ValueError("after_frames must not be negative")
        if times < 1:
            raise ValueError("times must be at least 1")
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        self.kind = kind
        self.after_frames = after_frames
        self.remaining = times
        self.frame = frame
        self.seconds = seconds
        self.abrupt = abrupt

    def cut(self, event_count: int) -> int:
        """How many of the turn's events go out before the fault."""
        if self.kind == "truncate":  # never as far as messageStop
            return min(self.after_frames, event_count - 2)
        if self.kind == "after_commit":  # through messageStop, never the metadata
            return event_count - 1
        return min(self.after_frames, event_count)
