"""The data plane: streaming ``InvokeHarness``, ``InvokeAgentRuntimeCommand`` and
``StopRuntimeSession``.

Streaming responses are read with ``requests`` and decoded by our own
:class:`~req_managed_agents.eventstream.EventStreamDecoder` as bytes arrive, so each frame
reaches its callback live and the socket's read timeout works as an inter-chunk idle timeout
(a long turn is fine while bytes flow; silence is not).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Literal

import requests

from req_managed_agents import telemetry
from req_managed_agents.errors import ProviderStreamError, StreamError
from req_managed_agents.eventstream import EventStreamDecoder
from req_managed_agents.providers.agentcore._converse import Envelope, envelope
from req_managed_agents.providers.agentcore.api._core import (
    REQUESTS,
    ClientCore,
    client_token,
    json_bytes,
    segment,
)
from req_managed_agents.transport._http import read_chunks
from req_managed_agents.transport._tracing import trace_headers

__all__ = ["SESSION_HEADER", "CommandResult", "RuntimeAPI"]

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
USER_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
# The W3C trace headers InvokeHarness and InvokeAgentRuntimeCommand take, and their longest.
_TRACE_HEADER_LIMITS = {"traceparent": 1024, "tracestate": 512, "baggage": 8192}
# The invocation stream is retried by the conversation, which knows whether a turn committed.
_NO_RETRIES = REQUESTS.but(max_retries=0)
_OUTPUT_STREAMS: tuple[Literal["stdout", "stderr"], ...] = ("stdout", "stderr")

OutputCallback = Callable[[Literal["stdout", "stderr"], str], None]
ResponseCallback = Callable[[requests.Response], None]


@dataclass(frozen=True)
class CommandResult:
    """What a command run in the agent's runtime session produced.

    A non-zero ``exit_code`` is a result, not an error; ``status`` is ``COMPLETED`` or
    ``TIMED_OUT``; ``exit_code`` is ``None`` if the stream ended without a final status.
    """

    exit_code: int | None
    status: str | None
    stdout: str
    stderr: str


class RuntimeAPI(ClientCore):
    """The data plane's streaming calls."""

    def stop_runtime_session(
        self, runtime_arn: str, runtime_session_id: str, *, qualifier: str | None = None
    ) -> dict[str, Any]:
        """``StopRuntimeSession``: end a runtime session and whatever it is doing (its
        conversation goes with it)."""
        return self._json(
            "POST",
            f"/runtimes/{segment(runtime_arn)}/stopruntimesession",
            idempotent=True,
            data=json_bytes({"clientToken": client_token()}),
            params={"qualifier": qualifier} if qualifier else None,
            headers={SESSION_HEADER: runtime_session_id},
            telemetry_metadata={
                "session_id": runtime_session_id,
                "operation": "StopRuntimeSession",
            },
            plane=self._data,
            required=(),
        )

    def _open_stream(
        self,
        path: str,
        *,
        body: Mapping[str, Any],
        runtime_session_id: str,
        params: Mapping[str, Any] | None,
        idle_timeout: float | None,
        cancelled: threading.Event | None,
        on_response: ResponseCallback | None,
        telemetry_metadata: Mapping[str, Any],
        runtime_user_id: str | None,
    ) -> tuple[requests.Response, float]:
        idle = idle_timeout if idle_timeout is not None else self.idle_timeout
        headers = {
            "accept": "application/vnd.amazon.eventstream",
            SESSION_HEADER: runtime_session_id,
        }
        if runtime_user_id:
            headers[USER_HEADER] = runtime_user_id
        for name, value in trace_headers({"session_id": runtime_session_id}).items():
            if len(value) <= _TRACE_HEADER_LIMITS.get(name.lower(), -1):
                headers[name.lower()] = value
        response = self._data.request(
            "POST",
            path,
            idempotent=False,
            params=params,
            data=json_bytes(body),
            headers=headers,
            stream=True,
            read_timeout=idle,
            cancelled=cancelled,
            retry=_NO_RETRIES,
            telemetry_metadata=telemetry_metadata,
        )
        if on_response is not None:
            on_response(response)
        return response, idle

    def invoke_harness(
        self,
        harness_arn: str,
        runtime_session_id: str,
        body: Mapping[str, Any],
        *,
        on_event: Callable[[Envelope], None] | None = None,
        idle_timeout: float | None = None,
        qualifier: str | None = None,
        cancelled: threading.Event | None = None,
        on_response: ResponseCallback | None = None,
        telemetry_metadata: Mapping[str, Any] | None = None,
        runtime_user_id: str | None = None,
    ) -> list[Envelope]:
        """One ``InvokeHarness`` call: stream its Converse events to ``on_event`` as they
        arrive and return them all. Exception and error frames raise
        :class:`ProviderStreamError`; silence longer than ``idle_timeout`` raises
        :class:`IdleTimeoutError`. ``on_response`` receives the open response, so another
        thread can close it. ``runtime_user_id`` is sent as the runtime user header; with
        ``otel.instrument()`` active, the W3C trace headers of the session's span go too."""
        params = {"harnessArn": harness_arn, **({"qualifier": qualifier} if qualifier else {})}
        meta = {
            **(telemetry_metadata or {}),
            "session_id": runtime_session_id,
            "operation": "InvokeHarness",
        }
        response, idle = self._open_stream(
            "/harnesses/invoke",
            body=body,
            runtime_session_id=runtime_session_id,
            params=params,
            idle_timeout=idle_timeout,
            cancelled=cancelled,
            on_response=on_response,
            telemetry_metadata=meta,
            runtime_user_id=runtime_user_id,
        )
        events: list[Envelope] = []
        with closing(_frames(response, idle, meta)) as frames:
            for event in frames:
                telemetry.emit("stream.event", {}, {**meta, "type": next(iter(event), None)})
                events.append(event)
                if on_event is not None:
                    on_event(event)
        return events

    def invoke_agent_runtime_command(
        self,
        runtime_arn: str,
        runtime_session_id: str,
        command: str,
        *,
        timeout_seconds: int | None = None,
        on_output: OutputCallback | None = None,
        idle_timeout: float | None = None,
        qualifier: str | None = None,
        cancelled: threading.Event | None = None,
        runtime_user_id: str | None = None,
    ) -> CommandResult:
        """Run a shell command in the runtime session (no model, no tokens). stdout and
        stderr pieces reach ``on_output(stream, text)`` in order as they arrive.
        ``runtime_arn`` is the agent runtime's ARN (``AgentCoreClient.runtime_arn(harness)``
        finds a harness's), not the harness's."""
        if not command:
            raise ValueError("a command must not be empty")
        body: dict[str, Any] = {"command": command}
        if timeout_seconds is not None:
            body["timeout"] = timeout_seconds
            # A quiet command may legitimately run its whole timeout: do not give up sooner.
            idle_timeout = max(idle_timeout or self.idle_timeout, timeout_seconds + 30.0)
        meta = {"session_id": runtime_session_id, "operation": "InvokeAgentRuntimeCommand"}
        response, idle = self._open_stream(
            f"/runtimes/{segment(runtime_arn)}/commands",
            body=body,
            runtime_session_id=runtime_session_id,
            params={"qualifier": qualifier} if qualifier else None,
            idle_timeout=idle_timeout,
            cancelled=cancelled,
            on_response=None,
            telemetry_metadata=meta,
            runtime_user_id=runtime_user_id,
        )
        output: dict[str, list[str]] = {"stdout": [], "stderr": []}
        exit_code: int | None = None
        status: str | None = None
        with closing(_frames(response, idle, meta)) as frames:
            for event in frames:
                chunk = event.get("chunk", event)
                if not isinstance(chunk, Mapping):
                    continue
                delta = chunk.get("contentDelta")
                if isinstance(delta, Mapping):
                    for stream in _OUTPUT_STREAMS:
                        text = delta.get(stream)
                        if isinstance(text, str) and text:
                            output[stream].append(text)
                            if on_output is not None:
                                on_output(stream, text)
                stop = chunk.get("contentStop")
                if isinstance(stop, Mapping):
                    code = stop.get("exitCode")
                    exit_code = code if isinstance(code, int) else None
                    status = str(stop["status"]) if stop.get("status") is not None else None
        return CommandResult(
            exit_code, status, "".join(output["stdout"]), "".join(output["stderr"])
        )


def _frames(
    response: requests.Response, idle_timeout: float, meta: Mapping[str, Any]
) -> Generator[Envelope, None, None]:
    """Decode a streaming body frame by frame into event envelopes (an exception frame
    raises here, so it is reported as the stream's error); closes the response in the end.
    Iterate it under :func:`contextlib.closing`, so that closes at once however the
    consumer stops."""
    decoder = EventStreamDecoder()
    telemetry.emit("stream.connected", {}, meta)
    try:
        for chunk in read_chunks(response, idle_timeout):
            for message in decoder.feed(chunk):
                yield envelope(message)
        decoder.close()
        telemetry.emit("stream.done", {}, meta)
    except (StreamError, ProviderStreamError) as exc:
        telemetry.emit("stream.error", {}, {**meta, "reason": str(exc)})
        raise
    finally:
        response.close()
