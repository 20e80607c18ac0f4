"""Every exception this library raises, under one root.

::

    ManagedAgentsError
    ├── ConfigurationError (ValueError)       bad or missing settings
    │   └── MissingDependencyError (ImportError)   an optional extra is not installed
    ├── APIError                              the provider answered with an error status
    │   ├── BadRequestError                   400, 413, 422
    │   ├── AuthenticationError               401, 403
    │   ├── NotFoundError                     404
    │   ├── ConflictError                     409
    │   ├── RateLimitError                    429
    │   ├── ServerError                       5xx and 529 (overloaded)
    │   └── MalformedResponseError            a success whose body cannot be used
    ├── TransportError                        no usable HTTP response (connect/read failure)
    ├── StreamError                           a response stream broke or carried an error
    │   ├── EventStreamError (ValueError)     corrupt AWS event-stream framing
    │   ├── EventTooLargeError (ValueError)   an SSE line or event over the decoder's limit
    │   ├── StreamReconnectError              the reconnect budget ran out
    │   ├── ProviderStreamError               the provider sent an error frame in the stream
    │   ├── InvocationOutcomeUnknownError     an AgentCore turn broke; it may have happened
    │   └── IdleTimeoutError (TimeoutError)   no bytes arrived within ``idle_timeout``
    ├── SessionError                          the session loop cannot go on
    │   ├── SessionTimeoutError (TimeoutError)      ``run(timeout=...)`` expired
    │   ├── UnresolvedRequiresActionError     the provider wants tool results for unknown calls
    │   ├── ElicitationRequiredError          an MCP server asks a person, and nothing may answer
    │   ├── UnfinishedToolCallError           a tool call started earlier never finished
    │   └── AmbiguousRunError                 a keyed run cannot tell whether its input landed
    ├── LedgerError                           the tool ledger holds a record it cannot use
    ├── ArtifactError                         a session artifact operation failed
    │   ├── ArtifactNotFoundError (KeyError)  no artifact of that name
    │   ├── InvalidArtifactNameError (ValueError)  a name that is unsafe or unusable
    │   └── CommandFailedError                a storage command exited non-zero
    └── ProvisioningError                     creating or finding provider resources failed
        ├── EnvironmentArchivedError          the environment name exists but is archived
        ├── EnvironmentNameConflictError      a create said 409 yet no such name is listed
        ├── UnknownTagError (KeyError)        ``resolve("base:tag")`` found no such tag
        ├── PartialPruneError                 pruning stopped part way
        └── HarnessNotReadyError              a harness (or its endpoint) did not reach READY
            ├── HarnessFailedError            it reported a *_FAILED status
            ├── HarnessDeletingError          it is being deleted (it can never be READY)
            ├── HarnessUnknownStatusError     it reported a status this library does not know
            └── HarnessReadyTimeoutError (TimeoutError)  the wall-clock budget ran out

Errors carry the facts a user needs to act (status, provider error type, request id) and are
built so that no message can contain a credential: every message passes through the secret
redactor before it is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from req_managed_agents._redact import redact, redact_value

__all__ = [
    "APIError",
    "AmbiguousRunError",
    "ArtifactError",
    "ArtifactNotFoundError",
    "AuthenticationError",
    "BadRequestError",
    "CommandFailedError",
    "ConfigurationError",
    "ConflictError",
    "ElicitationRequiredError",
    "EnvironmentArchivedError",
    "EnvironmentNameConflictError",
    "EventStreamError",
    "EventTooLargeError",
    "HarnessDeletingError",
    "HarnessFailedError",
    "HarnessNotReadyError",
    "HarnessReadyTimeoutError",
    "HarnessUnknownStatusError",
    "IdleTimeoutError",
    "InvalidArtifactNameError",
    "InvocationOutcomeUnknownError",
    "LedgerError",
    "MalformedResponseError",
    "ManagedAgentsError",
    "MissingDependencyError",
    "NotFoundError",
    "PartialPruneError",
    "ProviderStreamError",
    "ProvisioningError",
    "RateLimitError",
    "ServerError",
    "SessionError",
    "SessionTimeoutError",
    "StreamError",
    "StreamReconnectError",
    "TransportError",
    "UnfinishedToolCallError",
    "UnknownTagError",
    "UnresolvedRequiresActionError",
]


class ManagedAgentsError(Exception):
    """Root of every error raised by ``req_managed_agents``."""

    def __init__(self, message: str = "") -> None:
        self.message = redact(message)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class ConfigurationError(ManagedAgentsError, ValueError):
    """A setting is missing or invalid (an API key, a region, an option value)."""


class MissingDependencyError(ConfigurationError, ImportError):
    """An optional extra is needed; the message says which ``pip install`` fixes it."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


