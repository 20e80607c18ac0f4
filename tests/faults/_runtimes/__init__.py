"""Every runtime the fault matrix runs over, one :class:`~tests.faults._matrix.Runtime` each.

The driving and the checks are the matrix's (``tests/faults/_matrix.py``), the scenario
builders too (``tests/faults/_scenarios.py``); a runtime is only what differs. To add one:

1. A module here defining one ``Runtime``:

   * ``start(echoed)``: its emulator playing ``script(<its turn type>)``, with answers
     streamed back or not (``ways=(True,)`` where the service has no such choice);
     ``connect(emulator)``: the run's connect options (the provider is the emulator's own
     ``provider()`` unless ``provider`` says otherwise);
   * ``scenarios``: for a session stream, ``session_scenarios(positions, kinds, ...)``
     from its request kinds (``RequestKind``: method, path, body filter) and the positions
     of its log; otherwise its own stream faults plus ``request_scenarios(kinds, expect)``;
   * ``log(echoed)`` and ``read_log``: the undisturbed run's log, which the positions name;
   * ``check_events``: what ``handle_event`` must have seen, whatever the fault;
   * ``backoffs``: the library's own ``RetryPolicy`` instances for that provider, which the
     matrix shrinks (``tests/faults/conftest.py``); ``needs``: an optional extra's modules.

   A runtime that is another's through a different door (Claude on Bedrock) is
   ``dataclasses.replace`` of it.
2. Its entry in ``RUNTIMES`` below. ``tests/faults/test_matrix.py`` then runs every scenario
   of it (ids ``<name>-<scenario>``) and the summary counts it.

What every runtime gains (a new kind of fault, a new check) goes into the shared builders or
checks once, not into each entry.
"""

from __future__ import annotations

from typing import Any

from tests.faults._matrix import Runtime
from tests.faults._runtimes.agentcore import AGENTCORE
from tests.faults._runtimes.claude import CLAUDE, CLAUDE_BEDROCK
from tests.faults._runtimes.gemini import GEMINI
from tests.faults._runtimes.openai import OPENAI

RUNTIMES: tuple[Runtime[Any], ...] = (AGENTCORE, CLAUDE_BEDROCK, CLAUDE, GEMINI, OPENAI)


def runtime_of(scenario_id: str) -> Runtime[Any] | None:
    """The runtime a test id ``<name>-<scenario>`` belongs to (the longest name that fits:
    ``claude-bedrock-...`` is not Claude's)."""
    names = [r for r in RUNTIMES if scenario_id.startswith(f"{r.name}-")]
    return max(names, key=lambda r: len(r.name), default=None)
