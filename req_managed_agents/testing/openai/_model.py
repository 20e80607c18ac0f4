"""The OpenAI emulator's data model: sessions, their turns, subagents and what they await.

A session keeps its event log, its items (the root agent's and each subagent's, in the
order they happened), every turn (root turns and subagent turns), the open root turn
(``active``) and the turn the next scripted step plays in (``performer``: the root turn, or
a subagent's), root turns queued behind the active one, and the function calls and MCP
approvals it waits for (``awaiting``, in call order). The API's views of a session are
built from it on demand, so that ``status`` and ``required_actions`` always agree with
what was logged.
"""

from __future__ import annotations

import collections
import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing.openai._turn import OpenAITurn


def token_usage(input_tokens: int = 0, output_tokens: int = 0) -> dict[str, Any]:
    """A ``TokenUsage`` object."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def add_usage(
    usage: dict[str, Any] | None, input_tokens: int, output_tokens: int
) -> dict[str, Any]:
    total = usage or token_usage()
    return token_usage(total["input_tokens"] + input_tokens, total["output_tokens"] + output_tokens)


@dataclass
class Subagent:
    """A subagent of a session; ``turn`` is its open turn, if any, and ``report`` the text
    it last wrote, which it reports to the root agent when that turn completes."""

    name: str
    record: dict[str, Any]
    turn: Turn | None = None
    report: str = ""

    @property
    def id(self) -> str:
        return str(self.record["id"])


@dataclass
class Turn:
    """An API turn: its ``record`` (the ``Turn`` object), the subagent that runs it (None:
    the root agent), how many output items it has made, and (for a queued root turn) the
    user messages it starts with."""

    record: dict[str, Any]
    subagent: Subagent | None = None
    outputs: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def open(self) -> bool:
        return self.record["status"] in ("queued", "in_progress", "waiting")


@dataclass
class Awaited:
    """A function call or MCP approval that a turn waits for; ``answer`` is the text it
    gives the next step once answered (None until then)."""

    kind: str  # "function" or "mcp"
    turn: Turn
    action: dict[str, Any]  # the required action, as the session lists it
    item: dict[str, Any]  # the function_call or mcp_call item
    call: ToolCall
    index: int | None = None  # an MCP call item's output index, for its item.done
    answer: str | None = None


@dataclass
class Session:
    """One session; ``record`` holds the fields of its view that are stored as they are."""

    record: dict[str, Any]
    root_agent_id: str
    script: tuple[OpenAITurn, ...]
    spend_limit: int | None = None
    steps_played: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    # (owner: None for the root agent, else a subagent id; the item), oldest first
    items: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    turns: dict[str, Turn] = field(default_factory=dict)
    active: Turn | None = None
    performer: Turn | None = None
    queued: collections.deque[Turn] = field(default_factory=collections.deque)
    awaiting: dict[str, Awaited] = field(default_factory=dict)
    subagents: dict[str, Subagent] = field(default_factory=dict)  # by name
    idempotency: dict[str, str] = field(default_factory=dict)  # key -> body digest
    decided: set[str] = field(default_factory=set)  # MCP approval requests answered
    # Bumped whenever a turn is cut short, so a step still "thinking" knows to stop.
    generation: int = 0
    deleted: bool = False

    @property
    def id(self) -> str:
        return str(self.record["id"])

    @property
    def status(self) -> str:
        return str(self.record["status"])

    def view(self) -> dict[str, Any]:
        """The ``AgentSession`` object as the API answers it now."""
        view = copy.deepcopy(self.record)
        usage = view["usage"]
        waiting = self.status == "requires_action"
        view["required_actions"] = [
            copy.deepcopy(a.action) for a in self.awaiting.values() if waiting and a.answer is None
        ]
        # The emulator prices a token at one US cent: spend is the session's total tokens.
        view["spend_control"] = {"consumed": usage["total_tokens"], "limit": self.spend_limit}
        return view

    def over_budget(self) -> bool:
        limit = self.spend_limit
        return limit is not None and self.record["usage"]["total_tokens"] >= limit

    def owned_items(self, owner: str | None) -> list[dict[str, Any]]:
        return [item for who, item in self.items if who == owner]
