"""Answering a decision a run left for a person, from any process: :func:`answer` claims it
(the first answer wins), continues its session to the next stop, and :func:`pending` lists
what still waits.

The answer is written to the decisions store before anything is sent, so a process killed
at any point after the claim leaves it there for a retry of the same answer to take over;
the session goes on like a keyed run, reattached by its id: answers already in the store
are sent with it, the tool ledger keeps each call to one run, and a question that still
waits stays waiting (the run stops again, listing it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from req_managed_agents.drivers._decision_book import (
    AlreadyAnsweredError,
    Answer,
    DecisionNotFoundError,
    book_for,
)
from req_managed_agents.drivers._session import Session
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import (
    Allow,
    Deny,
    ElicitationAccept,
    ElicitationDecline,
    PendingDecision,
    SessionResult,
    ToolResult,
)
from req_managed_agents.providers._base import Provider
from req_managed_agents.stores._base import Store
from req_managed_agents.tools._handler import Handler

__all__ = ["EXPIRED_MESSAGE", "answer", "expire", "pending"]

EXPIRED_MESSAGE = "no one answered before the decision expired"
_REATTACH = ("session_id", "runtime_session_id", "interaction_id")


@overload
def answer(
    provider: Provider,
    token: str,
    *,
    handler: Handler,
    decisions: Store,
    allow: bool | None = ...,
    message: str | None = ...,
    result: str | ToolResult | None = ...,
    is_error: bool = ...,
    content: Mapping[str, Any] | None = ...,
    timeout: float | None = ...,
    wait: Literal[True] = ...,
    **options: Any,
) -> SessionResult: ...
@overload
def answer(
    provider: Provider,
    token: str,
    *,
    handler: Handler,
    decisions: Store,
    allow: bool | None = ...,
    message: str | None = ...,
    result: str | ToolResult | None = ...,
    is_error: bool = ...,
    content: Mapping[str, Any] | None = ...,
    timeout: float | None = ...,
    wait: Literal[False],
    **options: Any,
) -> None: ...
def answer(
    provider: Provider,
    token: str,
    *,
    handler: Handler,
    decisions: Store,
    allow: bool | None = None,
    message: str | None = None,
    result: str | ToolResult | None = None,
    is_error: bool = False,
    content: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    wait: bool = True,
    **options: Any,
) -> SessionResult | None:
    """Answer the decision ``token`` and continue its session to its next stop.

    A confirmation takes ``allow`` (and ``message``, the agent's reason for a denial); an
    elicitation ``allow`` (accept, with ``content`` for a form, or decline); a deferred tool
    ``result`` (text or a ``ToolResult``; ``is_error`` flags text as an error). The first
    answer wins: a different one, or one while the first is still at work, raises
    :class:`~req_managed_agents.errors.AlreadyAnsweredError` carrying the first; the same
    answer again after the first's process died goes on where it stopped. Tools the
    continued session calls run here, through ``handler``; ``options`` are the drivers'
    (``ledger``, ``tool_timeout``, ...) and override the connect options the decision kept.

    ``wait=False`` returns as soon as the answer is claimed and kept: it is sent by whoever
    continues the session next - a worker's ``run_to_completion(..., session_id=...)`` with
    the same ``decisions=``, ``rma pending``, or the answer to the turn's last open question.
    """
    book = book_for(decisions)
    decision = book.get(token)
    if decision is None:
        raise DecisionNotFoundError(f"no decision {token[:8]}... in {decisions!r}")
    runtime = str(getattr(provider, "name", type(provider).__name__))
    if runtime != decision.runtime:
        raise ConfigurationError(
            f"the decision belongs to a {decision.runtime} session, not to {runtime}"
        )
    reply = _reply(decision, allow, message, result, is_error, content)
    book.claim(token, reply)
    if not wait:  # kept for whoever continues the session
        book.release(token, reached_a_stop=True)
        return None
    stopped = False
    try:
        connect = {**(decision.connect or {}), **options}
        accepted = getattr(provider, "options", ("session_id",))
        # The option that reattaches a session: AgentCore's runtime session (which the run
        # may have made up), Gemini's newest interaction, everyone else's session id.
        name = next((n for n in _REATTACH if n in accepted), "session_id")
        connect[name] = decision.session_id
        with Session(provider, handler=handler, decisions=decisions, **connect) as session:
            reached = session.run(None, timeout=timeout)
        stopped = True
        return reached
    finally:
        book.release(token, reached_a_stop=stopped)


def pending(decisions: Store, *, session_id: str | None = None) -> list[PendingDecision]:
    """The decisions still waiting for an answer (of one session, if given), oldest first;
    expired ones included (see :attr:`PendingDecision.expired`)."""
    book = book_for(decisions)
    found = []
    for token, owner in book.open_tokens().items():
        if session_id is not None and owner != session_id:
            continue
        decision = book.get(token)
        if decision is not None and book.waiting(token):
            found.append(decision)
    return sorted(found, key=lambda decision: decision.created)


def expire(
    provider: Provider,
    decisions: Store,
    *,
    handler: Handler,
    message: str = EXPIRED_MESSAGE,
    timeout: float | None = None,
    **options: Any,
) -> dict[str, SessionResult | Exception]:
    """Answer every expired decision of ``provider``'s runtime with "no": a confirmation
    is denied with ``message``, an elicitation declined, a deferred tool answered with
    ``message`` as an error - and each session continued, as :func:`answer` does. Leaving
    a session waiting instead is not calling this. Returns each token's result, or the
    error that answering it raised (one answered meanwhile is skipped)."""
    runtime = str(getattr(provider, "name", type(provider).__name__))
    outcomes: dict[str, SessionResult | Exception] = {}
    for decision in pending(decisions):
        if not decision.expired or decision.runtime != runtime:
            continue
        if decision.kind == "tool_result":
            no: dict[str, Any] = {"result": message, "is_error": True}
        else:
            no = {"allow": False, "message": message}
        try:
            outcomes[decision.token] = answer(
                provider,
                decision.token,
                handler=handler,
                decisions=decisions,
                timeout=timeout,
                **no,
                **options,
            )
        except AlreadyAnsweredError:
            continue
        except Exception as exc:  # one session's failure does not stop the others
            outcomes[decision.token] = exc
    return outcomes


def _reply(
    decision: PendingDecision,
    allow: bool | None,
    message: str | None,
    result: str | ToolResult | None,
    is_error: bool,
    content: Mapping[str, Any] | None,
) -> Answer:
    """The answer the arguments give for ``decision``'s kind (a wrong mix is refused)."""
    kind = decision.kind
    if kind == "tool_result":
        if result is None or allow is not None or content is not None:
            raise ConfigurationError("a deferred tool is answered with result= (only)")
        if isinstance(result, ToolResult):
            return result
        return ToolResult(decision.item_id, str(result), is_error=is_error)
    if allow is None or result is not None:
        raise ConfigurationError(f"a {kind} is answered with allow=True or allow=False")
    if kind == "confirmation":
        if content is not None:
            raise ConfigurationError("a confirmation takes message=, not content=")
        return Allow() if allow else Deny(message or "")
    if allow:
        return ElicitationAccept(dict(content) if content is not None else None)
    return ElicitationDecline()
