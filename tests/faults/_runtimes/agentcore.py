"""The AgentCore Harness runtime of the fault matrix: one fault per scenario, at every frame
of every turn and on the InvokeHarness request of every turn.

The harness has no session stream: each turn is an invocation whose answer streams that
turn's frames, and the emulator commits a turn as its ``messageStop`` goes out. Nor does it
echo answers (one way only). What a correct library does, and so what each scenario asserts:

* the stream ends before ``messageStop`` (truncated cleanly, or a frame whose CRC is wrong):
  whether the harness committed the turn cannot be known from here (this emulator does
  not; the live service might), and the harness keeps no history to ask. Invoking again
  could run the turn twice - or skip its tool calls and report success - so the library
  stops with :class:`InvocationOutcomeUnknownError` and runs no tool twice;
* the stream breaks after ``messageStop`` (the trailing ``metadata`` missing, cleanly or
  with a cut connection; a corrupt frame in its place or after it; a stall before it): the
  turn is complete and committed, so it is kept and never re-invoked. The usage of a turn
  whose ``metadata`` never arrived is unknowable: that turn's usage is expected to be
  zero, the rest of the result unchanged;
* a stall before ``messageStop``: the invocation may still be running server-side, so the
  library gives up with :class:`IdleTimeoutError` (the test id says ``gives-up-...``);
* InvokeHarness errors: a refusal (throttling, a 503 or 529 with ``retry-after``) in a burst
  of 1 is retried away; a burst of 3 outlasts ``invoke_retries=2`` and the named error ends
  the run, as does a bare 529 at once (it does not prove the turn did not start). A reset
  connection after the request went out is an unknown outcome, as above;
* after every answer carrying ``retry-after`` the next invocation waits that long.

``handle_event`` is fed at least once: every frame of every committed turn must have reached
it, in order, whatever else (frames of attempts that were retried) it also saw.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from req_managed_agents import IdleTimeoutError, RateLimitError, ServerError, SessionResult
from req_managed_agents.errors import InvocationOutcomeUnknownError, ManagedAgentsError
from req_managed_agents.providers.agentcore import _conversation, new_runtime_session_id
from req_managed_agents.providers.agentcore.api import _core
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, RecordedRequest
from tests.faults._matrix import (
    RETRIES,
    STALL_SECONDS,
    Checks,
    Inject,
    MatrixTools,
    RequestKind,
    Runtime,
    Scenario,
    script,
)
from tests.faults._scenarios import UNDISTURBED, request_scenarios

_TEXT = ["contentBlockDelta"] * 3 + ["contentBlockStop"]
_TOOL = ["contentBlockStart", *_TEXT]
_END = ["messageStop", "metadata"]
# The frames of each turn of the undisturbed run (texts and inputs come in three pieces).
FRAMES = [
    ["messageStart", *_TEXT, *_TOOL, *_TOOL, *_END],
    ["messageStart", *_TOOL, *_END],
    ["messageStart", *_TEXT, *_END],
]
INVOKE = RequestKind("POST", "/harnesses/invoke")
UNKNOWN = InvocationOutcomeUnknownError


def _tool_results(request: RecordedRequest) -> int:
    body = request.body
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return 0
    return sum(
        "toolResult" in block
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict)
    )


def _is_turn(turn: int) -> Any:
    """A ``where=`` filter for the invocations of a 0-based turn: the prompt, then the
    results of two tools, then of one."""
    results = (0, 2, 1)[turn]
    return lambda request: _tool_results(request) == results


KINDS = {
    f"invoke-turn{turn + 1}": RequestKind("POST", INVOKE.path, _is_turn(turn)) for turn in range(3)
}


def _expected_error(
    kind: str, status: int, burst: int, retry_after: bool
) -> type[ManagedAgentsError] | None:
    refused = status in (429, 503) or retry_after  # a throttle, or said when to come back
    if burst > RETRIES or not refused:
        return RateLimitError if status == 429 else ServerError
    return None


def _at_turn(turn: int, fault: str, **options: Any) -> Inject:
    """Call the emulator's ``fault(**options)`` just before the turn's first invocation:
    frame faults apply to the next invocation."""

    def inject(emulator: AgentCoreEmulator) -> Callable[[], bool]:
        fired: list[bool] = []

        def hook() -> None:
            fired.append(True)
            getattr(emulator, fault)(**options)

        emulator.before_requests(INVOKE.method, INVOKE.path, hook, where=_is_turn(turn))
        return lambda: bool(fired)

    return inject


def _where(frames: list[str], after: int) -> str:
    return f"after-{after:02d}-{frames[after - 1] if after else 'nothing'}"


def _stream_scenarios() -> list[Scenario]:
    scenarios = []
    for turn, frames in enumerate(FRAMES):
        t = f"turn{turn + 1}"
        stop = frames.index("messageStop")
        scenarios += [  # never as far as messageStop
            Scenario(
                f"truncate-{t}-{_where(frames, after)}-gives-up-{UNKNOWN.__name__}",
                _at_turn(turn, "truncate_stream", after_frames=after),
                error=UNKNOWN,
            )
            for after in range(stop)
        ]
        scenarios += [
            Scenario(
                f"truncate-after-commit-{t}-{'abrupt' if abrupt else 'clean'}",
                _at_turn(turn, "truncate_after_commit", abrupt=abrupt),
                usage_lost=turn,
            )
            for abrupt in (False, True)
        ]
        scenarios += [
            Scenario(
                f"corrupt-{t}-{_where(frames, after)}"
                + ("" if after > stop else f"-gives-up-{UNKNOWN.__name__}"),
                _at_turn(turn, "corrupt_frame", after_frames=after),
                error=None if after > stop else UNKNOWN,
                usage_lost=turn if after == len(frames) - 1 else None,
            )
            for after in range(len(frames) + 1)
        ]
        for after in sorted({0, stop // 2, stop, stop + 1}):
            committed = after > stop
            scenarios.append(
                Scenario(
                    f"stall-{t}-{_where(frames, after)}"
                    + ("" if committed else "-gives-up-IdleTimeoutError"),
                    _at_turn(turn, "stall_stream", after_frames=after, seconds=STALL_SECONDS),
                    error=None if committed else IdleTimeoutError,
                    usage_lost=turn if committed else None,
                )
            )
    return scenarios


def _request_scenarios() -> list[Scenario]:
    """A reset after the request went out leaves the turn's fate unknown, before the
    emulator acted or after."""
    scenarios = request_scenarios(KINDS, _expected_error)
    return [
        replace(s, id=f"{s.id}-gives-up-{UNKNOWN.__name__}", error=UNKNOWN)
        if "-reset-" in s.id
        else s
        for s in scenarios
    ]


def _turn_frames(emulator: AgentCoreEmulator) -> list[list[dict[str, Any]]]:
    """The frames of each turn the harness committed."""
    invocations = emulator.invocations
    if not invocations:
        return []
    first = invocations[0]
    return emulator.turn_frames(first.harness_arn, first.runtime_session_id)


def _read_log(
    emulator: AgentCoreEmulator, result: SessionResult, tools: MatrixTools
) -> list[list[str]]:
    return [[next(iter(frame)) for frame in turn] for turn in _turn_frames(emulator)]


def _check_events(
    checks: Checks, emulator: AgentCoreEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """Every frame of every committed turn reached ``handle_event``, turn after turn, each
    turn's frames in one piece (a retried attempt's frames may come before them)."""
    seen = [dict(event) for event in tools.events]
    start = 0
    for number, frames in enumerate(_turn_frames(emulator), start=1):
        found = _find(seen, frames, start)
        checks.expect(found is not None, f"handle_event missed frames of committed turn {number}")
        if found is None:
            return
        start = found + len(frames)


def _find(seen: list[dict[str, Any]], frames: list[dict[str, Any]], start: int) -> int | None:
    for at in range(start, len(seen) - len(frames) + 1):
        if seen[at : at + len(frames)] == frames:
            return at
    return None


AGENTCORE = Runtime(
    name="agentcore",
    start=lambda echoed: AgentCoreEmulator(script(ConverseTurn)),
    connect=lambda emulator: {
        "harness_arn": emulator.add_harness(),
        "runtime_session_id": new_runtime_session_id(),
        "invoke_retries": RETRIES,
    },
    scenarios=[UNDISTURBED, *_stream_scenarios(), *_request_scenarios()],
    log=lambda echoed: FRAMES,
    read_log=_read_log,
    check_events=_check_events,
    backoffs=[(_conversation, "INVOKE_RETRY"), (_core, "REQUESTS")],
    ways=(True,),
)
