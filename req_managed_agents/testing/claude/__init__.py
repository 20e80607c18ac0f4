"""A local Claude Managed Agents API whose agents play scripts instead of calling a model.

It speaks the wire shapes of the real API (paths, headers, JSON bodies, error objects, the SSE
stream) closely enough that a client cannot tell the difference in the parts it exercises, and
adds what the real service cannot offer a test: determinism, fault injection and a full view
of what was sent.

Choices where the real API is undocumented or timing-dependent, made to keep tests
deterministic:

* sent events are echoed into the session log as soon as they are accepted, and the
  ``session.status_running`` that opens a turn is logged before the POST returns; the rest of
  the turn follows on a background thread after the turn's ``delay``;
* archiving a session sets ``archived_at`` and the status ``terminated`` and logs no event;
* deleting a session logs ``session.deleted``, which ends its open streams, and deletes its
  files: its outputs (as the service does) and the copies mounted by its resources;
* a turn's outputs are listed as soon as the turn writes them (the service can lag seconds);
* ``GET /v1/files`` without ``scope_id`` lists every file: uploads, mounted copies and
  outputs, newest first; deleting a session resource deletes its mounted copy;
* the results of confirmed tool calls are logged when the paused turn resumes (after its
  ``session.status_running``), not as each confirmation arrives;
* an interrupt while a turn is paused at ``requires_action`` drops what it waits for and
  logs ``session.usage`` and an ``end_turn`` idle, with no ``session.status_running``
  first; later answers to it are 400s;
* an outcome's ``max_iterations`` counts evaluations; a revision turn plays without a new
  ``session.status_running`` (the session never stopped running); each evaluation's grader
  uses 20 input and 4 output tokens, reported in its span and added to the session's usage;
* an interrupt during an outcome grades its current iteration ``interrupted`` at once, as
  a ``span.outcome_evaluation_start`` and ``_end`` pair; ``fail_turn`` ends it ``failed``
  without spans;
* a ``user.define_outcome`` while another outcome is open, or with a ``file`` rubric naming
  no stored file, is a 400;
* ``initial_events`` are accepted, as SDK 2.16 declares them (the service once refused
  inline events): checked like sent events, logged and played after the session is made;
* a ``user.message`` sent while a turn plays keeps ``processed_at`` null in the history
  until its turn begins; the stream carries its echo as accepted (null), once;
* an agent version pinned at session creation that does not exist is a 404, as
  ``GET /v1/agents/{id}?version=N`` answers; versions are listed newest first;
* a built-in toolset answers ``configs`` with all eight tools resolved; a skill without a
  version pins ``"latest"``; ``self`` in a roster names the agent at the version the
  create or update makes; a memory store resource mounts at ``/mnt/memory/<name slug>``;
* an input event takes only the fields the SDK's params declare for it, its content
  blocks and their sources included (the Bedrock flavor: Bedrock's params - no outcomes
  or sandbox results, answers to elicitations, a user message's images and documents as
  data only); anything else is a 400, as on the service. An answer names no thread (its
  params declare none): it is routed by its tool use id, and its echo names the thread
  that tool use was made on;
* an error names its cause in ``error.details.error_code`` where the SDK types one
  (``_errors``): an archived environment (updated, or a session made in it:
  ``environment_archived``), an unknown one (``environment_not_found``), metadata over its
  limits (``invalid_metadata``), an upload downloaded (``file_not_downloadable``), a
  ``Content-Type`` charset other than UTF-8, ISO-8859-1 or US-ASCII
  (``unsupported_charset``); ``fail_requests(code=...)`` injects any code the SDK types;
* an agent whose model does not take mid-conversation system messages refuses a
  ``system.message`` with a 400 whose message names
  ``model_does_not_support_mid_conversation_system``;
* ``session.thread_status_*`` events are logged for subagent threads only (the primary
  thread's status is the session's); archiving a thread keeps its status, and a later
  turn scripted for its name starts a new thread;
* a session's and a thread's ``stats`` are taken at each status change, so two reads in
  between answer the same object;
* a self-hosted environment's key exists once a test asks for it (``environment_key``);
  the work routes take the credentials ``_work_auth`` tabulates (poll, ack and list the
  environment key only); an item's sessions token also speaks for its session's reads,
  events and streams, and dies when the item stops or its lease runs out (then a 401);
* a work item is queued as its session is made, and again on input (anything but an
  interrupt) once none is queued or running; a repeated ack is a 409, a heartbeat on a
  queued item a 412, a graceful stop of a queued item stops it; its session's end makes a
  running item ``stopping``; only the six sandbox tools of the built-in toolset wait for
  the client's ``user.tool_result`` there (the web tools run on the service).

:class:`ClaudeEmulator` (``_emulator``) is assembled by composition, one concept per module.
Every resource keeps its data in the one ``ClaudeState`` (``_state``, guarded by the
emulator's one lock) and is handed the collaborators it calls, so the modules depend on each
other without a cycle:

* vocabulary and values: the wire vocabulary (``_wire``) and the error codes (``_errors``),
  the resolution of configurations
  into what the API answers (``_config``, ``_config_tools``, ``_config_roster``), the checks
  of sent events (``_inputs``), scripted turns (``_turn``) and the events they script
  (``_scripted``), the data model (``_model``:
  sessions, threads, stored files) and the shapes of logged events (``_shapes``);
* the session loop: the session log and its status changes (``_log``), subagent threads
  (``_subagents``), outcomes and their grader (``_outcomes``), the scripted-turn player
  (``_player``), sent events and the history (``_events``);
* the work queue of self-hosted environments: its items and their leases
  (``_work_items``), its routes (``_work``), who may call what (``_work_auth``), and the
  inputs of the sandbox tools that run on the client there (``_builtin_tools``);
* the resources and their routes: agents (``_agents``), environments (``_environments``),
  files (``_files``), session resources (``_resources``), vaults (``_vaults``), memory
  stores (``_memory``) and their memories (``_memories``), sessions (``_sessions``, with
  their agent and budget in ``_session_config``), the SSE stream with its live previews
  (``_stream``) and threads (``_threads``);
* authentication, routing and the error object (``_api``), served by the loopback server
  (:mod:`req_managed_agents.testing.server`).
"""

from __future__ import annotations

from req_managed_agents.testing.claude._emulator import ClaudeEmulator
from req_managed_agents.testing.claude._turn import Turn

__all__ = ["ClaudeEmulator", "Turn"]
