"""What the Claude emulator accepts from a client before it acts: sent events and stream options.

Every event of a ``POST /v1/sessions/{id}/events`` request (or of a create's
``initial_events``) is checked before any is logged, so a request with one bad event changes
nothing: it is a 400 ``invalid_request_error`` as the service answers. Its shape comes
first - the event types and fields the SDK's params declare, for the session's flavor, and
no other, down to content blocks and sources - then what it means now. The checks know the
session's state (which tool uses are pending, which were answered, whether an outcome is
open, its threads, its environment and model) but never change it. The stream's
``event_deltas[]`` query parameter is checked here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from req_managed_agents.testing.claude._wire import _invalid

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable

    from req_managed_agents.testing.claude._model import _Session
    from req_managed_agents.testing.server import RecordedRequest

# The event types a stream connection may ask previews of, and how many values it may send.
DELTA_TYPES = ("agent.message", "agent.thinking")
_MAX_DELTA_VALUES = 100

# user.define_outcome limits, as the API documents them.
MAX_RUBRIC_CHARS = 262_144
MAX_ITERATIONS = 20
DEFAULT_ITERATIONS = 3
_OUTCOME_FIELDS = frozenset({"type", "description", "rubric", "max_iterations"})

# The events that answer what a paused turn waits for.
ANSWERS = frozenset(
    {
        "user.custom_tool_result",
        "user.tool_confirmation",
        "user.tool_result",
        "user.mcp_elicitation_response",
    }
)
# The fields each input event takes: those its params declare in the SDK (anthropic 2.17,
# ``types/beta/sessions/beta_managed_agents_*_event_params.py``), no other. An answer names
# no thread: the service routes it by the tool use it answers, and its echo names the
# thread it went to.
_FIELDS = {
    "user.message": frozenset({"type", "content"}),
    "user.interrupt": frozenset({"type", "session_thread_id"}),
    "user.custom_tool_result": frozenset({"type", "custom_tool_use_id", "content", "is_error"}),
    "user.tool_result": frozenset({"type", "tool_use_id", "content", "is_error"}),
    "user.tool_confirmation": frozenset({"type", "tool_use_id", "result", "deny_message"}),
    "user.define_outcome": _OUTCOME_FIELDS,
    "system.message": frozenset({"type", "content"}),
}
# Claude on Bedrock's (``types/beta/bedrock/sessions/``): no outcomes and no sandbox results,
# but answers to MCP elicitations.
_BEDROCK_FIELDS = {
    **{
        kind: _FIELDS[kind]
        for kind in _FIELDS
        if kind not in ("user.define_outcome", "user.tool_result")
    },
    "user.mcp_elicitation_response": frozenset({"type", "mcp_elicitation_id", "response"}),
}
# The content blocks of a user message, and of a tool result, with the fields they take.
_MESSAGE_BLOCKS = ("text", "image", "document")
_RESULT_BLOCKS = ("text", "image", "document", "search_result")
_BLOCK_FIELDS = {
    "text": frozenset({"type", "text"}),
    "image": frozenset({"type", "source"}),
    "document": frozenset({"type", "source", "title", "context"}),
    "search_result": frozenset({"type", "source", "title", "content", "citations"}),
}
# Each block's sources, with the fields they need besides ``type`` (and take, no other).
_SOURCES = {
    "image": {"base64": ("media_type", "data"), "url": ("url",), "file": ("file_id",)},
    "document": {
        "base64": ("media_type", "data"),
        "text": ("media_type", "data"),
        "url": ("url",),
        "file": ("file_id",),
    },
}
# Claude on Bedrock takes a user message's images and documents only as data.
_BEDROCK_MESSAGE_SOURCES = {
    "image": {"base64": _SOURCES["image"]["base64"]},
    "document": {kind: _SOURCES["document"][kind] for kind in ("base64", "text")},
}
# A system message follows one of these in the same request; it has 1 to 1000 blocks.
_BEFORE_SYSTEM = ("user.message", "user.tool_result", "user.custom_tool_result")
_MAX_SYSTEM_BLOCKS = 1000
# The models that take a mid-conversation system message.
SYSTEM_MESSAGE_MODELS = frozenset(
    {
        "claude-fable-5-1",
        "claude-mythos-5-1",
        "claude-fable-5",
        "claude-mythos-5",
        "claude-opus-5",
        "claude-opus-4-8",
    }
)


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


def check_request(events: Sequence[Any]) -> None:
    """The rules that span a request: one ``system.message`` at most, and last."""
    kinds = [e.get("type") if isinstance(e, dict) else None for e in events]
    if kinds.count("system.message") > 1:
        raise _invalid("events: at most one system.message per request")
    if "system.message" in kinds[:-1]:
        raise _invalid("events: a system.message must be the last event of the request")


def check_event(
    session: _Session,
    index: int,
    event: Any,
    earlier: Sequence[dict[str, Any]],
    file_exists: Callable[[str], bool],
    *,
    where: str = "events",
) -> None:
    """Raise the API's 400 for a sent event that the session cannot take.

    ``earlier`` are the events before it in the same request (already checked): an answer
    may not repeat one of them, one request defines one outcome at most, and a system
    message follows the event it goes with.
    """
    where = f"{where}[{index}]"
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise _invalid(f"{where}: must be an object with a type")
    kind = event["type"]
    fields = _BEDROCK_FIELDS if session.bedrock else _FIELDS
    if kind not in fields:
        raise _invalid(f"{where}.type: {kind!r} is not an event a client can send")
    _check_fields(event, fields[kind], where)
    thread_id = event.get("session_thread_id")
    if thread_id is not None and thread_id not in session.threads:
        raise _invalid(f"{where}.session_thread_id: no thread {thread_id!r} in this session")
    if kind == "user.message":
        sources = _BEDROCK_MESSAGE_SOURCES if session.bedrock else _SOURCES
        content = event.get("content")
        _check_blocks(content, f"{where}.content", _MESSAGE_BLOCKS, file_exists, sources=sources)
    elif kind == "user.custom_tool_result":
        _check_result_content(event, where, file_exists)
        _check_answer(session, event, where, earlier, "custom_tool_use_id", "custom")
    elif kind == "user.tool_result":
        _check_result_content(event, where, file_exists)
        if not session.self_hosted:
            raise _invalid(
                f"{where}.type: user.tool_result is only accepted in self_hosted environments"
            )
        _check_answer(session, event, where, earlier, "tool_use_id", "result")
    elif kind == "user.tool_confirmation":
        _check_confirmation(session, event, where, earlier)
    elif kind == "user.mcp_elicitation_response":
        _check_elicitation_response(session, event, where)
    elif kind == "user.define_outcome":
        _check_outcome(session, event, where, earlier, file_exists)
    elif kind == "system.message":
        _check_system_message(session, event, where, earlier)


def _check_fields(value: dict[str, Any], fields: frozenset[str], where: str) -> None:
    """Refuse what ``value`` holds beyond the ``fields`` its params declare."""
    for key in value:
        if key not in fields:
            raise _invalid(f"{where}.{key}: Extra inputs are not permitted")


def _check_blocks(
    content: Any,
    where: str,
    kinds: Sequence[str],
    file_exists: Callable[[str], bool],
    *,
    empty: bool = False,
    sources: dict[str, dict[str, tuple[str, ...]]] = _SOURCES,
) -> None:
    """Content blocks of the given kinds, with their ``sources`` and only the fields they
    declare; never a redacted block."""
    if not isinstance(content, list) or (not content and not empty):
        raise _invalid(f"{where}: must be a non-empty list of content blocks")
    for number, block in enumerate(content):
        at = f"{where}[{number}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str) or kind not in kinds:
            raise _invalid(f"{at}.type: Input should be one of {', '.join(kinds)}")
        _check_fields(block, _BLOCK_FIELDS[kind], at)
        if kind == "text" and not isinstance(block.get("text"), str):
            raise _invalid(f"{at}.text: Field required (a string)")
        if kind in sources:
            _check_source(block.get("source"), f"{at}.source", sources[kind], file_exists)
        if kind == "search_result":
            for key in ("source", "title"):
                if not isinstance(block.get(key), str):
                    raise _invalid(f"{at}.{key}: Field required (a string)")
            _check_blocks(block.get("content"), f"{at}.content", ("text",), file_exists)
            citations = block.get("citations")
            if citations is not None:
                if not isinstance(citations, dict):
                    raise _invalid(f"{at}.citations: Input should be an object")
                _check_fields(citations, frozenset({"enabled"}), f"{at}.citations")


def _check_source(
    source: Any,
    where: str,
    kinds: dict[str, tuple[str, ...]],
    file_exists: Callable[[str], bool],
) -> None:
    """A block's source: one of ``kinds``, with the fields it needs and no other."""
    source_kind = source.get("type") if isinstance(source, dict) else None
    needed = kinds.get(str(source_kind))
    if needed is None:
        raise _invalid(f"{where}.type: Input should be one of {', '.join(kinds)}")
    _check_fields(source, frozenset({"type", *needed}), where)
    for key in needed:
        if not isinstance(source.get(key), str):
            raise _invalid(f"{where}.{key}: Field required (a string)")
    if source_kind == "file" and not file_exists(source["file_id"]):
        raise _invalid(f"{where}.file_id: file {source['file_id']!r} was not found")


