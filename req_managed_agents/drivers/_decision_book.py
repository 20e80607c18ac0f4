"""The decisions store: questions a run left for a person, and their answers, in records any
process sharing the store can read and claim.

Three kinds of record, all in a ``decisions=`` store (any :class:`~req_managed_agents.
stores.Store`; files on one machine, Redis across machines):

* ``decision:<token>`` - one open question: what it asks, the session and what continuing it
  needs, and its state. ``pending`` until someone answers; ``claimed`` (with the answer) by
  :func:`~req_managed_agents.answer` - held on a lease while that process continues the
  session, so that a retry after a crash can take it over and a second answer cannot;
  ``answered`` once the answer reached the provider (still held while the process goes on);
  and, when that process reached the session's next stop, ``done`` - or ``given`` if it
  stopped without sending it (another question of the same turn still waits: its answer
  will carry this one). A retry of the same answer takes over a ``claimed`` or ``answered``
  record whose process died; any other answer, or any after ``done`` or ``given``, is
  refused with the first.
* ``decision-item:<session>:<item>`` - which token asks about a tool call or elicitation, so
  that a run meeting the same question again (a resume, a retry) waits on the same token
  instead of asking anyone twice.
* ``decision-known:<session>:<item>`` - an answer the stopping run already had for the same
  turn (a tool it ran, a confirmation its hook gave): the turn's answers go to the provider
  together, by whichever process continues it, and nothing is run or asked twice.

``decision-turn:<session>`` keeps the stopped turn's tool calls, for a runtime whose
reattached session cannot show them (AgentCore). ``decision-open:all`` lists the open
tokens (compare-and-set), for :func:`pending`.
"""

from __future__ import annotations

import secrets
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, Union

from req_managed_agents.drivers._leases import DEFAULT_LEASE, Leases, lapsed_long_ago
from req_managed_agents.drivers._ledger import key_part, result_from_record, result_record
from req_managed_agents.errors import SessionError
from req_managed_agents.model._vocabulary import (
    Allow,
    Decision,
    DecisionKind,
    Deny,
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    ElicitationCancel,
    ElicitationDecline,
    PendingDecision,
    ToolResult,
    ToolUse,
)
from req_managed_agents.stores._base import Store
from req_managed_agents.stores._records import records_of

__all__ = [
    "ANSWERED_TTL",
    "AlreadyAnsweredError",
    "Answer",
    "DecisionBook",
    "DecisionNotFoundError",
    "answer_from_record",
    "answer_record",
    "book_for",
]

Answer = Union[Decision, ElicitationAnswer, ToolResult]
"""What a decision is answered with, by its kind."""
ANSWERED_TTL = 7 * 24 * 3600.0
"""How long an answered decision is kept (so that a late second answer learns the first)."""
_TOKEN_PREFIX = "dec_"  # a token never begins with "-", which a command line reads as a flag
_OPEN_INDEX = "decision-open:all"
_CAS_ROUNDS = 200


class AlreadyAnsweredError(SessionError):
    """Someone answered this decision first (``first`` is that answer, ``answered_at``
    when, UTC); or a process is continuing the session with it right now."""

    def __init__(self, token: str, first: Answer, answered_at: datetime | None) -> None:
        super().__init__(f"decision {token[:8]}... was already answered: {first!r}")
        self.token = token
        self.first = first
        self.answered_at = answered_at


class DecisionNotFoundError(SessionError):
    """No decision has this token in the store (never made, or forgotten long after its
    answer)."""


