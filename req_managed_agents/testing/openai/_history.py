"""What a session has done, for clients that catch up: its items, turns and subagents.

``/items`` lists the root agent's items (user messages, its outputs, function call outputs,
its interactions with subagents); ``/turns`` its turns, and ``/turns/{id}/items`` one turn's
items (a conversation page with ``last_id``). Each subagent has its own items and turns
under ``/subagents/{id}``. Items show their current state (an item logged ``in_progress``
lists ``completed`` once done). Lists are cursor pages, newest first unless
``order=asc``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.openai._state import check_query, page
from req_managed_agents.testing.openai._wire import ID, SESSION_PATH, not_found

if TYPE_CHECKING:
    from req_managed_agents.testing.openai._model import Session, Turn
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.server import Exchange, Route

_SUBAGENT = f"{SESSION_PATH}/subagents/{ID}"


class History:
    """The routes that read a session's items, turns and subagents."""

    def __init__(self, state: OpenAIState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        return [
            ("GET", f"{SESSION_PATH}/items", self._items),
            ("GET", f"{SESSION_PATH}/turns", self._turns),
            ("GET", f"{SESSION_PATH}/turns/{ID}", self._turn),
            ("GET", f"{SESSION_PATH}/turns/{ID}/items", self._turn_items),
            ("GET", f"{SESSION_PATH}/subagents", self._subagents),
            ("GET", _SUBAGENT, self._subagent),
            ("GET", f"{_SUBAGENT}/items", self._subagent_items),
            ("GET", f"{_SUBAGENT}/turns", self._subagent_turns),
            ("GET", f"{_SUBAGENT}/turns/{ID}", self._subagent_turn),
            ("GET", f"{_SUBAGENT}/turns/{ID}/items", self._subagent_turn_items),
        ]

    def _session(self, exchange: Exchange, session_id: str) -> Session:
        check_query(exchange.request)
        return self._state.sessions.find(session_id)

    def _items(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            items = self._session(exchange, session_id).owned_items(None)
            return page(exchange.request, items)

    def _turns(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            turns = _turn_records(self._session(exchange, session_id), None)
            return page(exchange.request, turns)

    def _turn(self, exchange: Exchange, session_id: str, turn_id: str) -> dict[str, Any]:
        with self._state.condition:
            turn = _turn_of(self._session(exchange, session_id), None, turn_id)
            return copy.deepcopy(turn.record)

    def _turn_items(self, exchange: Exchange, session_id: str, turn_id: str) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            _turn_of(session, None, turn_id)
            items = [i for i in session.owned_items(None) if i["turn_id"] == turn_id]
            return page(exchange.request, items, last_id=True)

    def _subagents(self, exchange: Exchange, session_id: str) -> dict[str, Any]:
        with self._state.condition:
            subagents = self._session(exchange, session_id).subagents.values()
            return page(exchange.request, [s.record for s in subagents])

    def _subagent(self, exchange: Exchange, session_id: str, subagent_id: str) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            return copy.deepcopy(_subagent_of(session, subagent_id))

    def _subagent_items(
        self, exchange: Exchange, session_id: str, subagent_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            _subagent_of(session, subagent_id)
            return page(exchange.request, session.owned_items(subagent_id))

    def _subagent_turns(
        self, exchange: Exchange, session_id: str, subagent_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            _subagent_of(session, subagent_id)
            return page(exchange.request, _turn_records(session, subagent_id))

    def _subagent_turn(
        self, exchange: Exchange, session_id: str, subagent_id: str, turn_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            _subagent_of(session, subagent_id)
            return copy.deepcopy(_turn_of(session, subagent_id, turn_id).record)

    def _subagent_turn_items(
        self, exchange: Exchange, session_id: str, subagent_id: str, turn_id: str
    ) -> dict[str, Any]:
        with self._state.condition:
            session = self._session(exchange, session_id)
            _subagent_of(session, subagent_id)
            _turn_of(session, subagent_id, turn_id)
            items = [i for i in session.owned_items(subagent_id) if i["turn_id"] == turn_id]
            return page(exchange.request, items)


def _owner(turn: Turn) -> str | None:
    return None if turn.subagent is None else turn.subagent.id


def _turn_records(session: Session, owner: str | None) -> list[dict[str, Any]]:
    return [t.record for t in session.turns.values() if _owner(t) == owner]


def _turn_of(session: Session, owner: str | None, turn_id: str) -> Turn:
    turn = session.turns.get(turn_id)
    if turn is None or _owner(turn) != owner:
        raise not_found("turn", turn_id)
    return turn


def _subagent_of(session: Session, subagent_id: str) -> dict[str, Any]:
    for subagent in session.subagents.values():
        if subagent.id == subagent_id:
            return subagent.record
    raise not_found("subagent", subagent_id)
