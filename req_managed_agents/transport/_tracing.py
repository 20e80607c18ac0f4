"""Where W3C trace headers for an outgoing request come from.

The transport cannot know about OpenTelemetry (an optional extra), so ``otel.instrument()``
registers a source here and its detach removes it; without one, no headers are added. A
provider asks for the headers of the run a request belongs to (``metadata`` carries its
``session_id``), so the service's spans join that run's ``invoke_agent`` span.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from req_managed_agents._redact import get_logger

__all__ = ["TraceSource", "set_source", "trace_headers"]

TraceSource = Callable[[Mapping[str, Any]], Mapping[str, str]]
_source: TraceSource | None = None
_log = get_logger(__name__)


def set_source(source: TraceSource | None, *, only: TraceSource | None = None) -> None:
    """Install the one source of trace headers (None removes it); with ``only``, change it
    only while that is the installed one."""
    global _source
    if only is None or _source == only:
        _source = source


def trace_headers(metadata: Mapping[str, Any]) -> dict[str, str]:
    """``traceparent`` (and ``tracestate``, ``baggage``) for a request of the run that
    ``metadata`` describes; empty without a source. A failing source never fails a request."""
    source = _source
    if source is None:
        return {}
    try:
        return {str(k): str(v) for k, v in source(metadata).items()}
    except Exception as exc:  # a tracing bug must not break the caller's run
        _log.warning("trace headers could not be made (%s); sending none", exc)
        return {}
