"""A local Gemini Interactions API (Managed Agents) whose agents play scripts.

It speaks the wire shapes of the ``google-genai`` SDK 3.6.1 (``google/genai/_gaos``): every
answer and every streamed event validates strictly against the SDK's models (unmarshalled
with unknown union variants refused, and no field, union variant or enum value the models do
not declare). Clients send ``x-goog-api-key: <api_key>`` to ``base_url`` under ``/v1/`` (what
the SDK sends) or ``/v1beta/`` (what the REST docs show), with or without ``Api-Revision:
2026-05-20`` (another revision is a 400). Errors are ``{"error": {"code": "<string>",
"message"}}`` (codes ``invalid_request`` 400, ``authentication`` 401, ``not_found`` 404,
``already_exists`` 409, ``rate_limit_exceeded`` 429, ``api_error`` 500,
``service_unavailable`` 503); every answer, errors and streams included, carries an
``x-request-id``.

The wire contract a client can rely on:

* **Interactions are hops.** ``POST /{v}/interactions`` (the agent form only; ``agent`` is
  required, an undeclared top-level field is a 400) makes a new interaction every time; a
  conversation is the chain of them linked by ``previous_interaction_id``. Each plays the
  next :class:`GeminiTurn` of its agent's script: the first hop turn 0, a hop continuing
  hop *n* turn *n + 1*. A hop with tool calls ends ``requires_action`` with one
  ``function_call`` step per call (``id``, ``name``, complete ``arguments``); the caller
  answers with a create naming it as ``previous_interaction_id`` whose ``input`` is one
  ``function_result`` step per pending call (see ``_interactions`` for each refusal). A hop
  ending ``requires_continuation`` carries a ``continuation_token``: a create with it (and
  that ``previous_interaction_id``, no ``input``) plays the next turn.
* **Answers.** ``stream: true``: the hop's events as SSE, from ``interaction.created`` to
  ``interaction.completed``; ``background: true``: the interaction at once
  (``in_progress``); neither: the interaction once the hop has stopped. Statuses:
  ``in_progress`` while playing, then ``requires_action``, ``requires_continuation``,
  ``completed``, ``failed``, ``incomplete``, ``budget_exceeded`` or ``cancelled``.
  ``GET /{v}/interactions/{id}`` shows its ``steps`` (the input steps, then the output
  steps), ``usage``, ``labels`` (echoed), ``errors``, ``previous_interaction_id``,
  ``environment_id`` and ``input`` (with ``include_input=true``).
* **Events** (each with a unique ``event_id``): ``interaction.created``; per output step
  ``step.start`` (the whole step), its ``step.delta`` events (a text in a few ``text``
  pieces; a thought's ``thought_summary`` and ``thought_signature``) and ``step.stop``;
  ``error`` when the hop fails; ``interaction.status_update`` (final status, ``usage``,
  ``continuation_token``); ``interaction.completed``, which ends every hop, whatever its
  status. See ``_stream`` for the frames and ``_player`` for the steps.
* **Resuming.** ``GET /{v}/interactions/{id}?stream=true`` streams the interaction's events
  from the first, or with ``last_event_id`` from the event after that one, then follows the
  hop live until ``interaction.completed``.

Choices where the SDK is silent, made strict and deterministic:

* ``agent`` is a built-in agent (``AgentOption``'s literals, playing the default script) or
  an agent made here, named ``id`` or ``agents/{id}`` (echoed as given); another is a 404.
  Every create must name the previous hop's agent;
* a ``function_call`` arrives whole in ``step.start`` (never as ``arguments_delta``);
  ``index`` counts a hop's output steps from 0 (``steps`` lists its input steps first);
  ``interaction.completed`` carries no steps; no ``[DONE]`` sentinel and no ``id:`` lines;
* a ``last_event_id`` that is not one of the interaction's events cannot resume: a 400
  ``invalid_request`` (``refuse_resumes`` makes a valid one fail likewise, or 404/410);
  ``last_event_id`` without ``stream=true`` is a 400;
* continuing a hop twice branches the conversation (each branch plays the same next turn);
  continuing a running hop, or one that does not exist, is a 400;
* cancelling a running hop logs its ending (``cancelled``); a waiting one (``requires_action``,
  ``requires_continuation``) becomes ``cancelled`` without events (its log has ended) and
  can no longer be continued with results; cancelling a cancelled one answers it as it is;
  one that ended otherwise is a 400. Deleting cancels first, then reads 404;
* a scripted call to a function neither the hop's ``tools``, an earlier hop's nor its
  agent's declare fails the hop (``failed``, an ``error`` event);
* agents take a caller-chosen ``id`` (``[a-z]([a-z0-9-]{0,61}[a-z0-9])?``; a taken one is a
  409); environments get ``env_<hex>`` ids; both list in pages (``page_size``,
  ``page_token``, ``next_page_token``); ``DELETE`` answers ``{}``;
* a ``background`` interaction must be stored (``store: false`` is a 400); labels follow the
  documented rules (keys ``[a-z][a-z0-9_-]{0,62}``, values ``[a-z0-9_-]{0,63}``, at most 64).

:class:`GeminiEmulator` (``_emulator``) is assembled by composition, one concept per module,
every resource sharing the one ``GeminiState`` (``_state``) under the emulator's lock: the
wire vocabulary and errors (``_wire``), the create body (``_request``), the data model
(``_model``), event logs and hop endings (``_log``), the hop player (``_player``), scripted
hops (``_turn``), the SSE stream (``_stream``), and the routes: interactions
(``_interactions``), agents (``_agents``) and environments (``_environments``), behind the
key and routing (``_api``).
"""

from __future__ import annotations

from req_managed_agents.testing.gemini._emulator import GeminiEmulator
from req_managed_agents.testing.gemini._turn import GeminiTurn

__all__ = ["GeminiEmulator", "GeminiTurn"]