def _check_result_content(
    event: dict[str, Any], where: str, file_exists: Callable[[str], bool]
) -> None:
    content = event.get("content", [])
    _check_blocks(content, f"{where}.content", _RESULT_BLOCKS, file_exists, empty=True)
    if not isinstance(event.get("is_error", False), (bool, type(None))):
        raise _invalid(f"{where}.is_error: Input should be a valid boolean")


def _answered(
    session: _Session, use_id: str, earlier: Sequence[dict[str, Any]], field: str
) -> bool:
    return use_id in session.answered or any(e.get(field) == use_id for e in earlier)


def _check_answer(
    session: _Session,
    event: dict[str, Any],
    where: str,
    earlier: Sequence[dict[str, Any]],
    field: str,
    kind: str,
) -> None:
    """A tool result for a tool use the paused turn waits on, answered once."""
    use_id = event.get(field)
    if not isinstance(use_id, str):
        raise _invalid(f"{where}.{field}: Field required")
    if _answered(session, use_id, earlier, field):
        raise _invalid(f"{where}.{field}: {use_id!r} was already answered")
    awaited = session.awaiting.get(use_id)
    if awaited is None or awaited.kind != kind:
        use = "agent.custom_tool_use" if kind == "custom" else "agent.tool_use"
        raise _invalid(f"{where}.{field}: no pending {use} {use_id!r}")


