"""The hostile-answer sweep over the paths a run takes, on each provider's emulator, over
real sockets: each scenario answers one request of a run - creating the session, reading
its history or its status, posting its inputs, opening its stream - or one frame of the
stream (the first, and later ones) with what cannot be used (``_answers``).

What a correct library does, and so what each scenario asserts:

* the run ends with the undisturbed run's result, or with the named
  :class:`~req_managed_agents.ManagedAgentsError` subclass - never a ``KeyError``,
  ``TypeError`` or ``AttributeError``, raised or hidden in the error's chain, nor the stream
  thread's last-resort ``the event stream failed`` error;
* a stream frame that cannot be read is caught up from what the session recorded, and the
  run finishes as the undisturbed one did; a stream answered with what is not a stream is
  reconnected;
* a session create the service acted on, answered with what cannot be read, is looked up
  by its token and used: the session it made is the run's, none is left behind; one it did
  not act on ends the run with the error naming the answer;
* every tool call runs at most once (exactly once when the run finishes), no session is
  left running, and nothing - thread, socket, stream - is left open.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any, Union

import pytest

from req_managed_agents import ManagedAgentsError, SessionResult, run_to_completion
from req_managed_agents.errors import (
    InvocationOutcomeUnknownError,
    MalformedResponseError,
    StreamError,
)
from req_managed_agents.providers.agentcore import new_runtime_session_id
from req_managed_agents.testing import (
    AgentCoreEmulator,
    ClaudeEmulator,
    ConverseTurn,
    OpenAIAgentsEmulator,
    OpenAITurn,
    RecordedRequest,
    Turn,
    call,
)
from tests.faults._matrix import (
    IDLE_TIMEOUT,
    PROMPT,
    RETRIES,
    RUN_TIMEOUT,
    Checks,
    MatrixTools,
    _library_threads,
    shape,
    socket_fds,
)
from tests.hostile._answers import (
    FRAMES,
    HUGE,
    PAGE_ANSWERS,
    POSTED_ANSWERS,
    RESOURCE_ANSWERS,
)

Emulator = Union[ClaudeEmulator, OpenAIAgentsEmulator, AgentCoreEmulator]
# A run that ends well: its result must be the undisturbed run's.
RECOVERS = None
# What may reach the user; anything else (KeyError, TypeError, ...) in the chain is a bug.
_FOREIGN = (KeyError, TypeError, AttributeError, IndexError, UnicodeError, RecursionError)


@dataclasses.dataclass(frozen=True)
class Hostile:
    """One hostile answer at one point of a run, and the outcome it must have."""

    id: str
    inject: Callable[[Any], None]
    error: type[ManagedAgentsError] | None


def _answering(
    method: str,
    path: str,
    body: bytes,
    *,
    after_acting: bool = True,
    where: Callable[[RecordedRequest], bool] | None = None,
    drop_first: int | None = None,
) -> Callable[[Any], None]:
    """Answer the first matching request with ``body``; with ``drop_first``, cut the stream
    at that event first (what follows a reconnect is only asked for after one)."""

    def inject(emulator: Any) -> None:
        if drop_first is not None:
            emulator.drop_stream(drop_first)
        emulator.answer_requests(method, path, body, after_acting=after_acting, where=where)

    return inject


def _framing(position: int, data: str) -> Callable[[Any], None]:
    def inject(emulator: Any) -> None:
        emulator.corrupt_stream(position, data=data)

    return inject


def _each(
    name: str,
    answers: Mapping[str, bytes],
    method: str,
    path: str,
    error: type[ManagedAgentsError] | None,
    **options: Any,
) -> list[Hostile]:
    return [
        Hostile(f"{name}-{answer}", _answering(method, path, body, **options), error)
        for answer, body in answers.items()
    ]


def _frames(positions: Mapping[int, str]) -> list[Hostile]:
    return [
        Hostile(f"frame-{position:02d}-{event}-{frame}", _framing(position, data), RECOVERS)
        for position, event in positions.items()
        for frame, data in FRAMES.items()
    ]


# -- Claude ------------------------------------------------------------------------------

CLAUDE_SCRIPT = [
    Turn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    Turn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
_CLAUDE_EVENTS = r"/v1/sessions/[^/]+/events"


def _posts(kind: str) -> Callable[[RecordedRequest], bool]:
    def where(request: RecordedRequest) -> bool:
        events = request.body.get("events") if isinstance(request.body, dict) else None
        return any(isinstance(e, dict) and e.get("type") == kind for e in events or ())

    return where


CLAUDE = [
    *_each("create", RESOURCE_ANSWERS, "POST", "/v1/sessions", RECOVERS),
    *_each(
        "create-not-acted-on",
        {k: RESOURCE_ANSWERS[k] for k in ("empty", "huge-id")},
        "POST",
        "/v1/sessions",
        MalformedResponseError,
        after_acting=False,
    ),
    *_each("history", PAGE_ANSWERS, "GET", _CLAUDE_EVENTS, MalformedResponseError),
    *_each(
        "post-message",
        POSTED_ANSWERS,
        "POST",
        _CLAUDE_EVENTS,
        MalformedResponseError,
        where=_posts("user.message"),
    ),
    *_each(
        "post-results",
        POSTED_ANSWERS,
        "POST",
        _CLAUDE_EVENTS,
        MalformedResponseError,
        where=_posts("user.custom_tool_result"),
    ),
    *_each("stream", RESOURCE_ANSWERS, "GET", _CLAUDE_EVENTS + "/stream", RECOVERS),
    # The echoed prompt, the first tool call, the idle that asks for results, the last idle.
    *_frames({0: "user.message", 5: "custom_tool_use", 8: "status_idle", 16: "status_idle"}),
]


def _claude_start() -> ClaudeEmulator:
    return ClaudeEmulator(CLAUDE_SCRIPT, ping_interval=IDLE_TIMEOUT / 3)


def _claude_run(emulator: ClaudeEmulator, tools: MatrixTools) -> SessionResult:
    connect = {"agent_id": emulator.add_agent(), "environment_id": emulator.add_environment()}
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            **connect,
        )


def _claude_running(emulator: ClaudeEmulator) -> list[str]:
    with emulator.provider(timeout=5) as provider:
        sessions = [provider.client.get_session(i) for i in emulator.session_ids()]
    return [str(s["id"]) for s in sessions if s.get("status") == "running"]


# Claude on Bedrock: the same paths, signed; a few answers on each (its session lists leave
# out metadata, so a create token is looked for in each session read whole).
_BEDROCK_REGION = "us-west-2"
_SANDBOX = f"arn:aws:bedrock-agentcore:{_BEDROCK_REGION}:123456789012:sandbox/hostile-0123456789"
_SOME = ("empty", "not-json", "list", "huge-id", "type-not-string", "item-type-not-string")
BEDROCK = [
    hostile
    for hostile in CLAUDE
    if (
        hostile.id.startswith(("create", "history", "post-message", "stream"))
        and hostile.id.endswith(_SOME)
    )
    or hostile.id.startswith("frame-08")
]


def _bedrock_start() -> ClaudeEmulator:
    return ClaudeEmulator(
        CLAUDE_SCRIPT, ping_interval=IDLE_TIMEOUT / 3, flavor="bedrock", region=_BEDROCK_REGION
    )


def _bedrock_run(emulator: ClaudeEmulator, tools: MatrixTools) -> SessionResult:
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            agent_id=emulator.add_agent(),
            environment_id=_SANDBOX,
        )


# -- OpenAI ------------------------------------------------------------------------------

OPENAI_SCRIPT = [
    OpenAITurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    OpenAITurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
_OPENAI_SESSION = r"/v1/agents/sessions/[^/]+"
# Where a drop forces a reconnect and a catch-up: at the first function call's item.
_OPENAI_DROP = 13

OPENAI = [
    *_each("create", RESOURCE_ANSWERS, "POST", "/v1/agents/sessions", RECOVERS),
    *_each(
        "create-not-acted-on",
        {k: RESOURCE_ANSWERS[k] for k in ("empty", "huge-id")},
        "POST",
        "/v1/agents/sessions",
        StreamError,
        after_acting=False,
    ),
    *_each(
        "catch-up-session",
        RESOURCE_ANSWERS,
        "GET",
        _OPENAI_SESSION,
        MalformedResponseError,
        drop_first=_OPENAI_DROP,
    ),
    *_each(
        "catch-up-turns",
        PAGE_ANSWERS,
        "GET",
        _OPENAI_SESSION + "/turns",
        MalformedResponseError,
        drop_first=_OPENAI_DROP,
    ),
    *_each(
        "catch-up-items",
        PAGE_ANSWERS,
        "GET",
        _OPENAI_SESSION + "/turns/[^/]+/items",
        MalformedResponseError,
        drop_first=_OPENAI_DROP,
    ),
    *_each(
        "reconnect",
        RESOURCE_ANSWERS,
        "GET",
        _OPENAI_SESSION + "/events",
        RECOVERS,
        drop_first=_OPENAI_DROP,
    ),
    # Posted inputs are answered 202 with no body: whatever comes instead is not read.
    *_each("post-results", POSTED_ANSWERS, "POST", _OPENAI_SESSION + "/events", RECOVERS),
    Hostile(
        "frame-00-created-huge-session-id",
        _framing(0, json.dumps({"type": "agent.session.created", "session": {"id": HUGE}})),
        RECOVERS,
    ),
    # The session's creation (which names it), a turn's start, the first function call's
    # item, the status asking for results, the last idle.
    *_frames({0: "created", 1: "turn-created", 13: "item-added", 17: "requires", 31: "idle"}),
]


def _openai_start() -> OpenAIAgentsEmulator:
    return OpenAIAgentsEmulator(OPENAI_SCRIPT, ping_interval=IDLE_TIMEOUT / 3)


def _openai_run(emulator: OpenAIAgentsEmulator, tools: MatrixTools) -> SessionResult:
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            agent_id=emulator.add_agent(),
        )


def _openai_running(emulator: OpenAIAgentsEmulator) -> list[str]:
    running = ("queued", "in_progress")
    return [i for i in emulator.session_ids() if emulator.session(i).get("status") in running]


# -- AgentCore ---------------------------------------------------------------------------

AGENTCORE_SCRIPT = [
    ConverseTurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2)]),
    ConverseTurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
_HARNESS_ANSWERS = {
    **{k: v for k, v in RESOURCE_ANSWERS.items() if not k.startswith(("no-", "id-", "huge-i"))},
    "no-harness": json.dumps({"harnessId": "h-1"}).encode(),
    "no-arn": json.dumps({"harness": {"harnessId": "h_1-abcdefghij"}}).encode(),
    "arn-not-string": json.dumps({"harness": {"arn": 5, "harnessId": "h_1-abcdefghij"}}).encode(),
    "huge-arn": json.dumps({"harness": {"arn": "a" * 10_000, "harnessId": "h"}}).encode(),
}

AGENTCORE = [
    *_each("get-harness", _HARNESS_ANSWERS, "GET", "/harnesses/[^/]+", MalformedResponseError),
    # Not an event stream: the turn's outcome is unknown (the harness keeps no history).
    *_each(
        "invoke",
        RESOURCE_ANSWERS,
        "POST",
        "/harnesses/invoke",
        InvocationOutcomeUnknownError,
    ),
]


def _agentcore_start() -> AgentCoreEmulator:
    return AgentCoreEmulator(AGENTCORE_SCRIPT)


def _agentcore_run(emulator: AgentCoreEmulator, tools: MatrixTools) -> SessionResult:
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


# -- the checks ----------------------------------------------------------------------------


def _foreign(error: BaseException | None) -> list[str]:
    """Exceptions in ``error``'s chain that no caller of this library should meet."""
    found = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, _FOREIGN) or "the event stream failed" in str(error):
            found.append(f"{type(error).__name__}: {str(error)[:200]}")
        error = error.__cause__ or error.__context__
    return found


