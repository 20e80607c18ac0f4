"""Subagent threads of the Claude emulator: a turn scripted with ``Turn(thread=...)``.

A turn with a ``thread`` is played by a subagent on a session thread of that name: the
coordinator delegates the turn's input to it (``session.thread_created`` the first time,
``agent.thread_message_sent``), the thread logs its own events, its tool uses that need the
client are cross-posted to the primary log with ``session_thread_id``, and when it ends its
turn it reports back (``agent.thread_message_received`` on the primary thread). The thread
runs the coordinator's roster agent of that name, or else an inline copy of the coordinator;
the next turn of the same name resumes it, unless it was archived.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._shapes import _texts

if TYPE_CHECKING:
    from req_managed_agents.testing.claude._log import SessionLog
    from req_managed_agents.testing.claude._model import _Session, _Thread


def _thread_agent(session: _Session, name: str) -> dict[str, Any]:
    """The agent a subagent thread of this name runs: the roster agent of that name in
    the coordinator's multiagent configuration, else an inline copy of the coordinator."""
    agent = session.record["agent"]
    multiagent = agent.get("multiagent") or {}
    roster = list(multiagent.get("agents", []))
    for key in ("subagents", "workflows"):
        roster += multiagent.get(key, {}).get("predefined_agents", [])
    for member in roster:
        if member.get("type") == "agent" and member.get("name") == name:
            return copy.deepcopy(dict(member))
    keys = ("description", "system", "model", "tools", "mcp_servers", "skills")
    inline = {key: copy.deepcopy(agent[key]) for key in keys}
    inline["execution_identity"] = copy.deepcopy(agent["execution_identity"])
    return {"type": "inline", "name": name, **inline}


class Subagents:
    """Starts, idles and reports back the subagent thread of a session's current turn;
    called with the emulator's lock held."""

    def __init__(self, log: SessionLog) -> None:
        self._log = log

    def enter(self, session: _Session, name: str, inputs: list[str]) -> _Thread:
        """Start the thread's turn: the coordinator delegates the input to it (creating the
        thread the first time), unless it resumes the thread that paused the last turn."""
        thread = session.turn_thread
        if thread is None or thread.name != name or thread.record["archived_at"]:
            thread = next(
                (
                    t
                    for t in session.threads.values()
                    if not t.primary and t.name == name and not t.record["archived_at"]
                ),
                None,
            )
            if thread is None:
                thread = session.new_thread(_thread_agent(session, name))
                self._log.append(
                    session,
                    {
                        "type": "session.thread_created",
                        "session_thread_id": thread.id,
                        "agent_name": name,
                    },
                )
            content = _texts(inputs)
            self._log.append(
                session,
                {
                    "type": "agent.thread_message_sent",
                    "content": content,
                    "to_session_thread_id": thread.id,
                    "to_agent_name": name,
                },
            )
            delegated = True
        else:
            delegated = False
        self._log.set_thread_status(thread, "running")
        self._log.append_thread_status(session, thread, "session.thread_status_running")
        if delegated:
            self._log.append(
                session,
                {
                    "type": "agent.thread_message_received",
                    "content": _texts(inputs),
                    "from_session_thread_id": session.primary.id,
                    "from_agent_name": session.record["agent"]["name"],
                },
                thread=thread,
            )
        session.turn_thread = thread
        return thread

    def idle(self, session: _Session, stop_reason: dict[str, Any]) -> None:
        """The running subagent thread, if any, goes idle (the session follows)."""
        thread = session.turn_thread
        if thread is not None and thread.record["status"] == "running":
            self._log.set_thread_status(thread, "idle")
            self._log.append_thread_status(
                session, thread, "session.thread_status_idle", stop_reason=stop_reason
            )

    def report_back(self, session: _Session, text: str) -> None:
        """A subagent thread that ends its turn idles and reports its text to the primary."""
        thread = session.turn_thread
        if thread is None:
            return
        self.idle(session, {"type": "end_turn"})
        report = {
            "type": "agent.thread_message_received",
            "content": _texts([text]),
            "from_session_thread_id": thread.id,
            "from_agent_name": thread.name,
        }
        self._log.append(session, report)
        session.turn_thread = None
