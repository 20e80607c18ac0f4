"""The AgentCore emulator's runtime routes: InvokeAgentRuntimeCommand and StopRuntimeSession.

Both address the runtime behind a harness (or the harness itself) by ARN. A command runs
through the emulator's command runner (``_commands``) and streams what it reports; a command
needs a runtime session id, which the model leaves optional, since a command outside the
agent's session sees none of its files.

StopRuntimeSession ends a runtime session the way the service does: its in-flight
invocations are cut (the connection aborts, the turn is not committed) and its conversation
is gone, so the next invocation with the same session id starts the script from its first
turn and knows of no pending tool calls.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.agentcore._commands import (
    _MAX_COMMAND_TIMEOUT,
    CommandRecord,
    _stream_command,
)
from req_managed_agents.testing.agentcore._records import StoppedSession
from req_managed_agents.testing.agentcore._shapes import _check_shape, _check_structure
from req_managed_agents.testing.agentcore._wire import (
    _EVENT_STREAM,
    _SESSION_HEADER,
    _invalid,
    _json_object,
)
from req_managed_agents.testing.server import query_value

if TYPE_CHECKING:
    from typing import Callable

    from req_managed_agents.testing.agentcore._commands import CommandOutput
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import ChunkedStream, Exchange, Route


class Runtimes:
    """The runtime routes of the data plane.

    ``data_model`` is botocore's bedrock-agentcore service model; ``command_runner`` runs
    the commands.
    """

    def __init__(
        self,
        state: AgentCoreState,
        data_model: Any,
        command_runner: Callable[[str, float | None], CommandOutput],
    ) -> None:
        self._state = state
        self._data_model = data_model
        self._command_runner = command_runner

    def routes(self) -> list[Route]:
        one = "([^/]+)"
        return [
            ("POST", f"/runtimes/{one}/commands", self._run_command),
            ("POST", f"/runtimes/{one}/stopruntimesession", self._stop_runtime_session),
        ]

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
        with self._state.condition:
            self._state.harness_by_runtime(arn)
            self._state.commands.append(CommandRecord(arn, session_id, body["command"], timeout))
        stream = exchange.open_stream(
            session_id,
            _EVENT_STREAM,
            {
                "x-amzn-RequestId": str(uuid.uuid4()),
                "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session_id,
            },
        )
        _stream_command(stream, self._command_runner, body["command"], timeout)

    def _stop_runtime_session(self, exchange: Exchange, arn: str) -> None:
        """StopRuntimeSession: cut the session's in-flight invocations, forget its
        conversation and answer with the session id."""
        request = exchange.request
        shape = self._data_model.operation_model("StopRuntimeSession").input_shape
        errors: list[tuple[str, str]] = []
        value = request.headers.get(_SESSION_HEADER)
        _check_shape(shape.members["runtimeSessionId"], value, "runtimeSessionId", errors)
        body = _json_object(request) if request.raw_body else {}
        _check_structure(shape, body, "", errors, body_only=True)
        if errors:
            raise _invalid(errors)
        session_id = str(value)
        with self._state.condition:
            harness = self._state.harness_by_runtime(arn)
            conversation = self._state.conversations.pop((harness.record["arn"], session_id), None)
            streams: list[ChunkedStream] = []
            if conversation is not None:
                conversation.stopped = True
                conversation.generation += 1  # an invocation still playing cannot commit
                streams = [s for s in conversation.streams if not s.ended]
            qualifier = query_value(request, "qualifier")
            stopped = StoppedSession(arn, session_id, qualifier, len(streams))
            self._state.stopped_sessions.append(stopped)
        for stream in streams:
            stream.abort("stopped")
        headers = {"x-amzn-RequestId": str(uuid.uuid4()), _SESSION_HEADER: session_id}
        exchange.respond_json(200, {}, headers)