def _sweep(
    hostile: Hostile,
    start: Callable[[], Any],
    run: Callable[[Any, MatrixTools], SessionResult],
    running: Callable[[Any], list[str]] | None,
    reference: dict[str, Any],
    made: Callable[[Any], list[str]] = lambda emulator: list(emulator.session_ids()),
) -> None:
    """Run ``hostile``'s run; ``made`` lists the sessions it made (by their ids as a
    result names them)."""
    sockets_before = socket_fds()
    threads_before = set(_library_threads())
    checks = Checks()
    tools = MatrixTools()
    result: SessionResult | None = None
    error: BaseException | None = None
    with start() as emulator:
        hostile.inject(emulator)
        try:
            result = run(emulator, tools)
        except Exception as raised:  # anything: a foreign exception is what is looked for
            error = raised
        problems = _foreign(error)
        checks.expect(not problems, f"foreign exceptions reached the caller: {problems}")
        if hostile.error is None:
            checks.expect(
                error is None, f"did not recover: {type(error).__name__}: {str(error)[:300]}"
            )
        else:
            checks.expect(
                isinstance(error, hostile.error),
                f"expected {hostile.error.__name__}, got "
                + (f"{type(error).__name__}: {str(error)[:300]}" if error else "a result"),
            )
            checks.expect(len(str(error)) < 2000, "the error quotes too much of the answer")
        del error  # its traceback may reach a socket: let it go before counting them
        if result is not None:
            actual = shape(result)
            for key, value in reference.items():
                checks.expect(actual[key] == value, f"{key}: {actual[key]!r} != {value!r}")
        repeated = {use_id: n for use_id, n in tools.calls.items() if n != 1}
        checks.expect(not repeated, f"tool calls ran more than once: {repeated}")
        checks.expect(emulator.pending_faults() == 0, "the hostile answer was never sent")
        if running is not None:
            settled = emulator.wait_until(lambda: not running(emulator), 5.0)
            checks.expect(settled, f"sessions left running: {running(emulator)}")
            sessions = made(emulator)
            checks.expect(len(sessions) <= 1, f"more than one session was made: {sessions}")
            if result is not None:
                checks.expect(sessions == [result.session_id], "the run is not on the session made")
        checks.no_open_streams(emulator)
    checks.nothing_left_behind(sockets_before, threads_before)
    checks.verdict()


