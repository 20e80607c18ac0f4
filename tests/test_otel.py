"""The OpenTelemetry bridge: GenAI spans for a real session against the Claude emulator."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra and opentelemetry-sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from req_managed_agents import Tools, otel, run_to_completion
from req_managed_agents.testing import ClaudeEmulator, Turn, call

_PROVIDERS: dict[int, TracerProvider] = {}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _PROVIDERS[id(exporter)] = provider
    detach = otel.instrument(provider)
    yield exporter
    detach()
    del _PROVIDERS[id(exporter)]


def exporter_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    """The tracer provider the fixture's exporter is attached to."""
    return _PROVIDERS[id(exporter)]


def run_session(secret_argument: str = "s3cret-input") -> Any:
    tools = Tools()

    @tools.tool
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found {query}"

    @tools.tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("nope")

    script = [
        Turn(tool_calls=[call("lookup", query=secret_argument), call("broken")], usage=(100, 20)),
        Turn(text="done", usage=(50, 10)),
    ]
    with (
        ClaudeEmulator(script) as emulator,
        emulator.provider() as provider,
    ):
        return run_to_completion(
            provider,
            "go",
            handler=tools,
            agent_id=emulator.add_agent(),
            environment_id=emulator.add_environment(),
            timeout=20,
        )


def test_a_run_is_an_invoke_agent_span_with_usage_and_finish_reason(
    exporter: InMemorySpanExporter,
) -> None:
    result = run_session()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    agent = spans["invoke_agent"]
    assert agent.kind is SpanKind.CLIENT
    assert agent.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.provider.name"] == "anthropic"
    assert agent.attributes["gen_ai.conversation.id"] == result.session_id
    assert agent.attributes["gen_ai.usage.input_tokens"] == 150
    assert agent.attributes["gen_ai.usage.output_tokens"] == 30
    assert tuple(agent.attributes["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert len(agent.events) == 2


def test_tools_are_execute_tool_spans_inside_the_run(exporter: InMemorySpanExporter) -> None:
    run_session()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    agent = spans["invoke_agent"]
    lookup, broken = spans["execute_tool lookup"], spans["execute_tool broken"]
    for span in (lookup, broken):
        assert span.parent is not None
        assert span.parent.span_id == agent.context.span_id
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.type"] == "function"
    assert lookup.status.status_code is StatusCode.UNSET
    assert broken.status.status_code is StatusCode.ERROR
    assert broken.attributes is not None
    assert broken.attributes["error.type"] == "RuntimeError"


def test_no_content_is_recorded(exporter: InMemorySpanExporter) -> None:
    run_session(secret_argument="private-customer-detail")
    for span in exporter.get_finished_spans():
        text = repr(span.attributes) + repr([event.attributes for event in span.events])
        assert "private-customer-detail" not in text


def test_detaching_stops_the_spans() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(provider)()
    run_session()
    assert exporter.get_finished_spans() == ()


def test_without_opentelemetry_the_error_names_the_extra() -> None:
    code = """
import sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("blocked for the test")

sys.meta_path.insert(0, Blocker())
from req_managed_agents import otel
from req_managed_agents.errors import MissingDependencyError
try:
    otel.instrument()
except MissingDependencyError as error:
    print(error.extra, "|", error)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.startswith("otel | ")
    assert "pip install 'req-managed-agents[otel]'" in result.stdout


def test_a_run_inside_a_span_belongs_to_that_trace(exporter: InMemorySpanExporter) -> None:
    tracer = exporter_provider(exporter).get_tracer("caller")
    with tracer.start_as_current_span("request") as caller:
        run_session()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    agent = spans["invoke_agent"]
    assert agent.parent is not None
    assert agent.parent.span_id == caller.get_span_context().span_id
    assert agent.context.trace_id == caller.get_span_context().trace_id
    tool = spans["execute_tool lookup"]
    assert tool.context.trace_id == caller.get_span_context().trace_id


# --- trace context to AgentCore -------------------------------------------------------------


def test_agentcore_invocations_carry_the_runs_traceparent(
    exporter: InMemorySpanExporter,
) -> None:
    """The service's spans join the run's trace: each InvokeHarness carries the W3C
    ``traceparent`` of the run's ``invoke_agent`` span."""
    pytest.importorskip("botocore")
    from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn
    from req_managed_agents.testing import call as converse_call

    script = [
        ConverseTurn(tool_calls=[converse_call("lookup", query="x")]),
        ConverseTurn(text="done"),
    ]
    tools = Tools()

    @tools.tool
    def lookup(query: str) -> str:
        """Look something up."""
        return query

    with AgentCoreEmulator() as emulator, emulator.provider(timeout=5) as provider:
        arn = emulator.add_harness(script, name="traced")
        result = run_to_completion(provider, "hi", handler=tools, harness_arn=arn)
        invocations = [r for r in emulator.requests if r.path == "/harnesses/invoke"]
    assert result.text == "done"
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    context = span.get_span_context()
    flags = int(context.trace_flags)
    expected = f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    assert [r.headers.get("traceparent") for r in invocations] == [expected, expected]


def test_without_instrumentation_no_trace_headers_are_sent() -> None:
    pytest.importorskip("botocore")
    from req_managed_agents.testing import AgentCoreEmulator

    with AgentCoreEmulator() as emulator, emulator.provider(timeout=5) as provider:
        arn = emulator.add_harness(name="untraced")
        run_to_completion(provider, "hi", handler=Tools(), harness_arn=arn)
        (invocation,) = [r for r in emulator.requests if r.path == "/harnesses/invoke"]
    assert "traceparent" not in invocation.headers
