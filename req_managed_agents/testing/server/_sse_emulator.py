"""What an emulator that streams a session's log over SSE offers a test besides: faults that
meet the event at a position of the log, on the next connections about to send it (what a
connection sends that is not in the log, a snapshot or a heartbeat, meets none)."""

from __future__ import annotations

from req_managed_agents.testing.server._emulator import LoopbackEmulator
from req_managed_agents.testing.server._streams import sse_data_frame


class SseEmulator(LoopbackEmulator):
    """Base of the emulators whose sessions stream their log over SSE: the stream faults."""

    def drop_stream(self, at_event: int, session_id: str | None = None, times: int = 1) -> None:
        """Cut the next ``times`` stream connections about to send event ``at_event``.

        ``at_event`` is a 0-based position in the session's event log (``events()``). The
        socket closes without the terminating chunk; the event stays in the log.
        ``session_id=None`` matches any session.
        """
        self._server.faults.add_stream_fault("drop", session_id, at_event, times)

    def stall_stream(self, at_event: int, seconds: float, session_id: str | None = None) -> None:
        """Once: before sending event ``at_event``, go silent (no heartbeats) for ``seconds``,
        then close the connection."""
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        self._server.faults.add_stream_fault("stall", session_id, at_event, 1, seconds)

    def corrupt_stream(
        self,
        at_event: int,
        session_id: str | None = None,
        times: int = 1,
        *,
        data: str | None = None,
    ) -> None:
        """On the next ``times`` stream connections about to send event ``at_event``, write a
        frame whose ``data:`` is not JSON (the first half of the event's) instead of it;
        ``data`` chooses what the frame carries instead (JSON of the wrong shape, say, or an
        event whose ``type`` is not a string).

        The stream carries on with the next event; the event stays in the log, so a client
        can recover it by reading the history. One fault per event and connection: stalls
        come first, then drops, corruptions and duplications.
        """
        frame = None if data is None else sse_data_frame(data)
        self._server.faults.add_stream_fault("corrupt", session_id, at_event, times, frame=frame)

    def duplicate_stream(
        self, at_event: int, session_id: str | None = None, times: int = 1
    ) -> None:
        """Write event ``at_event``'s frame twice on the next ``times`` stream connections
        about to send it (see :meth:`duplicate_stream_events` for every event)."""
        self._server.faults.add_stream_fault("duplicate", session_id, at_event, times)

    def duplicate_stream_events(self, enabled: bool = True) -> None:
        """Write every event twice on the streams (the log is unaffected)."""
        self._server.faults.set_duplicate_events(enabled)
