"""``POST /v1/agents/sessions/{id}/events``: the inputs a session takes, checked, then acted on.

The whole batch is checked before anything happens (one bad event refuses all of them, and
nothing changes): its shape (``_params``), then what each input means now, taking the
inputs before it in the batch into account. Accepted, it answers ``202`` with no body.

* A message is refused while the session has ``failed`` (``session_failed``) or is paused
  at ``budget_reached`` (``session_budget_exceeded``); while a turn is open it queues a new
  turn (``turn.created``, ``queued``), which begins when the open one ends.
* A tool result must name a pending function call and the turn that made it. An id the
  session never announced is ``unknown_tool_call``; a call that already has a result is
  ``tool_result_already_submitted``; a call whose turn ended unanswered (cancelled,
  failed) is ``tool_call_not_pending``. ``success: true`` takes no ``error`` and
  ``success: false`` no ``output``. Only ``refuse_unregistered_results`` makes the emulator
  answer the registration race ``Unknown pending tool call: <call_id>`` (code
  ``invalid_request_error``), the one refusal the ``openai`` SDK retries.
* An MCP approval result must name a pending approval request (``unknown_approval_request``
  or ``approval_already_submitted`` otherwise). The emulator never asks for computer-use
  approvals, so their results are all ``unknown_approval_request``.
* A cancel needs an open turn (``no_active_turn`` otherwise).

``Idempotency-Key``: a request that was accepted under a key is remembered with its body;
the same key with the same body again answers ``202`` and does nothing (even when the
inputs would now be refused, say because the first attempt's tool result landed); the same
key with another body is a 400 ``idempotency_key_reused``. A refused request does not use
its key up, so a client may retry it under the same key.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._params import EVENTS_BODY
from req_managed_agents.testing.openai._schema import invalid_value
from req_managed_agents.testing.openai._state import check_query
from req_managed_agents.testing.openai._wire import SESSION_PATH, invalid, pending_call_race
from req_managed_agents.testing.server import new_id

if TYPE_CHECKING:
    from typing import Callable

    from req_managed_agents.testing.openai._model import Awaited, Session
    from req_managed_agents.testing.openai._player import Player
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.server import Exchange, Route


class _Batch:
    """What the inputs checked so far in one request will have done."""

    def __init__(self, session: Session) -> None:
        self.open_turn = session.active is not None
        self.cancelled = False
        self.answered: set[str] = set()
        self.actions: list[Callable[[], None]] = []


class Inputs:
    """The events route: inputs checked as a batch, then handed to the player."""

    def __init__(self, state: OpenAIState, player: Player) -> None:
        self._state = state
        self._player = player

    def routes(self) -> list[Route]:
        return [("POST", f"{SESSION_PATH}/events", self._post)]

    def _post(self, exchange: Exchange, session_id: str) -> None:
        request = exchange.request
        check_query(request)
        body = EVENTS_BODY(request.body, "")
        key = request.headers.get("idempotency-key")
        digest = json.dumps(body, sort_keys=True, separators=(",", ":"))
        with self._state.condition:
            session = self._state.sessions.find(session_id)
            seen = session.idempotency.get(key) if key is not None else None
            if seen is None:
                batch = _Batch(session)
                for index, event in enumerate(body["events"]):
                    self._check(session, batch, event, f"events[{index}]")
                for act in batch.actions:
                    act()
                if key is not None:
                    session.idempotency[key] = digest
            elif seen != digest:
                raise invalid(
                    "This Idempotency-Key was already used with a different request body.",
                    code="idempotency_key_reused",
                )
        exchange.respond(202, b"", {"x-request-id": new_id("req")})

    def _check(self, session: Session, batch: _Batch, event: dict[str, Any], path: str) -> None:
        kind = event["type"].rsplit(".", 1)[-1]
        player = self._player
        if kind == "message":
            if session.status == "failed":
                raise invalid(
                    "The session has failed and takes no more input.", code="session_failed"
                )
            if session.status == "budget_reached":
                raise invalid(
                    "The session's spend limit is reached; raise it to continue.",
                    code="session_budget_exceeded",
                )
            batch.open_turn = True
            batch.actions.append(functools.partial(player.message, session, event["input"]))
        elif kind == "cancel":
            if not batch.open_turn:
                raise invalid("The session has no active turn to cancel.", code="no_active_turn")
            batch.cancelled = True
            batch.actions.append(functools.partial(player.cancel, session))
        elif kind == "tool_result":
            awaited = self._pending_call(session, batch, event["call_id"], path)
            if event["turn_id"] != awaited.turn.id:
                raise invalid_value(f"{path}.turn_id", "it is not the turn that made the call.")
            if event["success"] and event.get("error") is not None:
                raise invalid_value(f"{path}.error", "a successful result has no error.")
            if not event["success"] and event.get("output") is not None:
                raise invalid_value(f"{path}.output", "a failed result has no output.")
            act = functools.partial(player.tool_result, session, awaited, event)
            batch.actions.append(act)
        elif kind == "mcp_approval_request_result":
            awaited = self._pending_approval(session, batch, event["request_id"], path)
            decision = event["response"]["decision"]
            batch.actions.append(functools.partial(player.approval, session, awaited, decision))
        else:  # a computer-use approval: the emulator never asks for one
            raise _unknown_request(event["request_id"], path)

    def _pending_call(self, session: Session, batch: _Batch, call_id: str, path: str) -> Awaited:
        awaited = session.awaiting.get(call_id)
        pending = (
            awaited is not None
            and awaited.kind == "function"
            and awaited.answer is None
            and call_id not in batch.answered
            and not batch.cancelled
        )
        if awaited is not None and pending:
            if self._state.race_shots > 0:
                self._state.race_shots -= 1
                self._state.condition.notify_all()
                raise pending_call_race(call_id)
            batch.answered.add(call_id)
            return awaited
        announced = any(
            i["type"] == "function_call" and i["call_id"] == call_id for i in _items(session)
        )
        answered = call_id in batch.answered or any(
            i["type"] == "function_call_output" and i["call_id"] == call_id for i in _items(session)
        )
        if answered:
            raise invalid(
                f"Tool call {call_id} already has a result.",
                param=f"{path}.call_id",
                code="tool_result_already_submitted",
            )
        if announced:
            raise invalid(
                f"Tool call {call_id} is no longer pending: its turn has ended.",
                param=f"{path}.call_id",
                code="tool_call_not_pending",
            )
        raise invalid(
            f"Unknown tool call: {call_id}.", param=f"{path}.call_id", code="unknown_tool_call"
        )

    @staticmethod
    def _pending_approval(session: Session, batch: _Batch, request_id: str, path: str) -> Awaited:
        awaited = session.awaiting.get(request_id)
        if request_id in session.decided or request_id in batch.answered:
            raise invalid(
                f"Approval request {request_id} was already answered.",
                param=f"{path}.request_id",
                code="approval_already_submitted",
            )
        if awaited is None or awaited.kind != "mcp" or batch.cancelled:
            raise _unknown_request(request_id, path)
        batch.answered.add(request_id)
        return awaited


def _items(session: Session) -> list[dict[str, Any]]:
    return [item for _, item in session.items]


def _unknown_request(request_id: str, path: str) -> Exception:
    return invalid(
        f"Unknown approval request: {request_id}.",
        param=f"{path}.request_id",
        code="unknown_approval_request",
    )
