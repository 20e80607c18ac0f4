"""A local AWS Bedrock AgentCore Harness service whose harnesses play scripts, not a model.

AWS serves the harness API from two hosts, so the emulator listens on two ports:
``data_url`` answers InvokeHarness and InvokeAgentRuntimeCommand, ``control_url`` the harness
CRUD of the control plane. Both recompute every request's SigV4 signature (signing name
``bedrock-agentcore`` for both) from the emulator's test credentials, check request bodies
against the botocore service models and answer errors in AWS's rest-json form, so a client's
signing and serialization are under test as much as its handling of the responses.

Choices where the service is undocumented or timing-dependent, made to keep tests
deterministic:

* a harness created over the control plane moves one step along its status script on each
  GetHarness (default ``CREATING`` then ``READY``), and only a ``READY`` harness can be
  invoked; a deleted one stays ``DELETING`` for ``delete_after`` observations, then is gone;
* conversation mistakes that the model provider rejects (results without the echoed
  ``toolUse`` blocks, duplicate ids) come back as ``runtimeClientError`` exception frames in
  a 200 stream, as the live service sent them; malformed requests are HTTP 400s;
* the echoed ``toolUse`` blocks must repeat every tool call of the turn exactly (id, name
  and input), which is stricter than the service but catches a client that mis-assembles
  input fragments or keys tool blocks by index;
* only an invocation whose stream was written in full, without an injected fault, advances
  the conversation: a client's retry of a truncated or failed invocation replays the turn;
* a command's stdout is streamed before its stderr, since the runner returns them apart.

botocore is imported when an emulator is created, never when this module is imported.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shutil
import signal
import string
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from req_managed_agents.eventstream import encode_message
from req_managed_agents.testing._script import ToolCall
from req_managed_agents.testing._server import (
    ChunkedStream,
    Exchange,
    LoopbackEmulator,
    RecordedRequest,
    RequestFault,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from typing import Callable

__all__ = [
    "AgentCoreEmulator",
    "CommandOutput",
    "CommandRecord",
    "ConverseTurn",
    "Invocation",
]

logger = logging.getLogger(__name__)

_SIGNING_NAME = "bedrock-agentcore"
_SESSION_HEADER = "x-amzn-bedrock-agentcore-runtime-session-id"
_EVENT_STREAM = "application/vnd.amazon.eventstream"
_AMZ_DATE = "%Y%m%dT%H%M%SZ"
_MAX_CLOCK_SKEW = timedelta(minutes=15)
_TOKEN_INVALID = "The security token included in the request is invalid."

# The service wants runtime session ids of at least 33 characters; older models say 1.
_MIN_SESSION_ID = 33
_MAX_COMMAND_TIMEOUT = 3600  # seconds; the model documents it but does not constrain it
_DEFAULT_COMMAND_TIMEOUT = 300.0
_OUTPUT_PIECE = 8 * 1024  # bytes of UTF-8 per contentDelta
_TEXT_PIECES = 3  # deltas a text or a tool input is split into (fewer when it is shorter)
_DEFAULT_PAGE = 10
_MAX_PAGE = 100
_DEFAULT_STATUSES = ("CREATING", "READY")
_HARNESS_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,39}")
_ALNUM = string.ascii_letters + string.digits
_DEFAULT_MODEL = {"bedrockModelConfig": {"modelId": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}
_MODEL_REJECTED = "Received a model error: ValidationException: "

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


@dataclass(frozen=True)
class ConverseTurn:
    """One scripted harness turn, played by the next invocation of a conversation.

    ``text`` may be a function of the texts that triggered the turn: the user message's text,
    or each tool result's text in call order. ``tool_calls`` are handed back to the client
    (return of control). ``usage`` is ``(input_tokens, output_tokens)``. ``stop_reason``
    overrides the ending (default ``tool_use`` with tool calls, else ``end_turn``).
    ``reuse_block_index`` gives every tool block the same ``contentBlockIndex``, as the live
    service once did. ``delay`` is the pause, in seconds, before each frame: a slow turn
    keeps its connection busy rather than silent.
    """

    text: str | Callable[[list[str]], str] = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (10, 5)
    stop_reason: str | None = None
    reuse_block_index: bool = False
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError("delay must not be negative")
        calls = tuple(self.tool_calls)
        for tool_call in calls:
            json.dumps(dict(tool_call.input))  # a non-JSON input fails here, not mid-stream
        object.__setattr__(self, "tool_calls", calls)


_SCRIPT_FINISHED = ConverseTurn(text="(script finished)")


@dataclass(frozen=True)
class Invocation:
    """A well-formed InvokeHarness request, as received (``body`` is its decoded JSON)."""

    harness_arn: str
    runtime_session_id: str
    body: dict[str, Any]


@dataclass(frozen=True)
class CommandRecord:
    """A well-formed InvokeAgentRuntimeCommand request; ``arn`` is the one in its path."""

    arn: str
    runtime_session_id: str
    command: str
    timeout: int | None


@dataclass(frozen=True)
class CommandOutput:
    """What a command runner returns; ``timed_out`` reports ``TIMED_OUT`` to the client."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    timed_out: bool = False


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


def _signature_error(name: str, message: str) -> _AwsError:
    return _AwsError(403, name, message)


def _harness_not_found(which: str) -> _AwsError:
    return _AwsError(404, "ResourceNotFoundException", f"Harness not found: {which}")


# --- request validation against the botocore models -----------------------------------------


