"""How results, turns, usage, tool calls and tool registries look in Jupyter and in ``repr``.

A value is first laid out as a few parts (summary lines, a text block, tables) that the HTML
and the Markdown renderer share. Everything the agent, the provider or a tool wrote is
escaped (HTML in ``_repr_html_``; HTML and Markdown in ``_repr_markdown_``) and cut to a
bounded size, saying so, so that a long run still renders as a short page.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from req_managed_agents._tools import Tools
from req_managed_agents._vocabulary import (
    ContentBlock,
    SessionResult,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)

__all__ = ["Displayable", "short_repr", "to_html", "to_markdown"]

TEXT_LIMIT = 3000
"""Characters shown of an agent's text or of a tool result shown on its own."""
VALUE_LIMIT = 300
"""Characters shown of a tool input, a tool result or a provider value in a table or line."""
ROW_LIMIT = 25
"""Rows shown of a table (tool calls, turns, tools)."""
REPR_TEXT_LIMIT = 40
"""Characters shown of a string field in :func:`short_repr`."""
REPR_VALUE_LIMIT = 48
"""Characters shown of any other field's ``repr`` in :func:`short_repr`."""

Displayable = Union[SessionResult, TurnResult, Usage, ToolUse, ToolResult, Tools]

_Style = Literal["plain", "code", "strong", "error", "note"]


@dataclass(frozen=True)
class _Span:
    """A piece of a line, in one style."""

    text: str
    style: _Style = "plain"


_Cell = tuple[_Span, ...]


@dataclass(frozen=True)
class _Line:
    """One line of spans."""

    spans: tuple[_Span, ...]


@dataclass(frozen=True)
class _Block:
    """A text as written (line breaks kept), then the note saying it was cut, if it was."""

    text: str
    note: tuple[_Span, ...] = ()