class APIError(ManagedAgentsError):
    """The provider answered with an HTTP error status: ``error_type`` is its own error code
    (``"not_found_error"``, ``"ValidationException"``, ...), ``request_id`` the id to quote to
    provider support, ``retry_after`` the seconds the server asked to wait before trying
    again (a 429, 503 or 529 may say), if it did."""

    def __init__(
        self,
        status_code: int,
        error_type: str | None,
        message: str,
        request_id: str | None = None,
        *,
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        self.status_code = status_code
        self.error_type = error_type
        self.request_id = request_id
        self.body = redact_value(body)
        detail = f"HTTP {status_code}" + (f" {error_type}" if error_type else "")
        detail += f": {message}" if message else ""
        detail += f" (request id {request_id})" if request_id else ""
        super().__init__(detail)
        self.message = redact(message)

    def __str__(self) -> str:
        return str(self.args[0])


class BadRequestError(APIError):
    """The request was rejected as invalid (400, 413, 422); retrying will not help."""


class AuthenticationError(APIError):
    """The credentials were missing, wrong or lack permission (401, 403)."""


class NotFoundError(APIError):
    """The resource does not exist (404)."""


class ConflictError(APIError):
    """The request conflicts with the resource's current state (409)."""


class RateLimitError(APIError):
    """Too many requests (429); ``retry_after`` is the server's hint in seconds, if any."""


class ServerError(APIError):
    """The provider failed (5xx) or is overloaded (529)."""


class MalformedResponseError(APIError):
    """A success whose body cannot be used (empty, not JSON, of the wrong shape; a field
    missing, of the wrong type or far over any real one's size; over the size limit):
    ``message`` names the request and what was wrong, quoting a short excerpt at most."""


class TransportError(ManagedAgentsError):
    """No usable HTTP response: connection refused or reset, DNS failure, read timeout.
    ``not_sent`` is ``True`` when the failure proves the request never reached the server
    (the connection was never made), so sending it again cannot do anything twice."""

    def __init__(self, message: str = "", *, not_sent: bool = False) -> None:
        super().__init__(message)
        self.not_sent = not_sent


class StreamError(ManagedAgentsError):
    """A response stream broke, was malformed, or carried an error in band."""


class EventStreamError(StreamError, ValueError):
    """AWS event-stream bytes are corrupt: bad checksum, impossible length, truncated frame."""


class EventTooLargeError(StreamError, ValueError):
    """A server-sent event (or one of its lines) grew past the decoder's ``limit`` bytes
    before it ended: a stream that never terminates its event must not exhaust memory."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class StreamReconnectError(StreamError):
    """An event stream kept failing and the reconnect budget ran out: ``attempts`` is how
    many connections failed in a row; ``cause`` (also ``__cause__``) is the last failure."""

    def __init__(self, message: str, *, attempts: int, cause: BaseException | None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.cause = cause


class ProviderStreamError(StreamError):
    """The provider reported an error inside the stream (an exception or error frame): its
    final word on the request, never retried."""

    def __init__(self, exception_type: str, message: str) -> None:
        self.exception_type = exception_type
        super().__init__(f"{exception_type}: {message}")
        self.message = redact(message)

    def __str__(self) -> str:
        return str(self.args[0])


class InvocationOutcomeUnknownError(StreamError):
    """An AgentCore invocation (or a Gemini create, before its stream named its
    interaction) broke after it was sent: the turn may have started or not, and the
    service offers no way to find out, so it was not sent again (that could run it twice)."""


class IdleTimeoutError(StreamError, TimeoutError):
    """The stream sent no bytes for ``idle_timeout`` seconds."""

    def __init__(self, message: str, *, idle_timeout: float) -> None:
        super().__init__(message)
        self.idle_timeout = idle_timeout


class SessionError(ManagedAgentsError):
    """The session loop cannot continue."""


class SessionTimeoutError(SessionError, TimeoutError):
    """``Session.run(timeout=...)`` expired; the in-flight stream was closed first."""

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id


class ElicitationRequiredError(SessionError):
    """An MCP server asks a person to act at a link (``url``) and nothing may answer it:
    the handler has no ``handle_elicitation`` and ``elicit="raise"``. Show the person
    ``url``, then answer with a handler hook or ``elicit=`` and run the session again
    (``session_id``): the tool call waits, with no time limit."""

    def __init__(self, elicitation: Any, *, session_id: str | None = None) -> None:
        self.elicitation = elicitation
        self.url: str | None = getattr(elicitation, "url", None)
        self.session_id = session_id
        server = getattr(elicitation, "server_name", "an MCP server")
        super().__init__(
            f"MCP server {server!r} asks a person to act at {self.url or '(no link given)'}; "
            "define handle_elicitation on the handler or pass elicit='accept', 'decline' "
            "or 'cancel'"
        )


class UnresolvedRequiresActionError(SessionError):
    """The provider waits for an answer the session cannot give: no unanswered tool call
    could be found, or a provider tool asks permission and nothing may decide it. Sending an
    empty result list is rejected by the provider, so the session stops here."""

    def __init__(
        self, stop_reason: Any, *, session_id: str | None = None, reason: str | None = None
    ) -> None:
        self.stop_reason = stop_reason
        self.session_id = session_id
        why = reason or "no unanswered tool use was found"
        super().__init__(
            f"session {session_id} requires action but {why} (stop_reason={stop_reason!r})"
        )


class UnfinishedToolCallError(SessionError):
    """The tool ledger shows a call that started before (in this or another process) and
    never finished, and the session's ``on_unfinished`` policy is ``"raise"``: whether its
    side effect happened is for the caller to find out."""

    def __init__(self, tool_use: Any, *, session_id: str | None = None) -> None:
        self.tool_use = tool_use
        self.session_id = session_id
        super().__init__(
            f"tool call {tool_use.id} ({tool_use.name}) of session {session_id} started "
            "earlier and never finished"
        )


class AmbiguousRunError(SessionError):
    """A run named by an ``idempotency_key`` cannot go on safely: it stopped between sending
    an input and seeing its turn end, on a provider whose history cannot be read to tell
    whether the input landed, so nothing is sent again (it could run that turn twice); or
    another process is continuing it. ``session_id`` names the provider session to look at."""

    def __init__(self, message: str, *, session_id: str | None = None) -> None:
        super().__init__(message)
        self.session_id = session_id


class LedgerError(ManagedAgentsError):
    """The tool ledger found a record it cannot use under ``key`` (written by something else
    sharing the store, or damaged), or one that keeps changing under it: nothing was run on
    its strength. ``key`` names the record to look at."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class ArtifactError(ManagedAgentsError):
    """Listing, fetching, storing or deleting a session artifact failed."""


class ArtifactNotFoundError(ArtifactError, KeyError):
    """The session has no artifact of that name."""

    def __init__(self, name: str, where: str) -> None:
        self.name = name
        super().__init__(f"no artifact named {name!r} in {where}")

    def __str__(self) -> str:
        return self.message


class InvalidArtifactNameError(ArtifactError, ValueError):
    """An artifact name that could escape its folder or reach a shell: refused up front."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        super().__init__(f"invalid artifact name {name!r}: {reason}")


class CommandFailedError(ArtifactError):
    """A storage command in the runtime session exited non-zero; ``stderr`` says why."""

    def __init__(self, action: str, exit_code: int | None, stderr: str) -> None:
        self.exit_code = exit_code
        self.stderr = stderr
        detail = stderr.strip()[-500:] or "no error output"
        super().__init__(f"{action} failed with exit code {exit_code}: {detail}")


class ProvisioningError(ManagedAgentsError):
    """Creating, finding or cleaning up provider resources failed."""


class EnvironmentArchivedError(ProvisioningError):
    """An environment with this content-addressed name exists but is archived."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"environment {name!r} exists but is archived, and an archived name cannot be "
            "used again; change the spec or the base name (provision uses '<agent name>_env')"
        )


