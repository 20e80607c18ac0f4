"""The canonical turn vocabulary shared by every provider.

Providers fold their native events into these values; drivers and users only ever branch on
them. Provider-native payloads (raw events, stop reasons) ride along verbatim as plain dicts
so nothing the provider said is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal, Union

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._show import Shown, short_repr

__all__ = [
    "Allow",
    "Artifact",
    "ContentBlock",
    "Decision",
    "DecisionKind",
    "Defer",
    "Deferred",
    "Deny",
    "Document",
    "Image",
    "Outcome",
    "PendingDecision",
    "SessionInfo",
    "SessionResult",
    "Terminal",
    "ToolResult",
    "ToolUse",
    "TurnResult",
    "Usage",
]

Terminal = Literal["end_turn", "requires_action", "terminated"]
"""How a turn ended: the agent finished, it waits for tool results, or it stopped otherwise."""


@dataclass(frozen=True)
class Usage(Shown):
    """Token counts; add two with ``+`` to accumulate over turns."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Every token billed: input (fresh, cache writes, cache reads) plus output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )


@dataclass(frozen=True)
class ToolUse(Shown):
    """One call the agent asks a tool to make (``input`` is the decoded JSON arguments).

    ``mcp_server`` names the MCP server of an MCP tool (provider-run, or a local server's
    tool asking ``handle_confirmation``), ``session_thread_id``
    the subagent thread that made the call in a multi-agent session (None otherwise), and
    ``turn_id`` the provider turn that made it where the answer must name it (OpenAI).
    """

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    mcp_server: str | None = None
    session_thread_id: str | None = None
    turn_id: str | None = None


# The media types both the API and the models take for tool-result images and documents.
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
DOCUMENT_MEDIA_TYPES = frozenset({"application/pdf", "text/plain"})


@dataclass(frozen=True)
class Image:
    """An image a tool returns to the agent (``data`` is the file's bytes)."""

    data: bytes = field(repr=False)
    media_type: str = "image/png"

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes) or not self.data:
            raise ConfigurationError("an Image needs its bytes")
        if self.media_type not in IMAGE_MEDIA_TYPES:
            raise ConfigurationError(
                f"an Image is one of {', '.join(sorted(IMAGE_MEDIA_TYPES))}, "
                f"not {self.media_type!r}"
            )


@dataclass(frozen=True)
class Document:
    """A document a tool returns to the agent: a PDF's bytes, or UTF-8 text."""

    data: bytes = field(repr=False)
    media_type: str = "application/pdf"
    title: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes) or not self.data:
            raise ConfigurationError("a Document needs its bytes")
        if self.media_type not in DOCUMENT_MEDIA_TYPES:
            raise ConfigurationError(
                f"a Document is application/pdf or text/plain, not {self.media_type!r}"
            )
        if self.media_type == "text/plain":
            try:
                self.data.decode("utf-8")
            except UnicodeDecodeError:
                raise ConfigurationError("a text/plain Document must be UTF-8") from None


ContentBlock = Union[str, Image, Document]
"""One piece of a tool's answer: text, an :class:`Image` or a :class:`Document`."""


@dataclass(frozen=True)
class ToolResult(Shown):
    """The answer to one :class:`ToolUse`; ``is_error`` tells the agent it failed.

    ``content`` is the answer's text. A tool that returns images or documents too has them
    in ``blocks`` (text, images and documents in the order returned); then ``content``
    joins the text blocks, and the providers send the blocks.
    """

    tool_use_id: str
    content: str
    is_error: bool = False
    blocks: tuple[ContentBlock, ...] = ()

    @classmethod
    def of_blocks(
        cls, tool_use_id: str, blocks: Sequence[ContentBlock], *, is_error: bool = False
    ) -> ToolResult:
        """A result made of content blocks (its ``content`` is their text)."""
        text = "\n".join(block for block in blocks if isinstance(block, str))
        return cls(tool_use_id, text, is_error, tuple(blocks))


