"""How results, turns, usage, tool calls and tool registries look in Jupyter.

Each value is laid out by :mod:`~req_managed_agents.display._layout`, then written as HTML
(``_repr_html_``) or Markdown (``_repr_markdown_``), everything the agent, the provider or a
tool wrote escaped (HTML in both; Markdown too in Markdown). Importing this module registers
both writers with the value types' display hook.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from req_managed_agents.display._layout import (
    Block,
    Displayable,
    Line,
    Part,
    Span,
    Style,
    layout,
)
from req_managed_agents.model._show import register_renderer

__all__ = ["to_html", "to_markdown"]


def to_html(value: Displayable) -> str:
    """``value`` as an HTML fragment, every provided text escaped."""
    return '<div class="rma-display">' + "".join(map(_html_part, layout(value))) + "</div>"


def to_markdown(value: Displayable) -> str:
    """``value`` as Markdown, every provided text escaped for Markdown and HTML."""
    return "\n\n".join(map(_markdown_part, layout(value))) + "\n"


# --- HTML -------------------------------------------------------------------------------

_HTML_STYLES: dict[Style, str] = {
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


def _html_spans(spans: Sequence[Span]) -> str:
    return "".join(_HTML_STYLES[span.style].format(html.escape(span.text)) for span in spans)


def _html_part(part: Part) -> str:
    if isinstance(part, Line):
        return f"<div>{_html_spans(part.spans)}</div>"
    if isinstance(part, Block):
        return f"<div {_HTML_BLOCK}>{_html_spans((Span(part.text), *part.note))}</div>"
    title = f'<div style="margin-top:.4em"><strong>{html.escape(part.title)}</strong></div>'
    head = "".join(f"<th {_HTML_HEADER}>{html.escape(name)}</th>" for name in part.headers)
    body = "".join(
        "<tr>" + "".join(f"<td {_HTML_CELL}>{_html_spans(cell)}</td>" for cell in row) + "</tr>"
        for row in part.rows
    )
    table = f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead>'
    return f"{title if part.title else ''}{table}<tbody>{body}</tbody></table>"


# --- Markdown ---------------------------------------------------------------------------

_MARKDOWN_STYLES: dict[Style, str] = {
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


def _markdown_spans(spans: Sequence[Span], in_table: bool = False) -> str:
    return "".join(_markdown_span(span, in_table) for span in spans)


def _markdown_span(span: Span, in_table: bool) -> str:
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


def _markdown_part(part: Part) -> str:
    if isinstance(part, Line):
        return _markdown_spans(part.spans)
    if isinstance(part, Block):
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


register_renderer("html", to_html)
register_renderer("markdown", to_markdown)
