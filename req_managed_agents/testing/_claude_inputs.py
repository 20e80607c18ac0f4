"""What the Claude emulator accepts from a client before it acts: sent events and stream options.

Every event of a ``POST /v1/sessions/{id}/events`` request is checked before any is logged,
so a request with one bad event changes nothing: it is a 400 ``invalid_request_error`` as
the service answers. The checks know the session's state (which tool uses are pending, which
were answered, whether an outcome is open) but never change it. The stream's
``event_deltas[]`` query parameter is checked here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing._claude_api import _invalid

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

    from req_managed_agents.testing._claude_base import _Session
    from req_managed_agents.testing._server import RecordedRequest

# The event types a stream connection may ask previews of, and how many values it may send.
DELTA_TYPES = ("agent.message", "agent.thinking")
_MAX_DELTA_VALUES = 100

# user.define_outcome limits, as the API documents them.
MAX_RUBRIC_CHARS = 262_144
MAX_ITERATIONS = 20
DEFAULT_ITERATIONS = 3
_OUTCOME_FIELDS = frozenset({"type", "description", "rubric", "max_iterations"})

# The tool uses a user.tool_confirmation may answer.
SERVER_TOOL_USES = ("agent.tool_use", "agent.mcp_tool_use")


def delta_types(request: RecordedRequest) -> frozenset[str]:
    """The event types a stream request asks previews of (``event_deltas[]``, repeatable)."""
    values = request.query.get("event_deltas[]", [])
    if len(values) > _MAX_DELTA_VALUES:
        raise _invalid(f"event_deltas: at most {_MAX_DELTA_VALUES} values are allowed")
    for index, value in enumerate(values):
        if value not in DELTA_TYPES:
            raise _invalid(
                f"event_deltas[{index}]: Input should be 'agent.message' or 'agent.thinking'"
            )
    return frozenset(values)


def check_event(
    session: _Session,
    index: int,
    event: Any,
    earlier: Sequence[dict[str, Any]],
    file_exists: Callable[[str], bool],
) -> None:
    """Raise the API's 400 for a sent event that the session cannot take.

    ``earlier`` are the events before it in the same request (already checked): an answer
    may not repeat one of them, and one request defines one outcome at most.
    """
    where = f"events[{index}]"
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise _invalid(f"{where}: must be an object with a type")
    kind = event["type"]
    if kind == "user.message":
        _check_message(event, where)
    elif kind == "user.custom_tool_result":
        _check_custom_result(session, event, where, earlier)
    elif kind == "user.tool_confirmation":
        _check_confirmation(session, event, where, earlier)
    elif kind == "user.define_outcome":
        _check_outcome(session, event, where, earlier, file_exists)
    elif kind != "user.interrupt":
        raise _invalid(f"{where}.type: {kind!r} is not supported by the emulator")


def _check_message(event: dict[str, Any], where: str) -> None:
    content = event.get("content")
    if not isinstance(content, list) or not content:
        raise _invalid(f"{where}.content: must be a non-empty list of content blocks")
    for block in content:
        if not isinstance(block, dict) or block.get("type") == "redacted":
            raise _invalid(f"{where}.content: invalid or redacted content block")


def _answered(
    session: _Session, use_id: str, earlier: Sequence[dict[str, Any]], field: str
) -> bool:
    return use_id in session.answered or any(e.get(field) == use_id for e in earlier)


def _check_custom_result(
    session: _Session, event: dict[str, Any], where: str, earlier: Sequence[dict[str, Any]]
) -> None:
    use_id = event.get("custom_tool_use_id")
    if not isinstance(use_id, str):
        raise _invalid(f"{where}.custom_tool_use_id: Field required")
    if _answered(session, use_id, earlier, "custom_tool_use_id"):
        raise _invalid(f"{where}.custom_tool_use_id: {use_id!r} was already answered")
    awaited = session.awaiting.get(use_id)
    if awaited is None or awaited.call is not None:
        raise _invalid(f"{where}.custom_tool_use_id: no pending agent.custom_tool_use {use_id!r}")
    if not isinstance(event.get("content", []), list):
        raise _invalid(f"{where}.content: must be a list of content blocks")


def _check_confirmation(
    session: _Session, event: dict[str, Any], where: str, earlier: Sequence[dict[str, Any]]
) -> None:
    use_id = event.get("tool_use_id")
    if not isinstance(use_id, str):
        raise _invalid(f"{where}.tool_use_id: Field required")
    result = event.get("result")
    if result not in ("allow", "deny"):
        raise _invalid(f"{where}.result: Input should be 'allow' or 'deny'")
    message = event.get("deny_message")
    if message is not None:
        if not isinstance(message, str):
            raise _invalid(f"{where}.deny_message: Input should be a valid string")
        if result != "deny":
            raise _invalid(f"{where}.deny_message: only allowed when result is 'deny'")
    if _answered(session, use_id, earlier, "tool_use_id"):
        raise _invalid(f"{where}.tool_use_id: {use_id!r} was already confirmed")
    awaited = session.awaiting.get(use_id)
    if awaited is not None and awaited.call is not None:
        return
    use = next(
        (e for e in session.log if e["id"] == use_id and e["type"] in SERVER_TOOL_USES), None
    )
    if use is None:
        raise _invalid(
            f"{where}.tool_use_id: {use_id!r} does not match any agent.tool_use or"
            " agent.mcp_tool_use event in this session"
        )
    permission = use.get("evaluated_permission")
    if permission != "ask":
        raise _invalid(
            f"{where}.tool_use_id: {use_id!r} has evaluated_permission {permission!r}, not 'ask'"
        )
    raise _invalid(f"{where}.tool_use_id: {use_id!r} is no longer awaiting confirmation")


def _check_outcome(
    session: _Session,
    event: dict[str, Any],
    where: str,
    earlier: Sequence[dict[str, Any]],
    file_exists: Callable[[str], bool],
) -> None:
    for key in event:
        if key not in _OUTCOME_FIELDS:
            raise _invalid(f"{where}.{key}: Extra inputs are not permitted")
    if not isinstance(event.get("description"), str):
        raise _invalid(f"{where}.description: Field required (a string)")
    _check_rubric(event.get("rubric"), f"{where}.rubric", file_exists)
    iterations = event.get("max_iterations")
    if iterations is not None and (
        isinstance(iterations, bool)
        or not isinstance(iterations, int)
        or not 1 <= iterations <= MAX_ITERATIONS
    ):
        raise _invalid(
            f"{where}.max_iterations: Input should be an integer from 1 to {MAX_ITERATIONS}"
        )
    if session.outcome_open() or any(e["type"] == "user.define_outcome" for e in earlier):
        raise _invalid(
            f"{where}: an outcome is already being worked toward; define the next one after"
            " it is evaluated"
        )


def _check_rubric(rubric: Any, where: str, file_exists: Callable[[str], bool]) -> None:
    if not isinstance(rubric, dict):
        raise _invalid(f"{where}: Field required ({{'type': 'text' | 'file', ...}})")
    kind = rubric.get("type")
    if kind == "text":
        extra, content = set(rubric) - {"type", "content"}, rubric.get("content")
        if not isinstance(content, str):
            raise _invalid(f"{where}.content: Field required (a string)")
        if len(content) > MAX_RUBRIC_CHARS:
            raise _invalid(f"{where}.content: at most {MAX_RUBRIC_CHARS} characters")
    elif kind == "file":
        extra, file_id = set(rubric) - {"type", "file_id"}, rubric.get("file_id")
        if not isinstance(file_id, str):
            raise _invalid(f"{where}.file_id: Field required (a string)")
        if not file_exists(file_id):
            raise _invalid(f"{where}.file_id: file {file_id!r} was not found")
    else:
        raise _invalid(f"{where}.type: Input should be 'text' or 'file'")
    if extra:
        raise _invalid(f"{where}.{min(extra)}: Extra inputs are not permitted")