class EnvironmentNameConflictError(ProvisioningError):
    """Creating the environment conflicted (409) but no environment of that name is listed."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"environment name {name!r} conflicts but is not listed")


class UnknownTagError(ProvisioningError, KeyError):
    """``resolve("base:tag")`` found no such tag (it never falls back to another version)."""

    def __init__(self, ref: str) -> None:
        self.ref = ref
        super().__init__(f"unknown tag {ref!r}")  # ManagedAgentsError's str, not KeyError's


class PartialPruneError(ProvisioningError):
    """Pruning archived some environments, then failed on ``failed_name``."""

    def __init__(self, archived: Sequence[str], failed_name: str, cause: BaseException) -> None:
        self.archived = tuple(archived)
        self.failed_name = failed_name
        self.cause = cause
        super().__init__(
            f"pruning stopped at {failed_name!r} after archiving {len(self.archived)}: {cause}"
        )


class HarnessNotReadyError(ProvisioningError):
    """An AgentCore harness, or the endpoint it is invoked at, did not reach ``READY``; says
    which (``phase``), in what status, after how long and how many polls."""

    def __init__(
        self,
        harness_id: str,
        status: str | None,
        *,
        elapsed: float,
        polls: int,
        detail: str,
        endpoint_name: str | None = None,
    ) -> None:
        self.harness_id = harness_id
        self.status = status
        self.elapsed = elapsed
        self.polls = polls
        #: Which wait stopped: ``"harness"``, or ``"endpoint"`` (then ``endpoint_name``).
        self.phase = "harness" if endpoint_name is None else "endpoint"
        self.endpoint_name = endpoint_name
        subject = f"harness {harness_id}"
        if endpoint_name is not None:
            subject = f"endpoint {endpoint_name} of harness {harness_id}"
            status = status or "not created yet"
        super().__init__(
            f"{subject} {detail} (status {status}, after {elapsed:.1f} s, {polls} polls)"
        )


class HarnessFailedError(HarnessNotReadyError):
    """The harness reported ``CREATE_FAILED``, ``UPDATE_FAILED`` or ``DELETE_FAILED``."""


class HarnessDeletingError(HarnessNotReadyError):
    """The harness is ``DELETING``: it will never become ``READY``."""


class HarnessUnknownStatusError(HarnessNotReadyError):
    """The harness reported a status this library does not know, so waiting is pointless."""


class HarnessReadyTimeoutError(HarnessNotReadyError, TimeoutError):
    """The wall-clock budget for bringing the harness to ``READY`` ran out."""
