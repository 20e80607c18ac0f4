"""The scripted-step player of the OpenAI emulator: a session's inputs in, events out.

A user message opens a root turn (``_turns``) and plays the session's next scripted step
on a background thread, after the step's ``delay``; so does the last answer a paused turn
waits for. A step logs, in its turn: an assistant message when it has text
(``turn.item.added``, ``turn.content_part.added``, three ``turn.output_text.delta``,
``turn.output_text.done``, ``turn.content_part.done``, ``turn.item.done``), then per MCP
call an ``mcp_call`` item (added and done at once, unless it asks for approval: then added
only, done when answered), then per function call a ``function_call`` item (added, then
done), each callable at once. Then the turn pauses (``agent.session.requires_action``)
when anything is awaited, fails as scripted, or completes. A step scripted for a subagent
first has the root agent create it (a ``create_subagent_call`` item and
``agent.session.subagent.created``), then plays in that subagent's own turn; when a later
step is the root agent's again, or the subagent's step completes the API turn, the
subagent's turn completes and its last text is reported to the root turn as an
``agent_message`` item. Before each step the session's spend is checked against its
limit. Cancelling, failing, deleting and closing cut a step short.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_text, text_pieces
from req_managed_agents.testing.openai import _items
from req_managed_agents.testing.openai._model import Awaited, Subagent, add_usage
from req_managed_agents.testing.openai._scripted import ScriptedEvents
from req_managed_agents.testing.openai._turn import SCRIPT_FINISHED
from req_managed_agents.testing.openai._turns import BUDGET_EXCEEDED
from req_managed_agents.testing.openai._wire import now
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from req_managed_agents.testing._script import ToolCall
    from req_managed_agents.testing.openai._log import SessionLog
    from req_managed_agents.testing.openai._model import Session, Turn
    from req_managed_agents.testing.openai._turn import OpenAITurn
    from req_managed_agents.testing.openai._turns import TurnFlow
    from req_managed_agents.testing.server import Lifecycle

# How many output_text.delta events a message's text is streamed in (fewer when shorter).
DELTA_PIECES = 3
_DECISIONS = {
    "approve": ("completed", "approved"),
    "deny": ("failed", "denied"),
    "cancel": ("incomplete", "cancelled"),
}


def message_texts(turn: Turn) -> list[str]:
    """What a turn's user messages tell its first step: one text per message."""
    return [
        "".join(part.get("text", "") for part in message["content"]) for message in turn.messages
    ]


