"""A plain ``requests`` client for the Claude emulator's tests: its calls, its event stream
reader and its response checks."""

from __future__ import annotations

import time
from typing import Any, Callable

import requests

from req_managed_agents.sse import ServerSentEvent, SSEDecoder
from req_managed_agents.testing import ClaudeEmulator
from req_managed_agents.testing.claude._wire import BETA

FILES_BETA = "files-api-2025-04-14"


def api_headers(emulator: ClaudeEmulator, beta: str | None = BETA) -> dict[str, str]:
    headers = {"x-api-key": emulator.api_key, "anthropic-version": "2023-06-01"}
    if beta is not None:
        headers["anthropic-beta"] = beta
    return headers


class Api:
    """The API called the way a client would, with the given ``anthropic-beta``."""

    def __init__(self, emulator: ClaudeEmulator, beta: str | None = BETA) -> None:
        self.emulator = emulator
        self.http = requests.Session()
        self.http.headers.update(api_headers(emulator, beta))

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close its keep-alive connections (left to the garbage collector, each is an
        unclosed socket found in whichever later test it runs in)."""
        self.http.close()

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.http.get(self.emulator.base_url + path, params=params, timeout=30)

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.http.post(self.emulator.base_url + path, json=body, timeout=30)

    def delete(self, path: str) -> requests.Response:
        return self.http.delete(self.emulator.base_url + path, timeout=30)

    def send(self, session_id: str, *events: dict[str, Any]) -> requests.Response:
        return self.post(f"/v1/sessions/{session_id}/events", {"events": list(events)})

    def upload(self, files: Any) -> requests.Response:
        """``files`` as ``requests`` takes it: a mapping or a list of (field, value) pairs."""
        return self.http.post(self.emulator.base_url + "/v1/files", files=files, timeout=30)

    def upload_file(self, name: str, data: bytes, content_type: str = "text/csv") -> Any:
        return ok(self.upload({"file": (name, data, content_type)}))

    def attach(self, session_id: str, **resource: Any) -> requests.Response:
        return self.post(f"/v1/sessions/{session_id}/resources", {"type": "file", **resource})

    def new_session(self, **body: Any) -> str:
        body = {
            "agent": self.emulator.add_agent(),
            "environment_id": self.emulator.add_environment(),
            **body,
        }
        return str(ok(self.post("/v1/sessions", body))["id"])

    def list_all(self, path: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
        """Every item behind a paged endpoint, and how many pages it took."""
        items: list[dict[str, Any]] = []
        pages = 0
        cursor = None
        while True:
            page = ok(self.get(path, **params, **({"page": cursor} if cursor else {})))
            items += page["data"]
            pages += 1
            cursor = page["next_page"]
            if cursor is None:
                return items, pages


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["request-id"].startswith("req_")
    return response.json()


def error_of(response: requests.Response, status: int) -> dict[str, Any]:
    """Check the API's error shape and return its ``error`` object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "error"
    assert body["request_id"] == response.headers["request-id"]
    error: dict[str, Any] = body["error"]
    return error


def user_message(text: str) -> dict[str, Any]:
    return {"type": "user.message", "content": [{"type": "text", "text": text}]}


def tool_result(tool_use_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "user.custom_tool_result",
        "custom_tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": text}],
    }


def stream_url(emulator: ClaudeEmulator, session_id: str) -> str:
    return f"{emulator.base_url}/v1/sessions/{session_id}/events/stream"


class Stream:
    """A synchronous client of the SSE endpoint that timestamps everything it receives.

    ``deltas`` are the event types it asks previews of (``event_deltas[]``).
    """

    def __init__(
        self, emulator: ClaudeEmulator, session_id: str, deltas: tuple[str, ...] = ()
    ) -> None:
        headers = {**api_headers(emulator), "accept": "text/event-stream"}
        self.response = requests.get(
            stream_url(emulator, session_id),
            params={"event_deltas[]": list(deltas)},
            headers=headers,
            stream=True,
            timeout=(3, 3),
        )
        assert self.response.status_code == 200
        assert self.response.headers["content-type"] == "text/event-stream"
        assert self.response.headers["transfer-encoding"] == "chunked"
        self._chunks = self.response.iter_content(chunk_size=None)
        self._decoder = SSEDecoder()
        self.frames: list[ServerSentEvent] = []
        self.raw = bytearray()
        self.last_bytes_at = time.monotonic()
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
                self.last_bytes_at = time.monotonic()
                self.raw += chunk
                self.frames += self._decoder.feed(chunk)
        return True

    def read_to_end(self, timeout: float = 3.0) -> None:
        self.read_until(lambda: False, timeout)
        assert self.ended_at is not None

    def count(self, event_type: str) -> int:
        return sum(e["type"] == event_type for e in self.events)

    def read_until_count(self, event_type: str, count: int = 1) -> None:
        assert self.read_until(lambda: self.count(event_type) >= count), self.types

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every frame but heartbeats, previews included."""
        return [frame.json() for frame in self.frames if frame.event != "ping"]

    @property
    def logged(self) -> list[dict[str, Any]]:
        """The frames of logged events: what the history holds too."""
        return [e for e in self.events if e["type"] not in ("event_start", "event_delta")]

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def close(self) -> None:
        self.response.close()
