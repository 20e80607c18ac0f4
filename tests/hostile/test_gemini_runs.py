"""The hostile-answer sweep over the paths a Gemini run takes (see ``test_runs``, whose
checks these are), on the Gemini emulator over real sockets: the streamed creates (the
prompt's, and each answer's - every input makes a new interaction), the resumed stream after
a drop, the read of an interaction whose stream lost a frame, and frames of the stream.

Gemini lists no interactions and takes no idempotency key, so a create whose answer cannot
be read - the service may have made the interaction - cannot be looked for, nor safely sent
again: the run stops with :class:`~req_managed_agents.errors.InvocationOutcomeUnknownError`,
having run no tool twice (the interaction it may have made is then the service's to end).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from req_managed_agents import SessionResult, run_to_completion
from req_managed_agents.errors import InvocationOutcomeUnknownError, MalformedResponseError
from req_managed_agents.testing import GeminiEmulator, GeminiTurn, RecordedRequest, call
from tests.faults._matrix import IDLE_TIMEOUT, PROMPT, RETRIES, RUN_TIMEOUT, MatrixTools
from tests.hostile._answers import FRAMES, HUGE, RESOURCE_ANSWERS
from tests.hostile.test_runs import RECOVERS, Hostile, _answering, _each, _framing, _reference
from tests.hostile.test_runs import _sweep as sweep

UNKNOWN = InvocationOutcomeUnknownError
SCRIPT = [
    GeminiTurn(text="Let me compute.", tool_calls=[call("add", a=1, b=2), call("mul", a=3, b=4)]),
    GeminiTurn(text=lambda results: f"The total is {results[0]}.", usage=(7, 3)),
]
_CREATE = "/v1/interactions"
_INTERACTION = _CREATE + "/[^/]+"
# Where a drop forces a resume: inside the first hop's text (after interaction.created).
_DROP = 3


def _answering_results(request: RecordedRequest) -> bool:
    body = request.body
    return isinstance(body, dict) and "previous_interaction_id" in body


def _first_create(request: RecordedRequest) -> bool:
    return not _answering_results(request)


def _streamed(request: RecordedRequest) -> bool:
    return request.query.get("stream") == ["true"]


def _read(request: RecordedRequest) -> bool:
    return request.query.get("stream") == ["false"]


def _gemini_frames(position: int, event: str) -> list[Hostile]:
    more = {
        "event-type-number": json.dumps({"event_type": 5, "event_id": "e_hostile"}),
        "event-type-list": json.dumps({"event_type": ["step.delta"], "event_id": "e_hostile"}),
        "huge-event-id": json.dumps({"event_type": "step.delta", "event_id": HUGE}),
    }
    return [
        Hostile(f"frame-{position:02d}-{event}-{frame}", _framing(position, data), RECOVERS)
        for frame, data in {**FRAMES, **more}.items()
    ]


def _corrupt_then_answer(body: bytes) -> Any:
    """A frame that cannot be read is made good by reading the interaction when its hop
    ends (``GET``): that read answered with ``body`` instead, the hop cannot be known, and
    the run ends naming the answer (as a history read does on the other runtimes)."""
    answer = _answering("GET", _INTERACTION, body, where=_read)

    def inject(emulator: GeminiEmulator) -> None:
        emulator.corrupt_stream(2, data="{")
        answer(emulator)

    return inject


GEMINI = [
    # A create answered with what cannot be read may have made its interaction.
    *_each("create", RESOURCE_ANSWERS, "POST", _CREATE, UNKNOWN, where=_first_create),
    *_each("post-results", RESOURCE_ANSWERS, "POST", _CREATE, UNKNOWN, where=_answering_results),
    *_each(
        "resume",
        RESOURCE_ANSWERS,
        "GET",
        _INTERACTION,
        RECOVERS,
        where=_streamed,
        drop_first=_DROP,
    ),
    # The second hop's created event names the interaction answering the calls: unreadable,
    # it cannot be resumed.
    Hostile(
        "frame-12-created-huge-interaction-id",
        _framing(
            12,
            json.dumps(
                {
                    "event_type": "interaction.created",
                    "event_id": "e_hostile",
                    "interaction": {"id": HUGE, "status": "in_progress"},
                }
            ),
        ),
        UNKNOWN,
    ),
    # A step that cannot be used (its type not a string, or no object), in place of the
    # first function call's start: made good from what the interaction recorded.
    *(
        Hostile(
            f"frame-06-call-start-{name}",
            _framing(
                6,
                json.dumps(
                    {"event_type": "step.start", "event_id": "e_hostile", "index": 1, "step": step}
                ),
            ),
            RECOVERS,
        )
        for name, step in (
            ("type-list", {"type": ["function_call"], "id": "c_1", "name": "add"}),
            ("step-string", "function_call"),
        )
    ),
    # A text delta, the first function call's start, the status asking for results, the
    # last hop's completion.
    *_gemini_frames(2, "delta"),
    *_gemini_frames(6, "call-start"),
    *_gemini_frames(10, "status-update"),
    *_gemini_frames(19, "completed"),
    *(
        Hostile(f"recorded-{answer}", _corrupt_then_answer(body), MalformedResponseError)
        for answer, body in RESOURCE_ANSWERS.items()
    ),
]


def _start() -> GeminiEmulator:
    return GeminiEmulator(SCRIPT, ping_interval=IDLE_TIMEOUT / 3)


def _run(emulator: GeminiEmulator, tools: MatrixTools) -> SessionResult:
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            agent=emulator.add_agent(),
        )


def _running(emulator: GeminiEmulator) -> list[str]:
    """Interactions still at work (an ended or waiting one takes no more of the service)."""
    return [
        interaction_id
        for interaction_id in emulator.interaction_ids()
        if emulator.interaction(interaction_id)["status"] in ("queued", "in_progress")
    ]


def _heads(emulator: GeminiEmulator) -> list[str]:
    """The newest interaction of each conversation made: what a result names."""
    newest: dict[str, str] = {}
    for interaction_id in emulator.interaction_ids():
        newest[emulator.conversation_id(interaction_id)] = interaction_id
    return list(newest.values())


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return _reference(_start, _run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("hostile", GEMINI, ids=[h.id for h in GEMINI])
def test_gemini_run_meets(hostile: Hostile, reference: dict[str, Any]) -> None:
    # An interaction whose create's answer was lost is unknown to the run: it cannot stop it.
    running = None if hostile.error is UNKNOWN else _running
    sweep(hostile, _start, _run, running, reference, made=_heads)
