"""One AgentCore runtime session as a :class:`~req_managed_agents.providers.Conversation`.

Every turn is one streamed ``InvokeHarness`` call. The harness runs the agent loop until it
ends or needs a local tool (``stopReason: tool_use``); the next invocation carries the
results. Events reach ``on_event`` live, frame by frame.

A failed invocation is invoked again (up to ``invoke_retries`` more times, with backoff)
only when the failure proves the service did nothing with it: the connection was never made,
or the service refused it up front (a throttle, a 503/529 with ``retry-after``). Anything
else that breaks an invocation after it was sent - a reset, a truncated or corrupt stream, a
5xx - leaves the turn's fate unknown: the harness may have committed it, tool calls pending,
and it offers no history to ask. Sending the prompt again could run the turn twice, or skip
its tool calls while the run reports success, so the run stops with
:class:`~req_managed_agents.errors.InvocationOutcomeUnknownError` instead. Nor is it retried
after an exception or error frame (the harness's final word), after any other 4xx, or after
``idle_timeout`` of silence. Once ``messageStop`` has arrived the harness has committed the
turn: a stream that breaks after it (the trailing ``metadata`` or the end of the body
missing) returns the turn as read, its usage possibly partial. Delivery to ``handle_event``
is at least once: the events of an attempt that was then retried have already been
delivered, though only the final attempt's events make up the turn.

A reattached runtime session (``runtime_session_id`` given) is not invoked until there is
something to say: the harness keeps its conversation, so there is no turn to read back.

Text reaches ``on_text`` per content block as it streams, delta by delta; a retried attempt
starts the blocks shown so far over, which the driver's text tracker recognises as a replay.
Interrupting closes the in-flight stream and stops the runtime session
(``StopRuntimeSession`` on the harness's runtime), which ends the turn on the service - and
with it the session's conversation. Outcomes and tool confirmations do not exist on
AgentCore.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from req_managed_agents._redact import get_logger
from req_managed_agents.errors import (
    APIError,
    ConfigurationError,
    IdleTimeoutError,
    InvocationOutcomeUnknownError,
    ManagedAgentsError,
    ProviderStreamError,
    SessionError,
    StreamError,
    TransportError,
)
from req_managed_agents.model._vocabulary import (
    Outcome,
    SessionInfo,
    ToolResult,
    ToolUse,
    TurnResult,
    Usage,
)
from req_managed_agents.providers._base import (
    Aborted,
    Confirmations,
    Elicitations,
    EventSink,
    Origin,
    TextSink,
)
from req_managed_agents.providers.agentcore._client import AgentCoreClient
from req_managed_agents.providers.agentcore._converse import (
    ConverseFold,
    Envelope,
    resume_messages,
    user_message,
)
from req_managed_agents.transport._backoff import RetryPolicy
from req_managed_agents.transport._http import shutdown_response

__all__ = ["PROVIDER_NAME", "AgentCoreConversation"]

PROVIDER_NAME = "agentcore"
# A failed invocation waits 1 s doubling to 8 s (with jitter), or the server's retry-after
# up to 60 s (a longer wait belongs to the caller, not to a hidden sleep). How many retries
# is the provider's ``invoke_retries``.
INVOKE_RETRY = RetryPolicy(base=1.0, cap=8.0, max_retry_after=60.0)
_log = get_logger(__name__)


class TruncatedStreamError(StreamError):
    """The invocation's stream ended before ``messageStop`` (internal; retried)."""