@dataclass(frozen=True)
class _Table:
    """A titled table of cells."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[_Cell, ...], ...]


_Part = Union[_Line, _Block, _Table]


def to_html(value: Displayable) -> str:
    """``value`` as an HTML fragment, every provided text escaped."""
    return '<div class="rma-display">' + "".join(map(_html_part, _layout(value))) + "</div>"


def to_markdown(value: Displayable) -> str:
    """``value`` as Markdown, every provided text escaped for Markdown and HTML."""
    return "\n\n".join(map(_markdown_part, _layout(value))) + "\n"


def short_repr(value: Any, first: Sequence[str] = ()) -> str:
    """``Name(field=value, ...)`` of a dataclass, in a bounded size.

    Strings are cut (with their length), sequences shown as their length, nested
    dataclasses alike, other values' ``repr`` cut; fields at their default are left out.
    The fields named in ``first`` come first, in that order, then the rest as declared.
    """
    fields = sorted(
        dataclasses.fields(value),
        key=lambda f: first.index(f.name) if f.name in first else len(first),
    )
    shown = []
    for field in fields:
        item = getattr(value, field.name)
        if not _is_default(field, item):
            shown.append(f"{field.name}={_brief(item)}")
    return f"{type(value).__name__}({', '.join(shown)})"


# --- layout -----------------------------------------------------------------------------


def _layout(value: Displayable) -> list[_Part]:
    if isinstance(value, SessionResult):
        return _session_parts(value)
    if isinstance(value, TurnResult):
        return _turn_parts(value)
    if isinstance(value, Usage):
        return [_Line((_Span("Usage", "strong"), _Span(" "), *_usage_spans(value)))]
    if isinstance(value, ToolUse):
        return _tool_use_parts(value)
    if isinstance(value, ToolResult):
        return _tool_result_parts(value)
    return _tools_parts(value)


def _session_parts(result: SessionResult) -> list[_Part]:
    turns = "turn" if result.turns == 1 else "turns"
    head = [
        _Span("SessionResult", "strong"),
        _Span(" "),
        _Span(result.terminal, "code"),
        _Span(f" after {result.turns} {turns} · "),
        *_usage_spans(result.usage),
    ]
    if result.session_id is not None:
        head += [_Span(" · session "), _Span(result.session_id, "code")]
    parts: list[_Part] = [_Line(tuple(head)), _text_part(result.text, "no final text")]
    answers = {answer.tool_use_id: answer for answer in result.tool_results}
    rows = [
        ((_Span(str(number)),), *_call_cells(tool_use), _answer_cell(answers.get(tool_use.id)))
        for number, tool_use in enumerate(result.tool_uses, 1)
    ]
    parts += _table("Tool calls", ("#", "tool", "input", "result"), rows, ".tool_uses")
    if len(result.turn_usage) > 1:
        usage_rows = [
            ((_Span(str(number)),), *_usage_cells(usage))
            for number, usage in enumerate(result.turn_usage, 1)
        ]
        headers = ("turn", "input", "output", "cache write", "cache read", "total")
        total = ((_Span("all", "strong"),), *_usage_cells(result.usage))
        parts += _table("Usage per turn", headers, usage_rows, ".turn_usage", total)
    parts.append(_details(result.stop_reason, len(result.events)))
    if result.terminal_tool_input is not None:
        parts.append(
            _Line((_Span("terminal tool input "), *_value_spans(result.terminal_tool_input)))
        )
    if result.outcome is not None:
        parts.append(_outcome_line(result.outcome))
    return parts


def _turn_parts(turn: TurnResult) -> list[_Part]:
    head = (
        _Span("TurnResult", "strong"),
        _Span(" "),
        _Span(turn.terminal, "code"),
        _Span(" · "),
        *_usage_spans(turn.usage),
    )
    parts: list[_Part] = [_Line(head), _text_part(turn.text, "no text")]
    for title, calls, where in (
        ("Tool calls to run here", turn.tool_uses, ".tool_uses"),
        ("Tools the provider ran", turn.server_tool_uses, ".server_tool_uses"),
        ("Waiting for confirmation", turn.confirmations, ".confirmations"),
    ):
        rows = [
            ((_Span(str(number)),), *_call_cells(tool_use), (_Span(tool_use.id, "code"),))
            for number, tool_use in enumerate(calls, 1)
        ]
        parts += _table(title, ("#", "tool", "input", "id"), rows, where)
    parts.append(_details(turn.stop_reason, len(turn.events)))
    if turn.outcome is not None:
        parts.append(_outcome_line(turn.outcome))
    return parts


def _tool_use_parts(tool_use: ToolUse) -> list[_Part]:
    name, arguments = _call_cells(tool_use, TEXT_LIMIT)
    spans = (_Span("ToolUse", "strong"), _Span(" "), *name, _Span(" "), *arguments)
    return [_Line((*spans, _Span(" · id "), _Span(tool_use.id, "code")))]


def _tool_result_parts(answer: ToolResult) -> list[_Part]:
    head = [_Span("ToolResult", "strong"), _Span(" for "), _Span(answer.tool_use_id, "code")]
    if answer.is_error:
        head += [_Span(" · "), _Span("error", "error")]
    attached = _blocks_summary(answer.blocks)
    if attached:
        head.append(_Span(f" · {attached}"))
    return [_Line(tuple(head)), _text_part(answer.content, "no text")]


def _tools_parts(tools: Tools) -> list[_Part]:
    count = len(tools)
    head = _Line((_Span("Tools", "strong"), _Span(f" {count} {'tool' if count == 1 else 'tools'}")))
    rows = [
        (
            (_Span(tool.name, "code"),),
            _parameters_cell(tool.schema.input_schema),
            _cut_spans(tool.description, VALUE_LIMIT),
        )
        for tool in tools
    ]
    return [head, *_table("", ("tool", "parameters", "description"), rows, ".schemas()")]


def _table(
    title: str,
    headers: tuple[str, ...],
    rows: Sequence[tuple[_Cell, ...]],
    where: str,
    total: tuple[_Cell, ...] | None = None,
) -> list[_Part]:
    """A table of at most :data:`ROW_LIMIT` rows (nothing if there are no rows) and its
    ``total`` row, then a note naming the attribute that holds the rows left out."""
    if not rows:
        return []
    shown = tuple(rows[:ROW_LIMIT]) + ((total,) if total is not None else ())
    parts: list[_Part] = [_Table(f"{title} ({len(rows)})" if title else "", headers, shown)]
    if len(rows) > ROW_LIMIT:
        more = f"… {len(rows) - ROW_LIMIT:,} more, all in "
        parts.append(_Line((_Span(more, "note"), _Span(where, "code"))))
    return parts


def _text_part(text: str, empty: str) -> _Part:
    if not text:
        return _Line((_Span(f"({empty})", "note"),))
    shown, *note = _cut_spans(text, TEXT_LIMIT)
    return _Block(shown.text, tuple(note))


def _usage_spans(usage: Usage) -> tuple[_Span, ...]:
    counts = [f"{usage.input_tokens:,} input", f"{usage.output_tokens:,} output"]
    if usage.cache_creation_input_tokens:
        counts.append(f"{usage.cache_creation_input_tokens:,} cache write")
    if usage.cache_read_input_tokens:
        counts.append(f"{usage.cache_read_input_tokens:,} cache read")
    return (_Span(f"{usage.total_tokens:,} tokens", "strong"), _Span(f" ({', '.join(counts)})"))


def _usage_cells(usage: Usage) -> tuple[_Cell, ...]:
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
        usage.total_tokens,
    )
    return tuple((_Span(f"{count:,}"),) for count in counts)


def _call_cells(tool_use: ToolUse, limit: int = VALUE_LIMIT) -> tuple[_Cell, _Cell]:
    """The tool (with its MCP server and subagent thread, if any) and its input."""
    name = [_Span(tool_use.name, "code")]
    if tool_use.mcp_server is not None:
        name += [_Span(" on "), _Span(tool_use.mcp_server, "code")]
    if tool_use.session_thread_id is not None:
        name += [_Span(" in thread "), _Span(tool_use.session_thread_id, "code")]
    return tuple(name), _value_spans(tool_use.input, limit)


def _answer_cell(answer: ToolResult | None) -> _Cell:
    if answer is None:
        return (_Span("no result", "note"),)
    spans = [_Span("error", "error"), _Span(": ")] if answer.is_error else []
    spans += _cut_spans(answer.content, VALUE_LIMIT)
    attached = _blocks_summary(answer.blocks)
    if attached:
        spans.append(_Span(f" [{attached}]", "note"))
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


def _parameters_cell(schema: Mapping[str, Any]) -> _Cell:
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


def _details(stop_reason: Any, events: int) -> _Part:
    return _Line(
        (
            _Span("stop reason "),
            *_value_spans(stop_reason),
            _Span(f" · {events:,} raw {'event' if events == 1 else 'events'} in "),
            _Span(".events", "code"),
        )
    )


def _outcome_line(outcome: Mapping[str, Any]) -> _Part:
    """The outcome's verdict and explanation (Claude's evaluation event), else its JSON."""
    verdict, explanation = outcome.get("result"), outcome.get("explanation")
    if not isinstance(verdict, str):
        return _Line((_Span("outcome "), *_value_spans(outcome)))
    spans = [_Span("outcome "), _Span(verdict, "strong")]
    if isinstance(explanation, str) and explanation:
        spans += [_Span(": "), *_cut_spans(explanation, VALUE_LIMIT)]
    return _Line(tuple(spans))


def _value_spans(value: Any, limit: int = VALUE_LIMIT) -> _Cell:
    return _cut_spans(_json(value), limit, "code")


def _cut_spans(text: str, limit: int, style: _Style = "plain") -> _Cell:
    """``text`` in ``style``, cut to ``limit`` characters with a note saying so."""
    if len(text) <= limit:
        return (_Span(text, style),)
    return (_Span(text[:limit], style), _Span(f" … cut, {len(text):,} characters in all", "note"))


def _json(value: Any) -> str:
    """Compact JSON of a provider or tool value (``repr`` if it is not JSON-like)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError):
        return repr(value)


