"""Clients of the Gemini emulator for its tests: google-genai's own client with every answer
checked strictly on the wire, a plain ``requests`` client, and the strict check itself.

The check (``strict``) is what "the SDK's models accept" means for google-genai 3.6.1,
whose own parsing is lenient twice over (it falls back to unvalidated construction, and its
open unions and enums to ``Unknown*`` classes and ``UnrecognizedStr``): unmarshal with
``allow_unknown_union_variants=False``, then walk the model and fail on any field it does
not declare (``model_extra``), any ``Unknown*`` class and any ``UnrecognizedStr``. A model
that declares no field at all is an open object by design (a function result given as an
object), so its fields are not extras.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import requests
from google import genai
from google.genai._gaos import errors as gaos_errors
from google.genai._gaos.types.agents.agent import Agent
from google.genai._gaos.types.agents.agentlistresponse import AgentListResponse
from google.genai._gaos.types.basemodel import UnrecognizedStr
from google.genai._gaos.types.environments.environment import Environment
from google.genai._gaos.types.environments.listenvironmentsresponse import (
    ListEnvironmentsResponse,
)
from google.genai._gaos.types.interactions.empty import Empty
from google.genai._gaos.types.interactions.interaction import Interaction
from google.genai._gaos.types.interactions.interactionssestreamevent import (
    InteractionSSEStreamEvent,
)
from google.genai._gaos.utils.serializers import unmarshal
from pydantic import BaseModel

from req_managed_agents.testing import GeminiEmulator


def strict(payload: Any, model: Any) -> Any:
    """``payload`` parsed as ``model`` the strict way; AssertionError on anything the SDK's
    models do not declare."""
    parsed = unmarshal(payload, model, coerce_iterables=False, allow_unknown_union_variants=False)
    _walk(parsed, "$")
    return parsed


def _walk(value: Any, where: str) -> None:
    open_string = where.endswith(".agent")
    assert open_string or not isinstance(value, UnrecognizedStr), f"{where}: unknown {value!r}"
    if isinstance(value, BaseModel):
        name = type(value).__name__
        assert not name.startswith("Unknown"), f"{where}: unknown union variant {name}"
        extra = value.model_extra or {}
        assert not extra or not type(value).model_fields, f"{where}: {name} extras {sorted(extra)}"
        for field in type(value).model_fields:  # read directly: some warn as deprecated
            _walk(value.__dict__.get(field), f"{where}.{field}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{where}.{key}")


def check_event(event: Any) -> Any:
    """One streamed event, strictly; it must carry an ``event_id``."""
    assert isinstance(event, dict), event
    assert event.get("event_id"), event
    return strict({"data": event}, InteractionSSEStreamEvent).data


_PATH = re.compile(r"/v1(?:beta)?/(interactions|agents|environments)(?:/([^/]+))?(/cancel)?")


def answer_model(method: str, path: str) -> Any:
    """The model the SDK parses a successful JSON answer to ``method path`` with."""
    found = _PATH.fullmatch(path)
    assert found is not None, path
    noun, one, _ = found.groups()
    if method == "DELETE":
        return Empty
    if noun == "interactions":
        return Interaction
    if noun == "agents":
        return Agent if one or method == "POST" else AgentListResponse
    return Environment if one or method == "POST" else ListEnvironmentsResponse


def check_answer(method: str, path: str, status: int, body: Any) -> Any:
    """A JSON answer, strictly: the error shape for an error, else the route's model."""
    if status >= 400:
        data = strict(body, gaos_errors.CreateInteractionClientErrorData)
        assert isinstance(data.error.code, str), body
        assert data.error.code, body
        assert set(body) == {"error"}, body
        assert set(body["error"]) == {"code", "message"}, body
        return data
    if method == "DELETE":
        assert body == {}, body
    return strict(body, answer_model(method, path))


def sse_events(text: str) -> list[dict[str, Any]]:
    """The events of an SSE body (comments skipped), each frame's ``event:`` line checked
    against its ``event_type``."""
    events = []
    for block in re.split(r"\r?\n\r?\n", text):
        fields = [line.split(": ", 1) for line in block.splitlines() if not line.startswith(":")]
        if not fields:
            continue
        named = dict(fields)
        assert set(named) == {"event", "data"}, block
        event = json.loads(named["data"])
        assert event["event_type"] == named["event"], block
        events.append(event)
    return events


