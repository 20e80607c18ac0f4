"""The Claude fault matrix again, through ``ClaudeManagedAgentsBedrock`` against the Claude
emulator's Bedrock flavor: the same scenarios, both ways (answers echoed or not), and the
same checks (each tool call run once, every event delivered once, the undisturbed result
reproduced); and every request the run sent carries a SigV4 signature for ``bedrock`` in
the emulator's region, which the emulator verified (a bad one is refused with a 403 and
would fail the run)."""

from __future__ import annotations

from typing import Any

import pytest

from req_managed_agents import SessionResult, run_to_completion
from req_managed_agents.testing import ClaudeEmulator
from tests.faults._matrix import (
    IDLE_TIMEOUT,
    PROMPT,
    RETRIES,
    RUN_TIMEOUT,
    Checks,
    MatrixTools,
    Scenario,
    run_checked,
    shape,
)
from tests.faults.test_claude_matrix import LOG, PING_INTERVAL, SCENARIOS, SCRIPT, _check_events

pytest.importorskip("botocore")

REGION = "us-west-2"
SANDBOX = f"arn:aws:bedrock-agentcore:{REGION}:123456789012:sandbox/matrix-0123456789"


def _start(echoed: bool = True) -> ClaudeEmulator:
    return ClaudeEmulator(
        SCRIPT,
        ping_interval=PING_INTERVAL,
        flavor="bedrock",
        region=REGION,
        echo_answers=echoed,
    )


def _run(emulator: ClaudeEmulator, tools: MatrixTools) -> SessionResult:
    with emulator.provider(timeout=5, max_retries=RETRIES) as provider:
        return run_to_completion(
            provider,
            PROMPT,
            handler=tools,
            timeout=RUN_TIMEOUT,
            idle_timeout=IDLE_TIMEOUT,
            agent_id=emulator.add_agent(),
            environment_id=SANDBOX,
        )


def _check(
    checks: Checks, emulator: ClaudeEmulator, tools: MatrixTools, result: SessionResult | None
) -> None:
    _check_events(checks, emulator, tools, result)
    scope = f"/{REGION}/bedrock/aws4_request"
    unsigned = [
        f"{r.method} {r.path}"
        for r in emulator.requests
        if scope not in r.headers.get("authorization", "")
    ]
    checks.expect(not unsigned, f"requests not signed for bedrock in {REGION}: {unsigned}")


@pytest.fixture(scope="module")
def bedrock_reference() -> dict[str, Any]:
    shapes = []
    for echoed in (True, False):
        with _start(echoed) as emulator:
            result = _run(emulator, MatrixTools())
            assert [e["type"] for e in emulator.events(str(result.session_id))] == LOG
        assert result.text == "The total is 30."
        shapes.append(shape(result))
    assert shapes[0] == shapes[1]
    return shapes[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_claude_bedrock_fault(scenario: Scenario, bedrock_reference: dict[str, Any]) -> None:
    run_checked(scenario, bedrock_reference, lambda: _start(scenario.echoed), _run, _check)