def _jsonable(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


# --- HTML -------------------------------------------------------------------------------

_HTML_STYLES: dict[_Style, str] = {
    "plain": "{}",
    "code": "<code>{}</code>",
    "strong": "<strong>{}</strong>",
    "error": '<strong style="color:#c62828">{}</strong>',
    "note": '<em style="opacity:.7">{}</em>',
}
_HTML_HEADER = 'style="text-align:left"'
_HTML_CELL = 'style="text-align:left;vertical-align:top;white-space:pre-wrap"'
_HTML_BLOCK = (
    'style="white-space:pre-wrap;margin:.4em 0;padding:.2em .6em;'
    'border-left:3px solid rgba(127,127,127,.5)"'
)


def _html_spans(spans: Sequence[_Span]) -> str:
    return "".join(_HTML_STYLES[span.style].format(html.escape(span.text)) for span in spans)


def _html_part(part: _Part) -> str:
    if isinstance(part, _Line):
        return f"<div>{_html_spans(part.spans)}</div>"
    if isinstance(part, _Block):
        return f"<div {_HTML_BLOCK}>{_html_spans((_Span(part.text), *part.note))}</div>"
    title = f'<div style="margin-top:.4em"><strong>{html.escape(part.title)}</strong></div>'
    head = "".join(f"<th {_HTML_HEADER}>{html.escape(name)}</th>" for name in part.headers)
    body = "".join(
        "<tr>" + "".join(f"<td {_HTML_CELL}>{_html_spans(cell)}</td>" for cell in row) + "</tr>"
        for row in part.rows
    )
    table = f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
    return f"{title if part.title else ''}{table}<tbody>{body}</tbody></table>"


# --- Markdown ---------------------------------------------------------------------------

_MARKDOWN_STYLES: dict[_Style, str] = {
    "plain": "{}",
    "code": "<code>{}</code>",
    "strong": "**{}**",
    "error": "**{}**",
    "note": "*{}*",
}
# Characters that mean something anywhere in a line of (Jupyter's) Markdown, and HTML.
_MARKDOWN_ESCAPES = str.maketrans(
    {
        **{char: "\\" + char for char in "\\`*_[]|~$"},
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
    }
)
# What starts a heading, list, quote or rule at the start of a line.
_LINE_MARKER = re.compile(r"^([#+=-])")
_LIST_NUMBER = re.compile(r"^(\d{1,9})([.)])")


def _markdown_text(text: str, in_table: bool = False) -> str:
    escaped = text.translate(_MARKDOWN_ESCAPES)
    return re.sub(r"\r\n?|\n", "<br>" if in_table else " ", escaped)


def _markdown_spans(spans: Sequence[_Span], in_table: bool = False) -> str:
    return "".join(_markdown_span(span, in_table) for span in spans)


def _markdown_span(span: _Span, in_table: bool) -> str:
    """A span in its style, with the spaces around it outside the markers (``* note*`` is
    not emphasis in Markdown, ``*note*`` is)."""
    core = span.text.strip()
    if not core:
        return _markdown_text(span.text, in_table)
    lead = span.text[: len(span.text) - len(span.text.lstrip())]
    trail = span.text[len(span.text.rstrip()) :]
    styled = _MARKDOWN_STYLES[span.style].format(_markdown_text(core, in_table))
    return _markdown_text(lead, in_table) + styled + _markdown_text(trail, in_table)


def _markdown_line(line: str) -> str:
    """One line of an agent's text, inert: escaped, indentation kept, no block markers."""
    content = line.lstrip(" \t")
    indent = line[: len(line) - len(content)].replace("\t", "    ")
    content = _LINE_MARKER.sub(r"\\\1", content.translate(_MARKDOWN_ESCAPES))
    content = _LIST_NUMBER.sub(r"\1\\\2", content)
    return "&nbsp;" * len(indent) + content


def _markdown_part(part: _Part) -> str:
    if isinstance(part, _Line):
        return _markdown_spans(part.spans)
    if isinstance(part, _Block):
        lines = [_markdown_line(line) for line in part.text.splitlines()] or [""]
        lines[-1] += _markdown_spans(part.note)
        return "\n".join(f"> {line}  " if line else ">" for line in lines)
    rows = [
        "| " + " | ".join(part.headers) + " |",
        "|" + "---|" * len(part.headers),
        *(
            "| " + " | ".join(_markdown_spans(cell, True) for cell in row) + " |"
            for row in part.rows
        ),
    ]
    table = "\n".join(rows)
    return f"**{_markdown_text(part.title)}**\n\n{table}" if part.title else table


# --- repr -------------------------------------------------------------------------------


def _is_default(field: dataclasses.Field[Any], value: Any) -> bool:
    if field.default is not dataclasses.MISSING:
        return bool(value == field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(value == field.default_factory())
    return False


def _brief(value: Any) -> str:
    if isinstance(value, str):
        if len(value) <= REPR_TEXT_LIMIT:
            return repr(value)
        return f"{value[:REPR_TEXT_LIMIT] + '…'!r} ({len(value):,} chars)"
    if isinstance(value, (tuple, list)):
        return str(len(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return short_repr(value)
    text = repr(value)
    return text if len(text) <= REPR_VALUE_LIMIT else text[:REPR_VALUE_LIMIT] + "…"