class AgentCoreConversation:
    """Drives one runtime session; created by :meth:`BedrockAgentCore.open_conversation`."""

    keeps_history = False

    def __init__(
        self,
        client: AgentCoreClient,
        harness_arn: str,
        runtime_session_id: str,
        *,
        request_options: Mapping[str, Any],
        idle_timeout: float,
        invoke_retries: int,
        qualifier: str | None,
        on_event: EventSink,
        metadata: Mapping[str, Any],
        telemetry_metadata: Mapping[str, Any],
        origin: Origin = "created",
        on_text: TextSink | None = None,
        runtime_user_id: str | None = None,
    ) -> None:
        self.origin = origin
        self._reattached = origin == "reattached"  # adopted: never invoked before
        self._runtime_user_id = runtime_user_id
        self._on_text = on_text
        self._turns = 0
        # The text blocks any attempt of the current turn has shown.
        self._shown_blocks: set[int] = set()
        self.info = SessionInfo(
            runtime_session_id, PROVIDER_NAME, {**metadata, "harness_arn": harness_arn}
        )
        self.harness_arn = harness_arn
        self._client = client
        self._options = dict(request_options)
        self._idle_timeout = idle_timeout
        self._retries = invoke_retries
        self._qualifier = qualifier
        self._on_event = on_event
        self._telemetry = dict(telemetry_metadata)
        self._aborted = threading.Event()
        self._lock = threading.Lock()
        self._response: requests.Response | None = None

    def resume(self) -> TurnResult | None:
        """For a reattached session, an empty finished turn: the harness keeps the history
        and offers no way to read it, and prompting it just to find out would add a turn."""
        if not self._reattached:
            return None
        self._reattached = False
        return TurnResult("end_turn", "", (), (), Usage(), None, ())

    def send_prompt(self, prompt: str) -> TurnResult:
        return self._turn([user_message(prompt)])

    def send_tool_results(
        self,
        tool_uses: Sequence[ToolUse],
        results: Sequence[ToolResult],
        confirmations: Confirmations = (),
        elicitations: Elicitations = (),
    ) -> TurnResult:
        if confirmations or elicitations:
            raise SessionError("Bedrock AgentCore has no confirmations or elicitations to answer")
        return self._turn(resume_messages(tool_uses, results))

    def define_outcome(self, outcome: Outcome) -> TurnResult:
        raise ConfigurationError(
            "outcomes are a Claude Managed Agents feature; Bedrock AgentCore has none"
        )

    def accepts_input(self) -> bool:
        # A runtime session takes another invocation whatever its last one did.
        return True

    def unanswered_tool_uses(self) -> list[ToolUse]:
        # Each invocation carries its own tool uses; nothing is left over between turns.
        return []

    def send_event(self, event: Mapping[str, Any]) -> None:
        raise SessionError("Bedrock AgentCore takes no out-of-band events; send a prompt")

    def interrupt(self) -> None:
        """Stop the runtime session, so the service stops working on (and billing) the
        turn; closing the stream alone (``abort``) leaves it running."""
        try:
            runtime_arn = self._client.runtime_arn(self.harness_arn)
            if runtime_arn is None:
                _log.warning("harness %s names no runtime to stop", self.harness_arn)
                return
            self._client.stop_runtime_session(
                runtime_arn, self.info.session_id, qualifier=self._qualifier
            )
        except ManagedAgentsError as exc:
            _log.warning("could not stop runtime session %s: %s", self.info.session_id, exc)

    def abort(self) -> None:
        self._aborted.set()
        with self._lock:
            response = self._response
        if response is not None:
            shutdown_response(response)

    def close(self) -> None:
        self.abort()

    def history_mark(self) -> str | None:
        return None  # the harness keeps the conversation and offers no way to read it

    def delivered(self, prompt: str, after: str | None) -> bool | None:
        return None

    def discard(self) -> None:
        self.close()  # nothing exists at the service until the first invocation

    def _track(self, response: requests.Response) -> None:
        with self._lock:
            self._response = response
        if self._aborted.is_set():
            shutdown_response(response)

    def _turn(self, messages: list[dict[str, Any]]) -> TurnResult:
        body = {"messages": messages, **self._options}
        self._turns += 1
        self._shown_blocks = set()
        attempt = 0
        while True:
            if self._aborted.is_set():
                raise Aborted
            fold = ConverseFold()
            events: list[Envelope] = []
            self._restart_text()

            def live(
                event: Envelope, fold: ConverseFold = fold, events: list[Envelope] = events
            ) -> None:
                fold.add(event)
                events.append(event)
                self._on_event(event)
                self._show(event)

            try:
                self._client.invoke_harness(
                    self.harness_arn,
                    self.info.session_id,
                    body,
                    on_event=live,
                    idle_timeout=self._idle_timeout,
                    qualifier=self._qualifier,
                    cancelled=self._aborted,
                    on_response=self._track,
                    telemetry_metadata=self._telemetry,
                    runtime_user_id=self._runtime_user_id,
                )
                if fold.stop_reason is None:
                    raise TruncatedStreamError("the harness stream ended without messageStop")
                return self._committed(fold, events)
            except ManagedAgentsError as exc:
                if self._aborted.is_set():
                    raise Aborted from exc
                if fold.stop_reason is not None and not isinstance(exc, ProviderStreamError):
                    _log.warning(
                        "the harness stream broke after messageStop (%s); the turn is kept, "
                        "its usage may be partial",
                        exc,
                    )
                    return self._committed(fold, events)
                if attempt >= self._retries or not _refused(exc):
                    error = _ambiguous(exc)
                    if error is exc:
                        raise
                    raise error from exc
                retry_after = exc.retry_after if isinstance(exc, APIError) else None
                delay = INVOKE_RETRY.delay(attempt, retry_after)
                _log.info("retrying InvokeHarness in %.2f s after: %s", delay, exc)
            finally:
                with self._lock:
                    self._response = None
            if self._aborted.wait(delay):
                raise Aborted
            attempt += 1

    def _message(self, index: int) -> str:
        return f"turn-{self._turns}-block-{index}"

    def _show(self, event: Envelope) -> None:
        """Pass a text delta on to ``on_text``, as a piece of its block's text."""
        body = event.get("contentBlockDelta")
        if self._on_text is None or not isinstance(body, Mapping):
            return
        index, delta = body.get("contentBlockIndex"), body.get("delta")
        text = delta.get("text") if isinstance(delta, Mapping) else None
        if isinstance(index, int) and isinstance(text, str):
            self._shown_blocks.add(index)
            self._on_text.append(self._message(index), text)

    def _restart_text(self) -> None:
        """A new attempt writes its blocks from the start: the blocks shown so far start
        over (what it writes again is not shown twice, what it changes is reset)."""
        if self._on_text is not None:
            for index in sorted(self._shown_blocks):
                self._on_text(self._message(index), "", False)

    def _committed(self, fold: ConverseFold, events: list[Envelope]) -> TurnResult:
        """The turn the harness committed; its text blocks are final now (a block only an
        abandoned attempt wrote ends empty, so what it showed is withdrawn)."""
        if self._on_text is not None:
            for index in sorted(self._shown_blocks | set(fold.text_blocks)):
                self._on_text(self._message(index), fold.block_text(index), True)
        return fold.result(events)


def _refused(error: ManagedAgentsError) -> bool:
    """Whether a failed invocation provably did nothing: it never reached the service, or
    the service turned it away up front and said so (a throttle, an overload with
    ``retry-after``). Only such a failure is invoked again."""
    if isinstance(error, TransportError):
        return error.not_sent
    if isinstance(error, APIError):
        return INVOKE_RETRY.should_retry(
            error.status_code, error.error_type, idempotent=False, retry_after=error.retry_after
        )
    return False


def _ambiguous(error: ManagedAgentsError) -> ManagedAgentsError:
    """A failure after which the turn may or may not have happened, said so; the error the
    service sent (an exception frame, a 4xx) stays as it is."""
    if isinstance(error, (ProviderStreamError, APIError, IdleTimeoutError)):
        return error
    if isinstance(error, (StreamError, TransportError)) and not getattr(error, "not_sent", False):
        return InvocationOutcomeUnknownError(
            f"the invocation failed before its turn ended ({error}); the harness may have "
            "committed the turn, so it was not sent again (that could run it twice); resume "
            "the runtime session with a new input once you know"
        )
    return error
