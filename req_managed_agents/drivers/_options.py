"""The drivers' options, declared and validated once for ``Session`` and ``run_to_completion``.

A driver takes two kinds of keyword: its own (``max_turns``, ``tool_timeout``, ``confirm``,
...), listed in :class:`SessionOptions`, and the provider's (``agent_id``, ``harness_arn``,
...), which it passes on untouched for the provider to check. :func:`split_options` tells
them apart and turns the driver's into a validated, immutable :class:`Settings`, so a bad
value fails when the session is made, before anything is sent.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import TypedDict

from req_managed_agents.drivers._ledger import ToolLedger, UnfinishedPolicy
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import Outcome, Usage
from req_managed_agents.providers._base import check_options
from req_managed_agents.stores._base import Store
from req_managed_agents.tools._handler import Handler
from req_managed_agents.tools._registry import Tools

__all__ = [
    "DEFAULT_MAX_REPROMPTS",
    "ConfirmPolicy",
    "SessionOptions",
    "Settings",
    "TurnGuard",
    "split_options",
]

DEFAULT_MAX_REPROMPTS = 2

TurnGuard = Callable[[Usage, int, str], "str | None"]
"""``turn_guard(usage_so_far, turns, session_id)``: return a reason string to halt the run."""

ConfirmPolicy = Literal["raise", "allow", "deny", "defer"]
"""What to do with a provider tool asking permission when the handler has no
``handle_confirmation``: raise :class:`UnresolvedRequiresActionError`, allow it, deny it, or
leave it to a person (``"defer"``: the run stops with a pending decision; needs
``decisions=``)."""

_CONFIRM_POLICIES = ("raise", "allow", "deny", "defer")

ElicitPolicy = Literal["raise", "accept", "decline", "cancel", "defer"]
"""What to do with an MCP server's elicitation when the handler has no
``handle_elicitation``: raise :class:`ElicitationRequiredError` (with the link), answer, or
leave it to a person (``"defer"``, as for ``ConfirmPolicy``)."""

_ELICIT_POLICIES = ("raise", "accept", "decline", "cancel", "defer")
_UNFINISHED_POLICIES = ("error", "rerun", "raise")


class SessionOptions(TypedDict, total=False):
    """The drivers' own keyword options, for :class:`~req_managed_agents.Session`,
    ``run_to_completion`` and ``run_batch``.

    * ``max_turns`` (25): turns per run; a run that reaches it while the agent still wants
      tools ends ``terminated`` with stop reason ``{"type": "max_turns_reached"}``.
    * ``max_concurrency`` (8) and ``tool_timeout`` (none): how many local tools run at once,
      and how long each (and each confirmation hook) may take before it is answered with a
      timeout error and told to stop.
    * ``metadata``: reaches handlers through ``SessionInfo``; ``telemetry_metadata``: tags
      every telemetry event of the session.
    * ``turn_guard``: see :data:`TurnGuard`.
    * ``on_text``: called with each new piece of the agent's text as it is written; before
      each message after the first it gets ``"\n\n"``, so that printed messages stand apart.
      A callable taking two arguments gets ``(text, new_message)`` instead, and no
      separator: ``new_message`` is true for the first piece of each message after the
      first.
    * ``confirm`` (``"raise"``): see :data:`ConfirmPolicy`; a handler's
      ``handle_confirmation`` takes precedence.
    * ``elicit`` (``"raise"``): see :data:`ElicitPolicy`; a handler's
      ``handle_elicitation`` takes precedence.
    * ``terminal_tool`` and ``max_reprompts`` (2): an ``end_turn`` that never called that
      tool is re-prompted that many times, then ends ``terminated`` with stop reason
      ``{"type": "no_terminal_tool"}``.
    * ``outcome``: an ``Outcome`` or its fields (Claude only): the first run works toward it
      instead of a prompt.
    * ``interrupt_on_timeout`` (False): a ``timeout`` also stops the remote turn.
    * ``verbose`` (False): show the text as it is written and a progress line.
    * ``ledger``: a ``ToolLedger`` recording every tool call; over a shared store it keeps
      "each tool call runs once" across processes. ``on_unfinished`` (``"error"``): see
      ``UnfinishedPolicy``.
    * ``idempotency_key``: names the run, so that a retry anywhere continues its session
      instead of starting another (see :mod:`~req_managed_agents.drivers._keyed`).
    * ``decisions``: a ``Store`` where questions left for a person wait (a hook answering
      ``Defer``, a tool answering ``Deferred``, ``confirm="defer"``/``elicit="defer"``):
      the run then ends ``requires_action`` with ``SessionResult.pending``, and
      :func:`~req_managed_agents.answer` continues it from any process sharing the store.
    """

    max_turns: int
    max_concurrency: int
    tool_timeout: float | None
    metadata: Mapping[str, Any] | None
    telemetry_metadata: Mapping[str, Any] | None
    turn_guard: TurnGuard | None
    on_text: Callable[[str], None] | Callable[[str, bool], None] | None
    confirm: ConfirmPolicy
    elicit: ElicitPolicy
    terminal_tool: str | None
    max_reprompts: int
    outcome: Outcome | Mapping[str, Any] | None
    interrupt_on_timeout: bool
    verbose: bool
    ledger: ToolLedger | None
    on_unfinished: UnfinishedPolicy
    idempotency_key: str | None
    decisions: Store | None


_DRIVER_OPTIONS = frozenset(SessionOptions.__annotations__)

if TYPE_CHECKING:  # for the drivers' overloads only: the drivers do not import providers
    from req_managed_agents.providers.agentcore._options import AgentCoreOptions
    from req_managed_agents.providers.claude._bedrock import ClaudeBedrockOptions
    from req_managed_agents.providers.claude._options import ClaudeOptions
    from req_managed_agents.providers.gemini._options import GeminiOptions
    from req_managed_agents.providers.openai._options import OpenAIOptions

    class ClaudeSessionOptions(SessionOptions, ClaudeOptions, total=False):
        """Everything a Claude session takes."""

    class AgentCoreSessionOptions(SessionOptions, AgentCoreOptions, total=False):
        """Everything an AgentCore session takes."""

    class ClaudeBedrockSessionOptions(SessionOptions, ClaudeBedrockOptions, total=False):
        """Everything a Claude session on Amazon Bedrock takes."""

    class OpenAISessionOptions(SessionOptions, OpenAIOptions, total=False):
        """Everything an OpenAI Agents session takes."""

    class GeminiSessionOptions(SessionOptions, GeminiOptions, total=False):
        """Everything a Gemini conversation takes."""


@dataclass(frozen=True)
class Settings:
    """A session's validated driver options."""

    max_turns: int = 25
    max_concurrency: int = 8
    tool_timeout: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    telemetry_metadata: Mapping[str, Any] = field(default_factory=dict)
    turn_guard: TurnGuard | None = None
    on_text: Callable[..., None] | None = None
    confirm: ConfirmPolicy = "raise"
    elicit: ElicitPolicy = "raise"
    terminal_tool: str | None = None
    max_reprompts: int = DEFAULT_MAX_REPROMPTS
    outcome: Outcome | None = None
    interrupt_on_timeout: bool = False
    verbose: bool = False
    ledger: ToolLedger | None = None
    on_unfinished: UnfinishedPolicy = "error"
    idempotency_key: str | None = None
    decisions: Store | None = None

    @property
    def text_sink(self) -> Callable[[str, bool], None] | None:
        """``on_text`` as ``(text, new_message)``, whichever form it was given in."""
        return text_sink(self.on_text)

    @property
    def telemetry(self) -> dict[str, Any]:
        """The tags every telemetry event of the session carries: the caller's metadata,
        then its telemetry metadata (which wins)."""
        return {**self.metadata, **self.telemetry_metadata}


