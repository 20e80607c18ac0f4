"""A decision of an AgentCore session whose runtime session id the run made (none was
given) is answered in that session: the answer continues it, and nothing runs again."""

from __future__ import annotations

from pathlib import Path

from req_managed_agents import Deferred, Tools, answer, run_to_completion
from req_managed_agents.stores import FileStore
from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call


def test_an_answer_continues_the_session_the_run_made(tmp_path: Path) -> None:
    refunds: list[int] = []
    tools = Tools()

    @tools.tool
    def refund(amount: int) -> str:
        """Refund an amount: finance decides later."""
        refunds.append(amount)
        raise Deferred("finance approves refunds")

    store = FileStore(tmp_path / "decisions")
    script = [
        ConverseTurn(tool_calls=[call("refund", amount=5)]),
        ConverseTurn(text=lambda results: f"done: {results[0]}"),
    ]
    with AgentCoreEmulator() as emulator:
        arn = emulator.add_harness(script)
        with emulator.provider(timeout=10) as provider:
            stopped = run_to_completion(
                provider, "Refund.", handler=tools, decisions=store, harness_arn=arn
            )
        [waiting] = stopped.pending
        with emulator.provider(timeout=10) as elsewhere:  # another process's provider
            finished = answer(elsewhere, waiting.token, handler=tools, decisions=store, result="ok")

    assert (finished.terminal, finished.text) == ("end_turn", "done: ok")
    assert finished.session_id == stopped.session_id
    assert refunds == [5]