class DecisionBook:
    """The decision records of one store (see the module docs). Thread-safe."""

    def __init__(self, store: Store, *, lease: float = DEFAULT_LEASE) -> None:
        self.store = store
        self._records = records_of(store)
        self._leases = Leases(self._records, lease=lease, ttl=None)

    # -- the stopping run -----------------------------------------------------------------

    def open(self, draft: PendingDecision) -> PendingDecision:
        """Save ``draft`` (its token ignored) unless its question already waits: the
        decision that waits for it."""
        item_key = _item_key(draft.session_id, draft.item_id)
        token = _TOKEN_PREFIX + secrets.token_urlsafe(24)
        if not self._records.add_record(item_key, token):
            known = self._records.get_record(item_key)
            found = self.get(str(known)) if isinstance(known, str) else None
            if found is not None:
                return found
            self._records.replace_record(item_key, known, token)
        decision = replace(draft, token=token)
        self._records.add_record(_key(token), {**_record(decision), "status": "pending"})
        self._update_index(lambda index: {**index, token: decision.session_id})
        return decision

    def remember(self, session_id: str, item_id: str, kind: DecisionKind, answer: Answer) -> None:
        """Keep an answer the stopping run already has for the question ``item_id``."""
        record = {"kind": kind, "answer": answer_record(answer)}
        key = _known_key(session_id, item_id)
        if not self._records.add_record(key, record, ttl=ANSWERED_TTL):
            self._records.replace_record(key, self._records.get_record(key), record)

    def keep_turn(self, session_id: str, tool_uses: list[ToolUse]) -> None:
        """Keep the stopped turn's tool calls (see the module docs)."""
        record = {"tool_uses": [{**_fields_of(use), "input": dict(use.input)} for use in tool_uses]}
        key = _turn_key(session_id)
        if not self._records.add_record(key, record):
            self._records.replace_record(key, self._records.get_record(key), record)

    def kept_turn(self, session_id: str) -> list[ToolUse]:
        """The tool calls of the session's turn that waits, as :meth:`keep_turn` kept them."""
        record = self._records.get_record(_turn_key(session_id))
        uses = record.get("tool_uses") if isinstance(record, Mapping) else None
        return [ToolUse(**use) for use in uses or () if isinstance(use, Mapping)]

    def drop_turn(self, session_id: str) -> None:
        """The turn no longer waits."""
        key = _turn_key(session_id)
        record = self._records.get_record(key)
        if record is not None:
            self._records.delete_record(key, record)

    # -- a run meeting a question -----------------------------------------------------------

    def lookup(self, session_id: str, item_id: str) -> PendingDecision | Answer | None:
        """What the store says of a question: its answer (known to the stopping run, or
        given since), the decision still waiting for one, or None (never deferred)."""
        known = self._records.get_record(_known_key(session_id, item_id))
        if isinstance(known, Mapping):
            return answer_from_record(known["kind"], known["answer"])
        token = self._records.get_record(_item_key(session_id, item_id))
        record = self._records.get_record(_key(token)) if isinstance(token, str) else None
        if not isinstance(record, Mapping):
            return None
        if record.get("answer") is not None:
            return answer_from_record(record["kind"], record["answer"])
        return _decision(record)

    def settle(self, session_id: str, item_id: str) -> None:
        """The answer to ``item_id`` reached the provider: its decision is answered."""
        token = self._records.get_record(_item_key(session_id, item_id))
        if not isinstance(token, str):
            return
        key = _key(token)
        for _ in range(_CAS_ROUNDS):
            record = self._records.get_record(key)
            if not isinstance(record, Mapping) or record.get("status") in ("answered", "done"):
                break
            done = {**_unleased(record), "status": "answered"}
            if self._leases.held(key) is not None:  # held on until the run's next stop
                if self._leases.change(key, done, keep=True):
                    break
            elif self._records.replace_record(key, record, done, ttl=ANSWERED_TTL):
                break
        self._update_index(lambda index: {k: v for k, v in index.items() if k != token})

    # -- answering --------------------------------------------------------------------------

    def get(self, token: str) -> PendingDecision | None:
        """The decision ``token`` names, or None."""
        record = self._records.get_record(_key(token))
        return _decision(record) if isinstance(record, Mapping) else None

    def claim(self, token: str, answer: Answer) -> PendingDecision:
        """Answer ``token``: the first answer wins and is held (its lease renewed) until
        :meth:`release`. A retry of the same answer takes over a claim whose process died;
        any other answer, or one while the first is at work, is refused."""
        key = _key(token)
        wanted = answer_record(answer)
        for _ in range(_CAS_ROUNDS):
            record = self._records.get_record(key)
            if not isinstance(record, Mapping):
                raise DecisionNotFoundError(f"no decision {token[:8]}... in {self.store!r}")
            status = record.get("status")
            retry = status in ("claimed", "answered") and record.get("answer") == wanted
            if status != "pending" and not (retry and lapsed_long_ago(record)):
                first = answer_from_record(record["kind"], record["answer"])
                raise AlreadyAnsweredError(token, first, _when(record.get("answered_at")))
            claimed = {
                **record,
                "status": "claimed" if status == "pending" else status,
                "answer": wanted,
                "answered_at": record.get("answered_at") or time.time(),
            }
            if self._leases.take(key, record, claimed) is not None:
                return _decision(claimed)
        raise SessionError(f"decision {token[:8]}... kept changing under this claim")

    def release(self, token: str, *, reached_a_stop: bool) -> None:
        """Stop holding a claim. If its process ``reached_a_stop`` the answer is ``given``
        (a retry has nothing left to do); otherwise it stays ``claimed``, for a retry of the
        same answer to go on from."""
        key = _key(token)
        held = self._leases.held(key)
        if held is None:
            return
        record = _unleased(held)
        if reached_a_stop:
            record["status"] = "done" if record.get("status") == "answered" else "given"
        self._leases.change(key, record, keep=False)

    def waiting(self, token: str) -> bool:
        """Whether ``token`` still waits for its first answer."""
        record = self._records.get_record(_key(token))
        return isinstance(record, Mapping) and record.get("status") == "pending"

    def open_tokens(self) -> dict[str, str]:
        """Every open decision's token and session id."""
        index = self._records.get_record(_OPEN_INDEX)
        return dict(index) if isinstance(index, Mapping) else {}

    def _update_index(self, change: Any) -> None:
        for _ in range(_CAS_ROUNDS):
            before = self._records.get_record(_OPEN_INDEX)
            after = change(dict(before) if isinstance(before, Mapping) else {})
            if before is None:
                if self._records.add_record(_OPEN_INDEX, after):
                    return
            elif self._records.replace_record(_OPEN_INDEX, before, after):
                return
        raise SessionError("the open decisions' index kept changing; try again")


