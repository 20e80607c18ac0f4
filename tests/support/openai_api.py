"""Clients of the OpenAI emulator for its tests: the official ``openai`` SDK checking every
answer strictly, a plain ``requests`` client, and a reader of the raw event stream.

:class:`StrictOpenAI` is the SDK's client with ``_strict_response_validation`` on, and every
answer, page and streamed event validated again in pydantic's strict mode with no field the
SDK does not model (``tests.support.sdk.check_strictly``).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import openai
import requests

from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.testing import OpenAIAgentsEmulator
from tests.support.sdk import _StrictAnswers


class StrictOpenAI(_StrictAnswers, openai.OpenAI):
    """The SDK's client, checking each answer (and each streamed event) strictly."""


def strict_client(emulator: OpenAIAgentsEmulator, **options: Any) -> StrictOpenAI:
    options = {"max_retries": 0, "timeout": 10, **options}
    return StrictOpenAI(
        base_url=emulator.base_url,
        api_key=emulator.api_key,
        _strict_response_validation=True,
        **options,
    )


def api_headers(emulator: OpenAIAgentsEmulator) -> dict[str, str]:
    return {"authorization": f"Bearer {emulator.api_key}", "openai-beta": "agents=v1"}


class OpenAIApi:
    """The API called with ``requests``, the way any HTTP client would."""

    def __init__(self, emulator: OpenAIAgentsEmulator) -> None:
        self.emulator = emulator
        self.http = requests.Session()
        self.http.headers.update(api_headers(emulator))

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.http.get(self.emulator.base_url + path, params=params, timeout=30)

    def post(self, path: str, body: Any = None, **headers: str) -> requests.Response:
        url = self.emulator.base_url + path
        return self.http.post(url, json=body, headers=headers, timeout=30)

    def delete(self, path: str) -> requests.Response:
        return self.http.delete(self.emulator.base_url + path, timeout=30)

    def send(self, session_id: str, *events: dict[str, Any], key: str | None = None) -> Any:
        headers = {} if key is None else {"Idempotency-Key": key}
        path = f"/agents/sessions/{session_id}/events"
        return self.post(path, {"events": list(events)}, **headers)

    def new_session(self, agent_id: str | None = None, **body: Any) -> str:
        """A session on a self-hosted environment (it takes no initial input)."""
        body = {
            "agent_id": agent_id or self.emulator.add_agent(),
            "environment": {"type": "self_hosted", "workspace_directory": "/work"},
            **body,
        }
        return str(ok(self.post("/agents/sessions", body))["id"])

    def close(self) -> None:
        self.http.close()


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["x-request-id"].startswith("req_")
    return response.json()


def accepted(response: requests.Response) -> None:
    assert response.status_code == 202, response.text
    assert response.content == b""


def error_of(response: requests.Response, status: int) -> dict[str, Any]:
    """Check OpenAI's error shape and return its ``error`` object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def message(text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return {"type": "agent.session.input.message", "input": [{"role": "user", "content": content}]}


def tool_result(call: dict[str, Any], output: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.tool_result",
        "turn_id": call["turn_id"],
        "call_id": call["call_id"],
        "success": True,
        "output": output,
    }


class EventReader:
    """A synchronous client of a session's event stream, timestamping what it receives."""

    def __init__(self, emulator: OpenAIAgentsEmulator, session_id: str, **params: str) -> None:
        headers = {**api_headers(emulator), "accept": "text/event-stream"}
        self.response = requests.get(
            f"{emulator.base_url}/agents/sessions/{session_id}/events",
            params=params,
            headers=headers,
            stream=True,
            timeout=(3, 3),
        )
        assert self.response.status_code == 200, self.response.text
        assert self.response.headers["content-type"] == "text/event-stream"
        self._chunks = self.response.iter_content(chunk_size=None)
        self._decoder = SSEDecoder()
        self.frames: list[ServerSentEvent] = []
        self.raw = bytearray()
        self.ended_at: float | None = None
        self.error: Exception | None = None

    def read_until(self, done: Callable[[], bool], timeout: float = 3.0) -> bool:
        deadline = time.monotonic() + timeout
        while not done():
            if self.ended_at is not None or time.monotonic() > deadline:
                return False
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self.ended_at = time.monotonic()
            except requests.RequestException as error:
                self.ended_at = time.monotonic()
                self.error = error
            else:
                self.raw += chunk
                self.frames += self._decoder.feed(chunk)
        return True

    def read_until_type(self, event_type: str, count: int = 1, timeout: float = 3.0) -> None:
        found = self.read_until(lambda: self.types.count(event_type) >= count, timeout)
        assert found, self.types

    def read_to_end(self, timeout: float = 3.0) -> None:
        self.read_until(lambda: False, timeout)
        assert self.ended_at is not None

    @property
    def events(self) -> list[dict[str, Any]]:
        return [frame.json() for frame in self.frames]

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.events]

    def close(self) -> None:
        self.response.close()
