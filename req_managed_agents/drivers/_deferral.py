"""Stopping a run for a person: one ``requires_action`` turn's answers as the loop gathers
them, and the questions it leaves for later.

Each question of the turn - an elicitation, a provider tool asking permission, a local tool
call - is looked up in the session's decisions store first (:class:`~req_managed_agents.
drivers._decision_book.DecisionBook`): an answer found there (one given since by
:func:`~req_managed_agents.answer`, or one the run that stopped already had) is used as it
is, and a question still waiting stays waiting, without asking anyone again. Only a question
the store does not know goes to the hook or the tool - which may answer :class:`Defer` (a
hook) or :class:`Deferred` (a tool). If any question of the turn waits, nothing is sent:
the turn's other answers are kept in the store, each waiting question gets a
:class:`PendingDecision`, and the run ends ``requires_action`` with them in
``SessionResult.pending``. Whoever continues the session sends the whole turn's answers at
once, as the providers require.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from req_managed_agents.drivers._decision_book import Answer, DecisionBook
from req_managed_agents.errors import SessionError
from req_managed_agents.model._vocabulary import (
    DecisionKind,
    Defer,
    Deferred,
    Elicitation,
    PendingDecision,
    ToolResult,
    ToolUse,
    TurnResult,
)

__all__ = [
    "ConfirmationDeferred",
    "Deferral",
    "DeferredResult",
    "TurnAnswers",
    "TurnDeferred",
    "waiting_turn",
]

_A = TypeVar("_A")


@dataclass(frozen=True)
class DeferredResult(ToolResult):
    """What the tool runner reports for a call whose tool answered :class:`Deferred`: a
    placeholder the loop never sends."""

    deferred: Deferred | None = field(default=None, compare=False)


class ConfirmationDeferred(Deferred):
    """A local tool's confirmation left for a person (the hook answered ``Defer``): the
    call waits, and runs in the process that continues the session once allowed."""


class TurnDeferred(Exception):
    """The turn waits for a person: the run ends with ``pending``."""

    def __init__(self, pending: Sequence[PendingDecision]) -> None:
        super().__init__(f"{len(pending)} decision(s) wait")
        self.pending = list(pending)


class Deferral:
    """A session's decisions store, and what a decision records to continue it elsewhere."""

    def __init__(self, book: DecisionBook, runtime: str, connect: Mapping[str, Any]) -> None:
        self.book = book
        self.runtime = runtime
        # Only what JSON can hold goes into the store: connect options are ids and settings,
        # never the provider's credentials (those stay in the provider object).
        self.connect = {k: v for k, v in connect.items() if _jsonable(v)}


def waiting_turn(
    deferral: Deferral | None, session_id: str | None, resumed: TurnResult | None
) -> TurnResult | None:
    """The turn a reattached session goes on from: the provider's (``resumed``) when it
    shows one, else - a runtime that keeps no readable history shows an empty turn - the
    stopped turn the decisions store kept, if the session has one waiting."""
    if deferral is None or not session_id:
        return resumed
    if resumed is not None and (resumed.terminal == "requires_action" or resumed.events):
        return resumed
    kept = deferral.book.kept_turn(session_id)
    return TurnResult("requires_action", tool_uses=tuple(kept)) if kept else resumed


class TurnAnswers:
    """One turn's answers as they are gathered (see the module docs)."""

    def __init__(self, deferral: Deferral | None, session_id: str | None) -> None:
        self._deferral = deferral
        self._session_id = session_id or ""
        self._waiting: list[PendingDecision] = []
        self._new: list[tuple[DecisionKind, ToolUse | Elicitation, Defer | Deferred]] = []
        self._known: list[tuple[DecisionKind, str, Answer]] = []
        self._tool_uses: list[ToolUse] = []
        self._from_store: list[str] = []  # the questions whose answers the store gave

    def ask(
        self,
        kind: DecisionKind,
        item: ToolUse | Elicitation,
        asker: Callable[[], _A],
    ) -> _A | None:
        """The answer to one question: the store's, else ``asker``'s; None when it waits
        (``asker`` answered :class:`Defer`, or the store has it waiting)."""
        found = self.lookup(item.id)
        if isinstance(found, PendingDecision):
            self._waiting.append(found)
            return None
        answer: Any = found if found is not None else asker()
        if isinstance(answer, Defer):
            self.defer(kind, item, answer)
            return None
        self._known.append((kind, item.id, answer))
        return answer  # type: ignore[no-any-return]

    def lookup(self, item_id: str) -> PendingDecision | Answer | None:
        """The decisions store's word on ``item_id`` (None without a store)."""
        if self._deferral is None:
            return None
        found = self._deferral.book.lookup(self._session_id, item_id)
        if found is not None and not isinstance(found, PendingDecision):
            self._from_store.append(item_id)
        return found

    def wait_on(self, decision: PendingDecision) -> None:
        """A question that already waits (found by :meth:`lookup`)."""
        self._waiting.append(decision)

    def defer(self, kind: DecisionKind, item: ToolUse | Elicitation, why: Defer | Deferred) -> None:
        """A question the hook or tool left for later."""
        if self._deferral is None:
            raise SessionError(
                f"the answer to {item.id} was deferred, and the session has no decisions= "
                "store to keep it in; pass decisions=FileStore(...) (or a RedisStore)"
            )
        self._new.append((kind, item, why))

    def results(self, tool_uses: Sequence[ToolUse], results: Sequence[ToolResult]) -> None:
        """Take the turn's tool results: a deferred one waits, the rest are known."""
        self._tool_uses = list(tool_uses)
        waiting = {decision.item_id for decision in self._waiting}
        for tool_use, result in zip(tool_uses, results):
            if tool_use.id in waiting:
                continue
            if isinstance(result, DeferredResult):
                why = result.deferred or Deferred()
                kind: DecisionKind = (
                    "confirmation" if isinstance(why, ConfirmationDeferred) else "tool_result"
                )
                self.defer(kind, tool_use, why)
            else:
                self._known.append(("tool_result", tool_use.id, result))

    def stop_if_waiting(self) -> None:
        """Raise :class:`TurnDeferred` when a question of the turn waits, after saving what
        the turn knows and a decision for each new question."""
        if not self._waiting and not self._new:
            return
        deferral = self._deferral
        assert deferral is not None  # only a store can hold a waiting question
        book, session_id = deferral.book, self._session_id
        book.keep_turn(session_id, self._tool_uses)
        for kind, item_id, answer in self._known:
            book.remember(session_id, item_id, kind, answer)
        now = datetime.now(timezone.utc)
        for kind, item, why in self._new:
            expires_in = why.expires_in
            draft = PendingDecision(
                token="",
                kind=kind,
                session_id=session_id,
                runtime=deferral.runtime,
                tool_use=item if isinstance(item, ToolUse) else None,
                elicitation=item if isinstance(item, Elicitation) else None,
                reason=why.reason,
                created=now,
                expires=None if expires_in is None else now + timedelta(seconds=expires_in),
                connect=deferral.connect,
            )
            self._waiting.append(book.open(draft))
        raise TurnDeferred(self._waiting)

    def settle(self) -> None:
        """The turn's answers reached the provider: every decision of it is answered."""
        if self._deferral is None or not self._from_store:
            return  # nothing of this turn waited: nothing to settle
        for item_id in dict.fromkeys(self._from_store):
            self._deferral.book.settle(self._session_id, item_id)
        self._deferral.book.drop_turn(self._session_id)


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True
