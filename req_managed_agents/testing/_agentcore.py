"""A local AWS Bedrock AgentCore Harness service whose harnesses play scripts, not a model.

AWS serves the harness API from two hosts, so the emulator listens on two ports:
``data_url`` answers InvokeHarness, InvokeAgentRuntimeCommand and StopRuntimeSession,
``control_url`` the harness CRUD of the control plane (with UpdateHarness and
ListHarnessVersions). Both recompute every request's SigV4
signature (signing name ``bedrock-agentcore`` for both) from the emulator's test
credentials, check request bodies against the botocore service models and answer errors in
AWS's rest-json form, so a client's signing and serialization are under test as much as its
handling of the responses.

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
* an invocation advances the conversation as its turn's ``messageStop`` goes out, whatever
  follows (``metadata``, an injected fault or nothing): a client's retry of an invocation
  cut before ``messageStop`` replays the turn, a retry after it meets the next turn;
* a command's stdout is streamed before its stderr, since the runner returns them apart;
* a scripted turn that calls a tool neither the invocation nor the harness declares (and no
  remote MCP server or gateway could bring) streams its text, then ends with a
  ``runtimeClientError`` exception frame where the tool block would start, uncommitted: a
  model never calls a tool it was not given, so the test or the client is wrong;
* UpdateHarness takes a ``READY`` harness only (else ``ConflictException``), walks it
  ``UPDATING`` then ``READY`` and makes a new ``harnessVersion``; versions list newest
  first, and an older version shows ``READY``;
* StopRuntimeSession answers 200 for any session id of a known runtime, even one never
  invoked; it cuts in-flight InvokeHarness streams of the session (a command already running
  finishes) and forgets the session's conversation, so a later invocation with that id
  starts from the script's first turn and a resume of its tool calls is refused.

botocore is imported when an emulator is created, never when this module is imported.

:class:`AgentCoreEmulator` wires together modules of one concept each: the wire vocabulary
(``agentcore._wire``: AWS errors, event-stream frames), botocore shape checks
(``agentcore._shapes``), SigV4 verification (``agentcore._sigv4``), Converse turns and the
conversation rules (``agentcore._converse``), InvokeHarness (``_agentcore_invoke``), the
command runner (``agentcore._commands``) and the control-plane harness registry
(``_agentcore_harnesses``). This module holds the emulator itself: its constructor and
test-facing methods, dispatch, and InvokeAgentRuntimeCommand; StopRuntimeSession lives with
the conversations it ends, in ``_agentcore_invoke``.
"""

from __future__ import annotations

