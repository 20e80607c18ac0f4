"""The Gemini Managed Agents runtime of the fault matrix.

A conversation is a chain of interactions, each made by a streamed create whose first event
(``interaction.created``) names it. What a correct library does, beyond what every runtime
does:

* stream faults once an interaction is named: recover - a drop or a stall is resumed with
  ``last_event_id``, a duplicate dropped by its ``event_id``, a corrupt frame made good from
  what the interaction recorded (``GET``) when it ends;
* stream faults *at* an ``interaction.created`` (a drop, a stall, a frame that does not
  parse): the create made an interaction the stream never named, and the API lists none
  and takes no idempotency key. Creating again could run the turn twice, so the library
  stops with :class:`InvocationOutcomeUnknownError` (the test id says ``gives-up-...``),
  having run no tool twice;
* request faults on a create (the prompt, and each answer, which are creates too): only a
  refusal (429/503/529 with ``retry-after``) is retried, by the HTTP layer, so a burst
  longer than ``max_retries`` and any bare error end the run with that error; a reset
  after the request went out is an unknown outcome, as above. The resumed stream (``GET``
  after a drop) recovers from every fault.

One way only: the service has no choice of echoing answers (they are the next create's
input, never streamed back).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from req_managed_agents import SessionResult
from req_managed_agents.errors import (
    InvocationOutcomeUnknownError,
    ManagedAgentsError,
    RateLimitError,
    ServerError,
)
from req_managed_agents.providers.gemini import GeminiManagedAgents, _events, _feed
from req_managed_agents.providers.gemini.api import _core
from req_managed_agents.testing import RecordedRequest
from req_managed_agents.testing.gemini import GeminiEmulator, GeminiTurn
from tests.faults._matrix import (
    PING_INTERVAL,
    RETRIES,
    Checks,
    MatrixTools,
    RequestKind,
    Runtime,
    Scenario,
    script,
)
from tests.faults._scenarios import (
    UNDISTURBED,
    after_drop,
    request_scenarios,
    stream_scenarios,
)

UNKNOWN = InvocationOutcomeUnknownError
_HOP = ["interaction.created"]
_TEXT = ["step.start", "step.delta", "step.delta", "step.delta", "step.stop"]
_CALL = ["step.start", "step.stop"]
_END = ["interaction.status_update", "interaction.completed"]
# The conversation's log of the undisturbed run, position by position: three hops.
LOG = [*_HOP, *_TEXT, *_CALL, *_CALL, *_END, *_HOP, *_CALL, *_END, *_HOP, *_TEXT, *_END]
INTERACTIONS = r"/v1/interactions"
INTERACTION = INTERACTIONS + r"/[^/]+"


def _answers(request: RecordedRequest) -> list[str]:
    """The results a create answers function calls with."""
    body = request.body
    steps = body.get("input") if isinstance(body, dict) else None
    return [
        str(step.get("result"))
        for step in (steps if isinstance(steps, list) else ())
        if isinstance(step, dict) and step.get("type") == "function_result"
    ]


def _streamed(request: RecordedRequest) -> bool:
    return request.query.get("stream") == ["true"]


KINDS = {
    "create": RequestKind("POST", INTERACTIONS, lambda r: not _answers(r)),
    "post-results-turn1": RequestKind("POST", INTERACTIONS, lambda r: _answers(r) == ["3", "12"]),
    "post-results-turn2": RequestKind("POST", INTERACTIONS, lambda r: _answers(r) == ["30"]),
    "stream": RequestKind("GET", INTERACTION, _streamed),
}
_CREATES = ("create", "post-results-turn1", "post-results-turn2")
# A drop inside the first hop's text: the stream is resumed (the "stream" kind's requests).
DROP_AT = 3


def _expected(
    kind: str, status: int, burst: int, retry_after: bool
) -> type[ManagedAgentsError] | None:
    """A create is retried only when refused (the HTTP layer, ``max_retries`` times)."""
    if kind in _CREATES and (burst > RETRIES or not retry_after):
        return RateLimitError if status == 429 else ServerError
    return None


def _stream_scenarios() -> list[Scenario]:
    scenarios = []
    for scenario in stream_scenarios(enumerate(LOG)):
        position = int(scenario.id.split("-at-")[1].split("-")[0])
        if LOG[position] == "interaction.created" and not scenario.id.startswith("duplicate"):
            scenario = dataclasses.replace(
                scenario, id=f"{scenario.id}-gives-up-{UNKNOWN.__name__}", error=UNKNOWN
            )
        scenarios.append(scenario)
    return scenarios


def _request_scenarios() -> list[Scenario]:
    reads = [KINDS["stream"]]
    scenarios = []
    for scenario in request_scenarios(KINDS, _expected):
        if "-reset-" in scenario.id and scenario.kind in [KINDS[k] for k in _CREATES]:
            scenario = dataclasses.replace(
                scenario, id=f"{scenario.id}-gives-up-{UNKNOWN.__name__}", error=UNKNOWN
            )
        scenarios.append(after_drop(scenario, reads, DROP_AT))
    return scenarios


SCENARIOS = [UNDISTURBED, *_stream_scenarios(), *_request_scenarios()]


def _read_log(emulator: GeminiEmulator, result: SessionResult, tools: MatrixTools) -> list[str]:
    """The log's event types, each marked where it did not reach ``handle_event``."""
    delivered = {str(e.get("event_id")) for e in tools.events}
    return [
        e["event_type"] if str(e["event_id"]) in delivered else f"{e['event_type']} (not delivered)"
        for e in emulator.conversation_events(str(result.session_id))
    ]


def _check_events(
    checks: Checks, emulator: GeminiEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """``handle_event`` saw each logged event once, in log order; only where a frame was
    lost (the turn then taken from what the interaction recorded) may a step's events be
    missing."""
    delivered = [str(event.get("event_id")) for event in tools.events if event.get("event_id")]
    checks.delivered_once(delivered)
    if result is None or result.session_id is None:
        return
    log = emulator.conversation_events(str(result.session_id))
    recorded = any(e.get("event_type") == _events.RECORDED for e in tools.events)
    missed = [
        f"{position}:{event['event_type']}"
        for position, event in enumerate(log)
        if str(event["event_id"]) not in delivered
        and not (recorded and str(event["event_type"]).startswith(("step.", "interaction.status")))
    ]
    checks.saw_the_log(missed, delivered, [str(e["event_id"]) for e in log], "events")


def _provider(emulator: GeminiEmulator) -> GeminiManagedAgents:
    return GeminiManagedAgents(
        emulator.api_key, base_url=emulator.base_url, timeout=5, max_retries=RETRIES
    )


def _connect(emulator: GeminiEmulator) -> Mapping[str, Any]:
    return {"agent": emulator.add_agent()}


GEMINI = Runtime(
    name="gemini",
    start=lambda echoed: GeminiEmulator(script(GeminiTurn), ping_interval=PING_INTERVAL),
    connect=_connect,
    scenarios=SCENARIOS,
    log=lambda echoed: LOG,
    read_log=_read_log,
    check_events=_check_events,
    backoffs=[(_feed, "RECONNECT"), (_core, "REQUESTS")],
    provider=_provider,
    ways=(True,),
)
