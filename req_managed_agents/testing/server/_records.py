"""What an emulator keeps for tests to look at: the requests it received and its streams."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the emulator received it, kept for assertions.

    ``headers`` has lower-case names (repeated headers joined with commas); ``body`` is the
    decoded JSON when the body parses as JSON, the raw bytes otherwise (always for
    ``multipart/*`` bodies), and None when empty.
    ``received_at`` is the :func:`time.monotonic` time its head arrived (to measure backoff).
    ``raw_query`` and ``raw_body`` are exactly as received, for checks such as request
    signatures that must see the bytes; ``listener`` names the port it arrived on.
    """

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    received_at: float
    raw_query: str = ""
    raw_body: bytes = field(default=b"", repr=False)
    listener: str = ""


@dataclass(frozen=True)
class StreamConnection:
    """A snapshot of one streaming response.

    Times are :func:`time.monotonic` seconds. ``events_sent`` counts event frames written,
    duplicates and corrupted frames included, heartbeats and previews excluded. ``end`` says
    why the connection closed: ``"finished"``, ``"client_closed"``, ``"dropped"``, ``"stalled"``,
    ``"reset"`` (``reset_requests``), ``"emulator_closed"`` or a reason the emulator chose
    (None while open).
    """

    scope: str
    opened_at: float
    closed_at: float | None
    events_sent: int
    end: str | None
