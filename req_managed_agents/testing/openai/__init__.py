"""A local OpenAI Agents API whose agents play scripts instead of calling a model.

It speaks the wire shapes of the ``openai`` SDK 3.60.0 (``resources/beta/agents``,
``types/beta/agent_*``, ``types/beta/agents/**``): every object, page and event it answers
validates strictly against the SDK's models, with no field they do not declare. Clients
send ``Authorization: Bearer <api_key>`` and ``OpenAI-Beta: agents=v1`` to ``base_url``
(ending in ``/v1``). Errors are ``{"error": {"message", "type", "param", "code"}}``.

The wire contract a client can rely on:

* **Stream.** ``GET /v1/agents/sessions/{id}/events`` sends first a snapshot of the
  session's status (``agent.session.idle``, ``in_progress``, ``requires_action``,
  ``failed`` or ``budget_reached`` with the session as it is, ``required_actions``
  included; a fresh ``event_id``, not in the log), then the events logged after it opened,
  in order, each once (no replay), as ``event: <type>`` / ``data: <json>`` frames without
  ``id:`` lines, every event with a unique ``event_id``; ``: keep-alive`` comments fill
  silences. It never ends by itself (a deleted session's streams end cleanly). The SDK's
  ``sessions.stream`` helper ignores the opening idle, as its docstring says ("Initial idle
  events ... do not end iteration"), and its result collector ends on an opening
  ``budget_reached``: the evidence for the snapshot.
* **A turn's events**, in log order: ``turn.created`` (``queued``), then, when it begins,
  ``agent.session.in_progress`` (unless the session already was), ``turn.in_progress``, a
  ``turn.item.added`` per user message (``output_index`` null). Per step: an assistant
  message (``turn.item.added``, ``turn.content_part.added``, ``turn.output_text.delta``
  pieces, ``turn.output_text.done``, ``turn.content_part.done``, ``turn.item.done``;
  ``phase`` ``commentary`` when the step makes calls, ``final_answer`` otherwise), the
  events the step scripts (``OpenAITurn(events=...)``), MCP calls,
  function calls (``turn.item.added`` carrying the complete call: ``call_id``, ``name``,
  ``arguments`` as a JSON string, ``turn_id``; then ``turn.item.done``). A call can be
  answered from its ``turn.item.added`` on. Then ``agent.session.requires_action`` (the
  turn ``waiting``), or ``turn.completed`` (with the turn's ``usage``, summed over its
  steps) and ``agent.session.idle`` (or the next queued turn's ``turn.in_progress``, or
  ``agent.session.budget_reached``). Each answer is logged as it is accepted
  (``function_call_output`` item added - with ``echo_answers=False`` only recorded in the
  items, never announced; an MCP call's ``turn.item.done``); the last one resumes the
  turn: ``agent.session.in_progress``, ``turn.in_progress``, the next step. A failure
  logs ``error``, ``turn.failed`` and then ``agent.session.idle`` (or
  ``agent.session.failed``); a cancel ``turn.cancelled`` then ``agent.session.idle``.
  Subagent turns (``subagent_id`` set) have their own ``turn.created``, ``in_progress``
  and ``completed``; their calls carry their own ``turn_id``, which results must name.
* **Catching up.** The log is also what ``items`` and ``turns`` show: a client that lost
  its stream reconnects (the snapshot gives the status and the pending
  ``required_actions``), then reads ``GET .../items?order=asc&after=<last item id seen>``
  (the root agent's items, their current state: completed messages with their full text,
  function calls, outputs) and ``GET .../turns`` (statuses, usage, errors). Subagents'
  items and turns are under ``/subagents/{id}``.
* **Inputs** (``POST .../events``) are checked as a batch and answer ``202`` with no body;
  see ``_inputs`` for each refusal and its ``code``. ``Idempotency-Key``: an accepted
  request's key and body are remembered per session; the same key and body again answer
  ``202`` and change nothing, the same key with another body is a 400
  ``idempotency_key_reused``; a refused request does not use its key up.
* **The registration race.** Only after ``refuse_unregistered_results`` does a result for a
  pending call get ``{"message": "Unknown pending tool call: <call_id>", "type":
  "invalid_request_error", "param": null, "code": "invalid_request_error"}`` (what the
  SDK's ``is_pending_call_race`` retries); an id never announced is ``unknown_tool_call``,
  a second result ``tool_result_already_submitted``, a call whose turn ended
  ``tool_call_not_pending``: none of them is worth retrying.

Choices where the SDK is silent, made strict and deterministic:

* a missing or wrong ``OpenAI-Beta`` header is a 400 (as OpenAI answers its other beta
  APIs), checked after the key (a 401);
* ``input`` is required at creation for ``environment.type`` ``none``, and with ``stream``
  for environments other than ``self_hosted``, as the SDK's docstring says; a
  ``stream: true`` creation answers the event stream from ``agent.session.created`` on;
* a message while a turn is open queues a turn (``queued``, as the turn statuses allow);
  a message while the session has failed or is paused at its spend limit is refused;
  a cancel with no open turn is refused;
* one token costs one US cent: a session's ``spend_control.consumed`` is its total tokens;
  a step does not start once spend has reached the limit (its turn fails with
  ``session_budget_exceeded``), and a turn that reaches it ends in ``budget_reached``
  instead of ``idle``; raising the limit makes the session ``idle`` again;
* deleting a session while a step runs is refused (the SDK says running execution must be
  cancelled first); a turn waiting for answers is cancelled by the deletion;
* list pages answer ``data`` and ``has_more`` (and ``last_id`` for a turn's items): the
  fields the SDK's page models declare;
* a hosted environment is ready at once (no ``environment.*`` events unless scripted);
  prewarmed environments, templates, files, plugins, setup commands and skills, vaults,
  automations and computer-use requests are not emulated (refused, or never asked for):
  their routes, a session's artifacts and traces are 404 ``Invalid URL``, as the service
  answers a route it does not know;
* a subagent turn's ``agent_id`` is the subagent's id; the session's ``/turns`` lists root
  turns only.

:class:`OpenAIAgentsEmulator` (``_emulator``) is assembled by composition, one concept per
module, every resource sharing the one ``OpenAIState`` (``_state``) under the emulator's
lock: the wire vocabulary and errors (``_wire``), request checks (``_schema`` combinators,
``_params`` shapes), resolved configurations (``_config``), the data model (``_model``),
items (``_items``), the session log (``_log``), turn transitions (``_turns``), the step
player (``_player``), scripted steps (``_turn``) and the events they script
(``_scripted``), and the routes: agents (``_agents``),
sessions (``_sessions``), inputs (``_inputs``), the stream (``_stream``), items, turns and
subagents (``_history``), behind authentication and routing (``_api``).
"""

from __future__ import annotations

from req_managed_agents.testing.openai._emulator import OpenAIAgentsEmulator
from req_managed_agents.testing.openai._turn import OpenAITurn

__all__ = ["OpenAIAgentsEmulator", "OpenAITurn"]
