"""How the values show themselves: a bounded ``repr``, and the hook to the notebook renderers.

The value types know that a notebook can draw them, not how: their ``_repr_html_`` and
``_repr_markdown_`` ask the renderers :mod:`req_managed_agents.display` registers here when
the package is imported, so the vocabulary never imports display code (which imports the
vocabulary). Before any renderer is registered they return ``None``, which Jupyter reads as
"no such representation" and falls back to the ``repr``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

__all__ = ["Shown", "register_renderer", "short_repr"]

REPR_TEXT_LIMIT = 40
"""Characters shown of a string field in :func:`short_repr`."""
REPR_VALUE_LIMIT = 48
"""Characters shown of any other field's ``repr`` in :func:`short_repr`."""

Format = Literal["html", "markdown"]
_renderers: dict[Format, Callable[[Any], str]] = {}


def register_renderer(format: Format, renderer: Callable[[Any], str]) -> None:
    """Make ``renderer`` draw every :class:`Shown` value in ``format``."""
    _renderers[format] = renderer


class Shown:
    """Base of the values a notebook draws as a table or a summary."""

    __slots__ = ()

    def _repr_html_(self) -> str | None:
        renderer = _renderers.get("html")
        return renderer(self) if renderer is not None else None

    def _repr_markdown_(self) -> str | None:
        renderer = _renderers.get("markdown")
        return renderer(self) if renderer is not None else None


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
