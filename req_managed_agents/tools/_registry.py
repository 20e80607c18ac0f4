"""``Tools``: plain Python functions registered as agent tools.

::

    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

``tools.schemas()`` is what the provider sees; the registry itself is a
:class:`~req_managed_agents.tools.Handler` that a session calls back when the agent uses a tool.
``tools.include(server)`` adds an MCP server's tools beside the functions (``_mcp``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.model._show import Shown
from req_managed_agents.model._vocabulary import ToolResult
from req_managed_agents.tools._handler import ToolContext, ToolOutput, content_blocks
from req_managed_agents.tools._mcp import McpBinding, McpConfirm, McpSource
from req_managed_agents.tools._schema import FunctionSchema, function_schema
from req_managed_agents.tools._validation import validate

if TYPE_CHECKING:
    from req_managed_agents.mcp import McpServer

__all__ = ["Tool", "Tools"]

F = TypeVar("F", bound=Callable[..., Any])

# Both providers accept tool names of this shape (Anthropic's rule is the stricter one).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


@dataclass(frozen=True)
class Tool:
    """One registered tool: the function and the declaration the agent sees."""

    name: str
    description: str
    function: Callable[..., Any]
    schema: FunctionSchema

    def declaration(self) -> dict[str, Any]:
        """The provider-neutral ``{"name", "description", "input_schema"}`` mapping."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.schema.input_schema,
        }


