"""InvokeHarness for the AgentCore emulator: a conversation's next turn, played over a stream.

Each runtime session of each harness is a conversation that remembers how far its script
has played and which tool calls await results. An invocation is checked against the
botocore model, then against the conversation rules; it plays the next
:class:`~req_managed_agents.testing.agentcore._converse.ConverseTurn` as event-stream frames,
unless a frame fault (an exception, error or corrupt frame, a truncated or stalled stream)
cuts it short. A turn is committed - the conversation advances - just before its
``messageStop`` frame goes out (a client may resume as soon as it reads it), whatever
happens after it; a stream cut before ``messageStop`` leaves the turn unplayed, so a
client's retry of the invocation replays it. Each committed turn keeps the frames written
for it, for tests to check what a client must have seen.

An invocation needs a ``READY`` harness and a ``READY`` endpoint (its ``qualifier``, by
default ``DEFAULT``, which appears only some time after the harness is ``READY``; see
``_endpoints``). StopRuntimeSession (``_runtimes``) cuts a session's in-flight invocations.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._script import scripted_text
from req_managed_agents.testing.agentcore._conversation import _Conversation
from req_managed_agents.testing.agentcore._converse import (
    _MODEL_REJECTED,
    _SCRIPT_FINISHED,
    ConverseTurn,
    _conversation_input,
    _Rejected,
    _ToolUse,
    _turn_events,
)
from req_managed_agents.testing.agentcore._endpoints import (
    DEFAULT_ENDPOINT,
    endpoint_not_found,
    find_endpoint,
)
from req_managed_agents.testing.agentcore._records import Invocation
from req_managed_agents.testing.agentcore._shapes import _check_shape, _check_structure
from req_managed_agents.testing.agentcore._wire import (
    _EVENT_STREAM,
    _SESSION_HEADER,
    _event,
    _exception,
    _invalid,
    _json_object,
    _write_last,
)
from req_managed_agents.testing.server import query_value

if TYPE_CHECKING:
    from req_managed_agents.testing.agentcore._frame_faults import _FrameFault
    from req_managed_agents.testing.agentcore._harness import _Harness
    from req_managed_agents.testing.agentcore._state import AgentCoreState
    from req_managed_agents.testing.server import (
        ChunkedStream,
        Exchange,
        Lifecycle,
        RecordedRequest,
        Route,
    )

# The service wants runtime session ids of at least 33 characters; older models say 1.
_MIN_SESSION_ID = 33
# Tool types whose tools are not named in the declaration (an MCP server's, a gateway's).
_OPEN_TOOL_TYPES = ("remote_mcp", "agentcore_gateway")


@dataclass(frozen=True)
class _Plan:
    """The turn an invocation plays, and what it needs to commit it afterwards."""

    turn: ConverseTurn
    inputs: list[str]
    conversation: _Conversation
    played: int
    generation: int
    fault: _FrameFault | None
    undeclared: str | None  # the refusal at the first tool call nobody declared
    kinds: tuple[str, ...]  # each call's toolUse type: handed back, or run by the harness


def _undeclared(turn: ConverseTurn, tools: list[dict[str, Any]]) -> str | None:
    """Why a turn cannot play as scripted: it calls a tool that is not declared (``tools``:
    the invocation's, or the harness's where the invocation has none), which no model does
    (None when every call is declared). A remote
    MCP server or a gateway brings tools of its own: with one declared, any name goes."""
    if any(tool.get("type") in _OPEN_TOOL_TYPES for tool in tools):
        return None
    declared = {tool.get("name") for tool in tools}
    for tool_call in turn.tool_calls:
        if tool_call.name not in declared:
            names = ", ".join(sorted(str(n) for n in declared if n)) or "none"
            return (
                f"{_MODEL_REJECTED}The model called tool {tool_call.name!r}, which is not among"
                f" the tools of the invocation or the harness (declared: {names})."
            )
    return None


def _kind(name: str, tools: list[dict[str, Any]]) -> str:
    """How the harness treats a call of ``name``: an ``inline_function`` is handed back
    (``tool_use``); a deployed built-in it runs itself (``server_tool_use``), as it does any
    other name when an MCP server or a gateway is declared (``mcp_tool_use``)."""
    for tool in tools:
        if tool.get("name") == name:
            if tool.get("type") == "inline_function":
                return "tool_use"
            return "mcp_tool_use" if tool.get("type") in _OPEN_TOOL_TYPES else "server_tool_use"
    if any(tool.get("type") in _OPEN_TOOL_TYPES for tool in tools):
        return "mcp_tool_use"
    return "tool_use"


class Invoker:
    """The InvokeHarness route and the conversations it moves along.

    ``lifecycle`` is the emulator's: a turn's delays and stalls sleep on it, and a turn stops
    when the emulator closes. ``data_model`` is botocore's bedrock-agentcore service model.
    """

    def __init__(self, lifecycle: Lifecycle, state: AgentCoreState, data_model: Any) -> None:
        self._lifecycle = lifecycle
        self._state = state
        self._data_model = data_model

    def routes(self) -> list[Route]:
        return [("POST", "/harnesses/invoke", self._invoke_harness)]

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
        arn = query_value(request, "harnessArn")
        _check_shape(shape.members["harnessArn"], arn, "harnessArn", errors)
        session_id = self._session_id(request, shape.members["runtimeSessionId"], errors)
        for member in ("runtimeUserId", "traceParent", "traceState", "baggage"):
            header = shape.members[member].serialization["name"].lower()
            if header in request.headers:
                _check_shape(shape.members[member], request.headers[header], member, errors)
        body = _json_object(request)
        _check_structure(shape, body, "", errors, body_only=True)
        if body.get("messages") == []:
            errors.append(("messages", "Member must have length greater than or equal to 1"))
        if errors or arn is None:
            raise _invalid(errors)
        refusal = ""
        with self._state.condition:
            self._state.invocations.append(Invocation(arn, session_id, body))
            harness = self._state.harness_by_arn(arn)
            if harness.status != "READY":
                problem = f"Harness {harness.id} is {harness.status}, not READY"
                raise _invalid([("harnessArn", problem)])
            qualifier = query_value(request, "qualifier") or DEFAULT_ENDPOINT
            endpoint = find_endpoint(self._state, harness, qualifier)
            if endpoint is None:  # the DEFAULT one is not there yet after a fresh create
                raise endpoint_not_found(harness, qualifier)
            if endpoint.status != "READY":
                problem = f"Endpoint {qualifier} is {endpoint.status}, not READY"
                raise _invalid([("qualifier", problem)])
            conversation = self._state.conversations.setdefault((arn, session_id), _Conversation())
            try:
                plan: _Plan | None = self._plan(harness, conversation, body)
            except _Rejected as rejected:
                plan, refusal = None, str(rejected)
        stream = exchange.open_stream(
            session_id, _EVENT_STREAM, {"x-amzn-RequestId": str(uuid.uuid4())}
        )
        with self._state.condition:
            if conversation.stopped:  # stopped between the plan and the response head
                stream.abort("stopped")
                return
            conversation.streams.add(stream)
        try:
            self._answer(stream, plan, refusal)
        finally:
            with self._state.condition:
                conversation.streams.discard(stream)

    def _answer(self, stream: ChunkedStream, plan: _Plan | None, refusal: str) -> None:
        """Play an invocation's turn on its open stream, or refuse the conversation."""
        if plan is None:
            _write_last(stream, _exception("runtimeClientError", refusal))
            return
        text, failure = scripted_text(plan.turn.text, plan.inputs)  # user code: without the lock
        if failure:
            _write_last(stream, _exception("internalServerException", failure))
            return
        uses = [
            _ToolUse(f"tooluse_{secrets.token_urlsafe(16)}", c.name, dict(c.input), kind, c.result)
            for c, kind in zip(plan.turn.tool_calls, plan.kinds, strict=True)
        ]
        events = _turn_events(plan.turn, text, uses)
        handed_back = tuple(use for use in uses if use.handed_back)
        pending = handed_back if events[-2][1]["stopReason"] == "tool_use" else ()
        last = None
        if plan.undeclared is not None:
            # The text streams; the stream fails where the first tool block would start,
            # before messageStop, so the turn is never committed.
            first_tool = next(
                i for i, (kind, _) in enumerate(events) if kind == "contentBlockStart"
            )
            events = events[:first_tool]
            last = _exception("runtimeClientError", plan.undeclared)
        self._play(stream, plan, events, (plan.generation, plan.played + 1, pending), last)

    def _plan(self, harness: _Harness, conversation: _Conversation, body: dict[str, Any]) -> _Plan:
        """What an invocation plays; called under the lock. Raises _Rejected."""
        inputs = _conversation_input(body["messages"], conversation.pending)
        played = conversation.turns_played
        script = harness.script
        turn = script[played] if played < len(script) else _SCRIPT_FINISHED
        # An invocation's tools replace the harness's ("If specified, overrides the harness
        # default", InvokeHarness's model): they are not added to them.
        declared = body["tools"] if "tools" in body else harness.record["tools"]
        undeclared = _undeclared(turn, declared)
        kinds = tuple(_kind(call.name, declared) for call in turn.tool_calls)
        fault = None
        if self._state.frame_faults:  # one fault per invocation, in the order they were added
            fault = self._state.frame_faults[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._state.frame_faults.pop(0)
        generation = conversation.generation
        return _Plan(turn, inputs, conversation, played, generation, fault, undeclared, kinds)

    def _play(
        self,
        stream: ChunkedStream,
        plan: _Plan,
        events: list[tuple[str, dict[str, Any]]],
        advance: tuple[int, int, tuple[_ToolUse, ...]],
        last: bytes | None = None,
    ) -> None:
        """Write a turn's frames; commit it just before its ``messageStop`` goes out, and undo
        that if the write fails. ``last`` is a frame that ends a stream no fault cut."""
        started = time.monotonic()
        fault, conversation = plan.fault, plan.conversation
        count = len(events) if fault is None else fault.cut(len(events))
        written: list[dict[str, Any]] = []
        for event_type, payload in events[:count]:
            if plan.turn.delay:
                self._lifecycle.sleep(plan.turn.delay, stream)
            if self._lifecycle.stopping:
                stream.abort("emulator_closed")
                return
            if stream.ended:  # StopRuntimeSession cut it
                return
            if event_type == "metadata":
                payload["metrics"]["latencyMs"] = int((time.monotonic() - started) * 1000)
            commits = event_type == "messageStop"
            if commits and stream.client_gone():
                stream.abort("client_closed")
                return
            undo = self._advance(conversation, *advance, frames=written) if commits else None
            if not stream.write(_event(event_type, payload)):
                if undo is not None:
                    self._undo(conversation, *undo)
                return
            with self._state.condition:  # once committed, tests may be reading it
                written.append({event_type: payload})
        if fault is None and last is not None:
            _write_last(stream, last)
        elif fault is None:
            stream.finish()
        elif fault.kind == "stall":
            self._lifecycle.sleep(fault.seconds, stream)
            stream.abort("stalled")
        elif fault.kind in ("truncate", "after_commit"):
            if fault.abrupt:
                stream.abort("truncated")
            else:
                stream.finish("truncated")
        else:
            _write_last(stream, fault.frame)

    def _advance(
        self,
        conversation: _Conversation,
        generation: int,
        turns_played: int,
        pending: tuple[_ToolUse, ...],
        *,
        frames: list[dict[str, Any]],
    ) -> tuple[int, int, tuple[_ToolUse, ...]] | None:
        """Commit a played turn, whose written ``frames`` the invocation goes on filling,
        unless another invocation moved the conversation first; return what :meth:`_undo`
        needs."""
        with self._state.condition:
            if conversation.generation != generation:
                return None
            before = (conversation.turns_played, conversation.pending)
            conversation.turns_played, conversation.pending = turns_played, pending
            conversation.generation += 1
            conversation.frames.append(frames)
            return (conversation.generation, *before)

    def _undo(
        self,
        conversation: _Conversation,
        generation: int,
        turns_played: int,
        pending: tuple[_ToolUse, ...],
    ) -> None:
        with self._state.condition:
            if conversation.generation == generation:
                conversation.turns_played, conversation.pending = turns_played, pending
                conversation.generation += 1
                conversation.frames.pop()
