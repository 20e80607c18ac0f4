"""A session's event log, streamed to a client as it grows, with heartbeats when it is quiet.

From a position in the log, each event goes out as it is logged, a heartbeat after each
``ping_interval`` of silence, until the client leaves, no more can come (the session was
deleted) or the emulator closes. The frames, which events go out and what ends a stream are
the API's own: its sender decides, event by event. A stream waits for its bell
(:meth:`~req_managed_agents.testing.server.Lifecycle.bell`), the client leaving or its next
heartbeat: it never polls, so a thousand idle streams cost nothing.
"""

from __future__ import annotations

import copy
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    from req_managed_agents.testing.server._lifecycle import Lifecycle
    from req_managed_agents.testing.server._streams import ChunkedStream

    # Writes the event at a position of the log (faults applied); False once the stream is
    # over, whoever ended it (the sender may end it itself: an event nothing follows).
    Sender = Callable[[int, Mapping[str, Any]], bool]


class LogStreams:
    """Streams logs of one emulator: a heartbeat frame after each ``ping_interval`` seconds
    of silence."""

    def __init__(self, lifecycle: Lifecycle, *, ping_interval: float, heartbeat: bytes) -> None:
        if ping_interval <= 0:
            raise ValueError("ping_interval must be positive")
        self._lifecycle = lifecycle
        self._ping_interval = ping_interval
        self._heartbeat = heartbeat

    def follow(
        self,
        stream: ChunkedStream,
        log: Sequence[Mapping[str, Any]],
        cursor: int,
        *,
        bell: str,
        send: Sender,
        over: Callable[[], bool],
        copies: bool = False,
    ) -> None:
        """Send ``log`` from position ``cursor`` on, as it grows, until the stream ends.

        ``bell`` is the scope whose news wakes the stream; ``over()`` (read with the lock
        held) says no more events can come, and the stream finishes (``"session_deleted"``)
        once it has sent what is new. ``copies`` sends copies of the events, for a log whose
        events may still change after they are logged.
        """
        lifecycle = self._lifecycle
        quiet_since = time.monotonic()
        stream.watch_client(lambda: lifecycle.ring(bell))
        while True:
            with lifecycle.condition:
                silence = quiet_since + self._ping_interval - time.monotonic()
                idle = len(log) <= cursor and not lifecycle.stopping and not stream.ended
                if idle and silence > 0 and not over():
                    lifecycle.bell(bell).wait(silence)
                if lifecycle.stopping:
                    stream.abort("emulator_closed")
                    return
                if stream.ended:  # the client left
                    return
                fresh = list(log[cursor:])
                if copies:
                    fresh = copy.deepcopy(fresh)
                ended = over()
            for position, event in enumerate(fresh, start=cursor):
                if not send(position, event):
                    return
            cursor += len(fresh)
            if ended:
                stream.finish("session_deleted")
                return
            now = time.monotonic()
            if fresh:
                quiet_since = now
            elif now - quiet_since >= self._ping_interval:
                if not stream.write(self._heartbeat):
                    return
                quiet_since = now
