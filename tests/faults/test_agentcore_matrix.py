"""The fault matrix against the AgentCore emulator: one fault per scenario, at every frame of
every turn and on the InvokeHarness request of every turn.

The emulator commits a turn as its ``messageStop`` goes out. What a correct library does,
and so what each scenario asserts:

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

import pytest

from req_managed_agents import SessionResult, run_to_completion
from req_managed_agents.errors import (
    IdleTimeoutError,
    InvocationOutcomeUnknownError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
)
from req_managed_agents.providers.agentcore import new_runtime_session_id
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, RecordedRequest, call
from tests.faults._matrix import (
    IDLE_TIMEOUT,
    PROMPT,
    RETRIES,
    RUN_TIMEOUT,
    STALL_SECONDS,
    Checks,
    Inject,
    MatrixTools,
    RequestKind,
    Scenario,
    request_scenarios,
    run_checked,
    shape,
)

SCRIPT = [
    ConverseTurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    ConverseTurn(tool_calls=[call("mul", a=5, b=6)]),
    ConverseTurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
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


SCENARIOS = [
    Scenario("undisturbed", lambda emulator: None),
    *_stream_scenarios(),
    *_request_scenarios(),
]


def _start() -> AgentCoreEmulator:
    return AgentCoreEmulator(SCRIPT)


def _run(emulator: AgentCoreEmulator, tools: MatrixTools) -> SessionResult:
    arn = emulator.add_harness()
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            harness_arn=arn,
            runtime_session_id=new_runtime_session_id(),
            idle_timeout=IDLE_TIMEOUT,
            invoke_retries=RETRIES,
        )


def _check_events(
    checks: Checks, emulator: AgentCoreEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """Every frame of every committed turn reached ``handle_event``, turn after turn, each
    turn's frames in one piece (a retried attempt's frames may come before them)."""
    invocations = emulator.invocations
    if not invocations:
        return
    turns = emulator.turn_frames(invocations[0].harness_arn, invocations[0].runtime_session_id)
    seen = [dict(event) for event in tools.events]
    start = 0
    for number, frames in enumerate(turns, start=1):
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


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    """The undisturbed run's result, which every scenario must reproduce."""
    with _start() as emulator:
        result = _run(emulator, MatrixTools())
        (invocation, *_) = emulator.invocations
        turns = emulator.turn_frames(invocation.harness_arn, invocation.runtime_session_id)
    assert [[next(iter(frame)) for frame in turn] for turn in turns] == FRAMES
    assert result.terminal == "end_turn"
    assert result.text == "The total is 30."
    assert [r.content for r in result.tool_results] == ["3", "12", "30"]
    return shape(result)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_agentcore_fault(scenario: Scenario, reference: dict[str, Any]) -> None:
    run_checked(scenario, reference, _start, _run, _check_events)