def split_options(
    provider: Any,
    handler: Handler,
    options: Mapping[str, Any],
    connect_options: Mapping[str, Any] | None = None,
) -> tuple[Settings, dict[str, Any]]:
    """The driver's validated settings, and the rest of ``options`` - with
    ``connect_options``, given apart for a provider the drivers cannot type - for the
    provider."""
    if not isinstance(handler, Handler):
        raise ConfigurationError("handler must have a handle_tool_call(name, input, context)")
    mine = {k: v for k, v in options.items() if k in _DRIVER_OPTIONS}
    connect = {k: v for k, v in options.items() if k not in _DRIVER_OPTIONS}
    for name, value in (connect_options or {}).items():
        if name in _DRIVER_OPTIONS or name in connect:
            raise ConfigurationError(
                f"{name} given in connect= and as a keyword (or a driver option)"
            )
        connect[name] = value
    known = getattr(provider, "options", None)  # a provider written before it had one
    if isinstance(known, frozenset):
        name = getattr(provider, "name", type(provider).__name__)
        check_options(connect, known, name, also=_DRIVER_OPTIONS)
    for name in ("metadata", "telemetry_metadata"):
        if name in mine:
            mine[name] = dict(mine[name] or {})
    if mine.get("outcome") is not None:
        mine["outcome"] = _outcome(mine["outcome"], provider)
        if mine.get("idempotency_key") is not None:
            raise ConfigurationError("idempotency_key keys a prompt; an outcome cannot be keyed")
    settings = Settings(**mine)
    _check(settings, handler)
    return settings, connect


