"""The hop player of the Gemini emulator: an interaction's scripted turn, played on a thread.

After the turn's ``delay`` (cut short when the interaction is cancelled or deleted, or the
emulator closes), its text is computed without the lock (it may be user code) and the hop
logs its output steps, each as ``step.start`` (the whole step: a ``function_call`` carries
its complete ``arguments`` there, never as ``arguments_delta``), its deltas (text in a few
pieces; a thought's summary and signature) and ``step.stop``; ``index`` counts the hop's
output steps from 0 (its input steps, which ``steps`` also lists, are not counted). Then the
hop ends: ``requires_action`` when it called functions, else as the turn says.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_text, text_pieces
from req_managed_agents.testing.gemini._model import usage
from req_managed_agents.testing.gemini._turn import SCRIPT_FINISHED
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing.gemini._log import InteractionLog
    from req_managed_agents.testing.gemini._model import Interaction
    from req_managed_agents.testing.gemini._turn import GeminiTurn
    from req_managed_agents.testing.server import Lifecycle

# How many step.delta events a text is streamed in (fewer when shorter).
DELTA_PIECES = 3


def result_text(result: Any) -> str:
    """A function result as a scripted text receives it: a string as sent, else JSON."""
    return result if isinstance(result, str) else json.dumps(result, sort_keys=True)


class Player:
    """Plays hops on threads of the emulator's ``lifecycle``."""

    def __init__(self, lifecycle: Lifecycle, log: InteractionLog) -> None:
        self._lifecycle = lifecycle
        self._condition = lifecycle.condition
        self._log = log

    def play(self, interaction: Interaction) -> None:
        """Start playing a just-created interaction's turn; call with the lock held."""
        self._lifecycle.start_thread("hop", self._run, interaction)

    def _cut(self, interaction: Interaction) -> bool:
        return self._lifecycle.stopping or interaction.status != "in_progress"

    def _run(self, interaction: Interaction) -> None:
        index = interaction.turn_index
        turn = interaction.script[index] if index < len(interaction.script) else SCRIPT_FINISHED
        with self._condition:
            self._condition.wait_for(lambda: self._cut(interaction), timeout=turn.delay)
            if self._cut(interaction):
                return
        text, failure = scripted_text(turn.text, interaction.inputs)  # without the lock
        with self._condition:
            if self._cut(interaction):
                return
            if failure:
                self._log.end(interaction, "failed", {"code": "api_error", "message": failure})
                return
            self._emit(interaction, turn, text)

    def _emit(self, interaction: Interaction, turn: GeminiTurn, text: str) -> None:
        if turn.thinking:
            self._thought(interaction)
        if text:
            self._text(interaction, text)
        for mcp_call in turn.mcp_calls:
            call_id = new_id("mcp")
            arguments = dict(mcp_call.input)
            server = str(mcp_call.mcp_server)
            self._whole_step(
                interaction,
                {"type": "mcp_server_tool_call", "id": call_id, "name": mcp_call.name}
                | {"server_name": server, "arguments": arguments},
            )
            self._whole_step(
                interaction,
                {"type": "mcp_server_tool_result", "call_id": call_id, "name": mcp_call.name}
                | {"server_name": server, "result": mcp_call.result},
            )
        for step in turn.steps:
            self._whole_step(interaction, dict(step))
        interaction.usage = usage(*turn.usage)
        undeclared = [c.name for c in turn.tool_calls if c.name not in interaction.functions]
        if undeclared:
            message = (
                f"The agent called {undeclared[0]!r}, a function the interaction does not declare."
            )
            self._log.end(interaction, "failed", {"code": "invalid_request", "message": message})
            return
        for tool_call in turn.tool_calls:
            call_id = new_id("call")
            step = {"type": "function_call", "id": call_id, "name": tool_call.name}
            self._whole_step(interaction, step | {"arguments": dict(tool_call.input)})
            interaction.pending_calls.append(call_id)
        if turn.tool_calls:
            self._log.end(interaction, "requires_action")
        elif turn.end == "failed":
            self._log.end(
                interaction, "failed", {"code": "api_error", "message": "The scripted hop failed."}
            )
        elif turn.end == "requires_continuation":
            interaction.continuation_token = new_id("cont")
            self._log.end(interaction, "requires_continuation")
        else:
            self._log.end(interaction, turn.end)

    def _start(self, interaction: Interaction, step: dict[str, Any]) -> int:
        index = len(interaction.output_steps)
        interaction.output_steps.append(step)
        return index

    def _whole_step(self, interaction: Interaction, step: dict[str, Any]) -> None:
        index = self._start(interaction, step)
        self._log.append(interaction, "step.start", index=index, step=dict(step))
        self._log.append(interaction, "step.stop", index=index)

    def _text(self, interaction: Interaction, text: str) -> None:
        step: dict[str, Any] = {"type": "model_output", "content": [{"type": "text", "text": text}]}
        index = self._start(interaction, step)
        self._log.append(interaction, "step.start", index=index, step={"type": "model_output"})
        for piece in text_pieces(text, DELTA_PIECES):
            self._log.append(
                interaction, "step.delta", index=index, delta={"type": "text", "text": piece}
            )
        self._log.append(interaction, "step.stop", index=index)

    def _thought(self, interaction: Interaction) -> None:
        signature = base64.b64encode(secrets.token_bytes(12)).decode()
        summary = {"type": "text", "text": "Thinking it over."}
        index = self._start(
            interaction, {"type": "thought", "signature": signature, "summary": [summary]}
        )
        self._log.append(interaction, "step.start", index=index, step={"type": "thought"})
        delta = {"type": "thought_summary", "content": summary}
        self._log.append(interaction, "step.delta", index=index, delta=delta)
        delta = {"type": "thought_signature", "signature": signature}
        self._log.append(interaction, "step.delta", index=index, delta=delta)
        self._log.append(interaction, "step.stop", index=index)
