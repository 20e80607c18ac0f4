"""The fault matrix's scenarios, built from a runtime's data: its request kinds, the positions
of its session log, the errors it must give up with.

Request faults are the same everywhere: error bursts (each status, 1 and 3 in a row, with
and without ``retry-after``) and resets (before and after the service acted) on every kind
of request a run makes. Stream faults at a position of the session log are the same for
every runtime with a session stream (:func:`session_scenarios`); a runtime whose stream
has another shape (AgentCore's per-turn invocations) builds its own from the emulator's
faults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Optional, Protocol

from req_managed_agents import RateLimitError, ServerError
from req_managed_agents.errors import ManagedAgentsError
from req_managed_agents.testing import RecordedRequest
from tests.faults._matrix import (
    BURSTS,
    RETRIES,
    RETRY_AFTER,
    STALL_SECONDS,
    STATUSES,
    Emulator,
    Inject,
    RequestKind,
    Scenario,
)

# ``expect(kind, status, burst, with_retry_after)``: the error the library must give up
# with, or None where it must recover.
Expect = Callable[[str, int, int, bool], Optional[type[ManagedAgentsError]]]
# The positions of a session log a stream fault is put at, and the event's name in the id.
Positions = Iterable[tuple[int, str]]


class SessionEmulator(Protocol):
    """An emulator of a service with a session stream: its faults at a position of the
    session's log."""

    def drop_stream(self, at_event: int) -> None: ...
    def duplicate_stream(self, at_event: int) -> None: ...
    def stall_stream(self, at_event: int, seconds: float) -> None: ...
    def corrupt_stream(self, at_event: int) -> None: ...


def request_scenarios(kinds: Mapping[str, RequestKind], expect: Expect) -> list[Scenario]:
    """Error bursts (each status, 1 and 3 in a row, with and without ``retry-after``) and
    resets (before and after acting) on every request kind. ``expect(kind, status, burst,
    with_retry_after)`` names the error the library must give up with, or None."""
    scenarios = []
    for name, kind in kinds.items():
        for status in STATUSES:
            for burst in BURSTS:
                for retry_after in (None, RETRY_AFTER):
                    error = expect(name, status, burst, retry_after is not None)
                    suffix = "ra" if retry_after else "bare"
                    verdict = f"-gives-up-{error.__name__}" if error else ""
                    scenarios.append(
                        Scenario(
                            f"{name}-{status}x{burst}-{suffix}{verdict}",
                            _failing(kind, status, burst, retry_after),
                            error=error,
                            kind=kind,
                            burst=burst,
                            retry_after=retry_after,
                        )
                    )
        for after_acting in (False, True):
            moment = "after" if after_acting else "before"
            scenarios.append(
                Scenario(f"{name}-reset-{moment}-acting", _resetting(kind, after_acting), kind=kind)
            )
    return scenarios


def gives_up_creating(
    kind: str, status: int, burst: int, retry_after: bool
) -> type[ManagedAgentsError] | None:
    """Creating the session is retried by the HTTP layer alone (it is not safe to repeat
    otherwise), so a burst longer than ``max_retries`` ends the run; every other kind
    recovers."""
    if kind == "create-session" and burst > RETRIES:
        return RateLimitError if status == 429 else ServerError
    return None


# The request faults the second way (answers not echoed) repeats on the requests that
# follow the answers: a burst longer than the HTTP retries, with retry-after (the provider's
# own recovery takes over), and a reset before and after the service acted (did it land?).
SECOND_WAY_REQUEST_FAULTS = ("-503x3-ra", "-reset-before-acting", "-reset-after-acting")


def second_way(scenarios: Iterable[Scenario]) -> list[Scenario]:
    """``scenarios`` (request faults) again, against a service that does not echo the
    answers it receives: the representative faults only (``SECOND_WAY_REQUEST_FAULTS``)."""
    return [
        dataclasses.replace(s, id=f"{s.id}-unechoed", echoed=False)
        for s in scenarios
        if s.id.endswith(SECOND_WAY_REQUEST_FAULTS)
    ]


def _failing(kind: RequestKind, status: int, burst: int, retry_after: float | None) -> Inject:
    def inject(emulator: Emulator) -> None:
        emulator.fail_requests(
            kind.method,
            kind.path,
            status,
            times=burst,
            retry_after=retry_after,
            where=kind.where,
        )

    return inject


