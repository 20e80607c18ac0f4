"""The Bedrock AgentCore REST client: harness CRUD on the control plane, streaming
``InvokeHarness`` and ``InvokeAgentRuntimeCommand`` on the data plane.

Both planes are signed with SigV4 under the signing name ``bedrock-agentcore``. Streaming
responses are read with ``requests`` and decoded by our own :class:`EventStreamDecoder` as
bytes arrive, so each frame reaches its callback live and the socket's read timeout works as
an inter-chunk idle timeout (a long turn is fine while bytes flow; silence is not).

Retries: GET and DELETE as usual; ``CreateHarness`` and ``StopRuntimeSession`` carry a
client token, which makes a repeat harmless, so they are retried like idempotent calls; the
invoke and command calls are not retried here at all (a command may have side effects, and
an invocation's retry policy lives with the conversation that knows whether the turn
completed).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import requests

from req_managed_agents import telemetry
from req_managed_agents._http import HttpClient, api_error, read_chunks
from req_managed_agents._json import dumps_utf8, excerpt, loads
from req_managed_agents._retry import RetryPolicy, parse_retry_after
from req_managed_agents.errors import APIError, ProviderStreamError, RateLimitError, StreamError
from req_managed_agents.eventstream import EventStreamDecoder, EventStreamMessage
from req_managed_agents.providers.agentcore._aws import AwsSigner
from req_managed_agents.providers.agentcore._converse import Envelope, envelope

__all__ = ["SESSION_HEADER", "AgentCoreClient", "CommandResult"]

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
LIST_PAGE_SIZE = 100
# How much of an error body that is not JSON an APIError keeps.
_ERROR_BODY_EXCERPT = 2000
_NO_RETRIES = RetryPolicy(max_retries=0)
_THROTTLING = frozenset({"ThrottlingException", "TooManyRequestsException"})
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


def _parse_aws_error(response: requests.Response) -> APIError:
    try:
        body: Any = loads(response.content)
    except ValueError:
        body = excerpt(response.content, _ERROR_BODY_EXCERPT)
    raw_type = response.headers.get("x-amzn-ErrorType") or (
        body.get("__type") if isinstance(body, dict) else None
    )
    error_type = None
    if isinstance(raw_type, str) and raw_type:
        error_type = raw_type.split(":", 1)[0].rsplit("#", 1)[-1]
    message = None
    if isinstance(body, dict):
        message = body.get("message") or body.get("Message")
    if not isinstance(message, str) or not message:
        text = body.strip() if isinstance(body, str) else ""
        message = text or response.reason or f"HTTP {response.status_code}"
    retry_after = parse_retry_after(response.headers)
    request_id = response.headers.get("x-amzn-RequestId") or response.headers.get(
        "x-amz-request-id"
    )
    if error_type in _THROTTLING:
        # AWS may throttle with a 400; it is still a rate limit to the caller.
        return RateLimitError(
            response.status_code,
            error_type,
            message,
            request_id,
            body=body,
            retry_after=retry_after,
        )
    return api_error(
        response.status_code, error_type, message, request_id, body=body, retry_after=retry_after
    )


def _segment(value: str) -> str:
    if not value or value in (".", ".."):
        raise ValueError(f"an id must be a non-empty string other than '.' or '..', got {value!r}")
    return quote(value, safe="")


class AgentCoreClient:
    """Thread-safe client for both AgentCore planes; built by ``BedrockAgentCore``."""

    def __init__(
        self,
        signer: AwsSigner,
        *,
        data_url: str,
        control_url: str,
        timeout: float,
        idle_timeout: float,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        self.idle_timeout = idle_timeout
        self._signer = signer
        policy = RetryPolicy(max_retries=max_retries)
        self._data = HttpClient(
            data_url,
            timeout=timeout,
            retry=policy,
            parse_error=_parse_aws_error,
            authenticate=signer,
            session=http,
        )
        self._runtime_arns: dict[str, str | None] = {}
        self._control = HttpClient(
            control_url,
            timeout=timeout,
            retry=policy,
            parse_error=_parse_aws_error,
            authenticate=signer,
            session=self._data.session,
        )

    @property
    def region(self) -> str:
        return self._signer.region

    @property
    def data_url(self) -> str:
        return self._data.base_url

    @property
    def control_url(self) -> str:
        return self._control.base_url

    def __repr__(self) -> str:
        return (
            f"AgentCoreClient(region={self.region!r}, data_url={self.data_url!r}, "
            f"control_url={self.control_url!r}, credentials=***)"
        )

    def close(self) -> None:
        """Release pooled connections."""
        self._data.close()

    # -- control plane --------------------------------------------------------------------

    def _control_json(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool = True,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        response = self._control.request(
            method,
            path,
            idempotent=idempotent,
            data=_json_bytes(body) if body is not None else None,
            params=params,
            headers={"content-type": "application/json"},
            deadline=deadline,
        )
        return _json_object(response, method, path)

    def create_harness(
        self, body: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``CreateHarness``; returns the ``harness`` object. A ``clientToken`` is added when
        absent, so a retried create cannot make a second harness. ``deadline`` (monotonic)
        bounds the call, retries included."""
        if not body.get("harnessName"):
            raise ValueError("a harness needs a harnessName")
        if not body.get("executionRoleArn"):
            raise ValueError("a harness needs an executionRoleArn")
        payload = {"clientToken": _client_token(), **body}
        created = self._control_json("POST", "/harnesses", body=payload, deadline=deadline)
        return _harness(created, "CreateHarness")

    def get_harness(self, harness_id: str, *, deadline: float | None = None) -> dict[str, Any]:
        """``GetHarness``; returns the ``harness`` object (with its ``status``). ``deadline``
        (monotonic) bounds the call, retries included."""
        path = f"/harnesses/{_segment(harness_id)}"
        return _harness(self._control_json("GET", path, deadline=deadline), "GetHarness")

    def list_harnesses(self) -> list[dict[str, Any]]:
        """Every harness summary, following ``nextToken`` to the last page."""
        return self._paged("/harnesses", "harnesses")

    def _paged(self, path: str, member: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"maxResults": LIST_PAGE_SIZE}
        seen_tokens: set[str] = set()
        while True:
            page = self._control_json("GET", path, params=params)
            found = page.get(member)
            if not isinstance(found, list):
                raise APIError(200, None, f"GET {path} returned no {member!r} list", None)
            items.extend(item for item in found if isinstance(item, dict))
            token = page.get("nextToken")
            if not isinstance(token, str) or not token or token in seen_tokens:
                return items
            seen_tokens.add(token)
            params = {**params, "nextToken": token}

    def update_harness(
        self, harness_id: str, body: Mapping[str, Any], *, deadline: float | None = None
    ) -> dict[str, Any]:
        """``UpdateHarness`` (a ``PATCH`` of the members given); returns the ``harness``
        object, usually ``UPDATING``. A ``clientToken`` is added when absent, so a retry is
        harmless."""
        payload = {"clientToken": _client_token(), **body}
        path = f"/harnesses/{_segment(harness_id)}"
        updated = self._control_json("PATCH", path, body=payload, deadline=deadline)
        return _harness(updated, "UpdateHarness")

    def list_harness_versions(self, harness_id: str) -> list[dict[str, Any]]:
        """Every version of a harness (``ListHarnessVersions``), following ``nextToken``."""
        return self._paged(f"/harnesses/{_segment(harness_id)}/versions", "harnessVersions")

    def delete_harness(self, harness_id: str, *, deadline: float | None = None) -> dict[str, Any]:
        """``DeleteHarness``; deletion is asynchronous (the harness goes ``DELETING``)."""
        path = f"/harnesses/{_segment(harness_id)}"
        return self._control_json("DELETE", path, deadline=deadline)

    def runtime_arn(self, harness_arn: str) -> str | None:
        """The ARN of the AgentCore runtime a harness runs on (from ``GetHarness``, asked
        once per harness); None if the harness names none."""
        if harness_arn not in self._runtime_arns:
            harness = self.get_harness(harness_arn.rsplit("/", 1)[-1])
            environment = harness.get("environment")
            runtime = (
                environment.get("agentCoreRuntimeEnvironment")
                if isinstance(environment, Mapping)
                else None
            )
            arn = runtime.get("agentRuntimeArn") if isinstance(runtime, Mapping) else None
            self._runtime_arns[harness_arn] = arn if isinstance(arn, str) and arn else None
        return self._runtime_arns[harness_arn]

    # -- data plane -----------------------------------------------------------------------

    def stop_runtime_session(
        self, runtime_arn: str, runtime_session_id: str, *, qualifier: str | None = None
    ) -> dict[str, Any]:
        """``StopRuntimeSession``: end a runtime session and whatever it is doing (its
        conversation goes with it)."""
        response = self._data.request(
            "POST",
            f"/runtimes/{_segment(runtime_arn)}/stopruntimesession",
            idempotent=True,
            params={"qualifier": qualifier} if qualifier else None,
            data=_json_bytes({"clientToken": _client_token()}),
            headers={"content-type": "application/json", SESSION_HEADER: runtime_session_id},
            telemetry_metadata={
                "session_id": runtime_session_id,
                "operation": "StopRuntimeSession",
            },
        )
        return _json_object(response, "POST", "StopRuntimeSession")

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
    ) -> tuple[requests.Response, float]:
        idle = idle_timeout if idle_timeout is not None else self.idle_timeout
        response = self._data.request(
            "POST",
            path,
            idempotent=False,
            params=params,
            data=_json_bytes(body),
            headers={
                "content-type": "application/json",
                "accept": "application/vnd.amazon.eventstream",
                SESSION_HEADER: runtime_session_id,
            },
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
    ) -> list[Envelope]:
        """One ``InvokeHarness`` call: stream its Converse events to ``on_event`` as they
        arrive and return them all. Exception and error frames raise
        :class:`ProviderStreamError`; silence longer than ``idle_timeout`` raises
        :class:`IdleTimeoutError`. ``on_response`` receives the open response, so another
        thread can close it."""
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
        )
        events: list[Envelope] = []
        for message in _frames(response, idle, meta):
            event = envelope(message)
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
    ) -> CommandResult:
        """Run a shell command in the runtime session (no model, no tokens). stdout and
        stderr pieces reach ``on_output(stream, text)`` in order as they arrive."""
        if not command:
            raise ValueError("a command must not be empty")
        body: dict[str, Any] = {"command": command}
        if timeout_seconds is not None:
            body["timeout"] = timeout_seconds
            # A quiet command may legitimately run its whole timeout: do not give up sooner.
            idle_timeout = max(idle_timeout or self.idle_timeout, timeout_seconds + 30.0)
        meta = {"session_id": runtime_session_id, "operation": "InvokeAgentRuntimeCommand"}
        response, idle = self._open_stream(
            f"/runtimes/{_segment(runtime_arn)}/commands",
            body=body,
            runtime_session_id=runtime_session_id,
            params={"qualifier": qualifier} if qualifier else None,
            idle_timeout=idle_timeout,
            cancelled=cancelled,
            on_response=None,
            telemetry_metadata=meta,
        )
        output: dict[str, list[str]] = {"stdout": [], "stderr": []}
        exit_code: int | None = None
        status: str | None = None
        for message in _frames(response, idle, meta):
            event = envelope(message)
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
) -> Iterator[EventStreamMessage]:
    """Decode a streaming body frame by frame; closes the response in the end."""
    decoder = EventStreamDecoder()
    telemetry.emit("stream.connected", {}, meta)
    try:
        for chunk in read_chunks(response, idle_timeout):
            yield from decoder.feed(chunk)
        decoder.close()
        telemetry.emit("stream.done", {}, meta)
    except (StreamError, ProviderStreamError) as exc:
        telemetry.emit("stream.error", {}, {**meta, "reason": str(exc)})
        raise
    finally:
        response.close()


def _json_bytes(body: Mapping[str, Any]) -> bytes:
    """Serialise once: SigV4 signs exactly these bytes."""
    return dumps_utf8(body)


def _json_object(response: requests.Response, method: str, path: str) -> dict[str, Any]:
    if not response.content:
        return {}
    request_id = response.headers.get("x-amzn-RequestId")
    try:
        data = loads(response.content)
    except ValueError as exc:
        raise APIError(
            response.status_code,
            None,
            f"expected JSON from {method} {path} ({exc}), got {excerpt(response.content)!r}",
            request_id,
        ) from None
    if not isinstance(data, dict):
        raise APIError(
            response.status_code, None, f"expected a JSON object from {method} {path}", request_id
        )
    return data


def _harness(body: dict[str, Any], operation: str) -> dict[str, Any]:
    harness = body.get("harness")
    if not isinstance(harness, dict) or not harness.get("arn") or not harness.get("harnessId"):
        raise APIError(
            200,
            None,
            f"{operation} returned no harness with an arn and a harnessId",
            None,
            body=body,
        )
    return harness


def _client_token() -> str:
    """An idempotency token in the API's format (33+ alphanumerics and dashes)."""
    return f"rma-{uuid.uuid4().hex}"