def _reference(start: Callable[[], Any], run: Callable[[Any, MatrixTools], SessionResult]) -> Any:
    with start() as emulator:
        result = run(emulator, MatrixTools())
    assert result.terminal == "end_turn"
    assert result.text == "The total is 3."
    return shape(result)


@pytest.fixture(scope="module")
def claude_reference() -> dict[str, Any]:
    return _reference(_claude_start, _claude_run)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def bedrock_reference() -> dict[str, Any]:
    return _reference(_bedrock_start, _bedrock_run)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def openai_reference() -> dict[str, Any]:
    return _reference(_openai_start, _openai_run)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def agentcore_reference() -> dict[str, Any]:
    return _reference(_agentcore_start, _agentcore_run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("hostile", CLAUDE, ids=[h.id for h in CLAUDE])
def test_claude_run_meets(hostile: Hostile, claude_reference: dict[str, Any]) -> None:
    _sweep(hostile, _claude_start, _claude_run, _claude_running, claude_reference)


@pytest.mark.parametrize("hostile", BEDROCK, ids=[h.id for h in BEDROCK])
def test_claude_on_bedrock_run_meets(hostile: Hostile, bedrock_reference: dict[str, Any]) -> None:
    _sweep(hostile, _bedrock_start, _bedrock_run, _claude_running, bedrock_reference)


@pytest.mark.parametrize("hostile", OPENAI, ids=[h.id for h in OPENAI])
def test_openai_run_meets(hostile: Hostile, openai_reference: dict[str, Any]) -> None:
    _sweep(hostile, _openai_start, _openai_run, _openai_running, openai_reference)


@pytest.mark.parametrize("hostile", AGENTCORE, ids=[h.id for h in AGENTCORE])
def test_agentcore_run_meets(hostile: Hostile, agentcore_reference: dict[str, Any]) -> None:
    _sweep(hostile, _agentcore_start, _agentcore_run, None, agentcore_reference)
