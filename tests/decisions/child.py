"""A process of its own that starts a run which stops for a person, or answers one, against
an emulator the test process serves: ``python -m tests.decisions.child SPEC.json``.

Every tool call and every hook call appends a line (with this process's pid) to a file in
``effects/``, so a test counts side effects across processes. ``kill_at`` makes the process
SIGKILL itself at one point of an answer: right after its claim, after the answers were sent
but before the decision was settled, after settling, or inside the tool the continued session
runs.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from req_managed_agents import ToolLedger, Tools, answer, run_to_completion
from req_managed_agents.drivers import AlreadyAnsweredError
from req_managed_agents.drivers._decision_book import DecisionBook
from req_managed_agents.drivers._deferral import TurnAnswers
from req_managed_agents.model import Decision, Defer, Deferred, ToolUse
from req_managed_agents.stores import FileStore, RedisStore
from req_managed_agents.tools import ToolContext


class Refunds(Tools):
    """``lookup`` answers, ``refund`` defers, ``notify`` runs in the continued session; the
    confirmation hook defers. Each call leaves a line in ``effects/<name>``."""

    def __init__(self, effects: Path, kill_in_notify: bool = False) -> None:
        super().__init__()
        self.effects = effects
        self.kill_in_notify = kill_in_notify
        self.tool(self.lookup)
        self.tool(self.refund)
        self.tool(self.notify)

    def _effect(self, name: str) -> None:
        with open(self.effects / name, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")

    def lookup(self, order: str) -> str:
        """Look an order up."""
        self._effect("lookup")
        return f"order {order} is paid"

    def refund(self, amount: int) -> str:
        """Refund: finance decides."""
        self._effect("refund")
        raise Deferred("finance approves refunds")

    def notify(self, text: str) -> str:
        """Tell the customer."""
        self._effect("notify")
        if self.kill_in_notify:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"told: {text}"

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision | Defer:
        self._effect("hook")
        return Defer("the on-call engineer decides")


def provider_of(recipe: dict[str, Any]) -> Any:
    """The provider a spec's ``provider`` recipe names (built as the emulators build it)."""
    kind = recipe.pop("kind")
    if kind == "claude":
        from req_managed_agents.providers.claude import ClaudeManagedAgents

        return ClaudeManagedAgents(**recipe)
    if kind == "claude-bedrock":
        from req_managed_agents.providers.claude import ClaudeManagedAgentsBedrock

        return ClaudeManagedAgentsBedrock(recipe.pop("region"), **recipe)
    if kind == "openai":
        from req_managed_agents.providers.openai import OpenAIAgents

        return OpenAIAgents(**recipe)
    if kind == "gemini":
        from req_managed_agents.providers.gemini import GeminiManagedAgents

        return GeminiManagedAgents(**recipe)
    from req_managed_agents.providers.agentcore import BedrockAgentCore

    return BedrockAgentCore(recipe.pop("region"), **recipe)


def store_of(where: str) -> Any:
    """A folder is a FileStore, ``redis://...#prefix`` a RedisStore."""
    if where.startswith("redis://"):
        url, _, prefix = where.partition("#")
        return RedisStore(url, prefix=prefix)
    return FileStore(where)


def _kill_at(point: str | None) -> None:
    """Make this process SIGKILL itself at ``point`` of an answer."""

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "claimed":
        claim = DecisionBook.claim

        def claimed(self: DecisionBook, token: str, reply: Any) -> Any:
            decision = claim(self, token, reply)
            die()
            return decision

        DecisionBook.claim = claimed  # type: ignore[method-assign]
    elif point in ("sent", "settled"):
        settle = TurnAnswers.settle

        def settling(self: TurnAnswers) -> None:
            if point == "sent":
                die()
            settle(self)
            die()

        TurnAnswers.settle = settling  # type: ignore[method-assign]


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    effects = Path(spec["effects"])
    store = store_of(spec["store"])
    tools = Refunds(effects, kill_in_notify=spec.get("kill_at") == "notify")
    options = {"decisions": store, "ledger": ToolLedger(store), "timeout": 60}
    with provider_of(dict(spec["provider"])) as provider:
        if spec["mode"] == "start":
            result = run_to_completion(
                provider, "Refund order A1.", handler=tools, **spec["connect"], **options
            )
            tokens = [decision.token for decision in result.pending]
            print(json.dumps({"terminal": result.terminal, "tokens": tokens}), flush=True)
            return 0
        _kill_at(spec.get("kill_at"))
        try:
            result = answer(provider, spec["token"], handler=tools, **spec["answer"], **options)
        except AlreadyAnsweredError:
            print(json.dumps({"already": True}), flush=True)
            return 3
        print(json.dumps({"terminal": result.terminal, "text": result.text}), flush=True)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
