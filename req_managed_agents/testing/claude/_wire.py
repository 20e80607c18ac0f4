"""The Claude Managed Agents API's wire vocabulary, shared by every part of the Claude emulator.

The beta headers, the error object (and the error type each status implies), the checks that
request bodies and query strings go through (an unknown or malformed value is a 400, as the
service answers), the path patterns of routes and the page-size limits.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._errors import ERROR_CODES, error_details
from req_managed_agents.testing.server import query_value, utc_timestamp

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Callable

    from req_managed_agents.testing.server import RecordedRequest

BETA = "managed-agents-2026-04-01"
# Memory stores have a beta of their own; they take the managed-agents one too.
MEMORY_BETA = "agent-memory-2026-07-22"

# The error type each status implies when the emulator (or a fault) does not name one;
# another 4xx is an invalid_request_error (as the API's error page says), a 5xx an api_error.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

# The event types a scripted turn may name, filled in by ``_scripted``: those of the SDK
# no behaviour of the emulator produces.
WORKFLOW_EVENTS = frozenset(
    {
        "workflow_run.created",
        "workflow_run.status_running",
        "workflow_run.phase_started",
        "workflow_run.phase_ended",
        "workflow_run.status_idle",
        "workflow_run.status_ended",
        "workflow_run.error",
    }
)
NAMED_EVENTS = WORKFLOW_EVENTS | {
    "session.status_rescheduled",
    "session.thread_status_rescheduled",
    "span.outcome_evaluation_ongoing",
    "agent.thread_context_compacted",
}
# An object id in a route's path pattern, captured as an argument of the route.
ID = r"([A-Za-z0-9_\-]+)"
SESSION_PATH = f"/v1/sessions/{ID}"

_MAX_EVENTS_PAGE = 1000
_MAX_RESOURCE_PAGE = 100
_MAX_FILES_PAGE = 1000
_DEFAULT_PAGE = 20
_MAX_SESSION_FILES = 500
# Metadata limits (agents, sessions, vaults, credentials, memory stores).
_MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512
# The bounds of a created_at[...] filter, by the comparison each one makes.
_TIME_BOUNDS: dict[str, Callable[[datetime, datetime], bool]] = {
    "gt": lambda value, bound: value > bound,
    "gte": lambda value, bound: value >= bound,
    "lt": lambda value, bound: value < bound,
    "lte": lambda value, bound: value <= bound,
}
_ISO_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)


def _error_type(status: int) -> str:
    """The error type a status implies (see ``_ERROR_TYPES``)."""
    return _ERROR_TYPES.get(status) or ("invalid_request_error" if status < 500 else "api_error")


class _APIError(Exception):
    """Raised by a route to answer with the API's error object; ``details`` (with its
    ``error_code``) names the cause where the API does."""

    def __init__(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or _error_type(status)
        self.details = details


def _invalid(message: str) -> _APIError:
    return _APIError(400, message)


def _coded(code: str, message: str, **details: Any) -> _APIError:
    """The API's error for a cause it names: the status that comes with ``code``, and
    ``details`` holding it (see ``_errors``)."""
    return _APIError(ERROR_CODES[code], message, details=error_details(code, **details))


def _archive(record: dict[str, Any]) -> bool:
    """Archive a resource the first time only (archiving again changes nothing, as on the
    service); True when this call archived it."""
    if record["archived_at"]:
        return False
    record["archived_at"] = record["updated_at"] = utc_timestamp()
    return True


def _check_name_free(
    unique: bool,
    records: Mapping[str, Mapping[str, Any]],
    kind: str,
    name: str,
    own_id: str = "",
) -> None:
    """With ``unique`` names (``unique_names=True``), a 409 when another of ``records``
    has ``name`` already."""
    if unique and any(r["name"] == name and r["id"] != own_id for r in records.values()):
        raise _APIError(409, f"an {kind} named {name!r} already exists")


def _not_found(kind: str, object_id: str) -> _APIError:
    return _APIError(404, f"{kind} {object_id!r} was not found")


def _json_object(request: RecordedRequest, *, optional: bool = False) -> dict[str, Any]:
    if optional and request.body is None:
        return {}
    if not isinstance(request.body, dict):
        raise _invalid("the request body must be a JSON object")
    return request.body


def _reject_unknown(body: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in body:
        if key not in allowed:
            raise _invalid(f"{key}: Extra inputs are not permitted")


def _required_name(body: Mapping[str, Any]) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise _invalid("name: Field required (a non-empty string)")
    return name


def _flag(request: RecordedRequest, name: str) -> bool:
    """A boolean query parameter (absent: false); anything but true/false/1/0 is a 400."""
    value = (query_value(request, name) or "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise _invalid(f"{name}: Input should be a valid boolean, not {value!r}")
    return value in ("true", "1")


def _query_choice(request: RecordedRequest, name: str, allowed: Collection[str]) -> str | None:
    """A query parameter that must be one of ``allowed`` (None when absent)."""
    value = query_value(request, name)
    if value is not None and value not in allowed:
        choices = ", ".join(repr(choice) for choice in sorted(allowed))
        raise _invalid(f"{name}: Input should be one of {choices}, not {value!r}")
    return value


def _query_int(request: RecordedRequest, name: str, low: int = 1) -> int | None:
    """An integer query parameter of at least ``low`` (None when absent)."""
    value = query_value(request, name)
    if value is None:
        return None
    if not re.fullmatch(r"-?\d+", value) or int(value) < low:
        raise _invalid(f"{name}: Input should be an integer of at least {low}, not {value!r}")
    return int(value)


def _query_values(request: RecordedRequest, name: str, allowed: Collection[str]) -> set[str]:
    """The values of a repeatable query parameter (``name[]=a&name[]=b``, or ``name=a``);
    each must be one of ``allowed``."""
    values = [*request.query.get(f"{name}[]", []), *request.query.get(name, [])]
    for value in values:
        if value not in allowed:
            raise _invalid(f"{name}: {value!r} is not a valid value")
    return set(values)


def _parse_time(value: str, where: str) -> datetime:
    """An ISO 8601 time (naive ones are UTC); a 400 for anything else."""
    found = _ISO_TIME.fullmatch(value.strip())
    if found is None:
        raise _invalid(f"{where}: Input should be a valid datetime, not {value!r}")
    day, clock, fraction, zone = found.groups()
    text = f"{day}T{clock or '00:00'}"
    if fraction:
        text += "." + (fraction + "000000")[:6]
    if zone and zone.upper() != "Z":
        text += zone if ":" in zone else f"{zone[:3]}:{zone[3:]}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _invalid(f"{where}: Input should be a valid datetime, not {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _time_filter(
    request: RecordedRequest, field: str = "created_at", bounds: Collection[str] = _TIME_BOUNDS
) -> Callable[[str | None], bool]:
    """The ``created_at[gt|gte|lt|lte]`` query bounds (those in ``bounds``) as a predicate
    on a timestamp; a bound the route does not take is a 400."""
    checks: list[tuple[Callable[[datetime, datetime], bool], datetime]] = []
    for bound, compare in _TIME_BOUNDS.items():
        name = f"{field}[{bound}]"
        value = query_value(request, name)
        if value is None:
            continue
        if bound not in bounds:
            raise _invalid(f"{name}: this list does not take that filter")
        checks.append((compare, _parse_time(value, name)))

    def keep(timestamp: str | None) -> bool:
        if not checks:
            return True
        if timestamp is None:
            return False
        moment = _parse_time(timestamp, field)
        return all(compare(moment, bound) for compare, bound in checks)

    return keep


def _metadata(value: Any, where: str = "metadata", *, patch: bool = False) -> dict[str, Any]:
    """Check a metadata object against the API's limits; a ``patch`` may null out keys."""
    if not isinstance(value, dict):
        raise _invalid(f"{where}: Input should be an object")
    for key, item in value.items():
        if not 1 <= len(key) <= _MAX_METADATA_KEY:
            message = f"{where}: keys must be 1 to {_MAX_METADATA_KEY} characters"
            raise _coded("invalid_metadata", message)
        if item is None and patch:
            continue
        if not isinstance(item, str):
            raise _invalid(f"{where}.{key}: Input should be a valid string")
        if len(item) > _MAX_METADATA_VALUE:
            message = f"{where}.{key}: values are at most {_MAX_METADATA_VALUE} characters"
            raise _coded("invalid_metadata", message)
    return dict(value)


