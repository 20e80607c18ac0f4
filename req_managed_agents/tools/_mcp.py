"""MCP servers' tools in a ``Tools`` registry: declared like functions, called like them.

A server included with ``tools.include(server)`` is not started then: its tools are listed
the first time the registry's declarations are read (or a call needs them). Each tool is
declared with the server's own input schema, under a name every runtime accepts
(:func:`declared_name`), and called under the server's own name. What it answers becomes
the library's result vocabulary - text, :class:`~req_managed_agents.model.Image`,
:class:`~req_managed_agents.model.Document` - and each provider renders that as its API
allows; the kinds no runtime takes in a tool result (audio, links, other binaries) become
a line of text saying what was there.

A tool can ask before it acts: by default one whose annotations say ``destructiveHint``
(and not ``readOnlyHint``) asks the run through ``ToolContext.confirm`` - the handler's
``handle_confirmation``, else the session's ``confirm=`` policy - and a denied call never
reaches the server (see :data:`McpConfirm`). Annotations are the server's hints, not
guarantees: a server that marks nothing destructive asks nothing unless ``"always"``.

The list is read again after the server says it changed (see :meth:`McpSource.bindings`).
In a run, the server's progress notifications for a call reach the run as
:class:`~req_managed_agents.model.ToolCallProgress` items (``ToolContext.report_progress``),
and its questions for a person (``elicitation/create``, a form or a link) reach the
handler's ``handle_elicitation`` as an :class:`~req_managed_agents.model.Elicitation`
(``ToolContext.elicit``), else the session's ``elicit=`` policy; the server's ``timeout``
bounds each call, the person's answer included.

A server that died mid-call leaves the call's outcome unknown: the bridge raises
:class:`~req_managed_agents.tools.ToolOutcomeUnknownError` and the tool runner applies the
run's ``on_unfinished`` policy, as for a call a crashed process left unfinished.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._vocabulary import (
    IMAGE_MEDIA_TYPES,
    ContentBlock,
    Deny,
    Document,
    Elicitation,
    ElicitationAccept,
    ElicitationAnswer,
    Image,
    ToolResult,
    ToolUse,
)
from req_managed_agents.tools._handler import ToolContext, ToolOutcomeUnknownError

if TYPE_CHECKING:  # the client (and ``requests``) loads with the first included server
    from req_managed_agents.mcp import McpServer, McpTool, McpToolResult

__all__ = [
    "MAX_NAME",
    "RESERVED_NAMES",
    "McpBinding",
    "McpConfirm",
    "McpSource",
    "declared_name",
    "result_of",
]

McpConfirm = Literal["destructive", "always", "never"]
"""Which of an included server's tools ask the run's confirmation before each call:
``"destructive"`` those annotated ``destructiveHint: true`` and not ``readOnlyHint: true``,
``"always"`` every tool, ``"never"`` none."""

MAX_NAME = 64
"""The longest tool name every runtime accepts: OpenAI's function names and AgentCore's
inline functions stop at 64 (Claude's custom tools at 128)."""
RESERVED_PREFIXES = ("mcp__", "ant__")
"""Name starts Claude Managed Agents refuses for a custom tool."""
RESERVED_NAMES = frozenset(
    {"bash", "edit", "read", "write", "glob", "grep", "web_fetch", "web_search"}
)
"""Claude's built-in tools, which no custom tool may be named after."""
MAX_DESCRIPTION = 4096
"""The longest description AgentCore takes for an inline function."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8


def declared_name(prefix: str, name: str) -> str:
    """``prefix`` and the server's tool ``name`` as a name every runtime accepts: each
    character outside ``[A-Za-z0-9_-]`` becomes ``_``; a name past 64 characters is cut and
    ends with ``_`` and 8 hex digits of its hash, so two long names stay apart."""
    mapped = prefix + _NOT_ALLOWED.sub("_", name)
    if len(mapped) <= MAX_NAME:
        return mapped
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_CHARS]
    return f"{mapped[: MAX_NAME - _HASH_CHARS - 1]}_{digest}"


def _reserved(name: str) -> bool:
    return name.startswith(RESERVED_PREFIXES) or name in RESERVED_NAMES


@dataclass(frozen=True)
class McpBinding:
    """One server tool as the agent sees it: ``name`` declared, ``tool`` the server's."""

    name: str
    tool: McpTool
    source: McpSource

    def declaration(self) -> dict[str, Any]:
        """The provider-neutral ``{"name", "description", "input_schema"}`` mapping."""
        text = (
            self.tool.description
            or self.tool.title
            or (f"The tool {self.tool.name!r} of the MCP server {self.source.server.name!r}.")
        )
        return {
            "name": self.name,
            "description": text[:MAX_DESCRIPTION],
            "input_schema": dict(self.tool.input_schema),
        }


class McpSource:
    """One included server: its tools (listed once, on first use) under declared names."""

    def __init__(
        self,
        server: McpServer,
        prefix: str,
        allow: Iterable[str] | None,
        confirm: McpConfirm = "destructive",
    ) -> None:
        from req_managed_agents.mcp import McpServer

        if not isinstance(server, McpServer):
            raise TypeError(f"include() takes an McpServer, not {type(server).__name__}")
        if _NOT_ALLOWED.search(prefix) or len(prefix) > MAX_NAME - 16 or _reserved(prefix):
            raise ConfigurationError(
                f"prefix {prefix!r} must be at most {MAX_NAME - 16} letters, digits, '_' or "
                f"'-', and not start with {' or '.join(RESERVED_PREFIXES)}"
            )
        if isinstance(allow, str):
            raise TypeError("allow is a list of tool names, not one name")
        if confirm not in get_args(McpConfirm):
            raise ConfigurationError(
                f"confirm must be 'destructive', 'always' or 'never', not {confirm!r}"
            )
        server.offer_elicitation()  # a run's handle_elicitation answers its questions
        self.server = server
        self.confirm = confirm
        self.prefix = prefix
        self.allow = None if allow is None else frozenset(allow)
        self._lock = threading.Lock()
        self._bindings: dict[str, McpBinding] | None = None

    def bindings(self) -> dict[str, McpBinding]:
        """The declared names and their server tools, the server started if need be; listed
        again after the server said its list changed (``notifications/tools/list_changed``).

        A running session keeps what it declared - Claude and OpenAI declare tools on the
        agent, and this library declares AgentCore's inline functions once per session
        (its API would take a new list with each invocation; not used yet). A tool the
        server dropped answers "unknown tool"; one it added is offered from the next
        session on (or the next ``schemas()`` read, to provision an agent)."""
        with self._lock:
            if self._bindings is None or self.server.tools_stale:
                self._bindings = self._listed()
            return self._bindings

    def _listed(self) -> dict[str, McpBinding]:
        listed = self.server.list_tools()
        offered = {tool.name for tool in listed}
        missing = sorted((self.allow or frozenset()) - offered)
        if missing:
            raise ConfigurationError(
                f"allow= names {', '.join(map(repr, missing))}, which the MCP server "
                f"{self.server.name!r} does not offer (it offers {', '.join(sorted(offered))})"
            )
        bindings: dict[str, McpBinding] = {}
        for tool in listed:
            if self.allow is not None and tool.name not in self.allow:
                continue
            name = declared_name(self.prefix, tool.name)
            if _reserved(name):
                raise ConfigurationError(
                    f"the MCP server {self.server.name!r} has a tool {tool.name!r}: Claude's "
                    f"runtimes refuse a custom tool named {name!r} (a built-in tool's name, or "
                    "a reserved start); include the server with prefix= or leave the tool "
                    "out with allow="
                )
            other = bindings.get(name)
            if other is not None:
                raise ConfigurationError(
                    f"the MCP server {self.server.name!r} has tools {other.tool.name!r} and "
                    f"{tool.name!r}, both declared as {name!r}; leave one out with allow="
                )
            bindings[name] = McpBinding(name, tool, self)
        return bindings

    def call(
        self, binding: McpBinding, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        """Call the server's tool; a refusal, a timeout or a cancellation is an
        ``is_error`` result, a server that died mid-call :class:`ToolOutcomeUnknownError`.
        The server's progress notifications go to ``context.report_progress``, its
        questions for a person to ``context.elicit``."""
        from req_managed_agents.mcp import McpConnectionLost, McpServerError

        denied = self._denied(binding, arguments, context)
        if denied is not None:
            return ToolResult(context.tool_use_id, denied, is_error=True)
        report = context.report_progress
        try:
            answer = self.server.call_tool(
                binding.tool.name,
                arguments,
                cancelled=context.cancelled,
                on_progress=(
                    None
                    if report is None
                    else lambda sent: report(sent.progress, sent.total, sent.message)
                ),
                on_elicitation=lambda params: self._elicited(params, context),
            )
        except McpConnectionLost as lost:
            raise ToolOutcomeUnknownError(str(lost)) from lost
        except McpServerError as refused:
            return ToolResult(context.tool_use_id, str(refused), is_error=True)
        return result_of(context.tool_use_id, answer)

    def _elicited(self, params: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        """The run's answer to the server's question during the call of ``context``."""
        if context.elicit is None:
            return {"action": "decline"}  # outside a run: no one to ask
        schema = params.get("requestedSchema")
        url = params.get("url")
        asked_id = params.get("elicitationId")
        elicitation = Elicitation(
            asked_id if isinstance(asked_id, str) else f"elicit_{uuid.uuid4().hex}",
            self.server.name,
            context.tool_use_id,
            url if params.get("mode") == "url" and isinstance(url, str) else None,
            str(params.get("message") or ""),
            requested_schema=schema if isinstance(schema, Mapping) else None,
        )
        return _wire_answer(context.elicit(elicitation, context))

    def asks(self, tool: McpTool) -> bool:
        """Whether a call of ``tool`` asks the run's confirmation first."""
        if self.confirm != "destructive":
            return self.confirm == "always"
        hints = tool.annotations
        return hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True

    def _denied(
        self, binding: McpBinding, arguments: Mapping[str, Any], context: ToolContext
    ) -> str | None:
        """Why the call may not go to the server, or None when it may (it asks nothing,
        or the run allowed it and has not stopped waiting since)."""
        if not self.asks(binding.tool):
            return None
        if context.confirm is None:
            return (
                f"tool {binding.name!r} asks for confirmation before it acts, and this call "
                "runs outside a run that could give it; it was not run"
            )
        use = ToolUse(context.tool_use_id, binding.tool.name, arguments, self.server.name)
        decision = context.confirm(use, context)
        if isinstance(decision, Deny):
            why = f": {decision.message}" if decision.message else ""
            return f"the call of tool {binding.name!r} was denied{why}; it was not run"
        if context.cancelled.is_set():  # allowed too late: the run answered it already
            return f"the run stopped waiting for tool {binding.name!r}; it was not run"
        return None


def _wire_answer(answer: ElicitationAnswer) -> dict[str, Any]:
    if isinstance(answer, ElicitationAccept) and answer.content is not None:
        return {"action": "accept", "content": dict(answer.content)}
    return {"action": answer.type}


def result_of(tool_use_id: str, answer: McpToolResult) -> ToolResult:
    """A ``tools/call`` result as a :class:`ToolResult`: text, images and text or PDF
    resources as content blocks, every other kind as a line saying what it was; and
    ``structuredContent`` as JSON text only when there is no content (the spec asks a
    server to send it as content too, and servers repeat their content in it - base64
    images included - so content present is taken to say it)."""
    blocks: list[ContentBlock] = []
    for block in answer.content:
        blocks.extend(_blocks(block))
    structured = answer.structured_content
    if structured is not None and not blocks:
        blocks.append(json.dumps(structured, ensure_ascii=False))
    if all(isinstance(block, str) for block in blocks):
        text = "\n".join(block for block in blocks if isinstance(block, str))
        return ToolResult(tool_use_id, text, is_error=answer.is_error)
    return ToolResult.of_blocks(tool_use_id, blocks, is_error=answer.is_error)


def _blocks(block: Mapping[str, Any]) -> list[ContentBlock]:
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", ""))]
    if kind in ("image", "audio"):
        return [_binary(kind, block.get("mimeType"), block.get("data"), None)]
    if kind == "resource_link":
        about = f": {block['description']}" if isinstance(block.get("description"), str) else ""
        return [f"[resource link {block.get('name')!r}: {block.get('uri')}{_type(block)}{about}]"]
    if kind == "resource":
        resource = block.get("resource")
        resource = resource if isinstance(resource, Mapping) else {}
        uri = resource.get("uri")
        header = f"[embedded resource {uri}{_type(resource)}]"
        if isinstance(resource.get("text"), str):
            text: str = resource["text"]
            if not text:
                return [header]
            return [header, Document(text.encode("utf-8"), "text/plain", str(uri))]
        return [header, _binary("resource", resource.get("mimeType"), resource.get("blob"), uri)]
    return [f"[a {kind!r} content block, which this library does not know]"]


def _binary(kind: str, media_type: Any, data: Any, title: Any) -> ContentBlock:
    """Base64 ``data``: an image or a PDF as itself, anything else as a line of text."""
    try:
        raw = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return f"[{kind} ({media_type}) whose data is not base64; left out]"
    if raw and media_type in IMAGE_MEDIA_TYPES:
        return Image(raw, str(media_type))
    if raw and media_type == "application/pdf":
        return Document(raw, "application/pdf", str(title) if title else None)
    return f"[{kind} ({media_type}), {len(raw)} bytes: no runtime takes it in a tool result]"


def _type(block: Mapping[str, Any]) -> str:
    media_type = block.get("mimeType")
    return f" ({media_type})" if isinstance(media_type, str) else ""
