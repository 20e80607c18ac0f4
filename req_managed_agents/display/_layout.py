"""How a value is laid out for a person: a few parts (summary lines, a text block, tables)
that the HTML and the Markdown writers of :mod:`~req_managed_agents.display._notebook`
share. Everything the agent, the provider or a tool wrote is cut to a bounded size, saying
so, so that a long run still renders as a short page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from req_managed_agents.model._vocabulary import (
    ContentBlock,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.tools._registry import Tools

__all__ = ["Block", "Cell", "Displayable", "Line", "Part", "Span", "Style", "Table", "layout"]

TEXT_LIMIT = 3000
"""Characters shown of an agent's text or of a tool result shown on its own."""
VALUE_LIMIT = 300
"""Characters shown of a tool input, a tool result or a provider value in a table or line."""
ROW_LIMIT = 25
"""Rows shown of a table (tool calls, turns, tools)."""

Displayable = Union[SessionResult, TurnResult, Usage, ToolUse, ToolResult, Tools]

Style = Literal["plain", "code", "strong", "error", "note"]


@dataclass(frozen=True)
class Span:
    """A piece of a line, in one style."""

    text: str
    style: Style = "plain"


Cell = tuple[Span, ...]


@dataclass(frozen=True)
class Line:
    """One line of spans."""

    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Block:
    """A text as written (line breaks kept), then the note saying it was cut, if it was."""

    text: str
    note: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Table:
    """A titled table of cells."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


Part = Union[Line, Block, Table]


def layout(value: Displayable) -> list[Part]:
    if isinstance(value, SessionResult):
        return _session_parts(value)
    if isinstance(value, TurnResult):
        return _turn_parts(value)
    if isinstance(value, Usage):
        return [Line((Span("Usage", "strong"), Span(" "), *_usage_spans(value)))]
    if isinstance(value, ToolUse):
        return _tool_use_parts(value)
    if isinstance(value, ToolResult):
        return _tool_result_parts(value)
    return _tools_parts(value)


def _session_parts(result: SessionResult) -> list[Part]:
    turns = "turn" if result.turns == 1 else "turns"
    head = [
        Span("SessionResult", "strong"),
        Span(" "),
        Span(result.terminal, "code"),
        Span(f" after {result.turns} {turns} · "),
        *_usage_spans(result.usage),
    ]
    if result.session_id is not None:
        head += [Span(" · session "), Span(result.session_id, "code")]
    parts: list[Part] = [Line(tuple(head)), _text_part(result.text, "no final text")]
    answers = {answer.tool_use_id: answer for answer in result.tool_results}
    rows = [
        ((Span(str(number)),), *_call_cells(tool_use), _answer_cell(answers.get(tool_use.id)))
        for number, tool_use in enumerate(result.tool_uses, 1)
    ]
    parts += _table("Tool calls", ("#", "tool", "input", "result"), rows, ".tool_uses")
    if len(result.turn_usage) > 1:
        usage_rows = [
            ((Span(str(number)),), *_usage_cells(usage))
            for number, usage in enumerate(result.turn_usage, 1)
        ]
        headers = ("turn", "input", "output", "cache write", "cache read", "total")
        total = ((Span("all", "strong"),), *_usage_cells(result.usage))
        parts += _table("Usage per turn", headers, usage_rows, ".turn_usage", total)
    parts.append(_details(result.stop_reason, len(result.events)))
    if result.terminal_tool_input is not None:
        parts.append(
            Line((Span("terminal tool input "), *_value_spans(result.terminal_tool_input)))
        )
    if result.outcome is not None:
        parts.append(_outcome_line(result.outcome))
    return parts


def _turn_parts(turn: TurnResult) -> list[Part]:
    head = (
        Span("TurnResult", "strong"),
        Span(" "),
        Span(turn.terminal, "code"),
        Span(" · "),
        *_usage_spans(turn.usage),
    )
    parts: list[Part] = [Line(head), _text_part(turn.text, "no text")]
    for title, calls, where in (
        ("Tool calls to run here", turn.tool_uses, ".tool_uses"),
        ("Tools the provider ran", turn.server_tool_uses, ".server_tool_uses"),
        ("Waiting for confirmation", turn.confirmations, ".confirmations"),
    ):
        rows = [
            ((Span(str(number)),), *_call_cells(tool_use), (Span(tool_use.id, "code"),))
            for number, tool_use in enumerate(calls, 1)
        ]
        parts += _table(title, ("#", "tool", "input", "id"), rows, where)
    parts.append(_details(turn.stop_reason, len(turn.events)))
    if turn.outcome is not None:
        parts.append(_outcome_line(turn.outcome))
    return parts


def _tool_use_parts(tool_use: ToolUse) -> list[Part]:
    name, arguments = _call_cells(tool_use, TEXT_LIMIT)
    spans = (Span("ToolUse", "strong"), Span(" "), *name, Span(" "), *arguments)
    return [Line((*spans, Span(" · id "), Span(tool_use.id, "code")))]


def _tool_result_parts(answer: ToolResult) -> list[Part]:
    head = [Span("ToolResult", "strong"), Span(" for "), Span(answer.tool_use_id, "code")]
    if answer.is_error:
        head += [Span(" · "), Span("error", "error")]
    attached = _blocks_summary(answer.blocks)
    if attached:
        head.append(Span(f" · {attached}"))
    return [Line(tuple(head)), _text_part(answer.content, "no text")]


def _tools_parts(tools: Tools) -> list[Part]:
    count = len(tools)
    head = Line((Span("Tools", "strong"), Span(f" {count} {'tool' if count == 1 else 'tools'}")))
    rows = [
        (
            (Span(tool.name, "code"),),
            _parameters_cell(tool.schema.input_schema),
            _cut_spans(tool.description, VALUE_LIMIT),
        )
        for tool in tools
    ]
    return [head, *_table("", ("tool", "parameters", "description"), rows, ".schemas()")]


def _table(
    title: str,
    headers: tuple[str, ...],
    rows: Sequence[tuple[Cell, ...]],
    where: str,
    total: tuple[Cell, ...] | None = None,
) -> list[Part]:
    """A table of at most :data:`ROW_LIMIT` rows (nothing if there are no rows) and its
    ``total`` row, then a note naming the attribute that holds the rows left out."""
    if not rows:
        return []
    shown = tuple(rows[:ROW_LIMIT]) + ((total,) if total is not None else ())
    parts: list[Part] = [Table(f"{title} ({len(rows)})" if title else "", headers, shown)]
    if len(rows) > ROW_LIMIT:
        more = f"… {len(rows) - ROW_LIMIT:,} more, all in "
        parts.append(Line((Span(more, "note"), Span(where, "code"))))
    return parts


def _text_part(text: str, empty: str) -> Part:
    if not text:
        return Line((Span(f"({empty})", "note"),))
    shown, *note = _cut_spans(text, TEXT_LIMIT)
    return Block(shown.text, tuple(note))


def _usage_spans(usage: Usage) -> tuple[Span, ...]:
    counts = [f"{usage.input_tokens:,} input", f"{usage.output_tokens:,} output"]
    if usage.cache_creation_input_tokens:
        counts.append(f"{usage.cache_creation_input_tokens:,} cache write")
    if usage.cache_read_input_tokens:
        counts.append(f"{usage.cache_read_input_tokens:,} cache read")
    return (Span(f"{usage.total_tokens:,} tokens", "strong"), Span(f" ({', '.join(counts)})"))


def _usage_cells(usage: Usage) -> tuple[Cell, ...]:
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
        usage.total_tokens,
    )
    return tuple((Span(f"{count:,}"),) for count in counts)


def _call_cells(tool_use: ToolUse, limit: int = VALUE_LIMIT) -> tuple[Cell, Cell]:
    """The tool (with its MCP server and subagent thread, if any) and its input."""
    name = [Span(tool_use.name, "code")]
    if tool_use.mcp_server is not None:
        name += [Span(" on "), Span(tool_use.mcp_server, "code")]
    if tool_use.session_thread_id is not None:
        name += [Span(" in thread "), Span(tool_use.session_thread_id, "code")]
    return tuple(name), _value_spans(tool_use.input, limit)


def _answer_cell(answer: ToolResult | None) -> Cell:
    if answer is None:
        return (Span("no result", "note"),)
    spans = [Span("error", "error"), Span(": ")] if answer.is_error else []
    spans += _cut_spans(answer.content, VALUE_LIMIT)
    attached = _blocks_summary(answer.blocks)
    if attached:
        spans.append(Span(f" [{attached}]", "note"))
    return tuple(spans)


def _blocks_summary(blocks: tuple[ContentBlock, ...]) -> str:
    """``2 images (12,345 bytes), 1 document (678 bytes)``, or ``""``."""
    sizes: dict[str, list[int]] = {"image": [], "document": []}
    for block in blocks:
        if not isinstance(block, str):
            kind = "image" if block.media_type.startswith("image/") else "document"
            sizes[kind].append(len(block.data))
    return ", ".join(
        f"{len(found)} {kind}{'' if len(found) == 1 else 's'} ({sum(found):,} bytes)"
        for kind, found in sizes.items()
        if found
    )


def _parameters_cell(schema: Mapping[str, Any]) -> Cell:
    """``city: string, unit?: "celsius" | "fahrenheit"`` from a tool's input schema."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    shown = [
        f"{name}{'' if name in required else '?'}: {_schema_type(spec)}"
        for name, spec in properties.items()
    ]
    return _cut_spans(", ".join(shown), VALUE_LIMIT, "code") if shown else ()