@dataclass(frozen=True)
class Elicitation:
    """An MCP server asks a person something before a tool call can finish: to act at a
    link - sign in, consent - (``url``; Claude on Bedrock's ``agent.mcp_elicitation``, or a
    local server's URL-mode request), or to fill in a form (``requested_schema``: a flat
    JSON Schema object of strings, numbers, booleans and enums; a local server's form-mode
    request). Show the person ``url``, ``message`` and ``server_name`` as untrusted text and
    never fetch the link. ``tool_use_id`` is the waiting tool call."""

    id: str
    server_name: str
    tool_use_id: str
    url: str | None
    message: str = ""
    session_thread_id: str | None = None
    requested_schema: Mapping[str, Any] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class ElicitationAccept:
    """The person acted (or needs a new link): the service makes the call again. For a
    form, ``content`` holds the answers, keyed as the form's ``requested_schema`` asks."""

    content: Mapping[str, Any] | None = field(default=None, hash=False)
    type: ClassVar[str] = "accept"


@dataclass(frozen=True)
class ElicitationDecline:
    """The person said no: the tool call ends with an error result."""

    type: ClassVar[str] = "decline"


@dataclass(frozen=True)
class ElicitationCancel:
    """The person left without choosing: the tool call ends with an error result."""

    type: ClassVar[str] = "cancel"


ElicitationAnswer = Union[ElicitationAccept, ElicitationDecline, ElicitationCancel]
"""What ``handle_elicitation`` returns."""