class _CheckedStream(httpx.SyncByteStream):
    """An SSE body passed through, each complete frame checked as it goes by."""

    def __init__(self, inner: httpx.SyncByteStream, transport: StrictTransport) -> None:
        self._inner = inner
        self._transport = transport

    def __iter__(self) -> Iterator[bytes]:
        buffer = b""
        for chunk in self._inner:
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                self._transport.check_frames(frame.decode() + "\n\n")
            yield chunk
        self._transport.check_frames(buffer.decode())

    def close(self) -> None:
        self._inner.close()


class StrictTransport(httpx.BaseTransport):
    """httpx's transport, checking every answer strictly before the SDK sees it;
    ``checked`` counts what was checked by kind, ``events`` keeps every streamed event."""

    def __init__(self) -> None:
        self._inner = httpx.HTTPTransport()
        self.checked: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []

    def _count(self, kind: str) -> None:
        self.checked[kind] = self.checked.get(kind, 0) + 1

    def check_frames(self, text: str) -> None:
        for event in sse_events(text):
            check_event(event)
            self.events.append(event)
            self._count(f"event {event['event_type']}")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self._inner.handle_request(request)
        assert response.headers.get("x-request-id", "").startswith("req_"), response.headers
        if response.headers.get("content-type") == "text/event-stream":
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = _CheckedStream(response.stream, self)
            return response
        body = response.read()
        response.close()
        check_answer(request.method, request.url.path, response.status_code, json.loads(body))
        self._count(f"{request.method} {response.status_code}")
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    def close(self) -> None:
        self._inner.close()


def sdk_client(
    emulator: GeminiEmulator, **http_options: Any
) -> tuple[genai.Client, StrictTransport]:
    """google-genai's client aimed at the emulator, its answers checked strictly; no retries."""
    transport = StrictTransport()
    options = {
        "base_url": emulator.base_url,
        "httpx_client": httpx.Client(transport=transport, timeout=10),
        "retry_options": {"attempts": 1},
        **http_options,
    }
    return genai.Client(api_key=emulator.api_key, http_options=options), transport


class GeminiApi:
    """The API called with ``requests``, the way any HTTP client would; every answer is
    checked strictly, streams event by event."""

    def __init__(self, emulator: GeminiEmulator, version: str = "v1") -> None:
        self.url = f"{emulator.base_url}/{version}"
        self.http = requests.Session()
        self.http.headers["x-goog-api-key"] = emulator.api_key

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> requests.Response:
        response = self.http.request(
            method, self.url + path, json=body, params=params or None, timeout=10
        )
        assert response.headers.get("x-request-id", "").startswith("req_"), response.headers
        if response.headers.get("content-type") == "text/event-stream":
            for event in sse_events(response.text):
                check_event(event)
        else:
            path_only = "/" + "/".join(response.request.path_url.split("?")[0].split("/")[1:])
            check_answer(method, path_only, response.status_code, response.json())
        return response

    def cut_stream(self, method: str, path: str, body: Any = None) -> list[dict[str, Any]]:
        """The events of a stream that the server cuts, each checked strictly."""
        response = self.http.request(method, self.url + path, json=body, stream=True, timeout=10)
        assert response.headers["content-type"] == "text/event-stream", response.text
        received = b""
        try:
            for chunk in response.iter_content(chunk_size=None):
                received += chunk
        except requests.exceptions.ChunkedEncodingError:
            pass  # cut: what was received is all there is
        else:
            raise AssertionError(f"the stream was not cut: {received!r}")
        events = sse_events(received.decode())
        for event in events:
            check_event(event)
        return events

    def ok(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = self.call(method, path, body, **params)
        assert response.status_code == 200, response.text
        if response.headers.get("content-type") == "text/event-stream":
            return sse_events(response.text)
        return response.json()

    def error(
        self, status: int, method: str, path: str, body: Any = None, **params: Any
    ) -> dict[str, Any]:
        """The API's error for a request it refuses: its ``error`` object."""
        response = self.call(method, path, body, **params)
        assert response.status_code == status, response.text
        error: dict[str, Any] = response.json()["error"]
        return error

    def close(self) -> None:
        self.http.close()
