"""Local emulators of the provider APIs, for testing code that uses this SDK.

:class:`ClaudeEmulator` is a Claude Managed Agents API served over real HTTP on
``127.0.0.1`` (a free port), whose agents play scripts instead of calling a model. Point the
SDK (or any HTTP client) at ``emulator.base_url`` with ``emulator.api_key`` and it behaves like
the service: agents (with versions), environments, sessions (created with their options,
updated), sending events, paged and filtered history, session threads, vaults and their
credentials, memory stores and their memories, the Files API, and a long-lived SSE stream
with heartbeats and no replay. Every answer fits the official ``anthropic`` SDK's models
exactly (its tests validate them strictly). Because it is a real server, streaming,
reconnects and timeouts are exercised over real sockets, and faults can be injected while a
session runs. It needs only the standard library.

A script is a sequence of :class:`Turn` objects, played one per input over the life of a
session: each ``user.message`` or ``user.define_outcome``, or each complete set of answers
to what the previous turn paused on (custom tool results, tool confirmations), plays the
next turn; when the script runs out, the agent answers ``(script finished)``. A turn's text
may be a function of the texts that triggered it::

    from req_managed_agents import Tools, run_to_completion
    from req_managed_agents.testing import ClaudeEmulator, Turn, call

    tools = Tools()

    @tools.tool
    def get_weather(city: str) -> str:
        '''The current weather in a city.'''
        return "sunny"

    def test_the_agent_reports_the_weather():
        script = [
            Turn(tool_calls=[call("get_weather", city="Paris")]),
            Turn(text=lambda results: f"It is {results[0]} in Paris."),
        ]
        with ClaudeEmulator(script) as emulator:
            agent_id = emulator.add_agent()
            environment_id = emulator.add_environment()
            with emulator.provider() as provider:  # a ClaudeManagedAgents aimed at it
                result = run_to_completion(
                    provider, "Weather?", handler=tools,
                    agent_id=agent_id, environment_id=environment_id,
                )
            assert result.text == "It is sunny in Paris."
            assert emulator.events(result.session_id)[0]["type"] == "user.message"

Other HTTP clients must send what the real API requires: ``x-api-key: <emulator.api_key>`` (or
``authorization: Bearer <key>``), an ``anthropic-version`` header and ``anthropic-beta:
managed-agents-2026-04-01``. Each turn logs, in order: ``session.status_running``,
``span.model_request_start``, ``agent.thinking`` (``Turn(thinking=True)``), ``agent.message``
(when there is text), the events the turn scripts (``Turn(events=...)``: any type, as given,
and by name the SDK's types nothing else emits, filled in), per server tool call an
``agent.tool_use`` (``agent.mcp_tool_use`` for a ``ToolCall(mcp_server=...)``) with its
``evaluated_permission`` and ``evaluation`` and, unless it asks for permission, its
``agent.tool_result`` (``agent.mcp_tool_result``), ``span.model_request_end``, one
``agent.custom_tool_use`` per tool call, ``session.usage`` and ``session.status_idle`` (or
the terminated/error ending). ``session.usage`` comes right before every idle and terminal
ending, and nowhere else.

Permission policies: a server ``ToolCall(permission="deny")`` gets the error result
``Permission to use <name> has been denied.`` at once; ``permission="ask"`` pauses the turn:
the idle's ``requires_action`` lists every asking call's id, then every custom tool call's,
and the session waits for one ``user.tool_confirmation`` per asking call (``result``
``"allow"`` or ``"deny"``, ``deny_message`` only with ``"deny"``) and one
``user.custom_tool_result`` per custom call. Answering only some idles again, naming the
rest. Once all are in, the turn resumes: ``session.status_running``, the confirmed calls'
results (the scripted ``result``, or an error result ending with the deny message), then
the next turn, whose text receives the custom results in call order, then ``"allowed"``,
``"denied"`` or ``"denied: <deny_message>"`` per confirmed call. A confirmation for an
unknown id, a call that does not ask, one already confirmed, or with a ``deny_message`` on
``"allow"`` is a 400 and logs nothing.

Routes beyond the session loop: ``GET /v1/agents/{id}?version=N`` and
``/v1/agents/{id}/versions``; ``POST /v1/sessions/{id}`` (update: the agent's ``tools`` and
``mcp_servers`` while not running, ``title``, ``metadata`` as a patch, ``budget``; it logs
``session.updated``); ``POST``/``DELETE /v1/environments/{id}``;
``/v1/sessions/{id}/threads`` (list, get, ``/archive``, ``/events``, ``/stream``);
``/v1/vaults`` and ``/v1/vaults/{id}/credentials`` (create, get, update, list, archive,
delete; secrets never come back); ``/v1/memory_stores`` and ``.../memories`` (beta
``agent-memory-2026-07-22`` or the managed-agents one). Sessions are created from an agent id,
a pinned ``{"type": "agent", "id", "version"}`` or ``agent_with_overrides``, with
``resources`` (``file``, ``github_repository``, ``memory_store``), ``vault_ids``,
``metadata``, ``title``, ``budget`` and ``initial_events``. Lists page with ``limit`` and
``page`` everywhere and apply their filters: sessions by ``statuses[]``, ``agent_id``,
``agent_version``, ``created_at[gt|gte|lt|lte]``, ``memory_store_id``, ``include_archived``
and ``order``; events by ``order``, ``types[]`` and ``created_at[...]`` (on
``processed_at``); an unknown or malformed value is a 400. A ``user.message`` sent while a
turn plays is queued: its echo keeps ``processed_at`` null until its turn begins. A
``system.message`` (one per request, last, right after the message or result it goes with,
on a model that takes one) is logged with it. ``user.tool_result`` is for self-hosted
environments, where an allowed built-in ``ToolCall`` waits for it; elsewhere it is a 400.

Threads: ``Turn(thread="researcher", ...)`` has a subagent play the turn on a session thread
of that name. The first time, the primary log gets ``session.thread_created`` and
``agent.thread_message_sent`` (the turn's input); the thread's own log (``events(session_id,
thread_id)``, ``.../threads/{id}/events`` and ``/stream``) gets
``agent.thread_message_received``, the turn's spans and messages; ``session.thread_status_*``
go to both. Tool uses that wait on the client (custom calls, calls that ask, self-hosted
built-in calls) are cross-posted to the primary log with ``session_thread_id``, and the
answers are routed by tool use id (their echo carries the thread's id; a
``session_thread_id`` naming another thread is a 400). The next turn of the same name
resumes the thread; when a thread's turn ends it idles and reports its text to the primary
thread (``agent.thread_message_received``). The thread runs the coordinator's roster agent of
that name, or else an inline copy of the coordinator. ``threads(session_id)`` shows them.

Outcomes: ``user.define_outcome`` (``description``, a ``text`` rubric of at most 262144
characters or a ``file`` rubric naming a stored file, ``max_iterations`` 1-20, default 3;
one outcome at a time) is echoed with an ``outcome_id`` and plays the next turn with the
description as its input. Each turn of it that would end ``end_turn`` is graded:
``span.outcome_evaluation_start`` and ``span.outcome_evaluation_end`` (``iteration`` from
0) with the turn's scripted ``Turn(evaluation=..., explanation=...)`` verdict
(``"satisfied"`` by default). ``needs_revision`` plays the next turn at once, its text
receiving the explanation; the last of ``max_iterations`` evaluations turns it into
``max_iterations_reached``, after which one final, ungraded turn plays; ``satisfied`` and
``failed`` idle at once. The session's ``outcome_evaluations`` follow along (``pending``,
``running``, ``evaluating``, then the verdict). An interrupt during an outcome grades its
current iteration ``interrupted`` (a start and an end span) and ends it.

Interrupts: ``user.interrupt`` ends a running turn, or one paused at ``requires_action``
(whose answers are then refused), with ``session.status_idle`` ``end_turn``; on an idle
session it is logged and does nothing else.

Live previews: a stream opened with ``event_deltas[]=agent.message`` (repeatable; also
``agent.thinking``; anything else, or more than 100 values, is a 400) gets, right before
each ``agent.message``, ``{"type": "event_start", "event": {"type", "id"}}`` and
``event_delta`` frames (``{"type": "event_delta", "event_id", "delta": {"type":
"content_delta", "index", "content": {"type": "text", "text": <piece>}}}``) carrying each
text block in three pieces; ``agent.thinking`` previews are an ``event_start`` alone.
Previews have no ``id`` or ``processed_at``, are never in the history and never replayed.

Options: ``ping_interval`` (seconds of silence before a heartbeat),
``heartbeat="comment"|"event"`` (``: ping`` line or ``event: ping`` frame), ``sse_ids=True``
(``id:`` lines on frames) and ``unique_names=True`` (a taken agent or environment name is a 409).

Files work as with the service: the Files API (``POST /v1/files`` multipart upload whose
``file`` part must carry a content type; ``GET /v1/files``, by ``scope_id=<session id>``
too; metadata; ``/content`` download; delete) needs no beta header, except that listing by
``scope_id`` needs ``managed-agents-2026-04-01``. Session resources
(``/v1/sessions/{id}/resources``, or ``resources`` at creation) mount a read-only copy with a
file id of its own under ``/mnt/session/uploads``. ``Turn(outputs={"report.csv": b"..."})``
has the agent write files to ``/mnt/session/outputs/``: each becomes a downloadable file
scoped to the session before the turn ends, and ``add_output(session_id, name, data)`` places
one directly. Uploads are not downloadable, unless the emulator is built with
``downloadable_uploads=True``.

With pytest, the ``claude_emulator`` fixture (from ``req_managed_agents.testing.pytest_plugin``)
yields a fresh ``ClaudeEmulator()`` per test and closes it afterwards.

Faults, usable at any time (also while a session runs). Request faults match a method (or
``"*"``), a regex for the whole path and, with ``where=``, a predicate on the
:class:`RecordedRequest` (its body, say, to tell a posted ``user.message`` from posted tool
results); both emulators have them:

* ``fail_requests(method, path_regex, status, times=1, retry_after=None, error_type=None,
  where=None)`` answers the next matching requests with an API error (and a ``retry-after``
  header);
* ``reset_requests(method, path_regex, after_acting=..., times=1, where=None)`` closes their
  connections without a response byte: with ``after_acting=False`` before the request is
  handled (the server did nothing), with ``after_acting=True`` after it was handled in full
  (state changed, events logged, ids assigned), so the client cannot tell whether it landed.
  A streaming response is attached, then reset before its head goes out (its
  :class:`StreamConnection` ends ``"reset"``): a Claude stream was attached, an
  InvokeHarness turn was not played (a frame fault meant for it is used up);
* ``before_requests(method, path_regex, hook, times=1, where=None)`` calls ``hook()`` just
  before handling them;
* ``answer_requests(method, path_regex, body, status=200, content_type="application/json",
  after_acting=True, times=1, where=None)`` sends ``body`` as it is in place of their
  answer - a hostile service's empty, non-JSON or ill-shaped success: with
  ``after_acting=True`` after the request was handled in full (a streaming answer is
  attached, then ends ``"replaced"`` unwritten), with ``after_acting=False`` instead of
  handling it. An injected error meeting the same request comes first.

Stream faults of the Claude emulator, at a 0-based position of the session log (echoed user
events count), for the next ``times`` stream connections about to send that event, or any
session's with ``session_id=None``; the event stays in the history, and a fault meets it
before its previews:

* ``drop_stream(at_event, session_id=None, times=1, after_deltas=None)`` cuts the connection
  (with ``after_deltas=k``, after the event's ``event_start`` and ``k`` of its deltas);
* ``stall_stream(at_event, seconds, session_id=None)`` (once) makes it go silent, pings
  included, for ``seconds`` and then close;
* ``corrupt_stream(at_event, session_id=None, times=1, data=None)`` writes, instead of the
  event, a frame whose ``data:`` is not JSON (the first half of the event's) - or, with
  ``data``, one that carries ``data`` (JSON of the wrong shape, an event whose ``type`` is
  not a string) - then carries on;
* ``duplicate_stream(at_event, session_id=None, times=1)`` writes that event's frame twice;
  ``duplicate_stream_events()`` writes every event twice on every stream.

An event meets one stream fault at most (stalls first, then drops, corruptions and
duplications). ``terminate_session(session_id)`` fails the session as the service would;
``fail_turn(session_id)`` gives up on the running turn (``retries_exhausted``).

For assertions: ``requests`` (every :class:`RecordedRequest`), ``events(session_id)`` (the
log; ``events(session_id, thread_id)`` a thread's), ``threads(session_id)``,
``session_ids()``, ``files(session_id=None)`` (file metadata),
``stream_connections(session_id)`` (:class:`StreamConnection` snapshots),
``open_stream_count(session_id)``, ``pending_faults()`` (fault shots not fired yet, to check
that a test met the fault it set up) and ``wait_until(predicate, timeout)``.
``close()`` (or leaving the ``with`` block) ends open streams and joins the emulator's threads.

:class:`AgentCoreEmulator` is the AWS Bedrock AgentCore Harness service, on two loopback
ports as AWS uses two hosts: ``emulator.data_url`` (InvokeHarness, InvokeAgentRuntimeCommand,
StopRuntimeSession) and ``emulator.control_url`` (CreateHarness, GetHarness, ListHarnesses,
UpdateHarness, ListHarnessVersions, DeleteHarness). GetHarness shows the runtime behind each
harness (``environment.agentCoreRuntimeEnvironment.agentRuntimeArn``), which commands and
StopRuntimeSession address; UpdateHarness takes a ``READY`` harness, makes a new
``harnessVersion`` and walks it ``UPDATING`` then ``READY``. Every
request must carry a valid SigV4 signature for service ``bedrock-agentcore`` made with the
emulator's test credentials (``access_key_id``, ``secret_access_key``, optional
``session_token``, ``region``); bodies are checked against the botocore service models.
It needs botocore (the ``aws`` extra), imported only when an emulator is created.
A harness plays a script of :class:`ConverseTurn` objects, one per invocation of a runtime
session, streamed as event-stream frames; tool calls end a turn with ``tool_use`` and the
next invocation must echo the assistant's ``toolUse`` blocks before the ``toolResult``
blocks, as the live service requires. A turn that calls a tool neither the invocation nor the
harness declares streams its text and then fails with a ``runtimeClientError`` exception
frame, uncommitted, since no model calls a tool it was not given::

    from req_managed_agents.testing import AgentCoreEmulator, ConverseTurn, call

    script = [
        ConverseTurn(tool_calls=[call("get_weather", city="Paris")]),
        ConverseTurn(text=lambda results: f"It is {results[0]} in Paris."),
    ]
    with AgentCoreEmulator(script) as emulator:
        harness_arn = emulator.add_harness()  # READY at once
        ...  # point the SDK at emulator.data_url / emulator.control_url with its credentials
        assert emulator.invocations[-1].harness_arn == harness_arn

A turn is committed (the conversation advances) as its ``messageStop`` frame goes out: a
retried invocation replays a turn cut before it and meets the next turn after it.
StopRuntimeSession (``POST /runtimes/{arn}/stopruntimesession``, a runtime session id of at
least 33 characters, ``{clientToken?}``; an unknown runtime is a 404) cuts the session's
in-flight InvokeHarness streams (they end ``"stopped"``) and forgets its conversation: the
next invocation with that id starts from the script's first turn.

Faults and controls: ``fail_requests(...)`` (AWS-style HTTP errors, e.g. 429
ThrottlingException), ``reset_requests(...)`` and ``before_requests(...)`` as above, and
frame faults, each for the next ``times`` invocations in the order added:
``exception_frame(...)`` and ``error_frame(...)`` (a final exception or error frame after
``after_frames`` frames), ``corrupt_frame(after_frames, times=1)`` (a frame with a wrong
message CRC, then the end), ``truncate_stream(...)`` (a clean end before ``messageStop``),
``truncate_after_commit(times=1, abrupt=False)`` (the turn through ``messageStop``, committed,
then the end without ``metadata``: clean, or a cut connection), ``stall_stream(...)``
(silence, then a cut), and ``harness_statuses(...)`` (the statuses GetHarness walks
through). Commands run through ``command_runner`` (default: ``/bin/sh`` in the temporary
directory ``workdir``) and report a :class:`CommandOutput`. For assertions: ``invocations``
(:class:`Invocation`), ``turn_frames(harness_arn, runtime_session_id)`` (the frames of each
committed turn), ``commands`` (:class:`CommandRecord`), ``stopped_sessions``
(:class:`StoppedSession`), ``signature_failures``,
``harnesses()``, ``pending_faults()`` and ``requests``. The ``agentcore_emulator`` fixture
yields a fresh ``AgentCoreEmulator()``.

:class:`OpenAIAgentsEmulator` is OpenAI's Agents API (``/v1/agents``, sessions, their
events, items, turns and subagents) on ``127.0.0.1``: point a client at
``emulator.base_url`` (it ends in ``/v1``) with ``Authorization: Bearer <emulator.api_key>``
and ``OpenAI-Beta: agents=v1``. Its agents play scripts of :class:`OpenAITurn` steps, one
per input: a user message, or the complete set of answers (``agent.session.input.tool_result``
per function call, ``agent.session.input.mcp_approval_request_result`` per MCP approval) to
what the previous step paused on; the API turn stays open (``waiting``) across the pauses
and completes with the first step that makes no calls. Every answer and event fits the
official ``openai`` SDK's models exactly (its tests validate them strictly), and the SDK's
own ``client.beta.agents.sessions.stream(..., tool_handlers=...)`` runs against it::

    from req_managed_agents.testing import OpenAIAgentsEmulator, OpenAITurn, call

    script = [
        OpenAITurn(tool_calls=[call("get_weather", city="Paris")]),
        OpenAITurn(text=lambda results: f"It is {results[0]} in Paris."),
    ]
    with OpenAIAgentsEmulator(script) as emulator:
        agent_id = emulator.add_agent()
        ...  # a client with base_url=emulator.base_url, api_key=emulator.api_key
        assert emulator.events(session_id)[0]["type"] == "agent.session.created"

The wire behaviour (status snapshot on connect, the order of events per turn, catching up
from items and turns, idempotency keys, error codes) is described in
:mod:`req_managed_agents.testing.openai`. Faults: the request faults above, the Claude
emulator's stream faults (``drop_stream``, ``stall_stream``, ``corrupt_stream``,
``duplicate_stream``, ``duplicate_stream_events``, at positions of ``events(session_id)``),
``refuse_unregistered_results(times)`` (the registration race the SDK retries),
``terminate_session`` and ``fail_turn``. For assertions: ``events``, ``items``, ``turns``,
``session``, ``session_ids``, ``requests``, ``stream_connections``, ``pending_faults``. The
``openai_emulator`` fixture yields a fresh ``OpenAIAgentsEmulator()``.

:class:`GeminiEmulator` is the Gemini Interactions API (Managed Agents: ``/v1/`` and
``/v1beta/`` ``interactions``, ``agents``, ``environments``) on ``127.0.0.1``: point a client
at ``emulator.base_url`` with ``x-goog-api-key: <emulator.api_key>`` (google-genai:
``genai.Client(api_key=..., http_options={"base_url": emulator.base_url})``). Every create
makes a new interaction, the next hop of a conversation, which plays the next
:class:`GeminiTurn` of its agent's script: a hop with tool calls ends ``requires_action``
with ``function_call`` steps, and a create naming it as ``previous_interaction_id`` with one
``function_result`` per call plays the next. Every answer and event fits google-genai
3.6.1's models strictly::

    from req_managed_agents.testing import GeminiEmulator, GeminiTurn, call

    script = [
        GeminiTurn(tool_calls=[call("get_weather", city="Paris")]),
        GeminiTurn(text=lambda results: f"It is {results[0]} in Paris."),
    ]
    with GeminiEmulator(script) as emulator:
        agent_id = emulator.add_agent(tools=[{"type": "function", "name": "get_weather"}])
        ...  # create, then answer the requires_action hop with function_result steps

The wire behaviour (hops, statuses, events, resuming with ``last_event_id``, refusals, the
choices where the SDK is silent) is described in :mod:`req_managed_agents.testing.gemini`.
Faults: the request faults above, the stream faults (at positions of
``conversation_events(interaction_id)``, ``session_id`` naming a conversation by its first
interaction's id), ``not_found_after_create(reads, times)`` (a created interaction reads 404
at first), ``refuse_resumes(times, status)`` (a stream that cannot resume) and
``fail_interaction``. For assertions: ``interaction``, ``interaction_ids``, ``events``,
``conversation_events``, ``conversation_id``, ``running``, ``requests``,
``stream_connections``, ``pending_faults``. The ``gemini_emulator`` fixture yields a fresh
``GeminiEmulator()``.
"""

from __future__ import annotations

from req_managed_agents.testing._script import ToolCall, call
from req_managed_agents.testing.agentcore import (
    AgentCoreEmulator,
    CommandOutput,
    CommandRecord,
    ConverseTurn,
    Invocation,
    StoppedSession,
)
from req_managed_agents.testing.claude import ClaudeEmulator, Turn
from req_managed_agents.testing.gemini import GeminiEmulator, GeminiTurn
from req_managed_agents.testing.openai import OpenAIAgentsEmulator, OpenAITurn
from req_managed_agents.testing.server import RecordedRequest, StreamConnection

__all__ = [
    "AgentCoreEmulator",
    "ClaudeEmulator",
    "CommandOutput",
    "CommandRecord",
    "ConverseTurn",
    "GeminiEmulator",
    "GeminiTurn",
    "Invocation",
    "OpenAIAgentsEmulator",
    "OpenAITurn",
    "RecordedRequest",
    "StoppedSession",
    "StreamConnection",
    "ToolCall",
    "Turn",
    "call",
]