@dataclass(frozen=True)
class HookEvent:
    """A harness hook that ran during a turn (AgentCore ``hookEvent``): ``type`` is when
    (``before_tool_call``, ``after_tool_call``, ``before_invocation``, ``after_invocation``),
    ``decision`` what it decided (``allow``/``deny``, None when it does not decide) and
    ``reason`` why. A denying hook may end the turn with stop reason ``hook_stopped``."""

    id: str
    name: str
    type: str
    decision: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class TurnResult(Shown):
    """One provider turn folded into the canonical vocabulary.

    ``tool_uses`` are the custom tools the agent wants run locally; ``server_tool_uses`` are
    tools the provider ran itself (observed only); ``confirmations`` are provider tools that
    wait for permission before they run. ``stop_reason`` and ``events`` are the provider's
    own values, verbatim; ``outcome`` is the turn's last outcome evaluation, if any;
    ``hook_events`` are the harness hooks that ran in it (AgentCore), in stream order;
    ``elicitations`` are MCP servers' requests a person must answer (Claude on Bedrock).
    """

    terminal: Terminal
    text: str = ""
    tool_uses: tuple[ToolUse, ...] = ()
    server_tool_uses: tuple[ToolUse, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: Any = None
    events: tuple[Mapping[str, Any], ...] = ()
    confirmations: tuple[ToolUse, ...] = ()
    outcome: Mapping[str, Any] | None = None
    hook_events: tuple[HookEvent, ...] = ()
    elicitations: tuple[Elicitation, ...] = ()

    def __repr__(self) -> str:
        return short_repr(self, ("terminal", "text", "tool_uses", "usage", "events"))


@dataclass(frozen=True)
class SessionResult(Shown):
    """The outcome of driving a session until it stopped needing tool results.

    ``text`` is the final turn's text (the agent's answer, not the narration of earlier tool
    turns); ``usage`` sums every turn, ``turn_usage`` keeps each turn's share; ``events`` are
    all raw provider events of the run, deduplicated, in order. ``tool_uses`` and
    ``tool_results`` list the local tool calls the run made and what they answered.
    ``terminal_tool_input`` is the input of the run's last call to the session's
    ``terminal_tool``, if one was named and called; ``outcome`` is the provider's last
    outcome evaluation (Claude's ``span.outcome_evaluation_end`` event), if an outcome was
    defined. ``pending`` lists the questions a run that stopped for a person left open
    (``terminal`` is then ``requires_action``; see :func:`~req_managed_agents.answer`).
    """

    terminal: Terminal
    text: str
    usage: Usage
    turns: int
    turn_usage: tuple[Usage, ...]
    session_id: str | None
    stop_reason: Any
    events: tuple[Mapping[str, Any], ...]
    tool_uses: tuple[ToolUse, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    terminal_tool_input: Mapping[str, Any] | None = None
    outcome: Mapping[str, Any] | None = None
    pending: tuple[PendingDecision, ...] = ()

    def __repr__(self) -> str:
        return short_repr(
            self, ("terminal", "text", "turns", "usage", "tool_uses", "events", "session_id")
        )


@dataclass(frozen=True)
class Allow:
    """Let a provider tool that asked for permission run."""


@dataclass(frozen=True)
class Deny:
    """Refuse a provider tool that asked for permission; ``message`` tells the agent why."""

    message: str | None = None


Decision = Union[Allow, Deny]
"""The answer to a tool confirmation."""

# The limits Claude Managed Agents puts on an outcome.
MAX_RUBRIC_CHARS = 262_144
MAX_OUTCOME_ITERATIONS = 20


@dataclass(frozen=True)
class Outcome:
    """What the work must achieve, graded by the provider until it does (Claude only).

    ``rubric`` is the grading text, or a provider rubric object such as ``{"type": "file",
    "file_id": ...}``; ``max_iterations`` bounds the revise-and-grade cycles (1-20,
    provider default 3). Checked on construction, so a bad outcome fails before any request.
    """

    description: str
    rubric: str | Mapping[str, Any]
    max_iterations: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigurationError("an outcome needs a non-empty description")
        if isinstance(self.rubric, str):
            if not self.rubric.strip() or len(self.rubric) > MAX_RUBRIC_CHARS:
                raise ConfigurationError(f"an outcome rubric is 1 to {MAX_RUBRIC_CHARS} characters")
        elif not (isinstance(self.rubric, Mapping) and self.rubric.get("type") in ("text", "file")):
            raise ConfigurationError('an outcome rubric is text or {"type": "text" | "file", ...}')
        iterations = self.max_iterations
        if iterations is not None and (
            not isinstance(iterations, int)
            or isinstance(iterations, bool)
            or not 1 <= iterations <= MAX_OUTCOME_ITERATIONS
        ):
            raise ConfigurationError(f"max_iterations must be 1 to {MAX_OUTCOME_ITERATIONS}")


@dataclass(frozen=True)
class SessionInfo:
    """Which session a tool call or event belongs to; ``metadata`` holds caller tags."""

    session_id: str
    provider: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Artifact:
    """A file stored in a session's artifact store (``id`` is the provider's reference)."""

    name: str
    size: int | None
    id: str
    created_at: datetime | None = None
    media_type: str | None = None


# -- decisions that wait for a person (see drivers/_deferral.py) ---------------------------

DecisionKind = Literal["confirmation", "elicitation", "tool_result"]
"""What a pending decision waits for: permission for a tool (``answer(allow=, message=)``),
a person's answer to an MCP server (``answer(allow=, content=)``), or a tool's result
(``answer(result=, is_error=)``)."""


@dataclass(frozen=True)
class Defer:
    """A confirmation or elicitation hook's answer "later, by someone else": the run stops
    and the question waits in the ``decisions=`` store. ``reason`` is shown to whoever
    answers; ``expires_in`` (seconds) lets :func:`~req_managed_agents.expire_decisions`
    answer it when no one has."""

    reason: str = ""
    expires_in: float | None = None


class Deferred(Exception):
    """A tool's answer "the result comes later": return it (or raise it) from a tool, and
    the run stops with the call waiting for ``answer(token, result=...)``. The tool has run
    once; it is not called again for this call."""

    def __init__(self, reason: str = "", *, expires_in: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.expires_in = expires_in


@dataclass(frozen=True)
class PendingDecision:
    """One open question of a session that stopped for it.

    ``token`` is opaque and unguessable: it is what an answer names, so treat it as a
    capability (whoever holds it may answer). ``tool_use`` is the waiting call (the tool
    asking permission, or the local tool whose result is deferred); ``elicitation`` the
    question of an MCP server. ``runtime`` is the provider's name; ``created`` and
    ``expires`` are UTC (``expires`` None: never). ``connect`` is what the session needs to
    be continued elsewhere (its connect options; never a secret)."""

    token: str
    kind: DecisionKind
    session_id: str
    runtime: str
    tool_use: ToolUse | None
    elicitation: Elicitation | None
    reason: str
    created: datetime
    expires: datetime | None = None
    connect: Mapping[str, Any] | None = field(default=None, hash=False, repr=False)

    @property
    def expired(self) -> bool:
        """Whether the decision is past ``expires`` (it can still be answered)."""
        return self.expires is not None and datetime.now(self.expires.tzinfo) >= self.expires

    @property
    def item_id(self) -> str:
        """The id the provider knows the question by (a tool call's or an elicitation's)."""
        if self.elicitation is not None:
            return self.elicitation.id
        assert self.tool_use is not None
        return self.tool_use.id
