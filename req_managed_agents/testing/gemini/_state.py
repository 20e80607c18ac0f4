"""The Gemini emulator's shared state: its records and the shots of its own faults.

Each resource module keeps no data of its own: it reads and changes the :class:`GeminiState`
it was given, under ``condition``, the emulator's one lock. Agents, environments and
interactions are kept in :class:`~req_managed_agents.testing.server.Records`, which find one
or answer the API's 404; a deleted interaction is a 404 to the API and stays for tests.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.gemini._wire import invalid, not_found
from req_managed_agents.testing.server import PageTokens, Records

if TYPE_CHECKING:
    import threading

    from req_managed_agents.testing.gemini._model import Interaction
    from req_managed_agents.testing.gemini._turn import GeminiTurn

# The agents the service offers itself (AgentOption's literals); they play the default script.
BUILT_IN_AGENTS = frozenset(
    {
        "deep-research-pro-preview-12-2025",
        "deep-research-preview-04-2026",
        "deep-research-max-preview-04-2026",
        "antigravity-preview-05-2026",
        "antigravity-preview-09-2026",
    }
)


def _refuse_page(name: str, problem: str) -> Exception:
    return invalid(f"Invalid value for {name}: {problem}.")


class GeminiState:
    """The Gemini emulator's data, guarded by ``condition``."""

    def __init__(self, condition: threading.Condition, default_script: tuple[GeminiTurn, ...]):
        self.condition = condition
        self.default_script = default_script
        self.agents: Records[dict[str, Any]] = Records("agent", not_found)
        self.agent_scripts: dict[str, tuple[GeminiTurn, ...]] = {}
        self.environments: Records[dict[str, Any]] = Records("environment", not_found)
        self.interactions: Records[Interaction] = Records(
            "interaction", not_found, lambda interaction: interaction.deleted
        )
        # Each agent's and environment's place in the order made: what pages are keyed by.
        self.made_order: dict[str, int] = {}
        self.pages = PageTokens("page_size", "page_token", _refuse_page, ignored=("parent",))
        # not_found_after_create: the 404 reads each of the next creates gets.
        self.hidden_reads: deque[int] = deque()
        # refuse_resumes: (status) of each resume still to refuse.
        self.resume_refusals: deque[int] = deque()

    def page_keys(self, records: Records[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
        """``records`` keyed by the order made (a record removed between pages shifts
        nothing), as copies; records made here get their place first."""
        for record_id in records:
            self.made_order.setdefault(record_id, len(self.made_order))
        return [(self.made_order[i], copy.deepcopy(record)) for i, record in records.items()]

    def script_of(self, agent: str) -> tuple[GeminiTurn, ...]:
        return self.agent_scripts.get(agent, self.default_script)

    def agent_named(self, reference: str) -> tuple[str, frozenset[str]]:
        """The agent an interaction's ``agent`` names (``id`` or ``agents/{id}``) and the
        custom functions it declares; the API's 404 for one it does not know."""
        name = reference.removeprefix("agents/")
        if name in BUILT_IN_AGENTS:
            return name, frozenset()
        agent = self.agents.find(name)
        return name, function_names(agent.get("tools"))

    def environment_named(self, reference: str) -> str:
        """The id of the environment ``reference`` (``id`` or ``environments/{id}``) names;
        the API's 404 for one it does not know."""
        environment_id = reference.removeprefix("environments/")
        self.environments.find(environment_id)
        return environment_id

    def pending_shots(self) -> int:
        """Shots of the emulator's own faults not fired yet."""
        hidden = sum(i.hidden_reads for i in self.interactions.values())
        return sum(self.hidden_reads) + hidden + len(self.resume_refusals)


def function_names(tools: Any) -> frozenset[str]:
    """The names of the custom functions among ``tools`` (as a request gave them)."""
    if not isinstance(tools, list):
        return frozenset()
    return frozenset(
        str(tool["name"])
        for tool in tools
        if isinstance(tool, dict) and tool.get("type") == "function" and "name" in tool
    )
