"""The handler seam: how a session hands tool calls and events to user code.

The provider never runs custom tools; it stops and asks. A :class:`Handler` answers. Whatever
the handler does - return, raise, or name a tool it does not know - :func:`invoke_tool` turns
it into a :class:`ToolResult`, so a faulty tool becomes an ``is_error`` answer the agent can
react to instead of a crashed session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Union, cast, runtime_checkable

from req_managed_agents._redact import redact
from req_managed_agents.errors import ManagedAgentsError
from req_managed_agents.model._vocabulary import (
    ContentBlock,
    Decision,
    Deferred,
    Document,
    Elicitation,
    ElicitationAnswer,
    Image,
    SessionInfo,
    ToolResult,
    ToolUse,
)
from req_managed_agents.transport._json import MAX_DEPTH, holds_too_deep

__all__ = [
    "ConfirmationHandler",
    "ElicitationHandler",
    "EventHandler",
    "Handler",
    "ProgressReport",
    "ToolContext",
    "ToolOutcomeUnknownError",
    "ToolOutput",
    "call_tool",
    "content_blocks",
    "describe_exception",
    "invoke_tool",
]


ProgressReport = Callable[[float, Union[float, None], Union[str, None]], None]
"""``ToolContext.report_progress``: called as ``(progress, total, message)``."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool call knows about where it runs.

    ``cancelled`` is set when the session stops waiting for this call (its ``tool_timeout``
    passed or the session was cancelled); a long tool can poll it and return early, since a
    Python thread cannot be stopped from outside.

    ``confirm``, set by a run, asks the run for permission the way a provider-run tool
    does: the handler's ``handle_confirmation(tool_use, context)`` if it has one, else the
    session's ``confirm=`` policy (``"raise"`` denies here: a local call cannot pause the
    turn). A local tool that must not act unasked - an MCP server's destructive tool -
    calls it before acting; ``None`` outside a run.

    ``report_progress(progress, total, message)``, set by a run, tells the run how far a
    long call is: each report becomes a :class:`~req_managed_agents.model.ToolCallProgress`
    item of the run's stream (and its verbose display), from whichever thread reports.
    ``progress`` grows; ``total`` (or None) and ``message`` (or None) are optional. An
    included MCP server's progress notifications arrive this way. ``None`` outside a run.

    ``elicit(elicitation, context)``, set by a run, asks a person through the run: the
    handler's ``handle_elicitation`` if it has one, else the session's ``elicit=`` policy
    (``"raise"`` declines here: a local call cannot pause the turn). An included MCP
    server's questions (``elicitation/create``) arrive this way; ``None`` outside a run.
    """

    tool_use_id: str
    session: SessionInfo
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False)
    confirm: Callable[[ToolUse, ToolContext], Decision] | None = field(
        default=None, compare=False, repr=False
    )
    report_progress: ProgressReport | None = field(default=None, compare=False, repr=False)
    elicit: Callable[[Elicitation, ToolContext], ElicitationAnswer] | None = field(
        default=None, compare=False, repr=False
    )


class ToolOutcomeUnknownError(ManagedAgentsError):
    """Raised by a tool whose call ended without saying whether it acted - the MCP server
    running it died mid-call, say. The run answers it as it answers a call that a crashed
    process left unfinished: by its ``on_unfinished`` policy (an error result saying the
    call may have had its effect, one more run, or :class:`~req_managed_agents.errors.
    UnfinishedToolCallError`), never by running it again unasked."""


ToolOutput = Union[str, ToolResult, Image, Document, Sequence[ContentBlock]]
"""What a tool call may answer: text, a :class:`ToolResult`, or content blocks (an
:class:`Image`, a :class:`Document`, or a list mixing them with text)."""


@runtime_checkable
class Handler(Protocol):
    """Runs the custom tools the agent calls.

    Return the tool's text (or a :class:`ToolResult` to flag an error yourself). Raising is
    fine too: the exception's type and message go back to the agent as an error result.
    A handler may also define ``handle_event(event, info)`` (see :class:`EventHandler`) to
    watch every raw provider event live; events are delivered at least once.
    """

    def handle_tool_call(
        self, name: str, input: Mapping[str, Any], context: ToolContext
    ) -> ToolOutput:
        """Answer one tool call: text, a ``ToolResult`` or content blocks (raising is fine)."""
        ...


@runtime_checkable
class EventHandler(Protocol):
    """The optional live-event hook a :class:`Handler` may also implement."""

    def handle_event(self, event: Mapping[str, Any], info: SessionInfo) -> None:
        """See every raw provider event as it arrives (at least once)."""
        ...


@runtime_checkable
class ConfirmationHandler(Protocol):
    """The optional permission hook a :class:`Handler` may also implement.

    Called when a provider-run tool (a built-in or MCP tool under an ``always_ask`` policy)
    waits for permission, and before a local MCP server's tool that asks for confirmation
    (see ``Tools.include``) is called - then ``tool_use.name`` is the server's own tool
    name, ``tool_use.mcp_server`` the server's name and ``context`` the call's own. Return
    :class:`~req_managed_agents.Allow` or :class:`~req_managed_agents.Deny` (with a
    message for the agent). A hook that raises or returns anything else denies the call.
    """

    def handle_confirmation(self, tool_use: ToolUse, context: ToolContext) -> Decision:
        """Allow or deny ``tool_use`` (``context`` says which session asks)."""
        ...


@runtime_checkable
class ElicitationHandler(Protocol):
    """The optional elicitation hook a :class:`Handler` may also implement.

    Called once per ``agent.mcp_elicitation`` (Claude on Bedrock): an MCP server asks a
    person to act at a link before a tool call can finish. Show the person the link (it
    is untrusted: do not fetch it), then return
    :class:`~req_managed_agents.model.ElicitationAccept`, ``ElicitationDecline`` or
    ``ElicitationCancel``. A hook that raises or returns anything else cancels.
    """

    def handle_elicitation(
        self, elicitation: Elicitation, context: ToolContext
    ) -> ElicitationAnswer:
        """Answer ``elicitation`` (``context`` says which session asks)."""
        ...


def content_blocks(output: object) -> list[ContentBlock] | None:
    """``output`` as content blocks when it is an image, a document, or a list of text,
    images and documents holding at least one of the latter; None otherwise (a list of
    plain strings is data, not blocks)."""
    if isinstance(output, (Image, Document)):
        return [output]
    if not isinstance(output, (list, tuple)):
        return None
    if not all(isinstance(item, (str, Image, Document)) for item in output):
        return None
    if all(isinstance(item, str) for item in output):
        return None
    return list(output)


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` for an agent or a log line: no traceback, no secrets."""
    message = redact(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def invoke_tool(handler: Handler, tool_use: ToolUse, context: ToolContext) -> ToolResult:
    """Run one tool call through ``handler`` and always come back with a result."""
    return call_tool(handler, tool_use, context)[0]


def call_tool(
    handler: Handler, tool_use: ToolUse, context: ToolContext
) -> tuple[ToolResult, BaseException | None]:
    """Like :func:`invoke_tool`, also returning the exception the handler raised, if any.

    ``SystemExit`` and friends count too: a tool wrapping a command-line parser that
    rejects the agent's arguments must answer with an error, not end the turn's thread.
    """
    if holds_too_deep(tool_use.input):
        message = (
            f"the input of tool {tool_use.name!r} nests more than {MAX_DEPTH} levels deep; "
            "the tool was not run"
        )
        return ToolResult(tool_use.id, message, is_error=True), None
    try:
        # Typed as object: user handlers break their annotations at run time.
        output = cast(object, handler.handle_tool_call(tool_use.name, tool_use.input, context))
    except KeyboardInterrupt:
        raise  # the user's Ctrl-C is not the tool's answer
    except BaseException as exc:
        return ToolResult(tool_use.id, describe_exception(exc), is_error=True), exc
    if isinstance(output, Deferred):  # returned rather than raised: the same answer
        return ToolResult(tool_use.id, output.reason), output
    if isinstance(output, ToolResult):
        problem = _malformed(output)
        if problem is not None:
            message = f"tool {tool_use.name!r} returned a malformed ToolResult: {problem}"
            return ToolResult(tool_use.id, message, is_error=True), None
        return replace(output, tool_use_id=tool_use.id, blocks=tuple(output.blocks)), None
    if isinstance(output, str):
        return ToolResult(tool_use.id, output), None
    blocks = content_blocks(output)
    if blocks is not None:
        return ToolResult.of_blocks(tool_use.id, blocks), None
    message = (
        f"tool {tool_use.name!r} returned {type(output).__name__}; expected str, ToolResult, "
        "Image, Document or a list of them"
    )
    return ToolResult(tool_use.id, message, is_error=True), None


def _malformed(result: ToolResult) -> str | None:
    """What is wrong with a ``ToolResult`` a tool built by hand (the dataclass checks
    nothing), so that it becomes this call's error instead of breaking the run."""
    # Typed as object: a tool's values break the dataclass's annotations at run time.
    content: object = result.content
    is_error: object = result.is_error
    blocks: object = result.blocks
    if not isinstance(content, str):
        return f"content is {type(content).__name__}, not str"
    if not isinstance(is_error, bool):
        return f"is_error is {type(is_error).__name__}, not bool"
    if not isinstance(blocks, (tuple, list)):
        return f"blocks is {type(blocks).__name__}, not a tuple"
    for index, block in enumerate(blocks):
        if not isinstance(block, (str, Image, Document)):
            return f"blocks[{index}] is {type(block).__name__}, not str, Image or Document"
    return None