_BOOKS: weakref.WeakValueDictionary[int, DecisionBook] = weakref.WeakValueDictionary()
_BOOKS_LOCK = threading.Lock()


def book_for(store: Store) -> DecisionBook:
    """The one book of ``store`` in this process while anyone uses it, so that the claims
    an answer holds and the loop that settles them share their leases."""
    with _BOOKS_LOCK:
        book = _BOOKS.get(id(store))
        if book is None or book.store is not store:
            book = DecisionBook(store)
            _BOOKS[id(store)] = book
        return book


def answer_record(answer: Answer) -> dict[str, Any]:
    """An answer as JSON for the store."""
    if isinstance(answer, Allow):
        return {"allow": True}
    if isinstance(answer, Deny):
        return {"allow": False, "message": answer.message}
    if isinstance(answer, ToolResult):
        return result_record(answer)
    record: dict[str, Any] = {"action": answer.type}
    if isinstance(answer, ElicitationAccept) and answer.content is not None:
        record["content"] = dict(answer.content)
    return record


def answer_from_record(kind: str, record: Mapping[str, Any]) -> Answer:
    """The answer :func:`answer_record` stored, for a decision of ``kind``."""
    if kind == "confirmation":
        return Allow() if record.get("allow") else Deny(str(record.get("message") or ""))
    if kind == "tool_result":
        return result_from_record(record)
    action = record.get("action")
    if action == "accept":
        content = record.get("content")
        return ElicitationAccept(content if isinstance(content, Mapping) else None)
    return ElicitationDecline() if action == "decline" else ElicitationCancel()


def _key(token: str) -> str:
    return f"decision:{key_part(token)}"


def _item_key(session_id: str, item_id: str) -> str:
    return f"decision-item:{key_part(session_id)}:{key_part(item_id)}"


def _turn_key(session_id: str) -> str:
    return f"decision-turn:{key_part(session_id)}"


def _known_key(session_id: str, item_id: str) -> str:
    return f"decision-known:{key_part(session_id)}:{key_part(item_id)}"


def _unleased(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("lease", "renewed_at", "process")}


def _when(stamp: Any) -> datetime | None:
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(stamp, timezone.utc)
    return None


def _record(decision: PendingDecision) -> dict[str, Any]:
    use, asked = decision.tool_use, decision.elicitation
    return {
        "token": decision.token,
        "kind": decision.kind,
        "session_id": decision.session_id,
        "runtime": decision.runtime,
        "tool_use": None if use is None else {**_fields_of(use), "input": dict(use.input)},
        "elicitation": None if asked is None else _elicitation_record(asked),
        "reason": decision.reason,
        "created": decision.created.timestamp(),
        "expires": decision.expires.timestamp() if decision.expires else None,
        "connect": dict(decision.connect or {}),
        "answer": None,
    }


def _fields_of(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in type(value).__dataclass_fields__}


def _elicitation_record(asked: Elicitation) -> dict[str, Any]:
    record = _fields_of(asked)
    schema = asked.requested_schema
    record["requested_schema"] = None if schema is None else dict(schema)
    return record


def _decision(record: Mapping[str, Any]) -> PendingDecision:
    use, asked = record.get("tool_use"), record.get("elicitation")
    return PendingDecision(
        token=str(record["token"]),
        kind=record["kind"],
        session_id=str(record["session_id"]),
        runtime=str(record["runtime"]),
        tool_use=ToolUse(**use) if isinstance(use, Mapping) else None,
        elicitation=Elicitation(**asked) if isinstance(asked, Mapping) else None,
        reason=str(record.get("reason") or ""),
        created=_when(record.get("created")) or datetime.now(timezone.utc),
        expires=_when(record.get("expires")),
        connect=dict(record.get("connect") or {}),
    )
