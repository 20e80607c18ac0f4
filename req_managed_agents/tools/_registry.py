"""``Tools``: plain Python functions registered as agent tools.

::

    tools = Tools()

    @tools.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

``tools.schemas()`` is what the provider sees; the registry itself is a
:class:`~req_managed_agents.tools.Handler` that a session calls back when the agent uses a tool.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from req_managed_agents.model._show import Shown
from req_managed_agents.model._vocabulary import ToolResult
from req_managed_agents.tools._handler import ToolContext, ToolOutput, content_blocks
from req_managed_agents.tools._schema import FunctionSchema, function_schema
from req_managed_agents.tools._validation import validate

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
    """

    def __init__(self, functions: Iterable[Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
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
        """Every tool's ``{"name", "description", "input_schema"}``, in registration order."""
        return [tool.declaration() for tool in self]

    def __iter__(self) -> Iterator[Tool]:
        with self._lock:
            return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

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
            known = ", ".join(sorted(self._tools)) or "none"
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


def _as_text(output: Any) -> ToolOutput:
    """What a tool function returned, as a handler answer: text and results as they are,
    images and documents as content blocks, ``None`` as no text, anything else as JSON."""
    if isinstance(output, (str, ToolResult)) or content_blocks(output) is not None:
        return output  # type: ignore[no-any-return]  # checked just above
    if output is None:
        return ""
    return json.dumps(output, ensure_ascii=False, default=str)
