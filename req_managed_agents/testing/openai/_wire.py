"""The OpenAI Agents API's wire vocabulary, shared by every part of the OpenAI emulator.

The beta header, Unix timestamps, the error object (``{"error": {"message",
"type", "param", "code"}}``, with the type and code each status implies), the two refusals
a client must tell apart (the pending-call registration race, which the ``openai`` SDK
retries, and a result for a call that is not pending, which it must not), and the path
patterns of routes.
"""

from __future__ import annotations

import time
from typing import Any

BETA_HEADER = "openai-beta"
BETA = "agents=v1"

# An object id in a route's path pattern, captured as an argument of the route.
ID = r"([A-Za-z0-9_\-]+)"
AGENTS_PATH = "/v1/agents"
# An agent id in a path: never one of the nouns the API serves under /v1/agents, so a route
# the emulator does not serve there (environments, automations) is an unknown route, as
# the service answers one, not an agent that is not found.
AGENT_ID = r"(?!(?:sessions|environments|automations)$)([A-Za-z0-9_\-]+)"
SESSIONS_PATH = "/v1/agents/sessions"
SESSION_PATH = f"{SESSIONS_PATH}/{ID}"

# The event types a scripted step may name, filled in by ``_scripted``: those of the SDK no
# behaviour of the emulator produces.
ENVIRONMENT_EVENT = "agent.session.environment."
_ENVIRONMENT_STATES = [
    "pending",
    "connected",
    "ready",
    "suspended",
    "expired",
    "disconnected",
    "failed",
]
SUBAGENT_EVENT = "agent.session.subagent."
SUMMARY_EVENT = "agent.session.turn.reasoning_summary_"
COMMAND_OUTPUT_EVENT = "agent.output.command_execution_output.delta"
NAMED_EVENTS = frozenset(
    {
        *(ENVIRONMENT_EVENT + state for state in (*_ENVIRONMENT_STATES, "reset")),
        SUBAGENT_EVENT + "active",
        SUBAGENT_EVENT + "closed",
        *(SUMMARY_EVENT + kind for kind in ("part.added", "part.done", "text.delta", "text.done")),
        COMMAND_OUTPUT_EVENT,
    }
)

# The error type and code each status implies when the emulator (or a fault) names none.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "insufficient_permissions"),
    404: ("invalid_request_error", None),
    409: ("invalid_request_error", "conflict"),
    429: ("requests", "rate_limit_exceeded"),
}
_SERVER_ERROR = ("server_error", None)

# The message the openai SDK's ``is_pending_call_race`` matches (with the code
# ``invalid_request_error``): a result for a call the service has announced but not yet
# registered. Nothing else the emulator answers starts with it.
PENDING_RACE_PREFIX = "Unknown pending tool call: "


def now() -> int:
    """The current time as the API writes it: whole Unix seconds."""
    return int(time.time())


class APIError(Exception):
    """Raised by a route to answer with the API's error object."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        implied_type, implied_code = _ERROR_KINDS.get(status, _SERVER_ERROR)
        self.status = status
        self.message = message
        self.code = code if code is not None else implied_code
        self.param = param
        self.error_type = error_type or implied_type

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.error_type,
                "param": self.param,
                "code": self.code,
            }
        }


def invalid(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def not_found(kind: str, object_id: str) -> APIError:
    return APIError(404, f"No {kind} found with id '{object_id}'.", code="not_found")


def pending_call_race(call_id: str) -> APIError:
    """The registration race, in the exact shape the SDK's ``is_pending_call_race`` accepts."""
    return invalid(PENDING_RACE_PREFIX + call_id, code="invalid_request_error")
