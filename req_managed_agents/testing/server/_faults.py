"""Fault rules: what to do to the next requests, or stream events, that match.

A request rule fails matching requests with an HTTP error, answers them with a body of the
test's choosing (a hostile service), resets their connections (before or after acting on
them) or calls a hook first; a stream rule drops, stalls, corrupts (or replaces) or
duplicates the event at a position of a stream's scope (an event may be previewed by frames
that go out ahead of it, and a drop may cut the connection in the middle of them). Rules
apply in the order added, each for a number of shots; :class:`FaultRules` holds the shots not
fired yet, under the emulator's lock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import threading
    from typing import Callable

    from req_managed_agents.testing.server._records import RecordedRequest

    # Whether a request is one a rule is meant for (see ``fail_requests(where=...)``).
    _RequestFilter = Callable[[RecordedRequest], object]


@dataclass(frozen=True)
class RequestFault:
    """An HTTP error to answer instead of the normal response (see ``fail_requests``);
    ``code`` is the API's code for its cause, if it names one."""

    status: int
    error_type: str | None = None
    retry_after: str | None = None
    message: str = "injected failure"
    code: str | None = None


@dataclass(frozen=True)
class Replacement:
    """A body sent, as it is, instead of the API's answer (see ``answer_requests``)."""

    status: int
    body: bytes
    content_type: str
    after_acting: bool


_Action = TypeVar("_Action")


class RequestRule(Generic[_Action]):
    """What to do to the next ``times`` requests that match (``method``, ``"*"`` for any; a
    ``path_regex`` matching the whole path; ``where``, when given, true of the request): an
    error, a reset, a body in place of the answer, or a hook."""

    def __init__(
        self,
        method: str,
        path_regex: str,
        where: _RequestFilter | None,
        times: int,
        action: _Action,
    ) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        self.method = method.upper()
        self.path = re.compile(path_regex)
        self.where = where
        self.remaining = times
        self.action = action

    def matches(self, request: RecordedRequest) -> bool:
        return (
            self.method in ("*", request.method)
            and self.path.fullmatch(request.path) is not None
            and (self.where is None or bool(self.where(request)))
        )


class _StreamFaultRule:
    def __init__(
        self,
        scope: str | None,
        position: int,
        times: int,
        seconds: float,
        previews: int,
        frame: bytes | None = None,
    ) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        if previews < 0:
            raise ValueError("the number of preview frames must not be negative")
        self.scope = scope
        self.position = position
        self.remaining = times
        self.seconds = seconds
        self.previews = previews
        self.frame = frame

    def matches(self, scope: str, position: int) -> bool:
        return self.position == position and self.scope in (None, scope)


# Stream fault kinds, in the order they are looked up: an event meets one fault at most.
_STREAM_FAULT_KINDS = ("stall", "drop", "corrupt", "duplicate")

_Rule = TypeVar("_Rule", "RequestRule[Any]", _StreamFaultRule)
_Added = TypeVar("_Added")


def _take(rules: list[_Rule], *key: Any) -> _Rule | None:
    """Use up one shot of the first rule matching ``key``; return it, or None."""
    for rule in rules:
        if rule.matches(*key):
            rule.remaining -= 1
            if rule.remaining <= 0:
                rules.remove(rule)
            return rule
    return None


@dataclass(frozen=True)
class RequestActions:
    """What the rules do to one request: ``acting`` False resets it before it is handled;
    a ``swallowed`` one is handled, then reset; ``fault`` answers it instead of the API,
    after ``hook`` runs; so does ``replacement`` (when no fault does), after the API acted
    on it if it says so."""

    acting: bool
    swallowed: bool
    fault: RequestFault | None
    hook: Callable[[], object] | None
    replacement: Replacement | None = None


@dataclass(frozen=True)
class StreamFault:
    """What happens to one event on one connection; ``kind`` None: it goes out as it is."""

    kind: str | None
    seconds: float
    duplicate_all: bool
    previews: int = 0  # the preview frames a drop lets out first
    frame: bytes | None = None  # what a corruption writes, when the test chose it


