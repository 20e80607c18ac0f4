"""The seam between the drivers and a provider.

A provider turns a provider session into a :class:`Conversation`: blocking calls that take
a prompt or tool results and return the next :class:`~req_managed_agents.model.TurnResult`. How
the turn travels (a long-lived SSE stream, one streamed request per turn) stays inside the
provider; the drivers only see turns, every raw event through ``on_event`` as it arrives,
and the agent's text as it is written through ``on_text``.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol

from typing_extensions import Self

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import (
    Decision,
    Elicitation,
    ElicitationAnswer,
    Outcome,
    SessionInfo,
    ToolResult,
    ToolUse,
    TurnResult,
)
from req_managed_agents.transport._json import loads

__all__ = [
    "Aborted",
    "Conversation",
    "CreateToken",
    "EventSink",
    "Opening",
    "Origin",
    "Provider",
    "ProviderBase",
    "TextSink",
    "call_arguments",
    "check_options",
    "count",
    "handle_id",
    "handle_value",
]

_log = get_logger(__name__)

EventSink = Callable[[Mapping[str, Any]], None]


class TextSink(Protocol):
    """Where a provider reports the agent's text as it is written, per message (``message``
    is a key unique in the session). A delta goes to :meth:`append`, which costs its own
    length: a message written in ``n`` deltas is shown in time linear in its length, where
    reporting its whole text each time would cost ``n`` times that."""

    def __call__(self, message: str, text: str, final: bool) -> None:
        """``text`` is the whole text of ``message`` so far: ``""`` when the provider
        starts it over (a reconnect's preview, an invocation sent again), all of it when a
        delta changed it before its end (a delta to an earlier content block), and - with
        ``final`` - the message as the provider recorded it, which settles it."""
        ...

    def append(self, message: str, text: str) -> None:
        """``text`` follows the text of ``message`` reported so far: the same as reporting
        that text with ``text`` added, at the cost of ``text`` alone."""
        ...


Confirmations = Sequence[tuple[ToolUse, Decision]]
Elicitations = Sequence[tuple[Elicitation, ElicitationAnswer]]
Origin = Literal["created", "adopted", "reattached"]
"""Where a conversation's provider session came from: ``created`` by the call that opened
it; ``adopted``, found by its create token (an earlier attempt of the same keyed run made it
and was lost before it could say so); ``reattached``, an existing session the caller named."""


@dataclass(frozen=True)
class CreateToken:
    """How a keyed run creates its session so that it can always be found again: ``value``
    goes into the new session's metadata (or names it, where the caller picks session ids).
    ``look_since`` (epoch seconds) is set on a retry: an earlier attempt may have created a
    session since then and died before recording it; the provider looks for it first and
    adopts it, rather than leave it behind empty and make another."""

    value: str
    look_since: float | None = None


class Aborted(Exception):
    """A conversation call was cut short by :meth:`Conversation.abort` (internal signal)."""


class Conversation(Protocol):
    """One provider session, driven turn by turn by one thread. Any other thread may call
    :meth:`abort` (to unblock the driving one), :meth:`interrupt`, :meth:`send_event` and
    :meth:`close`: they only send a request or close I/O."""

    info: SessionInfo
    origin: Origin
    # Whether the provider lets us read the session's history (so :meth:`delivered` can
    # answer): where it does not, a keyed run records its own progress instead.
    keeps_history: bool

    def resume(self) -> TurnResult | None:
        """For a reattached session, its current turn (tool uses still unanswered, or the
        last completed turn); ``None`` for a fresh session."""
        ...

    def send_prompt(self, prompt: str) -> TurnResult:
        """Send a user message and block until the turn it starts has ended."""
        ...

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Elicitations = (),
    ) -> TurnResult:
        """Answer the turn's tool calls, permission requests and elicitations together, and
        block until the next turn has ended."""
        ...

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        """Start work toward ``outcome`` and block until the turn that grades it has ended;
        a :class:`~req_managed_agents.ConfigurationError` where the provider has none."""
        ...

    def accepts_input(self) -> bool:
        """Whether the provider session can still take a prompt: not terminated, archived
        or deleted. Asked when a resumed session's last turn ended ``terminated``, which
        may also mean a turn that gave up (``retries_exhausted``) in a live session."""
        ...

    def unanswered_tool_uses(self) -> list[ToolUse]:
        """Tool calls seen in this session that no result has answered yet."""
        ...

    def send_event(self, event: Mapping[str, Any]) -> None:
        """Post a raw provider event (e.g. a tool confirmation), where the provider allows."""
        ...

    def interrupt(self) -> None:
        """Ask the provider to stop the running turn (best effort)."""
        ...

    def abort(self) -> None:
        """From any thread: close in-flight I/O now so the driving thread returns promptly."""
        ...

    def close(self) -> None:
        """Release the session's connections; the provider-side session is left as is."""
        ...

    def history_mark(self) -> str | None:
        """Where the session's history stands now: an opaque mark (``None``: at its start,
        or where no history can be read) that :meth:`delivered` looks after."""
        ...

    def delivered(self, prompt: str, after: str | None) -> bool | None:
        """Whether the session's history, after the mark ``after``, shows ``prompt`` as a
        user message: ``None`` where the provider keeps no history it lets us read. A keyed
        run asks, when it continues a session, so that a prompt already delivered is never
        sent again - and an earlier prompt of the same text is not taken for it."""
        ...

    def discard(self) -> None:
        """Let go of a session this conversation opened and never used (a keyed run that
        lost the race to another process): deleted at the provider only when this call
        created it (``origin == "created"``), else just closed."""
        ...


@dataclass(frozen=True)
class Opening:
    """What the drivers hand a provider to open a conversation with, besides the user's
    connect options: where events and text go, what tags them, and how this run opens.

    ``handler_tools`` are the declarations of the handler's tools when it is a ``Tools``
    registry: a provider that declares tools per session uses them unless told others.
    ``cancelled`` is set when the session is closed while the opening still runs: a provider
    that waits there (for a stream to attach, say) stops waiting, and leaves nothing running
    behind it. ``resume`` names a provider session to reattach to, whatever the options say
    (a keyed run continuing the session its key names). ``create_token``: a session made now
    carries it, and one an earlier attempt made with it is adopted (see
    :class:`CreateToken`). ``prompt`` is the run's first prompt, for a runtime that starts a
    session with it (OpenAI, Gemini); the others ignore it. ``moved`` hears of the session's
    new id where each input makes one (a Gemini conversation is a chain of interactions, its
    newest the id to continue from): the drivers record it at once - the run's session id,
    a keyed run's binding - before the turn it starts goes on.
    """

    on_event: EventSink
    metadata: Mapping[str, Any] = field(default_factory=dict)
    telemetry_metadata: Mapping[str, Any] = field(default_factory=dict)
    on_text: TextSink | None = None
    handler_tools: Sequence[Mapping[str, Any]] | None = None
    cancelled: threading.Event | None = None
    resume: str | None = None
    create_token: CreateToken | None = None
    prompt: str | None = None
    moved: Callable[[str], None] | None = None


class Provider(Protocol):
    """A managed agent runtime the drivers can open conversations with - the one protocol
    every provider satisfies in full. ``name`` is its short name (the CLI's ``--provider``),
    ``label`` how errors name it; ``options`` the connect options a session may pass (checked
    when the session is made, so a typo fails there, with the closest name, before anything
    is sent) and ``session_options`` those that shape a new session (option -> the API's
    field). A provider holds a pooled client: ``close()`` or a ``with`` block releases it."""

    name: str
    label: str
    options: frozenset[str]
    session_options: Mapping[str, str]
    supports_outcomes: bool

    def open_conversation(self, options: Mapping[str, Any], opening: Opening) -> Conversation:
        """Create or reattach a provider session described by the driver's ``**connect``."""
        ...

    def close(self) -> None:
        """Release the pooled connections."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...


class ProviderBase:
    """What every provider shares beyond its runtime: the protocol's plain members and its
    client's lifetime. A subclass sets ``name``, ``label``, ``options`` (and
    ``session_options``) and a ``client`` with a ``close()``."""

    name: str
    label: str
    options: frozenset[str]
    session_options: Mapping[str, str] = MappingProxyType({})
    supports_outcomes: bool = False
    client: Any

    def close(self) -> None:
        """Release the pooled connections."""
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_options(
    options: Mapping[str, Any],
    allowed: frozenset[str],
    provider: str,
    also: Iterable[str] = (),
) -> None:
    """Refuse options this provider does not know (a typo must not pass silently), naming
    the closest known one - among ``allowed`` and ``also`` (the drivers' own)."""
    unknown = sorted(set(options) - allowed)
    if not unknown:
        return
    known = sorted({*allowed, *also})
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    raise ConfigurationError(
        f"unknown option(s) for {provider}: {', '.join(hints)}; allowed: {', '.join(known)}"
    )


def count(raw: Mapping[str, Any], key: str) -> int:
    """A token count from a provider's usage object (0 when absent or not an integer)."""
    value = raw.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def call_arguments(raw: object) -> dict[str, Any]:
    """A function call's arguments, sent as an object or as its JSON text ({} when they are
    neither: the tool then says what is missing, where a crash would end the run)."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str) or not raw.strip():
        return {}
    try:
        decoded = loads(raw, cut_deep=True)
    except ValueError as exc:
        _log.warning("a function call carried arguments that are not JSON (%s); passing {}", exc)
        return {}
    return decoded if isinstance(decoded, dict) else {}


def handle_value(handle: Any, name: str) -> Any:
    """One field of a handle object or mapping (None when it has none)."""
    return handle.get(name) if isinstance(handle, Mapping) else getattr(handle, name, None)


def handle_id(handle: Any, *names: str) -> str | None:
    """Read an id from a handle object or mapping (``handle.agent_id`` or ``handle["id"]``)."""
    for name in names:
        value = handle.get(name) if isinstance(handle, Mapping) else getattr(handle, name, None)
        if isinstance(value, str) and value:
            return value
    return None
