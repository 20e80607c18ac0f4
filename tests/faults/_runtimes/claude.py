"""The Claude Managed Agents runtimes of the fault matrix: Anthropic's API, and the same
matrix through ``ClaudeManagedAgentsBedrock`` against the emulator's Bedrock flavor.

What a correct library does here, beyond what every runtime does:

* stream faults at any position: recover by reconnecting and paging the history, with
  every event delivered to ``handle_event`` once, in log order;
* request faults: creating the session is retried by the HTTP layer alone, so a burst of 3
  errors outlasts ``max_retries=2`` (the test id says ``gives-up-<Error>``). Every other
  kind recovers from bursts of 1 and 3 and from resets: posted events (the ``user.message``
  and the tool results) are checked against the history, which shows whether they landed,
  and re-sent when missing; the stream and the history are read with reconnects.

The second way (``echo_answers=False``: the service records the ``user.custom_tool_result``
answers in the history but does not stream them back) must follow the turn the answers
resume without their echo; ``handle_event`` sees the answers only where a catch-up read
them. Its subset: every stream fault at every position from the first
``session.status_idle`` on that the stream carries (before it the two runs are the same
event for event and no answer exists yet); and the representative request faults on the
two result posts, and on the history read after a drop at the ``status_running`` the first
answers start, whose catch-up holds the unechoed answers.

Through Bedrock, every request the run sent must also carry a SigV4 signature for
``bedrock`` in the emulator's region, which the emulator verified (a bad one is refused
with a 403 and would fail the run).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from req_managed_agents import SessionResult
from req_managed_agents.providers import _delivery
from req_managed_agents.providers.claude import _feed
from req_managed_agents.providers.claude.api import _core
from req_managed_agents.testing import ClaudeEmulator, Turn
from tests.faults._matrix import (
    PING_INTERVAL,
    Checks,
    MatrixTools,
    RequestKind,
    Runtime,
    script,
)
from tests.faults._scenarios import posting, session_scenarios

# The session log of the undisturbed run, position by position (both ways: the service
# records the answers even when it does not stream them).
LOG = [
    "user.message",
    *("session.status_running", "span.model_request_start", "agent.message"),
    *("span.model_request_end", "agent.custom_tool_use", "agent.custom_tool_use"),
    *("session.usage", "session.status_idle"),
    *("user.custom_tool_result", "user.custom_tool_result"),
    *("session.status_running", "span.model_request_start", "span.model_request_end"),
    *("agent.custom_tool_use", "session.usage", "session.status_idle"),
    "user.custom_tool_result",
    *("session.status_running", "span.model_request_start", "agent.message"),
    *("span.model_request_end", "session.usage", "session.status_idle"),
]
# The answers the client sends: a service that does not echo them leaves them off the stream.
ANSWERS = frozenset({"user.custom_tool_result"})
EVENTS_PATH = r"/v1/sessions/[^/]+/events"
# The second way parts from the first at the first pause: no answer exists before it.
FIRST_PAUSE = LOG.index("session.status_idle")


def _result_text(event: dict[str, Any]) -> str:
    content = event.get("content")
    blocks = content if isinstance(content, list) else []
    return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


KINDS = {
    "create-session": RequestKind("POST", r"/v1/sessions"),
    "stream": RequestKind("GET", r"/v1/sessions/[^/]+/events/stream"),
    "post-message": RequestKind("POST", EVENTS_PATH, posting("user.message")),
    "post-results-turn1": RequestKind(
        "POST", EVENTS_PATH, posting("user.custom_tool_result", _result_text, "3", "12")
    ),
    "post-results-turn2": RequestKind(
        "POST", EVENTS_PATH, posting("user.custom_tool_result", _result_text, "30")
    ),
    "history": RequestKind("GET", EVENTS_PATH),
}


def _positions(echoed: bool) -> list[tuple[int, str]]:
    """Every position; unechoed, from the first pause on, where the stream carries an event
    (the answers it does not)."""
    return [
        (position, event_type)
        for position, event_type in enumerate(LOG)
        if echoed or (position >= FIRST_PAUSE and event_type not in ANSWERS)
    ]


SCENARIOS = session_scenarios(
    _positions,
    KINDS,
    # The history is only read after a reconnect: a drop at the first tool use forces one.
    after_a_drop=["history"],
    drop_at=LOG.index("agent.custom_tool_use"),
    after_answers=["post-results-turn1", "post-results-turn2", "history"],
    # A drop at the status_running the first answers start: the reconnect's catch-up reads
    # the answers the stream never carried.
    answers_drop_at=LOG.index("user.custom_tool_result") + 2,
)


def _read_log(emulator: ClaudeEmulator, result: SessionResult, tools: MatrixTools) -> list[str]:
    return [e["type"] for e in emulator.events(str(result.session_id))]


def _check_events(
    checks: Checks, emulator: ClaudeEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """``handle_event`` saw each logged event once, in log order (only some of them when
    the run gave up; the answers only where a catch-up read them, when the service does not
    echo them)."""
    delivered = [str(event.get("id")) for event in tools.events]
    checks.delivered_once(delivered)
    if result is None or result.session_id is None:
        logged = {str(e["id"]) for s in emulator.session_ids() for e in emulator.events(s)}
        unknown = [i for i in delivered if i not in logged]
        checks.expect(not unknown, f"delivered events the service never logged: {unknown}")
        return
    log = emulator.events(result.session_id)
    echoed = emulator.echo_answers
    missed = [
        f"{i}:{e['type']}"
        for i, e in enumerate(log)
        if str(e["id"]) not in delivered and (echoed or e["type"] not in ANSWERS)
    ]
    checks.saw_the_log(missed, delivered, [str(e["id"]) for e in log], "events")


CLAUDE = Runtime(
    name="claude",
    start=lambda echoed: ClaudeEmulator(
        script(Turn), ping_interval=PING_INTERVAL, echo_answers=echoed
    ),
    connect=lambda emulator: {
        "agent_id": emulator.add_agent(),
        "environment_id": emulator.add_environment(),
    },
    scenarios=SCENARIOS,
    log=lambda echoed: LOG,
    read_log=_read_log,
    check_events=_check_events,
    backoffs=[(_feed, "RECONNECT"), (_delivery, "RESEND"), (_core, "REQUESTS")],
)

REGION = "us-west-2"
SANDBOX = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:sandbox/matrix-0123456789"


def _check_signed(
    checks: Checks, emulator: ClaudeEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    """The events as on Anthropic's API, and every request signed for bedrock."""
    _check_events(checks, emulator, tools, result)
    scope = f"/{REGION}/bedrock/aws4_request"
    unsigned = [
        f"{r.method} {r.path}"
        for r in emulator.requests
        if scope not in r.headers.get("authorization", "")
    ]
    checks.expect(not unsigned, f"requests not signed for bedrock in {REGION}: {unsigned}")


CLAUDE_BEDROCK = dataclasses.replace(
    CLAUDE,
    name="claude-bedrock",
    start=lambda echoed: ClaudeEmulator(
        script(Turn),
        ping_interval=PING_INTERVAL,
        flavor="bedrock",
        region=REGION,
        echo_answers=echoed,
    ),
    connect=lambda emulator: {"agent_id": emulator.add_agent(), "environment_id": SANDBOX},
    check_events=_check_signed,
    needs=("botocore",),
)
