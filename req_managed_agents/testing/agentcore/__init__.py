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

botocore is imported when an emulator is created, never when this package is imported.

:class:`AgentCoreEmulator` (``_emulator``) is assembled by composition, one concept per
module. Its parts keep their data in the one ``AgentCoreState`` (``_state``, guarded by the
emulator's one lock) and are handed the collaborators they call, so the modules depend on
each other without a cycle:

* vocabulary and values: the wire vocabulary (``_wire``: AWS errors, event-stream frames),
  botocore shape checks (``_shapes``), SigV4 verification (``_sigv4``), Converse turns and
  the conversation rules (``_converse``), the command runner (``_commands``), harnesses
  (``_harness``), conversations (``_conversation``), frame faults (``_frame_faults``) and
  the records tests read (``_records``);
* the routes: the control-plane harness registry (``_control``), InvokeHarness
  (``_invoke``), and InvokeAgentRuntimeCommand with StopRuntimeSession (``_runtimes``);
* signature checks, routing by listener and AWS's errors (``_api``), served by the loopback
  server (:mod:`req_managed_agents.testing.server`) on two listeners.
"""

from __future__ import annotations

from req_managed_agents.testing.agentcore._commands import CommandOutput, CommandRecord
from req_managed_agents.testing.agentcore._converse import ConverseTurn
from req_managed_agents.testing.agentcore._emulator import AgentCoreEmulator
from req_managed_agents.testing.agentcore._records import Invocation, StoppedSession

__all__ = [
    "AgentCoreEmulator",
    "CommandOutput",
    "CommandRecord",
    "ConverseTurn",
    "Invocation",
    "StoppedSession",
]
