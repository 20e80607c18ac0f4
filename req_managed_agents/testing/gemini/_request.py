"""What ``POST /{v}/interactions`` takes: the agent form of the create body, checked field by
field as the service refuses it (400 ``invalid_request``), and its ``input`` made into steps.

The fields are ``CreateAgentInteraction``'s (google-genai 3.6.1) and nothing else: an
undeclared top-level field is refused as a proto-backed Google API refuses one
(``Unknown name "<field>"``); the model form's fields (``model``, ``generation_config``,
``cached_content``) are refused with ``agent`` as the SDK's facade refuses them. ``input``
is a string, one content, a list of contents (each becomes one ``user_input`` step) or a
list of ``user_input`` and ``function_result`` steps; the other step types are not taken as
input here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from req_managed_agents.testing.gemini._wire import LABEL_KEY, LABEL_VALUE, invalid

DECLARED = frozenset(
    {
        "agent",
        "agent_config",
        "background",
        "continuation_token",
        "environment",
        "input",
        "labels",
        "previous_interaction_id",
        "response_format",
        "response_mime_type",
        "response_modalities",
        "safety_settings",
        "service_tier",
        "store",
        "stream",
        "system_instruction",
        "tools",
        "webhook_config",
    }
)
_MODEL_FORM = ("model", "generation_config", "cached_content")
CONTENT_TYPES = frozenset({"text", "image", "audio", "document", "video"})
INPUT_STEPS = frozenset({"user_input", "function_result"})
TOOL_TYPES = frozenset(
    {
        "code_execution",
        "computer_use",
        "file_search",
        "function",
        "google_maps",
        "google_search",
        "mcp_server",
        "retrieval",
        "tool_search",
        "url_context",
    }
)
_AGENT_CONFIGS = frozenset({"antigravity", "dynamic", "deep-research", "code-mender"})
_SERVICE_TIERS = frozenset({"flex", "standard", "priority", "deferred"})
_MAX_LABELS = 64


@dataclass(frozen=True)
class CreateRequest:
    """A checked create body: its ``steps`` are the input made into steps."""

    body: dict[str, Any]
    agent: str
    steps: list[dict[str, Any]]
    background: bool
    stream: bool
    previous_id: str | None
    continuation_token: str | None

    @property
    def results(self) -> list[dict[str, Any]]:
        return [step for step in self.steps if step["type"] == "function_result"]


def create_request(body: Any) -> CreateRequest:
    """Check a create body; the API's 400 for what the service refuses."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    for name in body:
        if name in _MODEL_FORM and "agent" in body:
            raise invalid(f"{name} cannot be combined with agent.")
        if name not in DECLARED and name not in _MODEL_FORM:
            raise invalid(
                f'Invalid JSON payload received. Unknown name "{name}": Cannot find field.'
            )
    agent = body.get("agent")
    if not isinstance(agent, str) or not agent:
        raise invalid("agent is required: this service runs agent interactions.")
    for flag in ("background", "stream", "store"):
        _check_type(body, flag, bool, "a boolean")
    for name in ("previous_interaction_id", "continuation_token", "system_instruction"):
        _check_type(body, name, str, "a string")
    if body.get("background") and body.get("store") is False:
        raise invalid("A background interaction must be stored: store cannot be false.")
    if "service_tier" in body and body["service_tier"] not in _SERVICE_TIERS:
        raise invalid(f"service_tier must be one of {sorted(_SERVICE_TIERS)}.")
    _check_labels(body.get("labels"))
    check_tools(body.get("tools"), TOOL_TYPES)
    _check_agent_config(body.get("agent_config"))
    return CreateRequest(
        body=body,
        agent=agent,
        steps=input_steps(body.get("input")),
        background=bool(body.get("background")),
        stream=bool(body.get("stream")),
        previous_id=body.get("previous_interaction_id"),
        continuation_token=body.get("continuation_token"),
    )


def _check_type(body: dict[str, Any], name: str, kind: type, said: str) -> None:
    if name in body and not isinstance(body[name], kind):
        raise invalid(f"{name} must be {said}.")


def _check_labels(labels: Any) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        raise invalid("labels must be an object of strings.")
    if len(labels) > _MAX_LABELS:
        raise invalid(f"At most {_MAX_LABELS} labels are allowed.")
    for key, value in labels.items():
        if not LABEL_KEY.fullmatch(key):
            raise invalid(
                f"Label key {key!r} is invalid: at most 63 lowercase letters, digits, "
                "underscores and dashes, starting with a letter."
            )
        if not isinstance(value, str) or not LABEL_VALUE.fullmatch(value):
            raise invalid(
                f"Label value of {key!r} is invalid: at most 63 lowercase letters, digits, "
                "underscores and dashes."
            )


def check_tools(tools: Any, types: frozenset[str]) -> None:
    """Tools are a list of objects of one of ``types``; a function needs its ``name``."""
    if tools is None:
        return
    if not isinstance(tools, list):
        raise invalid("tools must be a list.")
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in types:
            raise invalid(f"Each tool needs a type, one of {sorted(types)}.")
        if kind == "function" and (not isinstance(tool.get("name"), str) or not tool["name"]):
            raise invalid("A function tool needs its name.")


def _check_agent_config(config: Any) -> None:
    if config is None:
        return
    if not isinstance(config, dict) or config.get("type") not in _AGENT_CONFIGS:
        raise invalid(f"agent_config needs a type, one of {sorted(_AGENT_CONFIGS)}.")


def input_steps(given: Any) -> list[dict[str, Any]]:
    """The input as steps: contents become ``user_input`` steps; [] for no input."""
    if given is None:
        return []
    if isinstance(given, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": given}]}]
    items = given if isinstance(given, list) else [given]
    kinds = {item.get("type") if isinstance(item, dict) else None for item in items}
    if not items:
        raise invalid("input must not be empty.")
    if kinds <= CONTENT_TYPES:
        return [{"type": "user_input", "content": [_content(item) for item in items]}]
    if kinds <= INPUT_STEPS:
        return [_step(item) for item in items]
    raise invalid(
        "input must be a string, contents, or user_input and function_result steps; "
        f"got types {sorted(str(kind) for kind in kinds)}."
    )


def _content(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "text" and not isinstance(item.get("text"), str):
        raise invalid("A text content needs its text.")
    return item


def _step(step: dict[str, Any]) -> dict[str, Any]:
    if step["type"] == "user_input":
        content = step.get("content")
        if not isinstance(content, list) or not content:
            raise invalid("A user_input step needs its content.")
        for item in content:
            if not isinstance(item, dict) or item.get("type") not in CONTENT_TYPES:
                raise invalid(f"Each content needs a type, one of {sorted(CONTENT_TYPES)}.")
            _content(item)
        return step
    if not isinstance(step.get("call_id"), str) or not step["call_id"]:
        raise invalid("A function_result step needs its call_id.")
    if not isinstance(step.get("result"), (str, list, dict)):
        raise invalid("A function_result step needs its result: a string, a list or an object.")
    if "is_error" in step and not isinstance(step["is_error"], bool):
        raise invalid("is_error must be a boolean.")
    if "name" in step and not isinstance(step["name"], str):
        raise invalid("name must be a string.")
    return step


def texts(steps: list[dict[str, Any]]) -> list[str]:
    """What user input tells a hop: one text per ``user_input`` step."""
    return [
        "".join(str(item.get("text", "")) for item in step["content"] if item["type"] == "text")
        for step in steps
        if step["type"] == "user_input"
    ]