class Tools(Shown):
    """A registry of tool functions that is also a session handler.

    Each function's JSON Schema comes from its type hints (str, int, float, bool, Optional,
    Literal, Enum, list, dict, TypedDict, dataclass); its description from the docstring's
    first paragraph and each parameter's from the ``Args:`` section. A parameter annotated
    :class:`~req_managed_agents.ToolContext` receives the call's context and is hidden from
    the agent. Return a ``str``, a :class:`~req_managed_agents.ToolResult`, an
    :class:`~req_managed_agents.model.Image` or :class:`~req_managed_agents.model.Document`
    (or a list mixing them with text), ``None`` (empty text) or any JSON-encodable value
    (sent as JSON).

    The agent's arguments are untrusted: they are checked against the declared schema before
    the function runs, and any mismatch (a wrong type, a value outside a ``Literal`` or an
    Enum, a missing or unknown field, at any depth) comes back as one ``is_error`` result
    naming each field, for example ``invalid arguments for tool 'deploy': mode: expected one
    of 'dry-run', 'apply', got 'apply; really'``; the function is not called. Valid arguments
    arrive as the hinted Python values (dataclasses, Enums, tuples, sets). ``bool`` is not an
    ``int``, and ``3.0`` is not an ``int`` either: a float cannot carry every integer exactly.

    :meth:`include` adds an MCP server's tools, declared and checked the same way.
    """

    def __init__(self, functions: Iterable[Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: list[McpSource] = []
        self._lock = threading.Lock()
        for function in functions:
            self.add(function)

    def add(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """Register ``function`` (under its ``__name__`` unless ``name`` is given)."""
        tool_name = name if name is not None else getattr(function, "__name__", "")
        if not _TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'")
        schema = function_schema(function, context_type=ToolContext, tool_name=tool_name)
        text = description if description is not None else schema.description
        if not text:
            raise ValueError(
                f"tool {tool_name!r} needs a description: give it a docstring or description="
            )
        tool = Tool(tool_name, text, function, schema)
        with self._lock:
            if tool_name in self._tools:
                raise ValueError(f"a tool named {tool_name!r} is already registered")
            self._tools[tool_name] = tool
        return tool

    def include(
        self,
        server: McpServer,
        *,
        prefix: str | None = None,
        allow: Iterable[str] | None = None,
        confirm: McpConfirm = "destructive",
    ) -> None:
        """Offer the agent the tools of an MCP server (``allow``: only the tools it names,
        by the server's names), each declared as ``prefix`` plus its name.

        ``confirm`` says which tools ask the run before each call (see
        :data:`~req_managed_agents.tools._mcp.McpConfirm`): by default those the server
        annotates ``destructiveHint`` and not ``readOnlyHint``. The run answers as for a
        provider tool asking permission - the handler's ``handle_confirmation``, else the
        session's ``confirm=`` policy, under which ``"raise"`` denies - and a denied call
        is an ``is_error`` result with the deny message; the server never sees it.

        The server is not started here: its tools are listed when :meth:`schemas` is first
        read or a call needs them. Each keeps the server's input schema (the agent's
        arguments are checked against it before the call, as for functions) and gets a
        name every runtime accepts (``[A-Za-z0-9_-]{1,64}``: other characters become
        ``_``, a longer name is cut and ends with a hash); the call goes to the server's
        own name. A declared name that another tool already has - a function, or another
        server's tool - raises :class:`~req_managed_agents.errors.ConfigurationError`
        before anything is sent: include one of them with a ``prefix``. The server stays
        the caller's to close (``with McpServer(...) as server:``).
        """
        source = McpSource(server, prefix or "", allow, confirm)
        with self._lock:
            self._sources.append(source)

    @overload
    def tool(self, function: F) -> F: ...

    @overload
    def tool(
        self, *, name: str | None = None, description: str | None = None
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Any:
        """Decorator registering a function; use bare or as ``@tools.tool(name=...)``."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(fn, name=name, description=description)
            return fn

        return register(function) if function is not None else register

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's ``{"name", "description", "input_schema"}``: the functions in
        registration order, then each included MCP server's tools (starting the servers)."""
        served = [binding.declaration() for binding in self._served().values()]
        return [*(tool.declaration() for tool in self), *served]

    def mcp_tools(self) -> dict[str, tuple[str, str]]:
        """The included servers' tools: declared name -> (server name, the server's own
        tool name), the servers started; what ``rma run --verbose`` shows."""
        return {
            name: (binding.source.server.name, binding.tool.name)
            for name, binding in self._served().items()
        }

    def _served(self) -> dict[str, McpBinding]:
        """The included servers' tools by declared name; a name taken twice raises."""
        with self._lock:
            sources, functions = list(self._sources), set(self._tools)
        served: dict[str, McpBinding] = {}
        for source in sources:
            for name, binding in source.bindings().items():
                other = served.get(name)
                if name in functions or other is not None:
                    taken = (
                        "a function"
                        if other is None
                        else f"another MCP server's tool ({other.source.server.name!r})"
                    )
                    raise ConfigurationError(
                        f"the tool {binding.tool.name!r} of the MCP server "
                        f"{source.server.name!r} is declared as {name!r}, which {taken} "
                        "already has; include the server with a prefix= (or leave the tool "
                        "out with allow=)"
                    )
                served[name] = binding
        return served

    def __iter__(self) -> Iterator[Tool]:
        """The registered functions (an included server's tools are in :meth:`schemas`)."""
        with self._lock:
            return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        if name in self._tools:
            return True
        return bool(self._sources) and name in self._served()

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __repr__(self) -> str:
        return f"Tools({list(self._tools)!r})"

    def handle_tool_call(
        self, name: str, input: Mapping[str, Any], context: ToolContext
    ) -> ToolOutput:
        """Call the named tool with the agent's arguments.

        An unknown name or arguments that do not fit the declared schema come back as an
        ``is_error`` result the agent can correct, without calling the tool; exceptions raised
        by the tool itself propagate to the session, which reports them the same way.
        """
        tool = self._tools.get(name)
        if tool is None:
            served = self._served() if self._sources else {}
            binding = served.get(name)
            if binding is not None:
                return self._call_served(binding, input, context)
            known = ", ".join(sorted([*self._tools, *served])) or "none"
            return ToolResult(
                context.tool_use_id, f"unknown tool {name!r} (available: {known})", is_error=True
            )
        problems = validate(input, tool.schema.input_schema)
        if problems:
            return ToolResult(
                context.tool_use_id,
                f"invalid arguments for tool {name!r}: {'; '.join(problems)}",
                is_error=True,
            )
        arguments = tool.schema.coerce(input)
        if tool.schema.context_parameter:
            arguments[tool.schema.context_parameter] = context
        return _as_text(tool.function(**arguments))

    def _call_served(
        self, binding: McpBinding, input: Mapping[str, Any], context: ToolContext
    ) -> ToolOutput:
        problems = validate(input, binding.tool.input_schema)
        if problems:
            return ToolResult(
                context.tool_use_id,
                f"invalid arguments for tool {binding.name!r}: {'; '.join(problems)}",
                is_error=True,
            )
        return binding.source.call(binding, input, context)


def _as_text(output: Any) -> ToolOutput:
    """What a tool function returned, as a handler answer: text and results as they are,
    images and documents as content blocks, ``None`` as no text, anything else as JSON."""
    if isinstance(output, (str, ToolResult)) or content_blocks(output) is not None:
        return output  # type: ignore[no-any-return]  # checked just above
    if output is None:
        return ""
    return json.dumps(output, ensure_ascii=False, default=str)
