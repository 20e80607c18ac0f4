"""OpenTelemetry GenAI spans for sessions and tool calls (the ``[otel]`` extra).

::

    from req_managed_agents import otel

    detach = otel.instrument()          # uses the global tracer provider
    ...
    detach()                            # stop producing spans

Every driven run becomes an ``invoke_agent`` span (kind CLIENT: the agent runs at the
provider) and every local tool call an ``execute_tool {name}`` span inside it, with the GenAI
semantic-convention attributes: ``gen_ai.operation.name``, ``gen_ai.provider.name``
(``anthropic`` or ``aws.bedrock``), ``gen_ai.conversation.id`` (the session id),
``gen_ai.usage.*`` (input tokens include cache reads and writes, as the conventions ask for
Anthropic), ``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``/``call.id``/``type`` and
``error.type``. No prompt, tool input or tool output is recorded. The bridge listens to
:mod:`req_managed_agents.telemetry`, so it costs nothing until a run emits events.

While instrumented, AgentCore invocations and runtime commands carry the W3C trace headers
(``traceparent``, and ``tracestate``/``baggage`` when set) of their run's ``invoke_agent``
span, or of the current span outside a run, through the global propagator; so the service's
own spans join the run's trace.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from req_managed_agents import __version__, telemetry
from req_managed_agents.errors import MissingDependencyError
from req_managed_agents.transport._tracing import set_source

__all__ = ["instrument"]

_PROVIDER_NAMES = {
    "claude": "anthropic",
    "claude-bedrock": "aws.bedrock",
    "agentcore": "aws.bedrock",
}


def instrument(tracer_provider: Any = None) -> telemetry.Detach:
    """Start producing spans on ``tracer_provider`` (default: the global one)."""
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise MissingDependencyError(
            "OpenTelemetry spans need opentelemetry-api: pip install 'req-managed-agents[otel]'",
            extra="otel",
        ) from exc
    from opentelemetry import propagate

    tracer = trace.get_tracer("req_managed_agents", __version__, tracer_provider=tracer_provider)
    bridge = _Bridge(tracer, trace, propagate)
    set_source(bridge.trace_headers)
    unsubscribe = telemetry.attach(bridge)

    def detach() -> None:
        """Stop the spans, and the trace headers unless a later ``instrument`` took over."""
        unsubscribe()
        set_source(None, only=bridge.trace_headers)

    return telemetry.Detach(detach)


class _Bridge:
    """Turns start/stop telemetry pairs into spans; spans in flight are keyed by id."""

    def __init__(self, tracer: Any, trace: Any, propagate: Any) -> None:
        self._tracer = tracer
        self._trace = trace
        self._propagate = propagate
        self._lock = threading.Lock()
        self._sessions: dict[str, Any] = {}
        self._tools: dict[str, Any] = {}

    def trace_headers(self, metadata: Mapping[str, Any]) -> dict[str, str]:
        """The W3C headers of the run's span (the current context's outside a run)."""
        with self._lock:
            span = self._sessions.get(str(metadata.get("session_id")))
        context = None if span is None else self._trace.set_span_in_context(span)
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier, context=context)
        return carrier

    def __call__(self, name: str, measurements: dict[str, Any], metadata: dict[str, Any]) -> None:
        event = name[len(telemetry.PREFIX) + 1 :]
        handler = getattr(self, "_" + event.replace(".", "_"), None)
        if handler is not None:
            handler(measurements, metadata)

    def _session_start(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        session_id = metadata.get("session_id")
        if not session_id:
            return
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": _provider(metadata),
            "gen_ai.conversation.id": str(session_id),
        }
        span = self._tracer.start_span(
            "invoke_agent", kind=self._trace.SpanKind.CLIENT, attributes=attributes
        )
        with self._lock:
            self._sessions[str(session_id)] = span

    def _session_turn(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        span = self._sessions.get(str(metadata.get("session_id")))
        if span is not None:
            span.add_event(
                "gen_ai.turn",
                {
                    "turn": int(metadata.get("turn") or 0),
                    "terminal": str(metadata.get("terminal")),
                    "gen_ai.usage.output_tokens": int(measurements.get("output_tokens") or 0),
                },
            )

    def _session_stop(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        with self._lock:
            span = self._sessions.pop(str(metadata.get("session_id")), None)
        if span is None:
            return
        if "input_tokens" in measurements:
            cache_read = int(measurements.get("cache_read_input_tokens") or 0)
            cache_write = int(measurements.get("cache_creation_input_tokens") or 0)
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": int(measurements["input_tokens"])
                    + cache_read
                    + cache_write,
                    "gen_ai.usage.output_tokens": int(measurements.get("output_tokens") or 0),
                    "gen_ai.usage.cache_read.input_tokens": cache_read,
                    "gen_ai.usage.cache_creation.input_tokens": cache_write,
                }
            )
        if metadata.get("terminal"):
            span.set_attribute("gen_ai.response.finish_reasons", [str(metadata["terminal"])])
        if metadata.get("error_type"):
            self._fail(span, str(metadata["error_type"]))
        span.end()

    def _tool_start(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        tool_use_id = metadata.get("tool_use_id")
        if not tool_use_id:
            return
        parent = self._sessions.get(str(metadata.get("session_id")))
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        tool = str(metadata.get("tool", ""))
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": str(tool_use_id),
            "gen_ai.tool.type": "function",
        }
        if metadata.get("session_id"):
            attributes["gen_ai.conversation.id"] = str(metadata["session_id"])
        span = self._tracer.start_span(
            f"execute_tool {tool}",
            context=context,
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        with self._lock:
            self._tools[str(tool_use_id)] = span

    def _end_tool(self, metadata: Mapping[str, Any], error_type: str | None) -> None:
        with self._lock:
            span = self._tools.pop(str(metadata.get("tool_use_id")), None)
        if span is None:
            return
        if error_type:
            self._fail(span, error_type)
        span.end()

    def _tool_stop(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        self._end_tool(metadata, "tool_error" if metadata.get("is_error") else None)

    def _tool_exception(self, measurements: Mapping[str, Any], metadata: Mapping[str, Any]) -> None:
        self._end_tool(metadata, str(metadata.get("kind") or "exception"))

    def _fail(self, span: Any, error_type: str) -> None:
        span.set_attribute("error.type", error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error_type))


def _provider(metadata: Mapping[str, Any]) -> str:
    provider = str(metadata.get("provider") or "")
    return _PROVIDER_NAMES.get(provider, provider or "unknown")
