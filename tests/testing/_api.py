"""A plain ``requests`` client for the Claude emulator's tests, and its response checks."""

from __future__ import annotations

from typing import Any

import requests

from req_managed_agents.testing import ClaudeEmulator
from req_managed_agents.testing._claude import BETA

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

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.http.get(self.emulator.base_url + path, params=params, timeout=5)

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.http.post(self.emulator.base_url + path, json=body, timeout=5)

    def delete(self, path: str) -> requests.Response:
        return self.http.delete(self.emulator.base_url + path, timeout=5)

    def send(self, session_id: str, *events: dict[str, Any]) -> requests.Response:
        return self.post(f"/v1/sessions/{session_id}/events", {"events": list(events)})

    def upload(self, files: Any) -> requests.Response:
        """``files`` as ``requests`` takes it: a mapping or a list of (field, value) pairs."""
        return self.http.post(self.emulator.base_url + "/v1/files", files=files, timeout=5)

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
