"""The AgentCore emulator's wire vocabulary: AWS rest-json errors and event-stream frames.

Errors are answered in AWS's rest-json form (``x-amzn-ErrorType`` and a ``message``; a
``ValidationException`` also names its reason and the failing fields, worded as AWS words
them). Streaming responses (InvokeHarness, InvokeAgentRuntimeCommand) are
``application/vnd.amazon.eventstream`` bodies of ``event``, ``exception`` and ``error``
frames (and, as a fault, frames whose CRC does not match).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from req_managed_agents.eventstream import encode_message

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from req_managed_agents.testing.server import ChunkedStream, RecordedRequest

_SESSION_HEADER = "x-amzn-bedrock-agentcore-runtime-session-id"
_EVENT_STREAM = "application/vnd.amazon.eventstream"

# The error name each status implies when the emulator (or a fault) does not name one.
_ERROR_NAMES = {
    400: "ValidationException",
    402: "ServiceQuotaExceededException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    409: "ConflictException",
    424: "RuntimeClientError",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


class _AwsError(Exception):
    """Raised by a route to answer with an AWS rest-json error."""

    def __init__(
        self,
        status: int,
        name: str,
        message: str,
        *,
        reason: str = "FieldValidationFailed",
        fields: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.name = name
        self.message = message
        self.reason = reason
        self.fields = tuple(fields)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"message": self.message}
        if self.name == "ValidationException":
            body["reason"] = self.reason
            if self.fields:
                body["fieldList"] = [{"name": n, "message": m} for n, m in self.fields]
        return body


def _invalid(fields: Sequence[tuple[str, str]]) -> _AwsError:
    """A ValidationException naming each (path, problem), worded the way AWS words them."""
    count = len(fields)
    details = "; ".join(
        f"Value at '{path}' failed to satisfy constraint: {m}" for path, m in fields
    )
    message = f"{count} validation error{'s' if count > 1 else ''} detected: {details}"
    return _AwsError(400, "ValidationException", message, fields=fields)


def _unparseable(message: str) -> _AwsError:
    return _AwsError(400, "ValidationException", message, reason="CannotParse")


def _json_object(request: RecordedRequest) -> dict[str, Any]:
    if not request.raw_body:
        raise _unparseable("The request body is empty; a JSON object is required")
    if not isinstance(request.body, dict):
        raise _unparseable("The request body is not a JSON object")
    return request.body


# --- frames ---------------------------------------------------------------------------------


def _event(event_type: str, payload: Mapping[str, Any]) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload, separators=(",", ":")).encode())


def _exception(exception_type: str, message: str) -> bytes:
    payload: dict[str, str] = {"message": message}
    if exception_type == "validationException":
        payload["reason"] = "FieldValidationFailed"  # required by the shape
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps(payload).encode())


def _error(code: str, message: str) -> bytes:
    headers = {":error-code": code, ":error-message": message, ":message-type": "error"}
    return encode_message(headers)


def _bad_crc(frame: bytes) -> bytes:
    """``frame`` with its message CRC (the last four bytes) inverted: intact lengths and
    prelude, so a decoder reads the whole frame before it must reject it."""
    return frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])


def _write_last(stream: ChunkedStream, frame: bytes) -> None:
    """Write a stream's last frame, then end its body properly (unless it is already over)."""
    if stream.write(frame):
        stream.finish()