def _schema_type(spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return "any"
    if isinstance(spec.get("enum"), list):
        return " | ".join(_json(choice) for choice in spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(map(str, kind))
    return str(kind) if kind else "any"


def _details(stop_reason: Any, events: int) -> Part:
    return Line(
        (
            Span("stop reason "),
            *_value_spans(stop_reason),
            Span(f" · {events:,} raw {'event' if events == 1 else 'events'} in "),
            Span(".events", "code"),
        )
    )


def _outcome_line(outcome: Mapping[str, Any]) -> Part:
    """The outcome's verdict and explanation (Claude's evaluation event), else its JSON."""
    verdict, explanation = outcome.get("result"), outcome.get("explanation")
    if not isinstance(verdict, str):
        return Line((Span("outcome "), *_value_spans(outcome)))
    spans = [Span("outcome "), Span(verdict, "strong")]
    if isinstance(explanation, str) and explanation:
        spans += [Span(": "), *_cut_spans(explanation, VALUE_LIMIT)]
    return Line(tuple(spans))


def _value_spans(value: Any, limit: int = VALUE_LIMIT) -> Cell:
    return _cut_spans(_json(value), limit, "code")


def _cut_spans(text: str, limit: int, style: Style = "plain") -> Cell:
    """``text`` in ``style``, cut to ``limit`` characters with a note saying so."""
    if len(text) <= limit:
        return (Span(text, style),)
    return (Span(text[:limit], style), Span(f" … cut, {len(text):,} characters in all", "note"))


def _json(value: Any) -> str:
    """Compact JSON of a provider or tool value (``repr`` if it is not JSON-like)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError):
        return repr(value)


def _jsonable(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)