class FaultRules:
    """The fault rules of one emulator that still have shots to fire, in the order added.

    ``condition`` is the emulator's lock, which guards them.
    """

    def __init__(self, condition: threading.Condition) -> None:
        self._condition = condition
        self._failures: list[RequestRule[RequestFault]] = []
        self._hooks: list[RequestRule[Callable[[], object]]] = []
        self._resets: list[RequestRule[bool]] = []  # the action: whether it acts first
        self._replacements: list[RequestRule[Replacement]] = []
        self._stream_faults: dict[str, list[_StreamFaultRule]] = {
            kind: [] for kind in _STREAM_FAULT_KINDS
        }
        self._duplicate_events = False

    def add_failure(self, rule: RequestRule[RequestFault]) -> None:
        """Answer the requests ``rule`` matches with its fault (see ``fail_requests``)."""
        self._add(self._failures, rule)

    def add_reset(self, rule: RequestRule[bool]) -> None:
        """Reset the connections of the requests ``rule`` matches (see ``reset_requests``);
        its action is whether they are acted on first."""
        self._add(self._resets, rule)

    def add_replacement(self, rule: RequestRule[Replacement]) -> None:
        """Answer the requests ``rule`` matches with its body (see ``answer_requests``)."""
        self._add(self._replacements, rule)

    def add_hook(self, rule: RequestRule[Callable[[], object]]) -> None:
        """Call the hook of ``rule`` before the requests it matches (see ``before_requests``)."""
        self._add(self._hooks, rule)

    def _add(self, rules: list[_Added], rule: _Added) -> None:
        with self._condition:
            rules.append(rule)

    def add_stream_fault(
        self,
        kind: str,
        scope: str | None,
        position: int,
        times: int,
        seconds: float = 0.0,
        previews: int = 0,
        frame: bytes | None = None,
    ) -> None:
        """Meet the event at ``position`` of a stream of ``scope`` (None: any) with a fault;
        ``frame`` is what a corruption writes instead of the stream's own broken frame."""
        rule = _StreamFaultRule(scope, position, times, seconds, previews, frame)
        with self._condition:
            self._stream_faults[kind].append(rule)

    def set_duplicate_events(self, enabled: bool) -> None:
        """Whether every event goes out twice on every stream."""
        with self._condition:
            self._duplicate_events = enabled

    def take_request_actions(self, request: RecordedRequest) -> RequestActions:
        """Use up the shots that meet a request: a reset's first, then (unless the reset
        comes before acting) a failure's, or else a replacement's, and a hook's."""
        with self._condition:
            reset = _take(self._resets, request)
            acting = reset is None or reset.action
            rule = _take(self._failures, request) if acting else None
            replaced = _take(self._replacements, request) if acting and rule is None else None
            hook = _take(self._hooks, request) if acting else None
        return RequestActions(
            acting=acting,
            swallowed=reset is not None,
            fault=None if rule is None else rule.action,
            hook=None if hook is None else hook.action,
            replacement=None if replaced is None else replaced.action,
        )

    def take_stream_fault(self, scope: str, position: int) -> StreamFault:
        """Use up the shot of the first fault that meets this event (stalls first)."""
        with self._condition:
            for kind in _STREAM_FAULT_KINDS:
                rule = _take(self._stream_faults[kind], scope, position)
                if rule is not None:
                    return StreamFault(
                        kind, rule.seconds, self._duplicate_events, rule.previews, rule.frame
                    )
            return StreamFault(None, 0.0, self._duplicate_events)

    def pending(self) -> int:
        """How many shots have not fired yet, hooks excluded."""
        with self._condition:
            rules: list[RequestRule[Any] | _StreamFaultRule] = [
                *self._failures,
                *self._resets,
                *self._replacements,
            ]
            for kind_rules in self._stream_faults.values():
                rules.extend(kind_rules)
            return sum(rule.remaining for rule in rules)