class Player:
    """Plays sessions' scripted steps on threads of the emulator's ``lifecycle``; its methods
    are called with the lifecycle's lock held, and the steps take it as they log."""

    def __init__(
        self, lifecycle: Lifecycle, log: SessionLog, flow: TurnFlow, *, echo_answers: bool
    ) -> None:
        self._lifecycle = lifecycle
        self._echo_answers = echo_answers
        self._condition = lifecycle.condition
        self._log = log
        self._flow = flow

    # --- inputs -------------------------------------------------------------------------

    def message(self, session: Session, messages: list[dict[str, Any]]) -> None:
        """A user message: a new root turn, played now or after the open one."""
        turn = self._flow.open_root_turn(session, messages)
        if turn is not None:
            self._play(session, message_texts(turn))

    def tool_result(self, session: Session, awaited: Awaited, result: dict[str, Any]) -> None:
        """A function call's result: its output item (announced unless answers are not
        echoed), and the step after it once every call is answered."""
        item = _items.function_call_output(awaited.turn.id, awaited.action["call_id"], result)
        if self._echo_answers:
            self._log.add_item(session, awaited.turn, item, output=False)
        else:
            self._log.record_item(session, awaited.turn, item)
        awaited.answer = _items.output_text(result)
        self._resume_when_answered(session)

    def approval(self, session: Session, awaited: Awaited, decision: str) -> None:
        """An MCP approval decision: the MCP call runs (or not) and its item is done."""
        status, awaited.answer = _DECISIONS[decision]
        item = awaited.item
        session.decided.add(awaited.action["request_id"])
        if decision == "approve":
            item["output"] = awaited.call.result
        else:
            item["error"] = f"The user answered the approval request: {decision}."
        self._log.finish_item(session, awaited.turn, item, awaited.index, status)
        self._resume_when_answered(session)

    def cancel(self, session: Session) -> None:
        self._continue(session, self._flow.cancel(session))

    def fail_turn(self, session: Session, code: str, message: str) -> None:
        self._continue(session, self._flow.fail(session, code, message))

    def _resume_when_answered(self, session: Session) -> None:
        if all(a.answer is not None for a in session.awaiting.values()):
            self._play(session, self._flow.resume(session))

    def _continue(self, session: Session, turn: Turn | None) -> None:
        if turn is not None:
            self._play(session, message_texts(turn))

    # --- steps --------------------------------------------------------------------------

    def _play(self, session: Session, inputs: list[str]) -> None:
        self._lifecycle.start_thread("turn", self._run_steps, session, inputs)

    def _run_steps(self, session: Session, inputs: list[str]) -> None:
        """A session's worker: play steps until none follows at once."""
        upcoming: list[str] | None = inputs
        while upcoming is not None:
            upcoming = self._play_step(session, upcoming)

    def _cut(self, session: Session, generation: int) -> bool:
        return (
            self._lifecycle.stopping
            or session.deleted
            or session.generation != generation
            or session.status == "failed"
        )

    def _play_step(self, session: Session, inputs: list[str]) -> list[str] | None:
        """Play the performer's next step; return the inputs of the step that follows at
        once (a queued turn that began), if any."""
        with self._condition:
            generation = session.generation
            if self._cut(session, generation):
                return None
            if session.over_budget():
                turn = self._flow.fail(
                    session, BUDGET_EXCEEDED, "The session's spend limit is reached."
                )
                return None if turn is None else message_texts(turn)
            step = self._next_step(session)
            self._condition.wait_for(lambda: self._cut(session, generation), timeout=step.delay)
            if self._cut(session, generation):
                return None
        text, failure = scripted_text(step.text, inputs)  # user code: run without the lock
        with self._condition:
            if self._cut(session, generation):
                return None
            if failure:
                turn = self._flow.fail(session, "internal_error", failure)
            else:
                turn = self._emit(session, step, text, inputs)
            return None if turn is None else message_texts(turn)

    @staticmethod
    def _next_step(session: Session) -> OpenAITurn:
        played = session.steps_played
        session.steps_played += 1
        return session.script[played] if played < len(session.script) else SCRIPT_FINISHED

    def _emit(
        self, session: Session, step: OpenAITurn, text: str, inputs: list[str]
    ) -> Turn | None:
        """Log a played step and how its turn goes on; return the next turn to play, if one
        began."""
        turn = self._performer(session, step, inputs)
        if text:
            phase = "commentary" if step.tool_calls or step.mcp_calls else "final_answer"
            self._message(session, turn, text, phase)
        if turn.subagent is not None:
            turn.subagent.report = text
        scripted = ScriptedEvents(session, turn)
        for given in step.events:
            self._log.append(session, scripted.event(given))
        for mcp_call in step.mcp_calls:
            self._mcp_call(session, turn, mcp_call)
        for tool_call in step.tool_calls:
            item = _items.function_call(turn, tool_call)
            index = self._log.add_item(session, turn, item, output=True)
            action = {key: item[key] for key in ("arguments", "call_id", "name", "turn_id")}
            action["type"] = "function_call"
            session.awaiting[item["call_id"]] = Awaited("function", turn, action, item, tool_call)
            self._log.finish_item(session, turn, item, index, "completed")
        input_tokens, output_tokens = step.usage
        turn.record["usage"] = add_usage(turn.record["usage"], input_tokens, output_tokens)
        session.record["usage"] = add_usage(session.record["usage"], input_tokens, output_tokens)
        if step.end != "completed":
            failed = step.end == "session_failed"
            return self._flow.fail(
                session, "server_error", "The scripted turn failed.", session_failed=failed
            )
        if session.awaiting:
            self._flow.pause(session)
            return None
        if turn.subagent is not None:
            self._flow.finish_subagent(session, turn.subagent, turn.subagent.report)
        return self._flow.complete(session)

    def _message(self, session: Session, turn: Turn, text: str, phase: str) -> None:
        item = _items.assistant_message(turn, phase)
        index = self._log.add_item(session, turn, item, output=True)
        log = self._log
        empty = {"type": "output_text", "text": ""}
        log.part_event(session, turn, item, "content_part.added", output_index=index, part=empty)
        for piece in text_pieces(text, DELTA_PIECES):
            log.part_event(
                session, turn, item, "output_text.delta", output_index=index, delta=piece
            )
        log.part_event(session, turn, item, "output_text.done", output_index=index, text=text)
        part = {"type": "output_text", "text": text}
        log.part_event(session, turn, item, "content_part.done", output_index=index, part=part)
        item["content"] = [part]
        log.finish_item(session, turn, item, index, "completed")

    def _mcp_call(self, session: Session, turn: Turn, call: ToolCall) -> None:
        item = _items.mcp_call(turn, call)
        index = self._log.add_item(session, turn, item, output=True)
        if call.permission == "allow":
            item["output"] = call.result
            self._log.finish_item(session, turn, item, index, "completed")
        elif call.permission == "deny":
            item["error"] = f"The MCP server's policy denies {call.name}."
            self._log.finish_item(session, turn, item, index, "failed")
        else:
            request_id = new_id("mcpr")
            request = {
                "arguments": item["arguments"],
                "message": f"Allow the MCP server '{call.mcp_server}' to run '{call.name}'?",
                "name": call.name,
                "server_label": call.mcp_server,
                "type": "mcp_tool_call",
            }
            action = {
                "request": request,
                "request_id": request_id,
                "turn_id": turn.id,
                "type": "mcp_approval_request",
            }
            session.awaiting[request_id] = Awaited("mcp", turn, action, item, call, index)

    def _performer(self, session: Session, step: OpenAITurn, inputs: list[str]) -> Turn:
        """The turn the step plays in: the root turn, or its subagent's (created first when
        new); a subagent whose turn is still open but not playing this step reports back."""
        root = session.active
        assert root is not None  # a step only plays in an open turn
        current = session.performer.subagent if session.performer is not None else None
        wanted = None if step.subagent is None else session.subagents.get(step.subagent)
        if current is not None and (step.subagent is None or current is not wanted):
            self._flow.finish_subagent(session, current, current.report)
        if step.subagent is None:
            session.performer = root
            return root
        if wanted is None:
            wanted = self._create_subagent(session, root, step.subagent, inputs)
        if wanted.turn is None:
            wanted.turn = self._flow.new_turn(session, wanted)
            self._flow.start(session, wanted.turn)
        session.performer = wanted.turn
        return wanted.turn

    def _create_subagent(
        self, session: Session, root: Turn, name: str, inputs: list[str]
    ) -> Subagent:
        task = "\n".join(inputs) or name
        call = _items.create_subagent_call(root, session.root_agent_id, task)
        index = self._log.add_item(session, root, call, output=True)
        self._log.finish_item(session, root, call, index, "completed")
        record = {
            "id": new_id("subagent"),
            "object": "agent.session.subagent",
            "closed_at": None,
            "instructions": [{"type": "output_text", "text": task}],
            "name": name,
            "opened_at": now(),
            "parent_agent_id": session.root_agent_id,
            "session_id": session.id,
            "status": "active",
        }
        subagent = Subagent(name, record)
        session.subagents[name] = subagent
        self._log.append(session, {"type": "agent.session.subagent.created", "subagent": record})
        return subagent
