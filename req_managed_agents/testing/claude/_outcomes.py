"""Outcomes in the Claude emulator: ``user.define_outcome`` and the grader of its iterations.

An outcome plays the next turn with its description as the input. While it is worked toward,
each turn that would end ``end_turn`` is graded with its scripted verdict
(``span.outcome_evaluation_start`` and ``_end``, ``iteration`` from 0; each evaluation's
grader uses 20 input and 4 output tokens, reported in its span and added to the session's
usage): ``needs_revision`` plays the next turn at once, its text receiving the explanation;
the last of ``max_iterations`` evaluations (which counts evaluations) turns it into
``max_iterations_reached``, after which one final, ungraded turn plays; ``satisfied`` and
``failed`` settle it. The session's ``outcome_evaluations`` follow along (``pending``,
``running``, ``evaluating``, then the verdict). An interrupt grades the current iteration
``interrupted`` at once, as a start and an end span.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._inputs import DEFAULT_ITERATIONS
from req_managed_agents.testing.claude._model import _Input, _Outcome
from req_managed_agents.testing.claude._shapes import _span_usage
from req_managed_agents.testing.server import utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping

    from req_managed_agents.testing.claude._log import SessionLog
    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.claude._turn import Turn

# What the grader says when the script gives no explanation.
_EXPLANATIONS = {
    "satisfied": "The work meets the rubric.",
    "needs_revision": "The work does not meet the rubric yet.",
    "failed": "The rubric does not apply to the work.",
}
_INTERRUPTED = "The user interrupted the work."
# The tokens one evaluation's grader requests use: (input, output).
_GRADER_USAGE = (20, 4)


class Outcomes:
    """Defines, grades and settles a session's outcomes; called with the emulator's lock
    held."""

    def __init__(self, log: SessionLog) -> None:
        self._log = log

    def define(self, session: _Session, echo: Mapping[str, Any]) -> _Input:
        """Record the outcome a logged ``user.define_outcome`` defines; return the input
        that starts working toward it."""
        record: dict[str, Any] = {
            "type": "outcome_evaluation",
            "outcome_id": echo["outcome_id"],
            "description": echo["description"],
            "iteration": 0,
            "result": "pending",
            "explanation": None,
            "completed_at": None,
        }
        session.record["outcome_evaluations"].append(record)
        iterations = echo.get("max_iterations")
        outcome = _Outcome(record, DEFAULT_ITERATIONS if iterations is None else iterations)
        return _Input([str(echo["description"])], outcome=outcome)

    def evaluate(self, session: _Session, outcome: _Outcome, turn: Turn) -> list[str] | None:
        """Grade the turn that ended an iteration, with its scripted verdict; return the
        input of the turn that plays next without user input (a revision, or the final
        turn once the iterations are used up), None when the outcome is settled."""
        record = outcome.record
        iteration = record["iteration"]
        record["result"] = "evaluating"
        start = self._append_start(session, record)
        verdict: str = turn.evaluation
        if verdict == "needs_revision" and iteration + 1 >= outcome.max_iterations:
            verdict = "max_iterations_reached"
        explanation = turn.explanation or _EXPLANATIONS[turn.evaluation]
        self._log.append(
            session,
            {
                "type": "span.outcome_evaluation_end",
                "outcome_id": record["outcome_id"],
                "iteration": iteration,
                "outcome_evaluation_start_id": start["id"],
                "result": verdict,
                "explanation": explanation,
                "usage": _span_usage(*_GRADER_USAGE),
            },
        )
        session.add_usage(*_GRADER_USAGE)
        record["explanation"] = explanation
        if verdict == "needs_revision":
            record.update(iteration=iteration + 1, result="running")
            return [explanation]
        record.update(result=verdict, completed_at=utc_timestamp())
        if verdict == "max_iterations_reached":
            outcome.final = True  # settled, but its final turn plays before the idle
            return [explanation]
        session.outcome = None
        return None

    def _append_start(self, session: _Session, record: Mapping[str, Any]) -> dict[str, Any]:
        return self._log.append(
            session,
            {
                "type": "span.outcome_evaluation_start",
                "outcome_id": record["outcome_id"],
                "iteration": record["iteration"],
            },
        )

    def interrupt(self, session: _Session) -> None:
        """An interrupt ends the outcome being worked toward: its current iteration is
        graded ``interrupted`` at once (a start and an end span) and it is settled."""
        outcome = session.outcome
        if outcome is None or outcome.final:  # none, or settled already
            session.outcome = None
            return
        start = self._append_start(session, outcome.record)
        self._log.append(
            session,
            {
                "type": "span.outcome_evaluation_end",
                "outcome_id": outcome.record["outcome_id"],
                "iteration": outcome.record["iteration"],
                "outcome_evaluation_start_id": start["id"],
                "result": "interrupted",
                "explanation": _INTERRUPTED,
                "usage": _span_usage(0, 0),
            },
        )
        self.settle(session, "interrupted", _INTERRUPTED)

    def settle(self, session: _Session, result: str, explanation: str) -> None:
        """Give the outcome being worked toward its final result."""
        if session.outcome is not None:
            record = session.outcome.record
            record.update(result=result, explanation=explanation, completed_at=utc_timestamp())
        session.outcome = None
