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
    from typing import Callable

    from req_managed_agents.testing.openai._model import Session, Turn
    from req_managed_agents.testing.openai._state import OpenAIState
    from req_managed_agents.testing.server import Exchange, RecordedRequest, Route

_SUBAGENT = f"{SESSION_PATH}/subagents/{ID}"


class History:
    """The routes that read a session's items, turns and subagents."""

    def __init__(self, state: OpenAIState) -> None:
        self._state = state

    def routes(self) -> list[Route]:
        routes: list[Route] = [
            ("GET", f"{SESSION_PATH}/subagents", self._read(self._subagents)),
            ("GET", _SUBAGENT, self._read(self._subagent)),
        ]
        for base, owned in ((SESSION_PATH, False), (_SUBAGENT, True)):
            routes += [
                ("GET", f"{base}/items", self._read(self._items, owned)),
                ("GET", f"{base}/turns", self._read(self._turns, owned)),
                ("GET", f"{base}/turns/{ID}", self._read(self._turn, owned)),
                ("GET", f"{base}/turns/{ID}/items", self._read(self._turn_items, owned)),
            ]
        return routes

    def _read(
        self, answer: Callable[..., dict[str, Any]], owned: bool = False
    ) -> Callable[..., dict[str, Any]]:
        """The route of ``answer(request, session, owner, *ids)``: the root agent's
        (``owner`` None), or, ``owned``, the subagent's whose id comes first in the path."""

        def route(exchange: Exchange, session_id: str, *ids: str) -> dict[str, Any]:
            check_query(exchange.request)
            with self._state.condition:
                session = self._state.sessions.find(session_id)
                owner = None
                if owned:
                    owner, *rest = ids
                    _subagent_of(session, owner)
                    ids = tuple(rest)
                return answer(exchange.request, session, owner, *ids)

        return route

    @staticmethod
    def _items(request: RecordedRequest, session: Session, owner: str | None) -> dict[str, Any]:
        return page(request, session.owned_items(owner))

    @staticmethod
    def _turns(request: RecordedRequest, session: Session, owner: str | None) -> dict[str, Any]:
        return page(request, _turn_records(session, owner))

    @staticmethod
    def _turn(
        request: RecordedRequest, session: Session, owner: str | None, turn_id: str
    ) -> dict[str, Any]:
        return copy.deepcopy(_turn_of(session, owner, turn_id).record)

    @staticmethod
    def _turn_items(
        request: RecordedRequest, session: Session, owner: str | None, turn_id: str
    ) -> dict[str, Any]:
        """A turn's items; the root agent's are a conversation page (with ``last_id``)."""
        _turn_of(session, owner, turn_id)
        items = [i for i in session.owned_items(owner) if i["turn_id"] == turn_id]
        return page(request, items, last_id=owner is None)

    @staticmethod
    def _subagents(request: RecordedRequest, session: Session, owner: None) -> dict[str, Any]:
        return page(request, [s.record for s in session.subagents.values()])

    @staticmethod
    def _subagent(
        request: RecordedRequest, session: Session, owner: None, subagent_id: str
    ) -> dict[str, Any]:
        return copy.deepcopy(_subagent_of(session, subagent_id))


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