def _merged_metadata(current: Mapping[str, str], patch: Any, *, empty_deletes: bool = False) -> Any:
    """A metadata patch applied: a null value (or ``""`` with ``empty_deletes``) deletes a
    key; the result must stay within the limits."""
    merged = dict(current)
    for key, value in _metadata(patch, patch=True).items():
        if value is None or (empty_deletes and value == ""):
            merged.pop(key, None)
        else:
            merged[key] = value
    if len(merged) > _MAX_METADATA_PAIRS:
        raise _coded("invalid_metadata", f"metadata: at most {_MAX_METADATA_PAIRS} pairs")
    return merged


def _optional_string(body: Mapping[str, Any], key: str, *, nullable: bool = True) -> Any:
    """A string field of a body, or null where the API allows it; a 400 otherwise."""
    value = body.get(key)
    if (value is None and not nullable) or not (value is None or isinstance(value, str)):
        raise _invalid(f"{key}: Input should be a valid string")
    return value


def _betas(request: RecordedRequest) -> set[str]:
    return {b.strip() for b in request.headers.get("anthropic-beta", "").split(",")}


def _is_memory_path(path: str) -> bool:
    return path == "/v1/memory_stores" or path.startswith("/v1/memory_stores/")


def _is_files_path(path: str) -> bool:
    """The Files API is generally available: its paths need no beta header."""
    return path == "/v1/files" or path.startswith("/v1/files/")
