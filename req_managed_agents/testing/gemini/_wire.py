"""The Gemini Interactions API's wire vocabulary, shared by every part of the Gemini emulator.

The API version prefixes, the ``Api-Revision`` pin, timestamps, the error object
(``{"error": {"code": "<string>", "message"}}`` with the code each status implies), the
statuses, and the path patterns of routes.
"""

from __future__ import annotations

import re
from typing import Any

from req_managed_agents.testing.server import utc_timestamp

# Both versions the service answers under: the SDK sends v1, the REST docs show v1beta.
VERSION = r"/(?:v1|v1beta)"
ID = r"([^/]+)"
INTERACTIONS_PATH = f"{VERSION}/interactions"
INTERACTION_PATH = f"{INTERACTIONS_PATH}/{ID}"
AGENTS_PATH = f"{VERSION}/agents"
ENVIRONMENTS_PATH = f"{VERSION}/environments"

REVISION_HEADER = "api-revision"
# The only revision anything attests (the SDK's GOOGLE_GENAI_API_REVISION, the REST docs).
API_REVISION = "2026-05-20"

# Where an interaction stops and waits for the caller, and where it has ended for good.
WAITING = frozenset({"requires_action", "requires_continuation"})
ENDED = frozenset({"completed", "failed", "cancelled", "incomplete", "budget_exceeded"})
RUNNING = frozenset({"in_progress", "queued"})

# The error code each status implies when the emulator (or a fault) names none.
_CODES = {
    400: "invalid_request",
    401: "authentication",
    403: "permission_denied",
    404: "not_found",
    409: "already_exists",
    429: "rate_limit_exceeded",
    500: "api_error",
    503: "service_unavailable",
}

# A label key (values: the same without the first-letter rule, and may be empty).
LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")


def now() -> str:
    """The current time as the API writes it: ISO 8601 seconds, ``Z``."""
    return utc_timestamp(timespec="seconds")


def implied_code(status: int) -> str:
    """The error code a status implies: a known one, else by class."""
    return _CODES.get(status, "api_error" if status >= 500 else "invalid_request")


class APIError(Exception):
    """Raised by a route to answer with the API's error object."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or implied_code(status)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def invalid(message: str) -> APIError:
    return APIError(400, message)


def not_found(kind: str, object_id: str) -> APIError:
    return APIError(404, f"{kind.capitalize()} '{object_id}' was not found.")