import copy
import re
import secrets
import string
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from req_managed_agents.testing._agentcore_harnesses import _ALNUM, _HARNESS_NAME
from req_managed_agents.testing._agentcore_invoke import (
    Invocation,
    StoppedSession,
    _FrameFault,
    _HarnessInvoker,
)
from req_managed_agents.testing._script import as_script
from req_managed_agents.testing._server import Router
from req_managed_agents.testing.agentcore._commands import (
    _MAX_COMMAND_TIMEOUT,
    CommandOutput,
    CommandRecord,
    _ShellRunner,
    _stream_command,
)
from req_managed_agents.testing.agentcore._converse import ConverseTurn
from req_managed_agents.testing.agentcore._shapes import (
    _check_shape,
    _check_structure,
    _service_model,
)
from req_managed_agents.testing.agentcore._sigv4 import _SigV4Verifier
from req_managed_agents.testing.agentcore._wire import (
    _ERROR_NAMES,
    _EVENT_STREAM,
    _SESSION_HEADER,
    _AwsError,
    _bad_crc,
    _error,
    _event,
    _exception,
    _invalid,
    _json_object,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Callable

    from req_managed_agents.providers.agentcore import BedrockAgentCore
    from req_managed_agents.testing._server import Exchange, RecordedRequest, RequestFault

__all__ = [
    "AgentCoreEmulator",
    "CommandOutput",
    "CommandRecord",
    "ConverseTurn",
    "Invocation",
    "StoppedSession",
]


class AgentCoreEmulator(_HarnessInvoker):
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
        self._default_script = as_script(script, ConverseTurn)
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
        self._sigv4 = _SigV4Verifier(
            Credentials(self.access_key_id, self.secret_access_key, session_token), region
        )
        self._delete_after = delete_after
        # The state the control plane and InvokeHarness declare.
        self._harnesses = {}
        self._created = 0
        self._client_tokens = {}
        self._update_tokens = {}
        self._list_tokens = {}
        self._next_statuses = {}
        self._conversations = {}
        self._frame_faults = []
        self._invocations = []
        self._stopped_sessions = []
        self._commands: list[CommandRecord] = []
        self._signature_failures: list[tuple[str, str, str]] = []
        one = "([^/]+)"
        routes: dict[str, list[tuple[str, str, Callable[..., Any]]]] = {
            "data": [
                ("POST", "/harnesses/invoke", self._invoke_harness),
                ("POST", f"/runtimes/{one}/commands", self._run_command),
                ("POST", f"/runtimes/{one}/stopruntimesession", self._stop_runtime_session),
            ],
            "control": [
                ("POST", "/harnesses", self._create_harness),
                ("GET", "/harnesses", self._list_harnesses),
                ("GET", f"/harnesses/{one}", self._get_harness),
                ("PATCH", f"/harnesses/{one}", self._update_harness),
                ("GET", f"/harnesses/{one}/versions", self._list_harness_versions),
                ("DELETE", f"/harnesses/{one}", self._delete_harness),
            ],
        }
        self._routes = {listener: Router(table) for listener, table in routes.items()}
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

    def close(self) -> None:
        """Kill running commands, stop serving and remove the command working directory."""
        if self._shell is not None:
            self._shell.close()
        super().close()

    # --- set-up and faults for tests ------------------------------------------------------

    def provider(self, **options: Any) -> BedrockAgentCore:
        """A ``BedrockAgentCore`` signed with this emulator's credentials and pointed at its
        two planes; ``options`` go to its constructor (``timeout``, ``idle_timeout``, ...)."""
        from req_managed_agents.providers.agentcore import BedrockAgentCore

        credentials = {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "session_token": self.session_token,
        }
        return BedrockAgentCore(
            self.region,
            credentials=credentials,
            endpoint_url=self.data_url,
            control_endpoint_url=self.control_url,
            **options,
        )

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
            scripted = self._default_script if script is None else as_script(script, ConverseTurn)
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
        (``:message-type exception``) and end the stream.

        Frame faults apply to invocations in the order they were added, one per invocation.
        A fault placed after the turn's ``messageStop`` finds the turn committed.
        """
        self._add_fault(
            _FrameFault("exception", after_frames, times, _exception(exception_type, message))
        )

    def error_frame(self, code: str, message: str, after_frames: int = 1, times: int = 1) -> None:
        """Like :meth:`exception_frame`, with an unmodeled ``:message-type error`` frame."""
        self._add_fault(_FrameFault("error", after_frames, times, _error(code, message)))

    def corrupt_frame(self, after_frames: int, times: int = 1) -> None:
        """Like :meth:`exception_frame`, with a frame whose message CRC is wrong: a client's
        decoder must give up on the stream there.

        With ``after_frames`` short of the turn's ``messageStop`` (frame ``n - 2`` of ``n``)
        the turn is not committed, as with :meth:`truncate_stream`; from ``n - 1`` on the
        corrupt frame follows ``messageStop`` (in place of, or after, ``metadata``), and
        the turn is committed.
        """
        frame = _bad_crc(_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {}}))
        self._add_fault(_FrameFault("corrupt", after_frames, times, frame))

    def truncate_stream(self, after_frames: int = 2, times: int = 1) -> None:
        """End the next ``times`` turn streams cleanly after ``after_frames`` frames, before
        ``messageStop``; the turn is played again by the next invocation."""
        self._add_fault(_FrameFault("truncate", after_frames, times))

    def truncate_after_commit(self, times: int = 1, abrupt: bool = False) -> None:
        """Play the next ``times`` turns through ``messageStop``, committing them as a stream
        written in full does, then end the stream without its ``metadata`` frame: cleanly,
        or with ``abrupt`` by cutting the connection (no terminating chunk). The client has
        the whole turn but its usage; a retry of the invocation meets the next turn."""
        self._add_fault(_FrameFault("after_commit", 0, times, abrupt=abrupt))

    def stall_stream(self, after_frames: int, seconds: float) -> None:
        """Once: after ``after_frames`` frames, go silent for ``seconds``, then cut the
        connection."""
        self._add_fault(_FrameFault("stall", after_frames, 1, seconds=seconds))

    # --- observation for tests ------------------------------------------------------------

    @property
    def invocations(self) -> list[Invocation]:
        """Every well-formed InvokeHarness request, oldest first (a snapshot)."""
        with self._condition:
            return list(self._invocations)

    @property
    def stopped_sessions(self) -> list[StoppedSession]:
        """Every well-formed StopRuntimeSession request, oldest first (a snapshot)."""
        with self._condition:
            return list(self._stopped_sessions)

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

    def turn_frames(self, harness_arn: str, runtime_session_id: str) -> list[list[dict[str, Any]]]:
        """The frames of each turn the conversation committed, oldest first, as Converse
        events (``{event type: payload}``): what the committing invocation wrote, through
        ``messageStop`` and ``metadata`` when it went out. A client that moved past a turn
        must have received all of them. Empty for a conversation never invoked."""
        with self._condition:
            conversation = self._conversations.get((harness_arn, runtime_session_id))
            turns = [] if conversation is None else conversation.frames
            return copy.deepcopy(turns)

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
        found = self._routes[request.listener].match(request.method, request.path)
        if found is None:
            raise _AwsError(
                404,
                "UnknownOperationException",
                f"No operation for {request.method} {request.path}",
            )
        route, groups = found
        return route, tuple(unquote(group) for group in groups)

    def _check_signature(self, request: RecordedRequest) -> None:
        """Verify a request's signature; a rejected one is recorded in signature_failures."""
        try:
            self._sigv4.verify(request)
        except _AwsError as error:
            with self._condition:
                self._signature_failures.append((request.method, request.path, error.message))
            raise

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
        _stream_command(stream, self._command_runner, body["command"], timeout)
