"""Runs named by an ``idempotency_key``: retried anywhere, they continue, never start over.

The first run with a key binds it in the ledger's store - before anything is sent, with one
atomic create-if-absent - to a create token, then opens its session with that token in the
session's metadata (AgentCore: as its id), then records the session in the binding. A run
killed between the create and that record is found again: a later run with the key sees the
binding still *opening*, looks for the session the token names and adopts it, instead of
leaving it behind empty and making another. A second process racing the first finds the
binding and continues that run; if it made a session of its own meanwhile, it deletes it -
only ever a session it created in that same call, never one it reattached or adopted.

A later run with the same key (a Celery task redelivered after its worker was killed, a batch
resumed) reattaches the bound session and goes on from where it is:

* where the provider keeps a history we can read (Claude, OpenAI), the history says whether
  the prompt was delivered - looking only *after* where the history stood when the key was
  bound (its mark), so an earlier message of the same text in a session the caller named is
  never taken for it. A delivered prompt is never sent again, and the run continues from the
  session's current turn (tools still unanswered are answered through the ledger, keyed on
  their call id, so a finished tool is never run again);
* where it does not (AgentCore, whose harness keeps the conversation out of reach), the
  binding records how far the run got - each finished turn, and each input just before it is
  sent. A run that stopped between sending an input and seeing its turn end cannot know
  whether the service took it: continuing could double a turn, so it raises
  :class:`~req_managed_agents.errors.AmbiguousRunError` and sends nothing.

A key names one run of one prompt: the same key with another prompt is refused.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from req_managed_agents.drivers._ledger import ToolLedger
from req_managed_agents.errors import AmbiguousRunError, ConfigurationError
from req_managed_agents.model._vocabulary import Terminal, ToolUse, TurnResult, Usage
from req_managed_agents.providers._base import Conversation, CreateToken

__all__ = ["KeyedRun"]

Opener = Callable[["str | None", "CreateToken | None"], Conversation]
"""``open(resume, token)``: a conversation on session ``resume``, or (``None``) on the
session the connect options name or create - created with ``token``."""


class KeyedRun:
    """The binding of one key: its session, and (for providers without a readable history)
    how far the run got."""

    def __init__(self, ledger: ToolLedger, key: str, binding: Mapping[str, Any]) -> None:
        self.ledger = ledger
        self.key = key
        self._binding = dict(binding)
        self._tracked = False

    @classmethod
    def start(
        cls, ledger: ToolLedger, key: str, prompt: str, open_conversation: Opener
    ) -> tuple[Conversation, TurnResult | None, str | None, KeyedRun]:
        """The keyed run's conversation, the turn to go on from, the prompt if it still has
        to be sent, and the run's binding."""
        keyed, conversation, resumed, pending = cls.open(ledger, key, prompt, open_conversation)
        return conversation, resumed, prompt if pending else None, keyed

    @classmethod
    def open(
        cls, ledger: ToolLedger, key: str, prompt: str, open_conversation: Opener
    ) -> tuple[KeyedRun, Conversation, TurnResult | None, bool]:
        """The keyed run's conversation, the turn to go on from, and whether the prompt
        still has to be sent."""
        if not isinstance(key, str) or not key:
            raise ConfigurationError("idempotency_key must be a non-empty string")
        digest = _digest(prompt)
        found = ledger.binding(key)
        if found is None:
            opening = {
                "phase": "opening",
                "prompt": digest,
                "token": secrets.token_hex(12),
                "since": time.time(),
            }
            found = ledger.bind(key, opening)
            if found == opening:
                return cls._open_first(ledger, key, prompt, found, open_conversation, mine=True)
        _check_prompt(key, found, digest)
        if found.get("phase") == "opening":
            return cls._open_first(ledger, key, prompt, found, open_conversation, mine=False)
        return cls._continue(ledger, key, prompt, found, open_conversation)

    @classmethod
    def _open_first(
        cls,
        ledger: ToolLedger,
        key: str,
        prompt: str,
        opening: dict[str, Any],
        open_conversation: Opener,
        *,
        mine: bool,
    ) -> tuple[KeyedRun, Conversation, TurnResult | None, bool]:
        """Open the session of a binding still *opening*: ``mine`` just now, or left so by
        an attempt that died (or is racing this one) - whose session, if it made one, is
        found by the token and adopted."""
        token = CreateToken(str(opening["token"]), None if mine else float(opening["since"]))
        conversation = open_conversation(None, token)
        reattached = conversation.origin == "reattached"
        bound = {
            "phase": "new",
            "prompt": opening["prompt"],
            "token": opening["token"],
            "session_id": conversation.info.session_id,
            # Where the history stood: a session the caller named may hold older messages.
            "mark": conversation.history_mark() if reattached else None,
        }
        if not ledger.rebind(key, opening, bound):
            now = ledger.binding(key)
            if now is None or now.get("session_id") != conversation.info.session_id:
                conversation.discard()  # another process bound the key first: use its session
            else:
                conversation.close()
            if now is None:
                raise AmbiguousRunError(f"the binding of idempotency key {key!r} vanished")
            _check_prompt(key, now, str(opening["prompt"]))
            return cls._continue(ledger, key, prompt, now, open_conversation)
        keyed = cls(ledger, key, bound)
        keyed._tracked = not conversation.keeps_history
        resumed = conversation.resume() if conversation.origin != "created" else None
        # An adopted session's lost attempt may have sent the prompt (OpenAI creates with it).
        sent = conversation.origin == "adopted" and conversation.delivered(prompt, None)
        return keyed, conversation, resumed, not sent

    @classmethod
    def _continue(
        cls,
        ledger: ToolLedger,
        key: str,
        prompt: str,
        found: dict[str, Any],
        open_conversation: Opener,
    ) -> tuple[KeyedRun, Conversation, TurnResult | None, bool]:
        """Reattach the bound session and go on from where the run got."""
        keyed = cls(ledger, key, found)
        conversation = open_conversation(str(found["session_id"]), None)
        resumed = conversation.resume()
        mark = found.get("mark")
        delivered = conversation.delivered(prompt, mark if isinstance(mark, str) else None)
        if delivered is not None:
            return keyed, conversation, resumed, not delivered
        keyed._tracked = True
        phase = found.get("phase")
        if phase == "new":
            return keyed, conversation, None, True
        if phase == "turn":
            return keyed, conversation, _turn(found.get("turn")), False
        conversation.close()
        raise AmbiguousRunError(
            f"the run keyed {key!r} stopped after sending its input and before seeing the "
            "turn it started end; the provider keeps no history to check, so nothing was sent "
            "again (sending it could run that turn twice)",
            session_id=str(found["session_id"]),
        )

    def before_input(self) -> None:
        """About to send an input (a prompt, tool results): from now until its turn ends,
        a retry could not tell whether the provider took it."""
        if self._tracked:
            self._move({**self._binding, "phase": "sending", "turn": None})

    def after_turn(self, turn: TurnResult) -> None:
        """A turn ended: a retry may go on from it."""
        if self._tracked:
            self._move({**self._binding, "phase": "turn", "turn": _turn_record(turn)})

    def moved(self, session_id: str) -> None:
        """The session's id moved (each input makes a new Gemini interaction): a retry
        continues from the new one."""
        if self._binding.get("session_id") != session_id:
            self._move({**self._binding, "session_id": session_id})

    def _move(self, binding: dict[str, Any]) -> None:
        if not self.ledger.rebind(self.key, self._binding, binding):
            raise AmbiguousRunError(
                f"the run keyed {self.key!r} is being continued by another process",
                session_id=str(self._binding.get("session_id")),
            )
        self._binding = binding


