"""What an MCP server's tools are and what a call returns, as frozen values.

Content blocks, schemas and annotations stay the server's own JSON (plain dicts), so a
bridge can map each block kind to what its runtime accepts without this package guessing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["McpProgress", "McpTool", "McpToolResult"]


@dataclass(frozen=True)
class McpTool:
    """One tool a server offers (``tools/list``): ``input_schema`` and ``output_schema``
    are JSON Schema objects; ``annotations`` holds hints such as ``readOnlyHint`` and
    ``destructiveHint`` - hints from the server, not guarantees."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    title: str | None = None

    @classmethod
    def from_wire(cls, tool: Mapping[str, Any]) -> McpTool:
        """The value of one ``tools/list`` entry (unknown members are ignored)."""
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a listed tool has no name: {str(tool)[:200]}")
        schema = tool.get("inputSchema")
        output = tool.get("outputSchema")
        annotations = tool.get("annotations")
        description = tool.get("description")
        title = tool.get("title")
        return cls(
            name=name,
            description=description if isinstance(description, str) else "",
            input_schema=schema if isinstance(schema, dict) else {"type": "object"},
            output_schema=output if isinstance(output, dict) else None,
            annotations=annotations if isinstance(annotations, dict) else {},
            title=title if isinstance(title, str) else None,
        )


@dataclass(frozen=True)
class McpToolResult:
    """What a ``tools/call`` answered: ``content`` is its blocks verbatim (``text``,
    ``image``, ``audio``, ``resource_link``, ``resource``), ``structured_content`` its
    ``structuredContent``, ``is_error`` whether the tool itself failed (a refusal of the
    call is an :class:`~req_managed_agents.mcp.McpServerError` instead)."""

    content: tuple[Mapping[str, Any], ...]
    structured_content: Any = None
    is_error: bool = False

    @classmethod
    def from_wire(cls, result: Mapping[str, Any]) -> McpToolResult:
        """The value of a ``tools/call`` result."""
        blocks = result.get("content")
        content = (
            tuple(b for b in blocks if isinstance(b, dict)) if isinstance(blocks, list) else ()
        )
        return cls(content, result.get("structuredContent"), result.get("isError") is True)

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (what a runtime without other kinds shows)."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


@dataclass(frozen=True)
class McpProgress:
    """A ``notifications/progress`` for one call: ``progress`` grows, ``total`` may be
    known, ``message`` is the server's own words."""

    progress: float
    total: float | None = None
    message: str | None = None