@functools.cache
def _service_model(name: str) -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model(name)


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str] | None:
    """The model's (Java) pattern compiled for Python; None for the few Python cannot read."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _join(path: str, name: object) -> str:
    return f"{path}.{name}" if path else str(name)


def _check_size(
    shape: Any, size: float, path: str, what: str, errors: list[tuple[str, str]]
) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        errors.append((path, f"Member must have {what} greater than or equal to {low}"))
    if high is not None and size > high:
        errors.append((path, f"Member must have {what} less than or equal to {high}"))


def _check_structure(
    shape: Any, value: Any, path: str, errors: list[tuple[str, str]], *, body_only: bool = False
) -> None:
    """Check a JSON object; ``body_only`` skips members bound to headers, query or path."""
    if not isinstance(value, dict):
        errors.append((path or "body", "Member must be a structure (a JSON object)"))
        return
    members = {
        name: member
        for name, member in shape.members.items()
        if not (body_only and "location" in member.serialization)
    }
    for key in value:
        if key not in members:
            errors.append((_join(path, key), f"Member is not a known member of {shape.name}"))
    for name in shape.required_members:
        if name in members and name not in value:
            errors.append((_join(path, name), "Member must not be null"))
    present = [key for key in value if key in members]
    for key in present:
        _check_shape(members[key], value[key], _join(path, key), errors)
    if shape.metadata.get("union") and len(present) != 1:
        errors.append((path, f"Member must have exactly one member set, not {len(present)}"))


def _check_shape(shape: Any, value: Any, path: str, errors: list[tuple[str, str]]) -> None:
    """Append (path, problem) for each way ``value`` breaks the botocore ``shape``."""
    if value is None:
        errors.append((path, "Member must not be null"))
        return
    if shape.metadata.get("document"):
        return  # any JSON value
    kind = shape.type_name
    if kind == "structure":
        _check_structure(shape, value, path, errors)
    elif kind == "list":
        if not isinstance(value, list):
            errors.append((path, "Member must be a list"))
            return
        _check_size(shape, len(value), path, "length", errors)
        for index, item in enumerate(value):
            _check_shape(shape.member, item, _join(path, index), errors)
    elif kind == "map":
        if not isinstance(value, dict):
            errors.append((path, "Member must be a map (a JSON object)"))
            return
        _check_size(shape, len(value), path, "length", errors)
        for key, item in value.items():
            _check_shape(shape.key, key, _join(path, key), errors)
            _check_shape(shape.value, item, _join(path, key), errors)
    elif kind == "string":
        if not isinstance(value, str):
            errors.append((path, "Member must be a string"))
            return
        _check_size(shape, len(value), path, "length", errors)
        enum = shape.metadata.get("enum")
        if enum and value not in enum:
            errors.append((path, f"Member must satisfy enum value set: [{', '.join(enum)}]"))
        raw_pattern = shape.metadata.get("pattern")
        pattern = _pattern(raw_pattern) if raw_pattern else None
        if pattern is not None and not pattern.fullmatch(value):
            errors.append(
                (path, f"Member must satisfy regular expression pattern: {pattern.pattern}")
            )
    elif kind in ("integer", "long", "float", "double"):
        types = (int,) if kind in ("integer", "long") else (int, float)
        if isinstance(value, bool) or not isinstance(value, types):
            errors.append((path, f"Member must be of type {kind}"))
            return
        _check_size(shape, value, path, "value", errors)
    elif kind == "boolean":
        if not isinstance(value, bool):
            errors.append((path, "Member must be a boolean"))
    elif kind == "timestamp":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            errors.append((path, "Member must be a timestamp"))
    elif not isinstance(value, str):  # a blob travels base64-encoded
        errors.append((path, "Member must be a base64 string"))


def _json_object(request: RecordedRequest) -> dict[str, Any]:
    if not request.raw_body:
        raise _unparseable("The request body is empty; a JSON object is required")
    if not isinstance(request.body, dict):
        raise _unparseable("The request body is not a JSON object")
    return request.body


def _query(request: RecordedRequest, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None


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


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut into at most ``count`` non-empty pieces of about the same size."""
    if not text:
        return []
    size = -(-len(text) // min(count, len(text)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _utf8_pieces(text: str, limit: int) -> Iterator[str]:
    """``text`` cut into pieces of at most ``limit`` UTF-8 bytes, never inside a character."""
    data = text.encode()
    start = 0
    while start < len(data):
        end = min(start + limit, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:  # a continuation byte
            end -= 1
        yield data[start:end].decode()
        start = end


@dataclass(frozen=True)
class _ToolUse:
    id: str
    name: str
    input: dict[str, Any]


def _turn_events(
    turn: ConverseTurn, text: str, uses: Sequence[_ToolUse]
) -> list[tuple[str, dict[str, Any]]]:
    """The (event type, payload) pairs of one turn, in stream order."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    first_tool_block = 0
    if text:
        for piece in _pieces(text, _TEXT_PIECES):
            events.append(("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": piece}}))
        events.append(("contentBlockStop", {"contentBlockIndex": 0}))
        first_tool_block = 1
    for number, use in enumerate(uses):
        index = first_tool_block + (0 if turn.reuse_block_index else number)
        start = {"toolUse": {"toolUseId": use.id, "name": use.name}}
        events.append(("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        for piece in _pieces(json.dumps(use.input, separators=(",", ":")), _TEXT_PIECES):
            delta = {"toolUse": {"input": piece}}
            events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    stop_reason = turn.stop_reason or ("tool_use" if uses else "end_turn")
    events.append(("messageStop", {"stopReason": stop_reason}))
    input_tokens, output_tokens = turn.usage
    usage = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }
    events.append(("metadata", {"usage": usage, "metrics": {"latencyMs": 0}}))
    return events


# --- conversations --------------------------------------------------------------------------


class _Rejected(Exception):
    """A conversation the model provider refuses; answered as a runtimeClientError frame."""


def _blocks(message: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [block[kind] for block in message["content"] if kind in block]


def _text_of(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The text a scripted turn receives for a message's or a tool result's content."""
    texts = [
        b["text"] if "text" in b else json.dumps(b["json"])
        for b in blocks
        if "text" in b or "json" in b
    ]
    return "\n".join(texts)


def _conversation_input(
    messages: Sequence[Mapping[str, Any]], pending: Sequence[_ToolUse]
) -> list[str]:
    """The texts that trigger the next turn; raises _Rejected as the provider would."""
    for number, message in enumerate(messages):
        for kind in ("toolUse", "toolResult"):
            ids = [block["toolUseId"] for block in _blocks(message, kind)]
            if len(set(ids)) != len(ids):
                raise _Rejected(
                    f"{_MODEL_REJECTED}The {kind} blocks contain duplicate Ids at "
                    f"messages.{number}.content."
                )
    for number, message in enumerate(messages):
        results = _blocks(message, "toolResult")
        if not results:
            continue
        previous = messages[number - 1] if number else None
        uses = _blocks(previous, "toolUse") if previous and previous["role"] == "assistant" else []
        if len(results) > len(uses):
            raise _Rejected(
                f"{_MODEL_REJECTED}The number of toolResult blocks at messages.{number}.content "
                "exceeds the number of toolUse blocks of previous turn."
            )
        missing = sorted({u["toolUseId"] for u in uses} - {r["toolUseId"] for r in results})
        if missing:
            raise _Rejected(
                f"{_MODEL_REJECTED}Expected toolResult blocks at messages.{number}.content "
                f"for the following Ids: {', '.join(missing)}"
            )
    last = len(messages) - 1
    if messages[last]["role"] != "user":
        raise _Rejected(
            f"{_MODEL_REJECTED}The final message at messages.{last} must be a user turn."
        )
    answers = {r["toolUseId"]: r for r in _blocks(messages[last], "toolResult")}
    if not answers:
        return [_text_of(messages[last]["content"])]
    echoed = {u["toolUseId"]: u for u in _blocks(messages[last - 1], "toolUse")}
    expected = {use.id: use for use in pending}
    if echoed.keys() != expected.keys() or any(
        echoed[i]["name"] != use.name or echoed[i]["input"] != use.input
        for i, use in expected.items()
    ):
        calls = ", ".join(f"{use.name} {use.id}" for use in pending) or "none"
        raise _Rejected(
            f"{_MODEL_REJECTED}The toolUse blocks at messages.{last - 1}.content do not repeat "
            f"the tool calls of the previous turn (expected: {calls})."
        )
    return [_text_of(answers[use.id]["content"]) for use in pending]


class _Conversation:
    """Where one runtime session of one harness is in its script."""

    def __init__(self) -> None:
        self.turns_played = 0
        self.pending: tuple[_ToolUse, ...] = ()  # the tool calls awaiting results
        self.generation = 0  # changes on every advance, so a stale invocation cannot commit


class _FrameFault:
    """A stream fault for the next invocation(s): what happens after ``after_frames``."""

    def __init__(
        self, kind: str, after_frames: int, times: int, frame: bytes = b"", seconds: float = 0.0
    ) -> None:
        if after_frames < 0:
            raise ValueError("after_frames must not be negative")
        if times < 1:
            raise ValueError("times must be at least 1")
        if seconds < 0:
            raise ValueError("seconds must not be negative")
        self.kind = kind
        self.after_frames = after_frames
        self.remaining = times
        self.frame = frame
        self.seconds = seconds

    def cut(self, event_count: int) -> int:
        """How many of the turn's events go out before the fault."""
        if self.kind == "truncate":  # never as far as messageStop
            return min(self.after_frames, event_count - 2)
        return min(self.after_frames, event_count)


@dataclass(frozen=True)
class _Plan:
    """The turn an invocation plays, and what it needs to commit it afterwards."""

    turn: ConverseTurn
    inputs: list[str]
    conversation: _Conversation
    played: int
    generation: int
    fault: _FrameFault | None


# --- harnesses ------------------------------------------------------------------------------


def _now() -> str:
    stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _alnum(length: int) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


_SUMMARY_KEYS = ("harnessId", "harnessName", "arn", "status", "createdAt", "updatedAt")


class _Harness:
    """A harness's control-plane record plus its status script and its turn script."""

    def __init__(
        self,
        record: dict[str, Any],
        statuses: tuple[str, ...],
        script: tuple[ConverseTurn, ...],
        order: int,
    ) -> None:
        self.record = record
        self.statuses = statuses
        self.position = 0
        self.script = script
        self.order = order
        self.deleting_observed: int | None = None  # None until deleted

    @property
    def id(self) -> str:
        return str(self.record["harnessId"])

    @property
    def status(self) -> str:
        return "DELETING" if self.deleting_observed is not None else self.statuses[self.position]

    def view(self) -> dict[str, Any]:
        return {**copy.deepcopy(self.record), "status": self.status}

    def summary(self) -> dict[str, Any]:
        view = self.view()
        return {key: view[key] for key in _SUMMARY_KEYS}

    def set_statuses(self, statuses: tuple[str, ...]) -> None:
        self.statuses = statuses
        self.position = 0
        self.record["updatedAt"] = _now()

    def advance(self) -> None:
        if self.deleting_observed is None and self.position < len(self.statuses) - 1:
            self.position += 1
            self.record["updatedAt"] = _now()


# --- running commands -----------------------------------------------------------------------


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # it ended on its own
            os.killpg(process.pid, signal.SIGKILL)


class _ShellRunner:
    """The default command runner: ``/bin/sh -c`` in a private working directory.

    Each command is its own process group, so a timeout (or closing the emulator) kills what
    the shell started too, instead of leaving it running with the output pipes open.
    """

    def __init__(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="agentcore-emulator-")
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._closed = False

    def __call__(self, command: str, timeout: float | None) -> CommandOutput:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": self.workdir,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        with self._lock:
            if self._closed:
                raise RuntimeError("the emulator is closed")
            process = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            self._running.add(process)
        try:
            limit = _DEFAULT_COMMAND_TIMEOUT if timeout is None else timeout
            stdout, stderr = process.communicate(timeout=limit)
            return CommandOutput(stdout, stderr, process.returncode)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            stdout, stderr = process.communicate()
            return CommandOutput(stdout, stderr, -1, timed_out=True)
        finally:
            with self._lock:
                self._running.discard(process)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            running = list(self._running)
        for process in running:
            _kill_group(process)
        shutil.rmtree(self.workdir, ignore_errors=True)


# --- the emulator ---------------------------------------------------------------------------


def _as_script(script: Sequence[ConverseTurn | str] | None) -> tuple[ConverseTurn, ...]:
    """Accept plain strings as text-only turns."""
    return tuple(ConverseTurn(text=t) if isinstance(t, str) else t for t in script or ())


class AgentCoreEmulator(LoopbackEmulator):
    """A Bedrock AgentCore Harness service on ``127.0.0.1`` whose harnesses play scripts.

    Starts serving on construction. ``script`` is the default script of harnesses created
    without one (over CreateHarness or with :meth:`add_harness`). Requests must be signed
    with ``access_key_id`` / ``secret_access_key`` (random unless given) for ``region``, and
    carry ``x-amz-security-token: <session_token>`` when a session token is set.
    ``command_runner(command, timeout)`` runs InvokeAgentRuntimeCommand commands (default:
    ``/bin/sh`` in the temporary directory ``workdir``). A deleted harness answers as
    ``DELETING`` to ``delete_after`` GetHarness/ListHarnesses calls, then is gone.
    """

    def __init__(
        self,
        script: Sequence[ConverseTurn | str] | None = None,
        *,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        command_runner: Callable[[str, float | None], CommandOutput] | None = None,
        delete_after: int = 1,
    ) -> None:
        # Loaded here, not at import: the testing package must not need botocore. It
        # verifies signatures with botocore, so it needs the same extra as the provider.
        from req_managed_agents.providers.agentcore._aws import load_botocore

        Credentials = load_botocore()["credentials"].Credentials

        if not re.fullmatch(r"[a-z0-9-]+", region):
            raise ValueError(f"not a region name: {region!r}")
        if not re.fullmatch(r"[0-9]{12}", account_id):
            raise ValueError("account_id must be 12 digits")
        if delete_after < 0:
            raise ValueError("delete_after must not be negative")
        self._default_script = _as_script(script)
        self._data_model = _service_model("bedrock-agentcore")
        self._control_model = _service_model("bedrock-agentcore-control")
        super().__init__(listener="data")
        self.data_url = self.base_url
        self.control_url = self._add_listener("control")
        self.region = region
        self.account_id = account_id
        upper = string.ascii_uppercase + string.digits
        self.access_key_id = access_key_id or "AKIA" + "".join(
            secrets.choice(upper) for _ in range(16)
        )
        self.secret_access_key = secret_access_key or "".join(
            secrets.choice(_ALNUM + "+/") for _ in range(40)
        )
        self.session_token = session_token
        self._credentials = Credentials(self.access_key_id, self.secret_access_key, session_token)
        self._delete_after = delete_after
        self._harnesses: dict[str, _Harness] = {}
        self._created = 0
        self._client_tokens: dict[str, str] = {}
        self._list_tokens: dict[str, int] = {}
        self._next_statuses: dict[str | None, tuple[str, ...]] = {}
        self._conversations: dict[tuple[str, str], _Conversation] = {}
        self._frame_faults: list[_FrameFault] = []
        self._invocations: list[Invocation] = []
        self._commands: list[CommandRecord] = []
        self._signature_failures: list[tuple[str, str, str]] = []
        one = "([^/]+)"
        routes: dict[str, list[tuple[str, str, Callable[..., Any]]]] = {
            "data": [
                ("POST", "/harnesses/invoke", self._invoke_harness),
                ("POST", f"/runtimes/{one}/commands", self._run_command),
            ],
            "control": [
                ("POST", "/harnesses", self._create_harness),
                ("GET", "/harnesses", self._list_harnesses),
                ("GET", f"/harnesses/{one}", self._get_harness),
                ("DELETE", f"/harnesses/{one}", self._delete_harness),
            ],
        }
        self._routes = {
            listener: [(method, re.compile(path), route) for method, path, route in table]
            for listener, table in routes.items()
        }
        self._shell: _ShellRunner | None = None
        if command_runner is None:
            self._shell = command_runner = _ShellRunner()
        self.workdir = None if self._shell is None else self._shell.workdir
        self._command_runner = command_runner
        self._start()

    def __repr__(self) -> str:  # never the secret or the token
        state = " closed" if self._stopping else ""
        return (
            f"<AgentCoreEmulator data={self.data_url} control={self.control_url} "
            f"region={self.region} access_key_id={self.access_key_id}{state}>"
        )

    def __enter__(self) -> AgentCoreEmulator:
        return self

    def close(self) -> None:
        """Kill running commands, stop serving and remove the command working directory."""
        if self._shell is not None:
            self._shell.close()
        super().close()

    # --- set-up and faults for tests ------------------------------------------------------

    def add_harness(
        self, script: Sequence[ConverseTurn | str] | None = None, name: str = "harness"
    ) -> str:
        """Create a READY harness that plays ``script`` (default: the emulator's); return its
        ARN. ``name`` must be free, as over CreateHarness."""
        if not _HARNESS_NAME.fullmatch(name):
            raise ValueError(f"harness names match {_HARNESS_NAME.pattern}, not {name!r}")
        with self._condition:
            if self._named(name) is not None:
                raise ValueError(f"a harness named {name!r} already exists")
            role = f"arn:aws:iam::{self.account_id}:role/AgentCoreEmulator"
            body = {"harnessName": name, "executionRoleArn": role}
            scripted = self._default_script if script is None else _as_script(script)
            return str(self._new_harness(body, ("READY",), scripted).record["arn"])

    def harness_statuses(self, statuses: Sequence[str], name: str | None = None) -> None:
        """Set the statuses GetHarness walks through, one per call; the last one sticks.

        They apply to the next harness created over CreateHarness, or with ``name`` to the
        live harness of that name (from its first status again) or else to the next one
        created with that name. Any string goes, so clients can meet an unknown status.
        """
        script = tuple(statuses)
        if not script or not all(isinstance(s, str) and s for s in script):
            raise ValueError("statuses must be a non-empty sequence of strings")
        with self._condition:
            harness = None if name is None else self._named(name)
            if harness is None:
                self._next_statuses[name] = script
            else:
                harness.set_statuses(script)

    def exception_frame(
        self,
        exception_type: str = "internalServerException",
        message: str = "injected failure",
        after_frames: int = 1,
        times: int = 1,
    ) -> None:
        """After ``after_frames`` frames of the next ``times`` turns, send an exception frame
        (``:message-type exception``) and end the stream."""
        self._add_fault(
            _FrameFault("exception", after_frames, times, _exception(exception_type, message))
        )

    def error_frame(self, code: str, message: str, after_frames: int = 1, times: int = 1) -> None:
        """Like :meth:`exception_frame`, with an unmodeled ``:message-type error`` frame."""
        self._add_fault(_FrameFault("error", after_frames, times, _error(code, message)))

    def truncate_stream(self, after_frames: int = 2, times: int = 1) -> None:
        """End the next ``times`` turn streams cleanly after ``after_frames`` frames, before
        ``messageStop``; the turn is played again by the next invocation."""
        self._add_fault(_FrameFault("truncate", after_frames, times))

    def stall_stream(self, after_frames: int, seconds: float) -> None:
        """Once: after ``after_frames`` frames, go silent for ``seconds``, then cut the
        connection."""
        self._add_fault(_FrameFault("stall", after_frames, 1, seconds=seconds))

    def _add_fault(self, fault: _FrameFault) -> None:
        with self._condition:
            self._frame_faults.append(fault)

    # --- observation for tests ------------------------------------------------------------

    @property
    def invocations(self) -> list[Invocation]:
        """Every well-formed InvokeHarness request, oldest first (a snapshot)."""
        with self._condition:
            return list(self._invocations)

    @property
    def commands(self) -> list[CommandRecord]:
        """Every well-formed InvokeAgentRuntimeCommand request, oldest first (a snapshot)."""
        with self._condition:
            return list(self._commands)

    @property
    def signature_failures(self) -> list[tuple[str, str, str]]:
        """``(method, path, reason)`` of each request rejected for its signature."""
        with self._condition:
            return list(self._signature_failures)

    def harnesses(self) -> list[dict[str, Any]]:
        """The live harnesses as GetHarness shows them, oldest first, without observing them."""
        with self._condition:
            return [h.view() for h in sorted(self._harnesses.values(), key=lambda h: h.order)]

    # --- dispatch -------------------------------------------------------------------------

    def _handle(self, exchange: Exchange) -> None:
        request = exchange.request
        try:
            self._check_signature(request)
            route, args = self._route(request)
            answer = route(exchange, *args)
        except _AwsError as error:
            self._respond_error(exchange, error)
            return
        if answer is not None:
            status, payload = answer
            exchange.respond_json(status, payload, {"x-amzn-RequestId": str(uuid.uuid4())})

    def _answer_fault(self, exchange: Exchange, fault: RequestFault) -> None:
        status = fault.status
        name = (
            fault.error_type
            or _ERROR_NAMES.get(status)
            or ("InternalServerException" if status >= 500 else "ValidationException")
        )
        headers = {} if fault.retry_after is None else {"Retry-After": fault.retry_after}
        self._respond_error(exchange, _AwsError(status, name, fault.message), headers)

    def _respond_error(
        self, exchange: Exchange, error: _AwsError, headers: Mapping[str, str] | None = None
    ) -> None:
        aws_headers = {"x-amzn-RequestId": str(uuid.uuid4()), "x-amzn-ErrorType": error.name}
        exchange.respond_json(error.status, error.body(), {**(headers or {}), **aws_headers})

    def _route(self, request: RecordedRequest) -> tuple[Callable[..., Any], tuple[str, ...]]:
        for method, pattern, route in self._routes[request.listener]:
            match = pattern.fullmatch(request.path)
            if match and method == request.method:
                return route, tuple(unquote(group) for group in match.groups())
        raise _AwsError(
            404, "UnknownOperationException", f"No operation for {request.method} {request.path}"
        )

    # --- SigV4 ----------------------------------------------------------------------------

    def _check_signature(self, request: RecordedRequest) -> None:
        try:
            self._verify_signature(request)
        except _AwsError as error:
            with self._condition:
                self._signature_failures.append((request.method, request.path, error.message))
            raise

    def _verify_signature(self, request: RecordedRequest) -> None:
        """Recompute the request's SigV4 signature with botocore and compare."""
        headers = request.headers
        authorization = headers.get("authorization")
        if authorization is None:
            raise _signature_error(
                "MissingAuthenticationTokenException", "Missing Authentication Token"
            )
        algorithm, _, rest = authorization.partition(" ")
        fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
        scope = fields.get("Credential", "").split("/")
        if not hmac.compare_digest(scope[0].encode(), self.access_key_id.encode()):
            raise _signature_error("UnrecognizedClientException", _TOKEN_INVALID)
        token = headers.get("x-amz-security-token")
        if (token is None) != (self.session_token is None) or not hmac.compare_digest(
            (token or "").encode(), (self.session_token or "").encode()
        ):
            raise _signature_error("UnrecognizedClientException", _TOKEN_INVALID)
        problem = self._signature_problem(request, algorithm, fields, scope)
        if problem is not None:
            raise _signature_error("InvalidSignatureException", problem)

    def _signature_problem(
        self, request: RecordedRequest, algorithm: str, fields: dict[str, str], scope: list[str]
    ) -> str | None:
        """What is wrong with a request signed with the right access key, if anything."""
        headers = request.headers
        if (
            algorithm != "AWS4-HMAC-SHA256"
            or not {"Credential", "SignedHeaders", "Signature"} <= fields.keys()
            or len(scope) != 5
        ):
            return (
                "Authorization must be AWS4-HMAC-SHA256 Credential=<access key id>/<date>/"
                "<region>/<service>/aws4_request, SignedHeaders=..., Signature=..."
            )
        _, day, region, service, terminator = scope
        amz_date = headers.get("x-amz-date", "")
        try:
            signed_at = datetime.strptime(amz_date, _AMZ_DATE).replace(tzinfo=timezone.utc)
        except ValueError:
            return "x-amz-date must be given as YYYYMMDDTHHMMSSZ"
        if abs(datetime.now(timezone.utc) - signed_at) > _MAX_CLOCK_SKEW:
            return f"Signature expired: {amz_date} is more than 15 minutes from the server time"
        if day != amz_date[:8]:
            return f"Credential date {day} does not match x-amz-date {amz_date}"
        if region != self.region:
            return f"Credential should be scoped to a valid region, not '{region}'"
        if service != _SIGNING_NAME:
            return f"Credential should be scoped to correct service: '{_SIGNING_NAME}'"
        if terminator != "aws4_request":
            return "Credential should be scoped with a valid terminator: 'aws4_request'"
        signed = fields["SignedHeaders"].split(";")
        if {"host", "x-amz-date"} - set(signed) or any(name not in headers for name in signed):
            return "SignedHeaders must name host and x-amz-date, and only headers present"
        # botocore signs this header's value instead of hashing the body, so check it here.
        claimed = headers.get("x-amz-content-sha256")
        if claimed not in (None, hashlib.sha256(request.raw_body).hexdigest()):
            return "x-amz-content-sha256 does not match the request body"
        expected = self._signature(request, {name: headers[name] for name in signed}, amz_date)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            return "The request signature we calculated does not match the signature you provided"
        return None

    def _signature(self, request: RecordedRequest, signed: dict[str, str], amz_date: str) -> str:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        url = f"http://{signed['host']}{request.path}"
        if request.raw_query:
            url += f"?{request.raw_query}"
        rebuilt = AWSRequest(method=request.method, url=url, data=request.raw_body, headers=signed)
        rebuilt.context["timestamp"] = amz_date
        signer = SigV4Auth(self._credentials, _SIGNING_NAME, self.region)
        canonical = signer.canonical_request(rebuilt)
        return str(signer.signature(signer.string_to_sign(rebuilt, canonical), rebuilt))

    # --- data plane: InvokeHarness ---------------------------------------------------------

    def _session_id(
        self, request: RecordedRequest, shape: Any, errors: list[tuple[str, str]]
    ) -> str:
        value = request.headers.get(_SESSION_HEADER)
        known = len(errors)
        _check_shape(shape, value, "runtimeSessionId", errors)
        if len(errors) == known and isinstance(value, str) and len(value) < _MIN_SESSION_ID:
            errors.append(
                (
                    "runtimeSessionId",
                    f"Member must have length greater than or equal to {_MIN_SESSION_ID}",
                )
            )
        return value or ""

    def _invoke_harness(self, exchange: Exchange) -> None:
        request = exchange.request
        shape = self._data_model.operation_model("InvokeHarness").input_shape
        errors: list[tuple[str, str]] = []
        arn = _query(request, "harnessArn")
        _check_shape(shape.members["harnessArn"], arn, "harnessArn", errors)
        session_id = self._session_id(request, shape.members["runtimeSessionId"], errors)
        body = _json_object(request)
        _check_structure(shape, body, "", errors, body_only=True)
        if body.get("messages") == []:
            errors.append(("messages", "Member must have length greater than or equal to 1"))
        if errors or arn is None:
            raise _invalid(errors)
        refusal = ""
        with self._condition:
            self._invocations.append(Invocation(arn, session_id, body))
            harness = self._harness_by_arn(arn)
            if harness.status != "READY":
                problem = f"Harness {harness.id} is {harness.status}, not READY"
                raise _invalid([("harnessArn", problem)])
            conversation = self._conversations.setdefault((arn, session_id), _Conversation())
            try:
                plan: _Plan | None = self._plan(harness, conversation, body["messages"])
            except _Rejected as rejected:
                plan, refusal = None, str(rejected)
        stream = exchange.open_stream(
            session_id, _EVENT_STREAM, {"x-amzn-RequestId": str(uuid.uuid4())}
        )
        if plan is None:
            self._fail_stream(stream, _exception("runtimeClientError", refusal))
            return
        text = plan.turn.text
        if callable(text):
            try:
                text = text(plan.inputs)  # user code: run without the lock
            except Exception as error:
                logger.exception("the scripted text of a turn raised")
                message = f"the scripted turn text raised {error!r}"
                self._fail_stream(stream, _exception("internalServerException", message))
                return
        uses = [
            _ToolUse(f"tooluse_{secrets.token_urlsafe(16)}", c.name, dict(c.input))
            for c in plan.turn.tool_calls
        ]
        events = _turn_events(plan.turn, str(text), uses)
        pending = tuple(uses) if events[-2][1]["stopReason"] == "tool_use" else ()
        self._play(stream, plan, events, (plan.generation, plan.played + 1, pending))

    def _plan(
        self, harness: _Harness, conversation: _Conversation, messages: list[dict[str, Any]]
    ) -> _Plan:
        """What an invocation plays; called under the lock. Raises _Rejected."""
        inputs = _conversation_input(messages, conversation.pending)
        played = conversation.turns_played
        script = harness.script
        turn = script[played] if played < len(script) else _SCRIPT_FINISHED
        fault = None
        if self._frame_faults:  # one fault per invocation, in the order they were added
            fault = self._frame_faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._frame_faults.pop(0)
        return _Plan(turn, inputs, conversation, played, conversation.generation, fault)

    @staticmethod
    def _fail_stream(stream: ChunkedStream, frame: bytes) -> None:
        if stream.write(frame):
            stream.finish()

    def _play(
        self,
        stream: ChunkedStream,
        plan: _Plan,
        events: list[tuple[str, dict[str, Any]]],
        advance: tuple[int, int, tuple[_ToolUse, ...]],
    ) -> None:
        """Write a turn's frames; advance the conversation just before its last frame goes
        out (a client may resume as soon as it reads it), and undo that if the write fails."""
        started = time.monotonic()
        fault, conversation = plan.fault, plan.conversation
        count = len(events) if fault is None else fault.cut(len(events))
        for position, (event_type, payload) in enumerate(events[:count]):
            if plan.turn.delay:
                self._sleep(plan.turn.delay)
            if self._stopping:
                stream.abort("emulator_closed")
                return
            if event_type == "metadata":
                payload["metrics"]["latencyMs"] = int((time.monotonic() - started) * 1000)
            last = fault is None and position == len(events) - 1
            if last and stream.client_gone():
                stream.abort("client_closed")
                return
            undo = self._advance(conversation, *advance) if last else None
            if not stream.write(_event(event_type, payload)):
                if undo is not None:
                    self._undo(conversation, *undo)
                return
        if fault is None:
            stream.finish()
        elif fault.kind == "stall":
            self._sleep(fault.seconds)
            stream.abort("stalled")
        elif fault.kind == "truncate":
            stream.finish("truncated")
        else:
            self._fail_stream(stream, fault.frame)

    def _advance(
        self,
        conversation: _Conversation,
        generation: int,
        turns_played: int,
        pending: tuple[_ToolUse, ...],
    ) -> tuple[int, int, tuple[_ToolUse, ...]] | None:
        """Commit a played turn unless another invocation moved the conversation first;
        return what :meth:`_undo` needs."""
        with self._condition:
            if conversation.generation != generation:
                return None
            before = (conversation.turns_played, conversation.pending)
            conversation.turns_played, conversation.pending = turns_played, pending
            conversation.generation += 1
            return (conversation.generation, *before)

    def _undo(
        self,
        conversation: _Conversation,
        generation: int,
        turns_played: int,
        pending: tuple[_ToolUse, ...],
    ) -> None:
        with self._condition:
            if conversation.generation == generation:
                conversation.turns_played, conversation.pending = turns_played, pending
                conversation.generation += 1

    # --- data plane: InvokeAgentRuntimeCommand ----------------------------------------------

    def _run_command(self, exchange: Exchange, arn: str) -> None:
        request = exchange.request
        shape = self._data_model.operation_model("InvokeAgentRuntimeCommand").input_shape
        errors: list[tuple[str, str]] = []
        value = request.headers.get(_SESSION_HEADER)
        # Optional in the model, but a command outside the agent's session sees none of its
        # files: almost surely a client bug, so the emulator insists.
        _check_shape(shape.members["runtimeSessionId"], value, "runtimeSessionId", errors)
        body = _json_object(request)
        _check_structure(shape.members["body"], body, "", errors)
        timeout = body.get("timeout")
        if isinstance(timeout, int) and not 1 <= timeout <= _MAX_COMMAND_TIMEOUT:
            errors.append(("timeout", f"Member must be between 1 and {_MAX_COMMAND_TIMEOUT}"))
        if errors:
            raise _invalid(errors)
        session_id = str(value)
        with self._condition:
            self._harness_by_runtime(arn)
            self._commands.append(CommandRecord(arn, session_id, body["command"], timeout))
        stream = exchange.open_stream(
            session_id,
            _EVENT_STREAM,
            {
                "x-amzn-RequestId": str(uuid.uuid4()),
                "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id,
            },
        )
        if not stream.write(_event("chunk", {"contentStart": {}})):
            return
        try:
            output = self._command_runner(
                body["command"], None if timeout is None else float(timeout)
            )
        except Exception as error:
            logger.exception("the command runner raised")
            if stream.write(
                _exception("internalServerException", f"the command failed to run: {error!r}")
            ):
                stream.finish()
            return
        for name, data in (("stdout", output.stdout), ("stderr", output.stderr)):
            for piece in _utf8_pieces(data.decode("utf-8", errors="replace"), _OUTPUT_PIECE):
                if not stream.write(_event("chunk", {"contentDelta": {name: piece}})):
                    return
        status = "TIMED_OUT" if output.timed_out else "COMPLETED"
        stop = {"contentStop": {"exitCode": output.exit_code, "status": status}}
        if stream.write(_event("chunk", stop)):
            stream.finish()

    # --- control plane ----------------------------------------------------------------------

    def _named(self, name: str) -> _Harness | None:
        return next((h for h in self._harnesses.values() if h.record["harnessName"] == name), None)

    def _harness_by_arn(self, arn: str) -> _Harness:
        for harness in self._harnesses.values():
            if harness.record["arn"] == arn:
                return harness
        raise _harness_not_found(arn)

    def _harness_by_runtime(self, arn: str) -> _Harness:
        """A harness, by its own ARN or the ARN of the runtime behind it."""
        for harness in self._harnesses.values():
            runtime = harness.record["environment"]["agentCoreRuntimeEnvironment"]
            if arn in (harness.record["arn"], runtime["agentRuntimeArn"]):
                return harness
        raise _AwsError(404, "ResourceNotFoundException", f"Runtime not found: {arn}")

    def _new_harness(
        self, body: Mapping[str, Any], statuses: tuple[str, ...], script: tuple[ConverseTurn, ...]
    ) -> _Harness:
        name = body["harnessName"]
        harness_id = f"{name}-{_alnum(10)}"
        runtime_id = f"harness_{name}-{_alnum(10)}"
        prefix = f"arn:aws:bedrock-agentcore:{self.region}:{self.account_id}"
        asked = body.get("environment", {}).get("agentCoreRuntimeEnvironment", {})
        runtime = {
            "agentRuntimeArn": f"{prefix}:runtime/{runtime_id}",
            "agentRuntimeName": f"harness_{name}",
            "agentRuntimeId": runtime_id,
            "lifecycleConfiguration": {
                "idleRuntimeSessionTimeout": 900,
                "maxLifetime": 28800,
                **asked.get("lifecycleConfiguration", {}),
            },
            "networkConfiguration": asked.get("networkConfiguration", {"networkMode": "PUBLIC"}),
        }
        if "filesystemConfigurations" in asked:
            runtime["filesystemConfigurations"] = asked["filesystemConfigurations"]
        now = _now()
        record: dict[str, Any] = {
            "harnessId": harness_id,
            "arn": f"{prefix}:harness/{harness_id}",
            "createdAt": now,
            "updatedAt": now,
            "model": _DEFAULT_MODEL,
            "systemPrompt": [],
            "tools": [],
            "skills": [],
            "allowedTools": ["*"],
            "truncation": {"strategy": "sliding_window"},
        }
        echoed = self._control_model.shape_for("Harness").members
        record.update({key: value for key, value in body.items() if key in echoed})
        record["environment"] = {"agentCoreRuntimeEnvironment": runtime}
        self._created += 1
        harness = _Harness(copy.deepcopy(record), statuses, script, self._created)
        self._harnesses[harness_id] = harness
        self._condition.notify_all()
        return harness

    def _observed(self, harness: _Harness) -> bool:
        """Count a GET or LIST seeing a deleted harness; False (and gone) once it has had its
        ``delete_after`` sightings."""
        if harness.deleting_observed is None:
            return True
        harness.deleting_observed += 1
        if harness.deleting_observed <= self._delete_after:
            return True
        del self._harnesses[harness.id]
        self._condition.notify_all()
        return False

    def _create_harness(self, exchange: Exchange) -> tuple[int, dict[str, Any]]:
        body = _json_object(exchange.request)
        errors: list[tuple[str, str]] = []
        shape = self._control_model.operation_model("CreateHarness").input_shape
        _check_structure(shape, body, "", errors, body_only=True)
        if errors:
            raise _invalid(errors)
        with self._condition:
            token = body.get("clientToken")
            earlier = self._harnesses.get(self._client_tokens.get(token or "", ""))
            if earlier is not None:  # a retry of a create that succeeded
                return 201, {"harness": earlier.view()}
            name = body["harnessName"]
            if self._named(name) is not None:
                raise _AwsError(409, "ConflictException", f"A harness named {name} already exists")
            statuses = (
                self._next_statuses.pop(name, None)
                or self._next_statuses.pop(None, None)
                or _DEFAULT_STATUSES
            )
            harness = self._new_harness(body, statuses, self._default_script)
            if token:
                self._client_tokens[token] = harness.id
            return 201, {"harness": harness.view()}

    def _live_harness(self, harness_id: str) -> _Harness:
        harness = self._harnesses.get(harness_id)
        if harness is None:
            raise _harness_not_found(harness_id)
        return harness

    def _get_harness(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        with self._condition:
            harness = self._live_harness(harness_id)
            if not self._observed(harness):
                raise _harness_not_found(harness_id)
            harness.advance()
            return 200, {"harness": harness.view()}

    def _list_harnesses(self, exchange: Exchange) -> tuple[int, dict[str, Any]]:
        request = exchange.request
        raw_size = _query(request, "maxResults")
        size = _DEFAULT_PAGE
        if raw_size is not None:
            if not raw_size.isdigit() or not 1 <= int(raw_size) <= _MAX_PAGE:
                raise _invalid([("maxResults", f"Member must be an integer from 1 to {_MAX_PAGE}")])
            size = int(raw_size)
        token = _query(request, "nextToken")
        with self._condition:
            start = 0 if token is None else self._list_tokens.get(token)
            if start is None:
                raise _invalid([("nextToken", "Member must be a token from a previous page")])
            live = sorted(self._harnesses.values(), key=lambda h: h.order)
            remaining = [h for h in live if self._observed(h) and h.order >= start]
            page: dict[str, Any] = {"harnesses": [h.summary() for h in remaining[:size]]}
            if len(remaining) > size:
                next_token = secrets.token_urlsafe(24)
                self._list_tokens[next_token] = remaining[size].order
                page["nextToken"] = next_token
            return 200, page

    def _delete_harness(self, exchange: Exchange, harness_id: str) -> tuple[int, dict[str, Any]]:
        with self._condition:
            harness = self._live_harness(harness_id)
            if harness.deleting_observed is None:
                harness.deleting_observed = 0
                harness.record["updatedAt"] = _now()
            view = harness.view()
            if self._delete_after == 0:
                self._observed(harness)
            return 200, {"harness": view}