def _check_prompt(key: str, binding: Mapping[str, Any], digest: str) -> None:
    if binding.get("prompt") != digest:
        raise ConfigurationError(
            f"idempotency_key {key!r} already names a run of another prompt; use a new key "
            "for a new prompt"
        )


def _digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _turn_record(turn: TurnResult) -> dict[str, Any]:
    """What a retry needs of a turn to go on from it (its raw events are not kept)."""
    return {
        "terminal": turn.terminal,
        "text": turn.text,
        "stop_reason": _jsonable(turn.stop_reason),
        "tool_uses": [
            {
                "id": use.id,
                "name": use.name,
                "input": dict(use.input),
                "session_thread_id": use.session_thread_id,
                "turn_id": use.turn_id,
            }
            for use in turn.tool_uses
        ],
    }


def _turn(record: Any) -> TurnResult:
    if not isinstance(record, Mapping):
        raise AmbiguousRunError("the keyed run's last turn was not recorded readably")
    uses = tuple(
        ToolUse(
            str(use["id"]),
            str(use["name"]),
            dict(use.get("input") or {}),
            session_thread_id=use.get("session_thread_id"),
            turn_id=use.get("turn_id"),
        )
        for use in record.get("tool_uses") or ()
        if isinstance(use, Mapping)
    )
    terminal: Terminal = "terminated"
    if record.get("terminal") in ("end_turn", "requires_action"):
        terminal = "end_turn" if record["terminal"] == "end_turn" else "requires_action"
    return TurnResult(
        terminal, str(record.get("text") or ""), uses, (), Usage(), record.get("stop_reason")
    )


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)