def _check(settings: Settings, handler: Handler) -> None:
    for name in ("max_turns", "max_concurrency", "max_reprompts"):
        value = getattr(settings, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigurationError(f"{name} must be an integer, not {type(value).__name__}")
    if settings.max_turns < 1:
        raise ConfigurationError("max_turns must be at least 1")
    if settings.max_concurrency < 1:
        raise ConfigurationError("max_concurrency must be at least 1")
    if settings.tool_timeout is not None and settings.tool_timeout <= 0:
        raise ConfigurationError("tool_timeout must be positive")
    if settings.turn_guard is not None and not callable(settings.turn_guard):
        raise ConfigurationError("turn_guard must be callable")
    if settings.on_text is not None and not callable(settings.on_text):
        raise ConfigurationError("on_text must be callable")
    if settings.confirm not in _CONFIRM_POLICIES:
        raise ConfigurationError(f"confirm must be one of {', '.join(_CONFIRM_POLICIES)}")
    if settings.elicit not in _ELICIT_POLICIES:
        raise ConfigurationError(f"elicit must be one of {', '.join(_ELICIT_POLICIES)}")
    if settings.max_reprompts < 0:
        raise ConfigurationError("max_reprompts must not be negative")
    if settings.decisions is not None and not isinstance(settings.decisions, Store):
        raise ConfigurationError("decisions must be a Store (FileStore, RedisStore, ...)")
    deferring = "defer" in (settings.confirm, settings.elicit)
    if deferring and settings.decisions is None:
        raise ConfigurationError("confirm='defer' or elicit='defer' needs a decisions= store")
    if settings.on_unfinished not in _UNFINISHED_POLICIES:
        raise ConfigurationError("on_unfinished must be 'error', 'rerun' or 'raise'")
    _check_terminal_tool(settings.terminal_tool, handler)


def _check_terminal_tool(name: str | None, handler: Handler) -> None:
    if name is None:
        return
    if not isinstance(name, str) or not name:
        raise ConfigurationError("terminal_tool must be a tool name")
    if isinstance(handler, Tools) and name not in handler:
        raise ConfigurationError(f"terminal_tool {name!r} is not one of the handler's tools")


def _outcome(outcome: Any, provider: Any) -> Outcome:
    if not getattr(provider, "supports_outcomes", False):
        raise ConfigurationError(
            f"{getattr(provider, 'name', 'this provider')} has no outcomes; they are a "
            "Claude Managed Agents feature"
        )
    if isinstance(outcome, Outcome):
        return outcome
    if isinstance(outcome, Mapping):
        try:
            return Outcome(**outcome)
        except TypeError as exc:
            raise ConfigurationError(f"outcome: {exc}") from None
    raise ConfigurationError("outcome must be an Outcome or a mapping of its fields")


def text_sink(on_text: Callable[..., None] | None) -> Callable[[str, bool], None] | None:
    """``on_text`` called as ``(text, new_message)``: as given when it takes two positional
    arguments, else with ``"\n\n"`` before each new message and the text alone."""
    if on_text is None:
        return None
    if _positional_arity(on_text) >= 2:
        return on_text

    def one_argument(text: str, new_message: bool) -> None:
        if new_message:
            on_text("\n\n")
        on_text(text)

    return one_argument


def _positional_arity(function: Callable[..., None]) -> int:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature, such as print
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 1  # print(*args) and friends: one argument, as documented
    return sum(p.kind in kinds and p.default is inspect.Parameter.empty for p in parameters)