def _check_elicitation_response(session: _Session, event: dict[str, Any], where: str) -> None:
    """An answer to an ``agent.mcp_elicitation`` of this session (a repeat is taken and has
    no effect, as on the service)."""
    elicitation_id = event.get("mcp_elicitation_id")
    if not isinstance(elicitation_id, str) or not 1 <= len(elicitation_id) <= 128:
        raise _invalid(f"{where}.mcp_elicitation_id: Field required")
    response = event.get("response")
    if (
        not isinstance(response, dict)
        or set(response) != {"type"}
        or response["type"] not in ("accept", "decline", "cancel")
    ):
        raise _invalid(f"{where}.response: {{'type': 'accept' | 'decline' | 'cancel'}}")
    logs = [session.log, *(t.log for t in session.threads.values() if not t.primary)]
    if not any(
        e["id"] == elicitation_id and e["type"] == "agent.mcp_elicitation"
        for log in logs
        for e in log
    ):
        raise _invalid(f"{where}.mcp_elicitation_id: mcp_elicitation_not_found: {elicitation_id!r}")


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
    if awaited is not None and awaited.kind == "confirm":
        return
    logs = [session.log, *(t.log for t in session.threads.values() if not t.primary)]
    use = next(
        (
            e
            for log in logs
            for e in log
            if e["id"] == use_id and e["type"] in ("agent.tool_use", "agent.mcp_tool_use")
        ),
        None,
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


def _check_system_message(
    session: _Session, event: dict[str, Any], where: str, earlier: Sequence[dict[str, Any]]
) -> None:
    content = event.get("content")
    if not isinstance(content, list) or not 1 <= len(content) <= _MAX_SYSTEM_BLOCKS:
        raise _invalid(f"{where}.content: 1 to {_MAX_SYSTEM_BLOCKS} text blocks")
    for number, block in enumerate(content):
        if (
            not isinstance(block, dict)
            or set(block) != {"type", "text"}
            or (block["type"] != "text" or not isinstance(block["text"], str))
        ):
            raise _invalid(f"{where}.content[{number}]: a {{'type': 'text', 'text'}} block")
    if not earlier or earlier[-1].get("type") not in _BEFORE_SYSTEM:
        raise _invalid(
            f"{where}: a system.message must come right after the user.message,"
            " user.tool_result or user.custom_tool_result it goes with"
        )
    model = session.record["agent"]["model"]["id"]
    if model not in SYSTEM_MESSAGE_MODELS:
        raise _invalid(
            f"{where}: model_does_not_support_mid_conversation_system ({model!r} does not"
            " take a system message mid-conversation)"
        )


def _check_outcome(
    session: _Session,
    event: dict[str, Any],
    where: str,
    earlier: Sequence[dict[str, Any]],
    file_exists: Callable[[str], bool],
) -> None:
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
