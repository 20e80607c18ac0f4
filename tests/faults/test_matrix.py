"""The fault matrix: every scenario of every runtime, one fault each, over real sockets.

Each runtime (``tests/faults/_runtimes``: Claude, Claude on Bedrock, OpenAI Agents,
AgentCore Harness) plays the same two-tool, three-turn script on its emulator; a scenario
puts one fault in its way - at a position of the session log (a dropped connection, a
duplicated event, a stall past the idle timeout, a frame that is not JSON) or on a kind of
request the run makes (error bursts with and without ``retry-after``, resets before and
after the service acted) - and holds the run to what a user relies on
(``tests/faults/_matrix.py``): the result the undisturbed run gives (or, where recovering
is not safe, the named error: the id then says ``gives-up-<Error>``), every tool call run
exactly once, what ``handle_event`` must see, the waits a ``retry-after`` asked for, and
nothing left running. The runtimes whose service can stream back the answers it receives
run a second way, against one that does not (ids ending ``-unechoed``), where the two can
differ. Ids are ``<runtime>-<scenario>``: ``-k openai-`` runs one runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.faults._matrix import Runtime, Scenario, reference_of, run_checked
from tests.faults._runtimes import RUNTIMES

_References = Callable[[Runtime[Any]], dict[str, Any]]


@pytest.fixture(scope="module")
def references() -> _References:
    """Each runtime's undisturbed result, run once (per process) when first asked for."""
    known: dict[str, dict[str, Any]] = {}

    def of(runtime: Runtime[Any]) -> dict[str, Any]:
        if runtime.name not in known:
            known[runtime.name] = reference_of(runtime)
        return known[runtime.name]

    return of


@pytest.mark.parametrize(
    ("runtime", "scenario"),
    [
        pytest.param(runtime, scenario, id=f"{runtime.name}-{scenario.id}")
        for runtime in RUNTIMES
        for scenario in runtime.scenarios
    ],
)
def test_fault(runtime: Runtime[Any], scenario: Scenario, references: _References) -> None:
    for module in runtime.needs:
        pytest.importorskip(module)
    run_checked(runtime, scenario, references(runtime))
