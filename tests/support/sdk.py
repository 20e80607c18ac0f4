"""The official ``anthropic`` SDK aimed at the Claude emulator, validating every answer strictly.

:class:`StrictAnthropic` is the SDK's own client with ``_strict_response_validation`` on
(the SDK raises on any answer that does not fit its models), and more: every answer, stream
event and page is validated again in pydantic's strict mode against the JSON (no coercion of
``"1"`` into ``1``, no missing required field), and a field the SDK does not model anywhere
in it is a mismatch too (a misspelt or invented field would otherwise pass silently). A JSON
schema (a custom tool's ``input_schema``) is free-form and is not searched for such fields.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import anthropic
import pydantic

from req_managed_agents.providers.claude.api._sessions import CREATE_TOKEN_KEY
from req_managed_agents.testing import ClaudeEmulator, RecordedRequest


class ModelMismatch(AssertionError):
    """An answer of the emulator that the SDK's models do not describe exactly."""


def unmodeled_fields(value: Any, path: str = "") -> list[str]:
    """The paths of fields in a validated model that its class does not declare."""
    found: list[str] = []
    if isinstance(value, pydantic.BaseModel):
        if type(value).__name__.endswith("InputSchema"):
            return found  # a JSON schema: any keyword is allowed
        found += [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unmodeled_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found += unmodeled_fields(item, f"{path}[{index}]")
    return found


@functools.cache
def _adapter(cast_to: Any) -> pydantic.TypeAdapter[Any]:
    """One adapter per type: building one for a union of events takes tens of ms."""
    return pydantic.TypeAdapter(cast_to)


def check_strictly(cast_to: Any, data: Any, what: str) -> Any:
    """``data`` (decoded JSON) validated strictly as ``cast_to``, with no unmodeled field."""
    try:
        adapter = _adapter(cast_to)
    except TypeError:  # a type that cannot be a cache key
        adapter = pydantic.TypeAdapter(cast_to)
    try:
        value = adapter.validate_json(json.dumps(data), strict=True)
    except pydantic.ValidationError as error:
        raise ModelMismatch(f"{what}: {error}\n{json.dumps(data)[:3000]}") from None
    extra = unmodeled_fields(value)
    if extra:
        raise ModelMismatch(f"{what}: fields the SDK does not model: {extra}")
    return value


class _StrictAnswers:
    """Mixed into an SDK client: each answer (and each streamed event) checked strictly."""

    def _process_response_data(self, *, data: Any, cast_to: Any, response: Any) -> Any:
        result = super()._process_response_data(  # the SDK client's, next in the MRO
            data=data, cast_to=cast_to, response=response
        )
        if cast_to is not object and data is not None:
            check_strictly(cast_to, data, f"{response.request.method} {response.request.url}")
        return result


class StrictAnthropic(_StrictAnswers, anthropic.Anthropic):
    """The SDK's client, checking each answer (and each streamed event) strictly."""


def strict_client(emulator: ClaudeEmulator) -> StrictAnthropic:
    return StrictAnthropic(
        base_url=emulator.base_url,
        api_key=emulator.api_key,
        max_retries=0,
        timeout=10,
        _strict_response_validation=True,
    )


_ID = re.compile(
    r"\b(agent|env|sesn|sevt|file|vlt|vcrd|memstore|mem|memver|sthr|sesrsc|outc|page)"
    r"_[0-9A-Za-z]+"
)


def _anonymous(value: Any) -> Any:
    """A value with every object id replaced by its kind."""
    if isinstance(value, str):
        return _ID.sub(lambda found: f"<{found.group(1)}>", value)
    if isinstance(value, dict):
        return {key: _anonymous(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_anonymous(item) for item in value]
    return value


def wire_shape(request: RecordedRequest) -> tuple[str, str, dict[str, Any], Any]:
    """What a request says on the wire, ids left out: method, path, query and JSON body.

    ``beta=true`` is left out of the query (the SDK's marker of beta paths), and so is a
    ``limit`` (page sizes are a client's own choice). An empty JSON object counts as no
    body: the SDK posts ``archive`` with none, the project's client with ``{}``, and both
    mean "no parameters" to the service. The token the project's client adds to a new
    session's metadata is left out too (a deliberate difference: it finds a session whose
    create answer was lost).
    """
    query = {
        name: values for name, values in request.query.items() if name not in ("beta", "limit")
    }
    body = request.body if isinstance(request.body, (dict, list)) and request.body else None
    body = without_create_token(body)
    return (
        request.method,
        _anonymous(request.path),
        _anonymous(query),
        _anonymous(body),
    )


def without_create_token(body: Any) -> Any:
    """A body (or a session's metadata holder) without the project's create token; a
    metadata object that held only the token goes too."""
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        return body
    if CREATE_TOKEN_KEY not in body["metadata"]:
        return body
    metadata = {k: v for k, v in body["metadata"].items() if k != CREATE_TOKEN_KEY}
    if metadata:
        return {**body, "metadata": metadata}
    return {k: v for k, v in body.items() if k != "metadata"}


class StrictAnthropicBedrock(_StrictAnswers, anthropic.AnthropicBedrock):
    """The SDK's Bedrock client (its own SigV4 signing), checking each answer strictly."""


def strict_bedrock_client(emulator: ClaudeEmulator) -> StrictAnthropicBedrock:
    """The SDK's Bedrock client aimed at a ``flavor="bedrock"`` emulator, signing with its keys."""
    return StrictAnthropicBedrock(
        aws_access_key=emulator.access_key_id,
        aws_secret_key=emulator.secret_access_key,
        aws_region=emulator.region,
        base_url=emulator.base_url,
        max_retries=0,
        timeout=10,
        _strict_response_validation=True,
    )