def _resetting(kind: RequestKind, after_acting: bool) -> Inject:
    def inject(emulator: Emulator) -> None:
        emulator.reset_requests(kind.method, kind.path, after_acting=after_acting, where=kind.where)

    return inject


def _nothing(emulator: Emulator) -> None:
    return None


# No fault: the run every scenario's result is compared with.
UNDISTURBED = Scenario("undisturbed", _nothing)
STREAM_FAULTS: dict[str, Callable[[SessionEmulator, int], None]] = {
    "drop": lambda emulator, at: emulator.drop_stream(at),
    "duplicate": lambda emulator, at: emulator.duplicate_stream(at),
    "stall": lambda emulator, at: emulator.stall_stream(at, STALL_SECONDS),
    "corrupt": lambda emulator, at: emulator.corrupt_stream(at),
}


def _at_event(fault: Callable[[SessionEmulator, int], None], position: int) -> Inject:
    def inject(emulator: SessionEmulator) -> None:
        fault(emulator, position)

    return inject


def stream_scenarios(positions: Positions, echoed: bool = True) -> list[Scenario]:
    """Each stream fault (a dropped connection, a duplicated event, a stall past the idle
    timeout, a frame that is not JSON) at each position."""
    suffix = "" if echoed else "-unechoed"
    return [
        Scenario(
            f"{name}-at-{position:02d}-{label}{suffix}", _at_event(fault, position), echoed=echoed
        )
        for position, label in positions
        for name, fault in STREAM_FAULTS.items()
    ]


def after_drop(scenario: Scenario, kinds: Collection[RequestKind], at: int) -> Scenario:
    """``scenario``, with the stream dropped at ``at`` first when its request is of one of
    ``kinds``: requests a run makes only to recover from a drop."""
    if scenario.kind not in kinds:
        return scenario
    fault = scenario.inject

    def inject(emulator: SessionEmulator) -> None:
        emulator.drop_stream(at)
        fault(emulator)

    return dataclasses.replace(scenario, inject=inject)


def session_scenarios(
    positions: Callable[[bool], Positions],
    kinds: Mapping[str, RequestKind],
    *,
    after_a_drop: Sequence[str],
    drop_at: int,
    after_answers: Sequence[str],
    answers_drop_at: int,
    expect: Expect = gives_up_creating,
) -> list[Scenario]:
    """The matrix of a runtime with a session stream, both ways.

    The first way (answers echoed): every stream fault at every position
    (``positions(True)``), every request fault on every kind; the kinds in
    ``after_a_drop`` are made only to recover from a drop, so one at ``drop_at`` comes
    first. The second way (not echoed) is the subset where the two can differ: the stream
    faults at ``positions(False)``, and the representative request faults on the kinds that
    follow the answers (``after_answers``), the reads after a drop at ``answers_drop_at``,
    where what they read holds the answers the stream never carried.
    """
    reads = [kinds[name] for name in after_a_drop]
    return [
        UNDISTURBED,
        *stream_scenarios(positions(True)),
        *(after_drop(s, reads, drop_at) for s in request_scenarios(kinds, expect)),
        dataclasses.replace(UNDISTURBED, id="undisturbed-unechoed", echoed=False),
        *stream_scenarios(positions(False), echoed=False),
        *second_way(
            after_drop(s, reads, answers_drop_at)
            for s in request_scenarios({name: kinds[name] for name in after_answers}, expect)
        ),
    ]


def posted(request: RecordedRequest) -> list[dict[str, Any]]:
    """The events a request posts (``{"events": [...]}``)."""
    body = request.body
    events = body.get("events") if isinstance(body, dict) else None
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def posting(
    event_type: str, value: Callable[[dict[str, Any]], object] | None = None, *values: object
) -> Callable[[RecordedRequest], bool]:
    """A ``where=`` filter: the requests posting an event of ``event_type`` (whose
    ``value(event)`` is one of ``values``, when given)."""

    def where(request: RecordedRequest) -> bool:
        return any(
            e.get("type") == event_type and (value is None or value(e) in values)
            for e in posted(request)
        )

    return where
