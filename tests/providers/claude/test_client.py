"""The Claude Managed Agents control-plane client against a mocked wire (no network).

Every test drives :class:`ClaudeClient` through ``responses`` and checks what reaches the
wire (method, path, query, body, headers) and what the caller gets back (JSON, bytes or a
typed error), including the retry policy: which failures are retried, how often, and how long
the client waits in between.
"""

from __future__ import annotations

import email.policy
import io
import json
import random
import re
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses
import urllib3

from req_managed_agents._redact import Secret
from req_managed_agents.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TransportError,
)
from req_managed_agents.providers.claude import (
    ANTHROPIC_VERSION,
    FILES_BETA,
    MANAGED_AGENTS_BETA,
    ClaudeClient,
    ClaudeManagedAgents,
)
from req_managed_agents.providers.claude.api._sessions import CREATE_TOKEN_KEY
from req_managed_agents.testing import ClaudeEmulator
from req_managed_agents.transport._backoff import RetryPolicy
from tests.support.sdk import without_create_token

API = "https://api.test"
KEY = "sk-ant-test-0123456789abcdefXYZ"
FILES_AND_AGENTS_BETA = f"{FILES_BETA},{MANAGED_AGENTS_BETA}"
# Memory store endpoints take either beta: both are sent.
MEMORY_AND_AGENTS_BETA = "agent-memory-2026-07-22,managed-agents-2026-04-01"
ANY_URL = re.compile(r"https://api\.test/.*")

Call = Callable[[ClaudeClient], Any]


# -- fixtures and helpers ------------------------------------------------------------------


def make_client(max_retries: int = 2, timeout: float = 5) -> ClaudeClient:
    return ClaudeClient(Secret(KEY), base_url=API, timeout=timeout, max_retries=max_retries)


@pytest.fixture
def client() -> Iterator[ClaudeClient]:
    made = make_client()
    yield made
    made.close()


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


@pytest.fixture(autouse=True)
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every retry wait the HTTP layer asks for, in order; nothing really sleeps."""
    waits: list[float] = []

    def pause(seconds: float, stop: object = None) -> bool:
        waits.append(seconds)
        return True

    monkeypatch.setattr("req_managed_agents.transport._http.pause", pause)
    return waits


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def error_body(
    error_type: str = "api_error",
    message: str = "boom",
    *,
    request_id: str | None = None,
    error_code: str | None = None,
) -> dict[str, Any]:
    error: dict[str, Any] = {"type": error_type, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    body: dict[str, Any] = {"type": "error", "error": error}
    if request_id is not None:
        body["request_id"] = request_id
    return body


def query_of(request: requests.PreparedRequest) -> dict[str, list[str]]:
    return parse_qs(urlsplit(str(request.url)).query, keep_blank_values=True)


def path_of(request: requests.PreparedRequest) -> str:
    return urlsplit(str(request.url)).path


def json_body(request: requests.PreparedRequest) -> Any:
    assert request.body is not None
    return json.loads(request.body)


def multipart_parts(request: requests.PreparedRequest) -> dict[str, EmailMessage]:
    """The form parts of a multipart request, by field name."""
    content_type = request.headers["Content-Type"]
    assert content_type.startswith("multipart/form-data; boundary=")
    body = request.body
    assert isinstance(body, bytes)
    raw = b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    message = BytesParser(policy=email.policy.HTTP).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    parts: dict[str, EmailMessage] = {}
    for part in message.iter_parts():
        assert isinstance(part, EmailMessage)
        name = part.get_param("name", header="content-disposition")
        assert isinstance(name, str)
        parts[name] = part
    return parts


def part_bytes(part: EmailMessage) -> bytes:
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload


def refused_connection() -> requests.ConnectionError:
    """What requests raises when the TCP connection could not be opened at all."""
    conn = urllib3.connection.HTTPSConnection("api.test")
    reason = urllib3.exceptions.NewConnectionError(conn, "[Errno 111] Connection refused")
    return requests.ConnectionError(
        urllib3.exceptions.MaxRetryError(None, "/v1/x", reason=reason)  # type: ignore[arg-type]
    )


def assert_managed_agents_headers(request: requests.PreparedRequest, beta: str) -> None:
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert request.headers["anthropic-beta"] == beta


# -- 1. endpoints: method, path, query, body, headers --------------------------------------

USER_MESSAGE = {"type": "user.message", "content": [{"type": "text", "text": "hi"}]}

JSON_ENDPOINTS = [
    pytest.param(
        lambda c: c.create_agent({"name": "coder", "model": "claude-opus-5"}),
        "POST",
        "/v1/agents",
        {"name": "coder", "model": "claude-opus-5"},
        id="create_agent",
    ),
    pytest.param(
        lambda c: c.get_agent("agent_1"), "GET", "/v1/agents/agent_1", None, id="get_agent"
    ),
    pytest.param(
        lambda c: c.update_agent("agent_1", {"version": 3, "system": None}),
        "POST",
        "/v1/agents/agent_1",
        {"version": 3, "system": None},
        id="update_agent",
    ),
    pytest.param(
        lambda c: c.archive_agent("agent_1"),
        "POST",
        "/v1/agents/agent_1/archive",
        {},
        id="archive_agent",
    ),
    pytest.param(
        lambda c: c.create_environment({"name": "env", "config": {"type": "cloud"}}),
        "POST",
        "/v1/environments",
        {"name": "env", "config": {"type": "cloud"}},
        id="create_environment",
    ),
    pytest.param(
        lambda c: c.get_environment("env_1"),
        "GET",
        "/v1/environments/env_1",
        None,
        id="get_environment",
    ),
    pytest.param(
        lambda c: c.archive_environment("env_1"),
        "POST",
        "/v1/environments/env_1/archive",
        {},
        id="archive_environment",
    ),
    pytest.param(
        lambda c: c.create_session("agent_1", "env_1"),
        "POST",
        "/v1/sessions",
        {"agent": "agent_1", "environment_id": "env_1"},
        id="create_session",
    ),
    pytest.param(
        lambda c: c.get_session("sesn_1"), "GET", "/v1/sessions/sesn_1", None, id="get_session"
    ),
    pytest.param(
        lambda c: c.archive_session("sesn_1"),
        "POST",
        "/v1/sessions/sesn_1/archive",
        {},
        id="archive_session",
    ),
    pytest.param(
        lambda c: c.delete_session("sesn_1"),
        "DELETE",
        "/v1/sessions/sesn_1",
        None,
        id="delete_session",
    ),
    pytest.param(
        lambda c: c.send_events("sesn_1", [USER_MESSAGE, {"type": "user.interrupt"}]),
        "POST",
        "/v1/sessions/sesn_1/events",
        {"events": [USER_MESSAGE, {"type": "user.interrupt"}]},
        id="send_events",
    ),
    pytest.param(
        lambda c: c.attach_file("sesn_1", "file_1", mount_path="/data.csv"),
        "POST",
        "/v1/sessions/sesn_1/resources",
        {"type": "file", "file_id": "file_1", "mount_path": "/data.csv"},
        id="attach_file_with_mount_path",
    ),
    pytest.param(
        lambda c: c.attach_file("sesn_1", "file_1"),
        "POST",
        "/v1/sessions/sesn_1/resources",
        {"type": "file", "file_id": "file_1"},
        id="attach_file_default_mount",
    ),
]


@pytest.mark.parametrize(("call", "method", "path", "body"), JSON_ENDPOINTS)
def test_json_endpoint_sends_the_documented_request_and_returns_the_json(
    call: Call,
    method: str,
    path: str,
    body: Any,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    answer = {"id": "obj_1", "type": "thing", "nested": {"k": [1, 2]}}
    mock.add(method, API + path, json=answer)

    assert call(client) == answer

    assert len(mock.calls) == 1
    request = mock.calls[0].request
    assert request.method == method
    assert path_of(request) == path
    assert query_of(request) == {}
    assert_managed_agents_headers(request, MANAGED_AGENTS_BETA)
    if body is None:
        assert not request.body
    else:
        assert request.headers["content-type"] == "application/json"
        assert _strip_token(json_body(request), body) == body


def _strip_token(body: Any, expected: Any) -> Any:
    """A create-session body without the token each create carries (and without the
    metadata it made, when ``expected`` has none)."""
    if not isinstance(body, dict) or not isinstance(body.get("metadata"), dict):
        return body
    metadata = {k: v for k, v in body["metadata"].items() if k != CREATE_TOKEN_KEY}
    if metadata or "metadata" in expected:
        return {**body, "metadata": metadata}
    return {k: v for k, v in body.items() if k != "metadata"}


LIST_ENDPOINTS = [
    pytest.param(
        lambda c: c.list_agents(include_archived=True),
        "/v1/agents",
        {"limit": ["100"], "include_archived": ["true"]},
        MANAGED_AGENTS_BETA,
        id="list_agents",
    ),
    pytest.param(
        lambda c: c.list_environments(include_archived=False),
        "/v1/environments",
        {"limit": ["100"], "include_archived": ["false"]},
        MANAGED_AGENTS_BETA,
        id="list_environments",
    ),
    pytest.param(
        lambda c: c.list_sessions(agent_id="agent_1", order="asc", statuses=None),
        "/v1/sessions",
        {"limit": ["100"], "agent_id": ["agent_1"], "order": ["asc"]},
        MANAGED_AGENTS_BETA,
        id="list_sessions",
    ),
    pytest.param(
        lambda c: c.list_events("sesn_1"),
        "/v1/sessions/sesn_1/events",
        {"limit": ["1000"]},
        MANAGED_AGENTS_BETA,
        id="list_events",
    ),
    pytest.param(
        lambda c: c.list_files(scope_id="sesn_1"),
        "/v1/files",
        {"limit": ["100"], "scope_id": ["sesn_1"]},
        FILES_AND_AGENTS_BETA,
        id="list_files_scoped",
    ),
    pytest.param(
        lambda c: c.list_files(),
        "/v1/files",
        {"limit": ["100"]},
        FILES_AND_AGENTS_BETA,
        id="list_files",
    ),
]


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        pytest.param(lambda c: c.get_file("file_1"), "GET", "/v1/files/file_1", id="get_file"),
        pytest.param(
            lambda c: c.delete_file("file_1"), "DELETE", "/v1/files/file_1", id="delete_file"
        ),
    ],
)
def test_file_metadata_and_delete_use_the_combined_beta_header(
    call: Call, method: str, path: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    answer = {"id": "file_1", "type": "file", "filename": "out.csv"}
    mock.add(method, API + path, json=answer)

    assert call(client) == answer

    request = mock.calls[0].request
    assert (request.method, path_of(request), query_of(request)) == (method, path, {})
    assert_managed_agents_headers(request, FILES_AND_AGENTS_BETA)


def test_download_file_returns_the_raw_bytes_even_when_not_utf8(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    content = b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x80 not utf-8 \xc3\x28"
    mock.add(
        responses.GET,
        API + "/v1/files/file_1/content",
        body=content,
        content_type="application/octet-stream",
    )

    assert client.download_file("file_1") == content

    request = mock.calls[0].request
    assert request.method == "GET"
    assert path_of(request) == "/v1/files/file_1/content"
    assert_managed_agents_headers(request, FILES_AND_AGENTS_BETA)


def test_open_event_stream_asks_for_server_sent_events(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(
        responses.GET,
        API + "/v1/sessions/sesn_1/events/stream",
        body=b'event: session.status_idle\ndata: {"type":"session.status_idle"}\n\n',
        content_type="text/event-stream",
    )

    response = client.open_event_stream("sesn_1", idle_timeout=30)

    assert b"session.status_idle" in response.content
    request = mock.calls[0].request
    assert request.headers["accept"] == "text/event-stream"
    assert_managed_agents_headers(request, MANAGED_AGENTS_BETA)
    assert mock.calls[0].request.req_kwargs["stream"] is True  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kwargs", "file_name", "content_type"),
    [
        pytest.param({"filename": "data.csv"}, "data.csv", "text/csv", id="csv-guessed"),
        pytest.param({"filename": "chart.png"}, "chart.png", "image/png", id="png-guessed"),
        pytest.param(
            {"filename": "blob.unknownext"},
            "blob.unknownext",
            "application/octet-stream",
            id="unknown-falls-back",
        ),
        pytest.param(
            {"filename": "notes.txt", "content_type": "text/markdown"},
            "notes.txt",
            "text/markdown",
            id="explicit-override",
        ),
    ],
)
def test_upload_bytes_sends_multipart_with_a_mime_type(
    kwargs: dict[str, Any],
    file_name: str,
    content_type: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    answer = {"id": "file_1", "type": "file", "filename": file_name}
    mock.add(responses.POST, API + "/v1/files", json=answer)
    content = b"a,b\n1,2\n\xff\x00"

    assert client.upload_file(content, **kwargs) == answer

    assert len(mock.calls) == 1
    request = mock.calls[0].request
    assert request.method == "POST"
    assert path_of(request) == "/v1/files"
    assert_managed_agents_headers(request, FILES_BETA)
    parts = multipart_parts(request)
    assert set(parts) == {"file"}
    assert parts["file"].get_filename() == file_name
    assert parts["file"].get_content_type() == content_type
    assert part_bytes(parts["file"]) == content


def test_upload_from_a_path_uses_its_name_and_content(
    tmp_path: Path, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    source = tmp_path / "report.json"
    source.write_bytes(b'{"ok": true}')
    mock.add(responses.POST, API + "/v1/files", json={"id": "file_1"})

    client.upload_file(source)
    client.upload_file(str(source), filename="renamed.txt")

    first, second = (multipart_parts(call.request)["file"] for call in mock.calls)
    assert first.get_filename() == "report.json"
    assert first.get_content_type() == "application/json"
    assert part_bytes(first) == b'{"ok": true}'
    assert second.get_filename() == "renamed.txt"
    assert second.get_content_type() == "text/plain"
    assert part_bytes(second) == b'{"ok": true}'


def test_upload_from_a_file_object_uses_its_base_name(
    tmp_path: Path, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    source = tmp_path / "page.html"
    source.write_bytes(b"<p>hi</p>")
    mock.add(responses.POST, API + "/v1/files", json={"id": "file_1"})

    with source.open("rb") as handle:
        client.upload_file(handle)
    client.upload_file(io.BytesIO(b"raw"), filename="raw.bin", purpose="session_input")

    named, anonymous = (multipart_parts(call.request) for call in mock.calls)
    assert named["file"].get_filename() == "page.html"
    assert named["file"].get_content_type() == "text/html"
    assert part_bytes(named["file"]) == b"<p>hi</p>"
    assert anonymous["file"].get_filename() == "raw.bin"
    assert part_bytes(anonymous["file"]) == b"raw"
    assert part_bytes(anonymous["purpose"]) == b"session_input"


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.upload_file(b"bytes"), id="bytes-without-filename"),
        pytest.param(lambda c: c.upload_file(io.BytesIO(b"x")), id="nameless-file-object"),
        pytest.param(lambda c: c.send_events("sesn_1", []), id="send-no-events"),
        pytest.param(lambda c: c.create_agent({"model": "claude-opus-5"}), id="agent-no-name"),
        pytest.param(lambda c: c.create_environment({"config": {}}), id="environment-no-name"),
        pytest.param(lambda c: c.create_session("", "env_1"), id="session-no-agent"),
        pytest.param(lambda c: c.create_session("agent_1", ""), id="session-no-environment"),
        pytest.param(lambda c: c.get_agent(""), id="empty-agent-id"),
        pytest.param(lambda c: c.delete_session(""), id="empty-session-id"),
        pytest.param(lambda c: c.delete_file(""), id="empty-file-id"),
    ],
)
def test_invalid_calls_raise_value_error_before_any_request(
    call: Call, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.GET, ANY_URL, json={})
    mock.add(responses.POST, ANY_URL, json={"id": "x"})
    mock.add(responses.DELETE, ANY_URL, json={})

    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        call(client)

    assert len(mock.calls) == 0


ID_CALLS = [
    pytest.param(lambda c, i: c.get_agent(i), "/v1/agents/{}", id="get_agent"),
    pytest.param(lambda c, i: c.update_agent(i, {"x": 1}), "/v1/agents/{}", id="update_agent"),
    pytest.param(lambda c, i: c.archive_agent(i), "/v1/agents/{}/archive", id="archive_agent"),
    pytest.param(lambda c, i: c.get_environment(i), "/v1/environments/{}", id="get_env"),
    pytest.param(
        lambda c, i: c.archive_environment(i), "/v1/environments/{}/archive", id="archive_env"
    ),
    pytest.param(lambda c, i: c.get_session(i), "/v1/sessions/{}", id="get_session"),
    pytest.param(
        lambda c, i: c.archive_session(i), "/v1/sessions/{}/archive", id="archive_session"
    ),
    pytest.param(lambda c, i: c.delete_session(i), "/v1/sessions/{}", id="delete_session"),
    pytest.param(
        lambda c, i: c.send_events(i, [USER_MESSAGE]), "/v1/sessions/{}/events", id="send"
    ),
    pytest.param(lambda c, i: c.list_events(i), "/v1/sessions/{}/events", id="list_events"),
    pytest.param(lambda c, i: c.attach_file(i, "file_1"), "/v1/sessions/{}/resources", id="attach"),
    pytest.param(lambda c, i: c.get_file(i), "/v1/files/{}", id="get_file"),
    pytest.param(lambda c, i: c.download_file(i), "/v1/files/{}/content", id="download"),
    pytest.param(lambda c, i: c.delete_file(i), "/v1/files/{}", id="delete_file"),
    pytest.param(lambda c, i: c.get_agent(i, version=2), "/v1/agents/{}", id="get_agent_version"),
    pytest.param(
        lambda c, i: c.list_agent_versions(i), "/v1/agents/{}/versions", id="agent_versions"
    ),
    pytest.param(lambda c, i: c.update_session(i, {}), "/v1/sessions/{}", id="update_session"),
    pytest.param(lambda c, i: c.update_environment(i, {}), "/v1/environments/{}", id="update_env"),
    pytest.param(lambda c, i: c.delete_environment(i), "/v1/environments/{}", id="delete_env"),
    pytest.param(lambda c, i: c.list_threads(i), "/v1/sessions/{}/threads", id="list_threads"),
    pytest.param(
        lambda c, i: c.get_thread(i, "sthr_1"), "/v1/sessions/{}/threads/sthr_1", id="thread_sid"
    ),
    pytest.param(
        lambda c, i: c.archive_thread("sesn_1", i),
        "/v1/sessions/sesn_1/threads/{}/archive",
        id="archive_thread_tid",
    ),
    pytest.param(
        lambda c, i: c.list_thread_events("sesn_1", i),
        "/v1/sessions/sesn_1/threads/{}/events",
        id="thread_events_tid",
    ),
    pytest.param(lambda c, i: c.get_memory_store(i), "/v1/memory_stores/{}", id="memory_store"),
    pytest.param(
        lambda c, i: c.archive_memory_store(i),
        "/v1/memory_stores/{}/archive",
        id="archive_memory_store",
    ),
    pytest.param(
        lambda c, i: c.create_memory(i, "/a.md", "x"),
        "/v1/memory_stores/{}/memories",
        id="create_memory",
    ),
    pytest.param(
        lambda c, i: c.get_memory("memstore_1", i),
        "/v1/memory_stores/memstore_1/memories/{}",
        id="get_memory_mid",
    ),
    pytest.param(
        lambda c, i: c.delete_memory(i, "mem_1"),
        "/v1/memory_stores/{}/memories/mem_1",
        id="delete_memory_sid",
    ),
    pytest.param(
        lambda c, i: c.get_memory_version(i, "memver_1"),
        "/v1/memory_stores/{}/memory_versions/memver_1",
        id="get_memory_version_sid",
    ),
    pytest.param(
        lambda c, i: c.get_memory_version("memstore_1", i),
        "/v1/memory_stores/memstore_1/memory_versions/{}",
        id="get_memory_version_vid",
    ),
    pytest.param(
        lambda c, i: c.list_memory_versions(i),
        "/v1/memory_stores/{}/memory_versions",
        id="list_memory_versions",
    ),
    pytest.param(
        lambda c, i: c.redact_memory_version("memstore_1", i),
        "/v1/memory_stores/memstore_1/memory_versions/{}/redact",
        id="redact_memory_version_vid",
    ),
    pytest.param(lambda c, i: c.delete_vault(i), "/v1/vaults/{}", id="delete_vault"),
    pytest.param(
        lambda c, i: c.list_vault_credentials(i), "/v1/vaults/{}/credentials", id="credentials"
    ),
    pytest.param(
        lambda c, i: c.update_vault_credential("vlt_1", i, {}),
        "/v1/vaults/vlt_1/credentials/{}",
        id="update_credential_cid",
    ),
    pytest.param(
        lambda c, i: c.archive_vault_credential(i, "cred_1"),
        "/v1/vaults/{}/credentials/cred_1/archive",
        id="archive_credential_vid",
    ),
    pytest.param(
        lambda c, i: c.validate_vault_credential("vlt_1", i),
        "/v1/vaults/vlt_1/credentials/{}/mcp_oauth_validate",
        id="validate_credential_cid",
    ),
]


@pytest.mark.parametrize(("call", "template"), ID_CALLS)
@pytest.mark.parametrize(
    ("raw_id", "segment"),
    [
        ("a/b", "a%2Fb"),
        ("../agents/agent_x", "..%2Fagents%2Fagent_x"),
        ("x?y=1#z", "x%3Fy%3D1%23z"),
        ("sp ace", "sp%20ace"),
    ],
)
def test_ids_are_escaped_into_exactly_one_path_segment(
    call: Callable[[ClaudeClient, str], Any],
    template: str,
    raw_id: str,
    segment: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    for method in ("GET", "POST", "DELETE"):
        mock.add(method, ANY_URL, json={"id": "x", "data": []})

    call(client, raw_id)

    assert len(mock.calls) == 1
    request = mock.calls[0].request
    assert path_of(request) == template.format(segment)
    assert "y" not in query_of(request)


@pytest.mark.parametrize(
    ("call", "raw_id"),
    [
        # today: DELETE /v1/, DELETE /v1/, POST /v1/archive, GET /v1/files/, GET /v1/agents/
        pytest.param(lambda c, i: c.delete_session(i), "..", id="delete_session-.."),
        pytest.param(lambda c, i: c.delete_file(i), "..", id="delete_file-.."),
        pytest.param(lambda c, i: c.archive_session(i), "..", id="archive_session-.."),
        pytest.param(lambda c, i: c.get_file(i), ".", id="get_file-."),
        pytest.param(lambda c, i: c.get_agent(i), ".", id="get_agent-."),
        pytest.param(lambda c, i: c.get_thread("sesn_1", i), "..", id="get_thread-.."),
        pytest.param(lambda c, i: c.delete_memory(i, "mem_1"), "..", id="delete_memory-.."),
        pytest.param(
            lambda c, i: c.redact_memory_version("memstore_1", i), "..", id="redact_version-.."
        ),
        pytest.param(
            lambda c, i: c.validate_vault_credential(i, "cred_1"), ".", id="validate_credential-."
        ),
        pytest.param(
            lambda c, i: c.delete_vault_credential("vlt_1", i), "..", id="delete_credential-.."
        ),
        pytest.param(lambda c, i: c.delete_environment(i), ".", id="delete_environment-."),
    ],
)
def test_dot_segment_ids_cannot_reach_another_path(
    call: Callable[[ClaudeClient, str], Any],
    raw_id: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    """An id of '.' or '..' must be refused before anything is sent."""
    for method in ("GET", "POST", "DELETE"):
        mock.add(method, ANY_URL, json={"id": "x", "data": []})

    with pytest.raises(ValueError, match="id"):
        call(client, raw_id)

    assert [path_of(c.request) for c in mock.calls] == []


def test_base_url_trailing_slash_does_not_double_the_slash(mock: responses.RequestsMock) -> None:
    client = ClaudeClient(Secret(KEY), base_url=API + "/", timeout=5, max_retries=0)
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    client.get_agent("agent_1")

    assert mock.calls[0].request.url == API + "/v1/agents/agent_1"


@pytest.mark.parametrize(("timeout", "expected"), [(5, (5, 5)), (30, (10.0, 30))])
def test_every_request_carries_connect_and_read_timeouts(
    timeout: float, expected: tuple[float, float], mock: responses.RequestsMock
) -> None:
    client = make_client(timeout=timeout)
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    client.get_agent("agent_1")

    assert mock.calls[0].request.req_kwargs["timeout"] == expected  # type: ignore[attr-defined]


# -- 2. paging -----------------------------------------------------------------------------


def paged(
    pages: dict[str | None, dict[str, Any]], key: str = "page"
) -> Callable[[requests.PreparedRequest], tuple[int, dict[str, str], str]]:
    """A callback serving ``pages[<cursor query value>]`` (``None`` for the first page).

    After a dozen requests it ends the listing, so a client that never stops paging fails
    its call-count assertion instead of hanging the suite.
    """
    served: list[str | None] = []

    def respond(request: requests.PreparedRequest) -> tuple[int, dict[str, str], str]:
        cursor = query_of(request).get(key, [None])[0]
        served.append(cursor)
        if len(served) > 12:
            return 200, {}, json.dumps({"data": [], "next_page": None})
        return 200, {}, json.dumps(pages[cursor])

    return respond


@pytest.mark.parametrize(
    ("call", "path"),
    [
        pytest.param(lambda c: c.list_agents(include_archived=True), "/v1/agents", id="agents"),
        pytest.param(
            lambda c: c.list_environments(include_archived=True),
            "/v1/environments",
            id="environments",
        ),
        pytest.param(
            lambda c: c.list_sessions(include_archived=True), "/v1/sessions", id="sessions"
        ),
        pytest.param(
            lambda c: c.list_files(include_archived=True, scope_id="sesn_1"),
            "/v1/files",
            id="files",
        ),
    ],
)
def test_list_follows_next_page_until_null_and_concatenates(
    call: Call, path: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": [{"id": "1"}, {"id": "2"}], "next_page": "page_b"},
        "page_b": {"data": [{"id": "3"}], "next_page": "page_c"},
        "page_c": {"data": [{"id": "4"}], "next_page": None},
    }
    mock.add_callback(responses.GET, API + path, callback=paged(pages))

    assert [item["id"] for item in call(client)] == ["1", "2", "3", "4"]

    queries = [query_of(c.request) for c in mock.calls]
    assert [q.get("page") for q in queries] == [None, ["page_b"], ["page_c"]]
    for query in queries:
        assert query["limit"] == (["1000"] if path.endswith("/events") else ["100"])
        assert query["include_archived"] == ["true"]  # filters survive every page
    if path == "/v1/files":
        for c in mock.calls:
            assert c.request.headers["anthropic-beta"] == FILES_AND_AGENTS_BETA
            assert query_of(c.request)["scope_id"] == ["sesn_1"]


def test_list_events_pages_through_history_with_limit_1000(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    events = [{"id": f"sevt_{n}", "type": "agent.message"} for n in range(250)]
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": events[:100], "next_page": "page_2"},
        "page_2": {"data": events[100:200], "next_page": "page_3"},
        "page_3": {"data": events[200:], "next_page": None},
    }
    mock.add_callback(responses.GET, API + "/v1/sessions/sesn_1/events", callback=paged(pages))

    assert client.list_events("sesn_1") == events

    queries = [query_of(c.request) for c in mock.calls]
    assert queries == [
        {"limit": ["1000"]},
        {"limit": ["1000"], "page": ["page_2"]},
        {"limit": ["1000"], "page": ["page_3"]},
    ]


def test_a_repeated_next_page_cursor_stops_paging(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": [{"id": "1"}], "next_page": "page_same"},
        "page_same": {"data": [{"id": "2"}], "next_page": "page_same"},
    }
    mock.add_callback(responses.GET, API + "/v1/sessions", callback=paged(pages))

    assert [s["id"] for s in client.list_sessions()] == ["1", "2"]
    assert len(mock.calls) == 2


def test_a_stopped_reader_asks_for_no_further_page(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": [{"id": "sevt_1", "type": "agent.message"}], "next_page": "page_2"},
        "page_2": {"data": [{"id": "sevt_2", "type": "agent.message"}], "next_page": None},
    }
    mock.add_callback(responses.GET, API + "/v1/sessions/sesn_1/events", callback=paged(pages))
    stop = threading.Event()
    events = client.iter_events("sesn_1", cancelled=stop)
    assert next(events)["id"] == "sevt_1"
    stop.set()
    with pytest.raises(TransportError, match="cancelled"):
        next(events)
    assert len(mock.calls) == 1


def test_older_has_more_last_id_pages_use_after_id(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {
            "data": [{"id": "file_1"}, {"id": "file_2"}],
            "first_id": "file_1",
            "last_id": "file_2",
            "has_more": True,
        },
        "file_2": {
            "data": [{"id": "file_3"}],
            "first_id": "file_3",
            "last_id": "file_3",
            "has_more": False,
        },
    }
    mock.add_callback(responses.GET, API + "/v1/files", callback=paged(pages, key="after_id"))

    assert [f["id"] for f in client.list_files()] == ["file_1", "file_2", "file_3"]

    queries = [query_of(c.request) for c in mock.calls]
    assert queries == [{"limit": ["100"]}, {"limit": ["100"], "after_id": ["file_2"]}]


def test_a_repeated_last_id_stops_paging(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": [{"id": "file_2"}], "last_id": "file_2", "has_more": True},
        "file_2": {"data": [{"id": "file_2"}], "last_id": "file_2", "has_more": True},
    }
    mock.add_callback(responses.GET, API + "/v1/files", callback=paged(pages, key="after_id"))

    client.list_files()

    assert len(mock.calls) == 2


@pytest.mark.parametrize(
    "page",
    [
        pytest.param({}, id="missing"),
        pytest.param({"data": None, "next_page": None}, id="null"),
        pytest.param({"data": {"id": "x"}, "next_page": None}, id="object"),
        pytest.param({"items": [{"id": "x"}]}, id="other-key"),
    ],
)
def test_a_page_without_a_data_list_raises_api_error(
    page: dict[str, Any], client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.GET, API + "/v1/agents", json=page)

    with pytest.raises(APIError, match="data"):
        client.list_agents()


# -- 3. error mapping ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (400, BadRequestError, "invalid_request_error"),
        (413, BadRequestError, "request_too_large"),
        (422, BadRequestError, "invalid_request_error"),
        (401, AuthenticationError, "authentication_error"),
        (403, AuthenticationError, "permission_error"),
        (404, NotFoundError, "not_found_error"),
        (409, ConflictError, "conflict_error"),
        (429, RateLimitError, "rate_limit_error"),
        (500, ServerError, "api_error"),
        (502, ServerError, "api_error"),
        (503, ServerError, "api_error"),
        (504, ServerError, "timeout_error"),
        (529, ServerError, "overloaded_error"),
        (402, APIError, "billing_error"),
        (405, APIError, "invalid_request_error"),
        (408, APIError, "timeout_error"),
    ],
)
def test_error_status_maps_to_a_typed_error_with_its_facts(
    status: int,
    error_class: type[APIError],
    error_type: str,
    mock: responses.RequestsMock,
) -> None:
    client = make_client(max_retries=0)
    body = error_body(error_type, "the details", request_id="req_body")
    mock.add(
        responses.GET,
        API + "/v1/sessions/sesn_1",
        status=status,
        json=body,
        headers={"request-id": "req_header"},
    )

    with pytest.raises(APIError) as caught:
        client.get_session("sesn_1")

    error = caught.value
    assert type(error) is error_class
    assert error.status_code == status
    assert error.error_type == error_type
    assert error.message == "the details"
    assert error.request_id == "req_header"
    assert error.body == body
    assert str(error) == f"HTTP {status} {error_type}: the details (request id req_header)"


def test_request_id_falls_back_to_the_body(mock: responses.RequestsMock) -> None:
    client = make_client(max_retries=0)
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=404,
        json=error_body("not_found_error", "gone", request_id="req_from_body"),
    )

    with pytest.raises(NotFoundError) as caught:
        client.get_agent("agent_1")

    assert caught.value.request_id == "req_from_body"


def test_error_type_prefers_details_error_code(mock: responses.RequestsMock) -> None:
    client = make_client(max_retries=0)
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=400,
        json=error_body("invalid_request_error", "cap", error_code="budget_exceeded"),
    )

    with pytest.raises(BadRequestError) as caught:
        client.get_agent("agent_1")

    assert caught.value.error_type == "budget_exceeded"


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        pytest.param({"retry-after": "120"}, 120.0, id="retry-after-seconds"),
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="retry-after-ms"),
        pytest.param({"retry-after-ms": "250", "retry-after": "9"}, 0.25, id="ms-wins"),
        pytest.param({}, None, id="absent"),
    ],
)
def test_rate_limit_error_carries_retry_after(
    headers: dict[str, str], retry_after: float | None, mock: responses.RequestsMock
) -> None:
    client = make_client(max_retries=0)
    mock.add(
        responses.GET,
        API + "/v1/agents",
        status=429,
        json=error_body("rate_limit_error", "slow down"),
        headers=headers,
    )

    with pytest.raises(RateLimitError) as caught:
        client.list_agents()

    assert caught.value.retry_after == retry_after


def test_non_json_error_body_still_maps_with_its_text(mock: responses.RequestsMock) -> None:
    client = make_client(max_retries=0)
    html = "<html><body>502 Bad Gateway (upstream proxy)</body></html>"
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=502,
        body=html,
        content_type="text/html",
        headers={"request-id": "req_proxy"},
    )

    with pytest.raises(ServerError) as caught:
        client.get_agent("agent_1")

    error = caught.value
    assert error.status_code == 502
    assert error.error_type is None
    assert "upstream proxy" in error.message
    assert error.body == html
    assert error.request_id == "req_proxy"


def test_json_error_without_an_error_object_uses_the_reason(mock: responses.RequestsMock) -> None:
    client = make_client(max_retries=0)
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=404, json={"detail": "nope"})

    with pytest.raises(NotFoundError) as caught:
        client.get_agent("agent_1")

    assert caught.value.message == "Not Found"
    assert caught.value.body == {"detail": "nope"}


def test_empty_error_body_falls_back_to_the_reason(mock: responses.RequestsMock) -> None:
    client = make_client(max_retries=0)
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=404, body="")

    with pytest.raises(NotFoundError) as caught:
        client.get_agent("agent_1")

    assert caught.value.message == "Not Found"


def test_an_echoed_api_key_is_redacted_from_the_error_message(
    mock: responses.RequestsMock,
) -> None:
    client = make_client(max_retries=0)
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=401,
        json=error_body("authentication_error", f"invalid x-api-key {KEY}"),
    )

    with pytest.raises(AuthenticationError) as caught:
        client.get_agent("agent_1")

    assert KEY not in str(caught.value)
    assert KEY not in caught.value.message
    assert "invalid x-api-key" in caught.value.message


# -- 4. retries ----------------------------------------------------------------------------

RETRYABLE_FOR_GET = [
    (500, ServerError),
    (502, ServerError),
    (503, ServerError),
    (504, ServerError),
    (529, ServerError),
    (408, APIError),
    (429, RateLimitError),
]


@pytest.mark.parametrize(("status", "error_class"), RETRYABLE_FOR_GET)
def test_get_is_retried_max_retries_times_then_raises_the_last_error(
    status: int,
    error_class: type[APIError],
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    for n in range(5):
        mock.add(
            responses.GET,
            API + "/v1/agents/agent_1",
            status=status,
            json=error_body(message=f"attempt {n}"),
        )

    with pytest.raises(APIError) as caught:
        client.get_agent("agent_1")

    assert len(mock.calls) == 3  # the first try plus max_retries=2
    assert len(sleeps) == 2
    assert type(caught.value) is error_class
    assert caught.value.message == "attempt 2"


@pytest.mark.parametrize(("status", "error_class"), RETRYABLE_FOR_GET)
def test_get_recovers_when_a_retry_succeeds(
    status: int,
    error_class: type[APIError],
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    url = API + "/v1/sessions/sesn_1"
    mock.add(responses.GET, url, status=status, json=error_body())
    mock.add(responses.GET, url, status=status, json=error_body())
    mock.add(responses.GET, url, json={"id": "sesn_1", "status": "idle"})

    assert client.get_session("sesn_1") == {"id": "sesn_1", "status": "idle"}
    assert len(mock.calls) == 3


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(requests.ConnectionError("Connection reset by peer"), id="reset"),
        pytest.param(requests.ReadTimeout("read timed out"), id="read-timeout"),
        pytest.param(requests.ConnectTimeout("connect timed out"), id="connect-timeout"),
        pytest.param(refused_connection(), id="refused"),
    ],
)
def test_get_is_retried_on_connection_errors_then_raises_transport_error(
    failure: requests.RequestException,
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    mock.add(responses.GET, API + "/v1/agents", body=failure)

    with pytest.raises(TransportError, match="GET /v1/agents failed") as caught:
        client.list_agents()

    assert len(mock.calls) == 3
    assert len(sleeps) == 2
    assert isinstance(caught.value.__cause__, type(failure))


def test_get_recovers_from_a_dropped_connection(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    url = API + "/v1/environments/env_1"
    mock.add(responses.GET, url, body=requests.ConnectionError("Connection reset by peer"))
    mock.add(responses.GET, url, json={"id": "env_1"})

    assert client.get_environment("env_1") == {"id": "env_1"}
    assert len(mock.calls) == 2


def test_backoff_grows_exponentially_with_bounded_jitter(
    client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=500, json=error_body())

    with pytest.raises(ServerError):
        client.get_agent("agent_1")

    first, second = sleeps
    assert 0.5 * 0.75 <= first <= 0.5
    assert 1.0 * 0.75 <= second <= 1.0


def test_jitter_leaves_the_callers_random_stream_alone(
    client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    """A user's seeded ``random`` (a simulation, hypothesis) must see the same sequence
    whether or not a retry of ours drew its jitter meanwhile."""
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=500, json=error_body())
    random.seed(7)
    expected = [random.random() for _ in range(3)]

    random.seed(7)
    with pytest.raises(ServerError):
        client.get_agent("agent_1")

    assert len(sleeps) == 2
    assert [random.random() for _ in range(3)] == expected


@pytest.mark.parametrize(
    ("status", "headers", "expected_wait"),
    [
        pytest.param(429, {"retry-after": "7"}, 7.0, id="429-retry-after"),
        pytest.param(429, {"retry-after-ms": "1500"}, 1.5, id="429-retry-after-ms"),
        pytest.param(503, {"retry-after": "3"}, 3.0, id="503-retry-after"),
        pytest.param(529, {"retry-after": "0"}, 0.0, id="529-retry-now"),
        pytest.param(429, {"retry-after": "60"}, 60.0, id="at-the-cap"),
    ],
)
def test_retry_after_is_honoured(
    status: int,
    headers: dict[str, str],
    expected_wait: float,
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    url = API + "/v1/agents/agent_1"
    mock.add(responses.GET, url, status=status, json=error_body(), headers=headers)
    mock.add(responses.GET, url, json={"id": "agent_1"})

    assert client.get_agent("agent_1") == {"id": "agent_1"}
    assert sleeps == [expected_wait]


@pytest.mark.parametrize("status", [429, 503, 529])
def test_retry_after_beyond_the_cap_is_raised_at_once(
    status: int, client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    too_long = RetryPolicy().max_retry_after + 1
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=status,
        json=error_body(),
        headers={"retry-after": str(int(too_long))},
    )

    with pytest.raises(APIError) as caught:
        client.get_agent("agent_1")

    assert len(mock.calls) == 1
    assert sleeps == []
    if isinstance(caught.value, RateLimitError):
        assert caught.value.retry_after == too_long


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.get_agent("agent_1"), id="get"),
        pytest.param(lambda c: c.send_events("sesn_1", [USER_MESSAGE]), id="send_events"),
    ],
)
def test_spend_limit_429_is_not_retried(
    call: Call, client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    body = error_body(
        "rate_limit_error", "monthly spend cap", error_code="enforced_spend_limit_reached"
    )
    mock.add(responses.GET, ANY_URL, status=429, json=body)
    mock.add(responses.POST, ANY_URL, status=429, json=body)

    with pytest.raises(RateLimitError) as caught:
        call(client)

    assert len(mock.calls) == 1
    assert sleeps == []
    assert caught.value.error_type == "enforced_spend_limit_reached"


NON_IDEMPOTENT_CALLS = [
    pytest.param(
        lambda c: c.create_agent({"name": "a", "model": "m"}), "/v1/agents", id="create_agent"
    ),
    pytest.param(
        lambda c: c.update_agent("agent_1", {"system": "s"}),
        "/v1/agents/agent_1",
        id="update_agent",
    ),
    pytest.param(
        lambda c: c.create_environment({"name": "e"}), "/v1/environments", id="create_env"
    ),
    pytest.param(
        lambda c: c.send_events("sesn_1", [USER_MESSAGE]),
        "/v1/sessions/sesn_1/events",
        id="send_events",
    ),
    pytest.param(
        lambda c: c.attach_file("sesn_1", "file_1"),
        "/v1/sessions/sesn_1/resources",
        id="attach_file",
    ),
    pytest.param(lambda c: c.upload_file(b"data", filename="a.txt"), "/v1/files", id="upload_file"),
    pytest.param(
        lambda c: c.create_memory_store({"name": "notes"}), "/v1/memory_stores", id="memory_store"
    ),
    pytest.param(
        lambda c: c.create_memory("memstore_1", "/a.md", "x"),
        "/v1/memory_stores/memstore_1/memories",
        id="create_memory",
    ),
    pytest.param(
        lambda c: c.update_memory(
            "memstore_1",
            "mem_1",
            {"content": "y", "precondition": {"type": "content_sha256", "content_sha256": "0"}},
        ),
        "/v1/memory_stores/memstore_1/memories/mem_1",
        id="conditional_memory_update",
    ),
    pytest.param(lambda c: c.create_vault({"display_name": "v"}), "/v1/vaults", id="vault"),
    pytest.param(
        lambda c: c.create_vault_credential("vlt_1", {"auth": {"type": "static_bearer"}}),
        "/v1/vaults/vlt_1/credentials",
        id="credential",
    ),
]


# Updates set the fields they name: a repeat leaves the same state, so they retry like GETs.
IDEMPOTENT_WRITES = [
    pytest.param(
        lambda c: c.update_session("sesn_1", {"title": "t"}),
        "POST",
        "/v1/sessions/sesn_1",
        id="update_session",
    ),
    pytest.param(
        lambda c: c.update_environment("env_1", {"description": "d"}),
        "POST",
        "/v1/environments/env_1",
        id="update_environment",
    ),
    pytest.param(
        lambda c: c.delete_environment("env_1"),
        "DELETE",
        "/v1/environments/env_1",
        id="delete_environment",
    ),
    pytest.param(
        lambda c: c.archive_thread("sesn_1", "sthr_1"),
        "POST",
        "/v1/sessions/sesn_1/threads/sthr_1/archive",
        id="archive_thread",
    ),
    pytest.param(
        lambda c: c.update_memory_store("memstore_1", {"name": "n"}),
        "POST",
        "/v1/memory_stores/memstore_1",
        id="update_memory_store",
    ),
    pytest.param(
        lambda c: c.archive_memory_store("memstore_1"),
        "POST",
        "/v1/memory_stores/memstore_1/archive",
        id="archive_memory_store",
    ),
    pytest.param(
        lambda c: c.delete_memory_store("memstore_1"),
        "DELETE",
        "/v1/memory_stores/memstore_1",
        id="delete_memory_store",
    ),
    pytest.param(
        lambda c: c.update_memory("memstore_1", "mem_1", {"content": "y"}),
        "POST",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        id="unconditional_memory_update",
    ),
    pytest.param(
        lambda c: c.delete_memory("memstore_1", "mem_1"),
        "DELETE",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        id="delete_memory",
    ),
    pytest.param(
        lambda c: c.redact_memory_version("memstore_1", "memver_1"),
        "POST",
        "/v1/memory_stores/memstore_1/memory_versions/memver_1/redact",
        id="redact_memory_version",
    ),
    pytest.param(
        lambda c: c.update_vault("vlt_1", {"display_name": "v"}),
        "POST",
        "/v1/vaults/vlt_1",
        id="update_vault",
    ),
    pytest.param(
        lambda c: c.archive_vault("vlt_1"), "POST", "/v1/vaults/vlt_1/archive", id="archive_vault"
    ),
    pytest.param(lambda c: c.delete_vault("vlt_1"), "DELETE", "/v1/vaults/vlt_1", id="del_vault"),
    pytest.param(
        lambda c: c.update_vault_credential("vlt_1", "cred_1", {"display_name": "c"}),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1",
        id="update_credential",
    ),
    pytest.param(
        lambda c: c.archive_vault_credential("vlt_1", "cred_1"),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1/archive",
        id="archive_credential",
    ),
    pytest.param(
        lambda c: c.delete_vault_credential("vlt_1", "cred_1"),
        "DELETE",
        "/v1/vaults/vlt_1/credentials/cred_1",
        id="delete_credential",
    ),
    pytest.param(
        lambda c: c.validate_vault_credential("vlt_1", "cred_1"),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1/mcp_oauth_validate",
        id="validate_credential",
    ),
]


@pytest.mark.parametrize("status", [500, 502, 504, 408])
@pytest.mark.parametrize(("call", "path"), NON_IDEMPOTENT_CALLS)
def test_non_idempotent_post_is_not_retried_when_the_server_may_have_acted(
    call: Call,
    path: str,
    status: int,
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    mock.add(responses.POST, API + path, status=status, json=error_body())
    mock.add(responses.POST, API + path, json={"id": "duplicate"})

    with pytest.raises(APIError) as caught:
        call(client)

    assert caught.value.status_code == status
    assert len(mock.calls) == 1
    assert sleeps == []


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(requests.ConnectionError("Connection reset by peer"), id="reset"),
        pytest.param(requests.ReadTimeout("read timed out"), id="read-timeout"),
    ],
)
@pytest.mark.parametrize(("call", "path"), NON_IDEMPOTENT_CALLS)
def test_non_idempotent_post_is_not_retried_on_an_ambiguous_connection_error(
    call: Call,
    path: str,
    failure: requests.RequestException,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    mock.add(responses.POST, API + path, body=failure)
    mock.add(responses.POST, API + path, json={"id": "duplicate"})

    with pytest.raises(TransportError):
        call(client)

    assert len(mock.calls) == 1


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(refused_connection(), id="refused"),
        pytest.param(requests.ConnectTimeout("connect timed out"), id="connect-timeout"),
    ],
)
@pytest.mark.parametrize(("call", "path"), NON_IDEMPOTENT_CALLS)
def test_non_idempotent_post_is_retried_when_the_connection_never_opened(
    call: Call,
    path: str,
    failure: requests.RequestException,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    mock.add(responses.POST, API + path, body=failure)
    mock.add(responses.POST, API + path, json={"id": "created"})

    assert call(client) == {"id": "created"}
    assert len(mock.calls) == 2


@pytest.mark.parametrize("status", [429, 503, 529])
@pytest.mark.parametrize(("call", "path"), NON_IDEMPOTENT_CALLS)
def test_non_idempotent_post_is_not_retried_on_a_refusal_without_retry_after(
    call: Call,
    path: str,
    status: int,
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    # A bare 503 may come from a proxy that gave up while the server went on working.
    mock.add(responses.POST, API + path, status=status, json=error_body())
    mock.add(responses.POST, API + path, json={"id": "duplicate"})

    with pytest.raises(APIError) as caught:
        call(client)

    assert caught.value.status_code == status
    assert len(mock.calls) == 1
    assert sleeps == []


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"status": 500, "json": {"type": "error"}}, id="500"),
        pytest.param({"status": 503, "json": {"type": "error"}}, id="503-without-retry-after"),
        pytest.param({"body": requests.ConnectionError("Connection reset by peer")}, id="reset"),
    ],
)
def test_creating_a_session_is_retried_even_when_the_server_may_have_acted(
    failure: dict[str, Any], client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    # The sessions made since are looked through for the lost create's token: none has it,
    # so the create goes again, with the same token.
    mock.add(responses.POST, API + "/v1/sessions", **failure)
    mock.add(responses.GET, API + "/v1/sessions", json={"data": [], "next_page": None})
    mock.add(responses.POST, API + "/v1/sessions", json={"id": "sesn_2"})

    assert client.create_session("agent_1", "env_1") == {"id": "sesn_2"}
    assert [c.request.method for c in mock.calls] == ["POST", "GET", "POST"]
    assert mock.calls[0].request.body == mock.calls[2].request.body
    assert query_of(mock.calls[1].request)["order"] == ["desc"]


def test_a_create_whose_answer_was_lost_is_found_not_repeated(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    def made(request: Any) -> tuple[int, dict[str, str], str]:
        token = json_body(mock.calls[0].request)["metadata"][CREATE_TOKEN_KEY]
        other = {"id": "sesn_other", "metadata": {CREATE_TOKEN_KEY: "someone else's"}}
        ours = {"id": "sesn_1", "metadata": {CREATE_TOKEN_KEY: token}}
        return 200, {}, json.dumps({"data": [other, ours], "next_page": None})

    mock.add(responses.POST, API + "/v1/sessions", body=requests.ConnectionError("reset"))
    mock.add_callback(responses.GET, API + "/v1/sessions", callback=made)

    assert client.create_session("agent_1", "env_1")["id"] == "sesn_1"
    assert [c.request.method for c in mock.calls] == ["POST", "GET"]


@pytest.mark.parametrize("status", [429, 503, 529])
@pytest.mark.parametrize(("call", "path"), NON_IDEMPOTENT_CALLS)
def test_non_idempotent_post_is_retried_on_refusals(
    call: Call,
    path: str,
    status: int,
    client: ClaudeClient,
    mock: responses.RequestsMock,
    sleeps: list[float],
) -> None:
    mock.add(
        responses.POST, API + path, status=status, json=error_body(), headers={"retry-after": "2"}
    )
    mock.add(responses.POST, API + path, json={"id": "created"})

    assert call(client) == {"id": "created"}
    assert len(mock.calls) == 2
    assert sleeps == [2.0]
    first, second = (c.request for c in mock.calls)
    if path == "/v1/files":  # a fresh multipart boundary per attempt, same content
        first_part, second_part = (multipart_parts(r)["file"] for r in (first, second))
        assert part_bytes(first_part) == part_bytes(second_part) == b"data"
    else:
        assert first.body == second.body  # the retry resends the same request


@pytest.mark.parametrize("status", [429, 503, 529])
def test_non_idempotent_post_refused_every_time_stops_after_max_retries(
    status: int, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(
        responses.POST,
        API + "/v1/sessions/sesn_1/events",
        status=status,
        json=error_body(),
        headers={"retry-after": "0"},
    )

    with pytest.raises(APIError) as caught:
        client.send_events("sesn_1", [USER_MESSAGE])

    assert caught.value.status_code == status
    assert len(mock.calls) == 3


def test_upload_retry_resends_the_whole_file(
    tmp_path: Path, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    source = tmp_path / "input.bin"
    source.write_bytes(b"\x00\x01payload\xff")
    mock.add(
        responses.POST,
        API + "/v1/files",
        status=529,
        json=error_body("overloaded_error"),
        headers={"retry-after": "1"},
    )
    mock.add(responses.POST, API + "/v1/files", json={"id": "file_1"})

    with source.open("rb") as handle:
        assert client.upload_file(handle) == {"id": "file_1"}

    assert len(mock.calls) == 2
    for c in mock.calls:
        assert part_bytes(multipart_parts(c.request)["file"]) == b"\x00\x01payload\xff"


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        pytest.param(
            lambda c: c.archive_agent("agent_1"),
            "POST",
            "/v1/agents/agent_1/archive",
            id="archive_agent",
        ),
        pytest.param(
            lambda c: c.archive_environment("env_1"),
            "POST",
            "/v1/environments/env_1/archive",
            id="archive_environment",
        ),
        pytest.param(
            lambda c: c.archive_session("sesn_1"),
            "POST",
            "/v1/sessions/sesn_1/archive",
            id="archive_session",
        ),
        pytest.param(
            lambda c: c.delete_session("sesn_1"), "DELETE", "/v1/sessions/sesn_1", id="del_session"
        ),
        pytest.param(
            lambda c: c.delete_file("file_1"), "DELETE", "/v1/files/file_1", id="delete_file"
        ),
        *IDEMPOTENT_WRITES,
    ],
)
def test_idempotent_archive_update_and_delete_are_retried_on_500(
    call: Call, method: str, path: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(method, API + path, status=500, json=error_body())
    mock.add(method, API + path, body=requests.ConnectionError("Connection reset by peer"))
    mock.add(method, API + path, json={"id": "x", "type": "done"})

    assert call(client) == {"id": "x", "type": "done"}
    assert len(mock.calls) == 3


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"status": 503, "json": error_body("overloaded_error")}, id="503"),
        pytest.param({"body": requests.ConnectionError("reset")}, id="connection"),
    ],
)
def test_max_retries_zero_means_exactly_one_call(
    failure: dict[str, Any], mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    client = make_client(max_retries=0)
    mock.add(responses.GET, API + "/v1/agents/agent_1", **failure)
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    with pytest.raises((ServerError, TransportError)):
        client.get_agent("agent_1")

    assert len(mock.calls) == 1
    assert sleeps == []


@pytest.mark.parametrize("max_retries", [1, 4])
def test_max_retries_sets_the_number_of_extra_attempts(
    max_retries: int, mock: responses.RequestsMock
) -> None:
    client = make_client(max_retries=max_retries)
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=503, json=error_body())

    with pytest.raises(ServerError):
        client.get_agent("agent_1")

    assert len(mock.calls) == max_retries + 1


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 405, 409, 413, 422])
def test_other_4xx_are_never_retried(
    status: int, client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=status, json=error_body())
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    with pytest.raises(APIError) as caught:
        client.get_agent("agent_1")

    assert caught.value.status_code == status
    assert len(mock.calls) == 1
    assert sleeps == []


def test_paging_retries_a_failed_page_without_restarting(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    url = API + "/v1/sessions/sesn_1/events"
    mock.add(responses.GET, url, json={"data": [{"id": "e1"}], "next_page": "page_2"})
    mock.add(responses.GET, url, status=503, json=error_body("overloaded_error"))
    mock.add(responses.GET, url, json={"data": [{"id": "e2"}], "next_page": None})

    assert client.list_events("sesn_1") == [{"id": "e1"}, {"id": "e2"}]
    assert [query_of(c.request).get("page") for c in mock.calls] == [
        None,
        ["page_2"],
        ["page_2"],
    ]


# -- 5. ClaudeManagedAgents configuration ------------------------------------------------


def test_api_key_argument_is_sent(
    monkeypatch: pytest.MonkeyPatch, mock: responses.RequestsMock
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-environment-000")
    provider = ClaudeManagedAgents(api_key=KEY, base_url=API)
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    provider.client.get_agent("agent_1")

    assert mock.calls[0].request.headers["x-api-key"] == KEY


@pytest.mark.parametrize("argument", [None, ""])
def test_api_key_falls_back_to_the_environment(
    argument: str | None, monkeypatch: pytest.MonkeyPatch, mock: responses.RequestsMock
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-environment-000")
    provider = ClaudeManagedAgents(api_key=argument, base_url=API)
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    provider.client.get_agent("agent_1")

    assert mock.calls[0].request.headers["x-api-key"] == "sk-ant-from-environment-000"


@pytest.mark.parametrize("environment", [None, "", "   "])
def test_missing_api_key_names_the_environment_variable(
    environment: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if environment is not None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", environment)

    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        ClaudeManagedAgents(base_url=API)


@pytest.mark.parametrize(
    ("argument", "environment", "expected"),
    [
        pytest.param("https://arg.test", "https://env.test", "https://arg.test", id="argument"),
        pytest.param(None, "https://env.test", "https://env.test", id="environment"),
        pytest.param("", "https://env.test", "https://env.test", id="empty-argument"),
        pytest.param(None, None, "https://api.anthropic.com", id="default"),
        pytest.param("", "", "https://api.anthropic.com", id="all-empty"),
        pytest.param("http://localhost:8080/", None, "http://localhost:8080", id="plain-http"),
    ],
)
def test_base_url_resolution(
    argument: str | None,
    environment: str | None,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if environment is not None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", environment)

    provider = ClaudeManagedAgents(api_key=KEY, base_url=argument)

    assert provider.client.base_url == expected


def test_requests_go_to_the_resolved_base_url(
    monkeypatch: pytest.MonkeyPatch, mock: responses.RequestsMock
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.test/anthropic")
    provider = ClaudeManagedAgents(api_key=KEY)
    mock.add(
        responses.GET, "https://proxy.test/anthropic/v1/agents/agent_1", json={"id": "agent_1"}
    )

    assert provider.client.get_agent("agent_1") == {"id": "agent_1"}


@pytest.mark.parametrize("url", ["api.anthropic.com", "ftp://api.test", "file:///etc/passwd"])
@pytest.mark.parametrize("source", ["argument", "environment"])
def test_a_non_http_base_url_is_rejected(
    url: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if source == "environment":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)

    with pytest.raises(ConfigurationError, match="base_url"):
        ClaudeManagedAgents(api_key=KEY, base_url=url if source == "argument" else None)


@pytest.mark.parametrize(
    "kwargs", [{"timeout": 0}, {"timeout": -1.0}, {"max_retries": -1}], ids=str
)
def test_invalid_timeout_or_retries_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ClaudeManagedAgents(api_key=KEY, base_url=API, **kwargs)


def test_provider_settings_reach_the_client(mock: responses.RequestsMock) -> None:
    provider = ClaudeManagedAgents(api_key=KEY, base_url=API, timeout=7, max_retries=1)
    mock.add(responses.GET, API + "/v1/agents/agent_1", status=503, json=error_body())

    with pytest.raises(ServerError):
        provider.client.get_agent("agent_1")

    assert len(mock.calls) == 2
    assert mock.calls[0].request.req_kwargs["timeout"] == (7, 7)  # type: ignore[attr-defined]


@pytest.mark.parametrize("source", ["argument", "environment"])
def test_repr_never_shows_the_api_key(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if source == "environment":
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    provider = ClaudeManagedAgents(api_key=KEY if source == "argument" else None, base_url=API)

    for text in (repr(provider), str(provider), repr(provider.client), str(provider.client)):
        assert KEY not in text
        assert "0123456789" not in text
    assert API in repr(provider)
    assert API in repr(provider.client)


# -- 6. non-JSON success bodies ------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "method", "path"),
    [
        pytest.param(lambda c: c.get_agent("agent_1"), "GET", "/v1/agents/agent_1", id="get"),
        pytest.param(
            lambda c: c.create_session("agent_1", "env_1"), "POST", "/v1/sessions", id="create"
        ),
        pytest.param(lambda c: c.list_agents(), "GET", "/v1/agents", id="list"),
        pytest.param(
            lambda c: c.delete_file("file_1"), "DELETE", "/v1/files/file_1", id="delete_file"
        ),
    ],
)
def test_non_json_success_body_raises_api_error(
    call: Call, method: str, path: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(
        method,
        API + path,
        body="<html>captive portal</html>",
        content_type="text/html",
        headers={"request-id": "req_html"},
    )

    with pytest.raises(APIError, match="expected JSON") as caught:
        call(client)

    assert not isinstance(caught.value, ValueError)
    assert caught.value.status_code == 200
    assert caught.value.request_id == "req_html"


@pytest.mark.parametrize("payload", ["[1, 2]", '"text"', "null"])
def test_json_that_is_not_an_object_raises_api_error(
    payload: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.GET, API + "/v1/agents/agent_1", body=payload)

    with pytest.raises(APIError, match="JSON object"):
        client.get_agent("agent_1")


def test_non_json_upload_response_raises_api_error(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, API + "/v1/files", body="<html>oops</html>", content_type="text/html")

    with pytest.raises(APIError):
        client.upload_file(b"data", filename="a.txt")


def test_upload_response_without_an_id_raises_api_error(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, API + "/v1/files", json={"type": "file"})

    with pytest.raises(APIError, match="no id"):
        client.upload_file(b"data", filename="a.txt")


def test_empty_success_body_is_an_empty_object(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.DELETE, API + "/v1/sessions/sesn_1", status=204, body="")

    assert client.delete_session("sesn_1") == {}


@pytest.mark.parametrize("status", [301, 307, 308])
def test_a_redirect_is_not_mistaken_for_success(
    status: int, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(
        responses.GET,
        API + "/v1/agents/agent_1",
        status=status,
        body="",
        headers={"location": "https://elsewhere.test/v1/agents/agent_1"},
    )

    with pytest.raises(APIError) as caught:
        client.get_agent("agent_1")

    assert caught.value.status_code == status


# -- 7. the wider control plane: versions, threads, memory stores, vaults -------------------

CREDENTIAL_AUTH = {"type": "static_bearer", "mcp_server_url": "https://mcp.test", "token": "t"}
PRECONDITION = {"type": "content_sha256", "content_sha256": "ab" * 32}

CONTROL_PLANE_ENDPOINTS = [
    pytest.param(
        lambda c: c.get_agent("agent_1", version=2),
        "GET",
        "/v1/agents/agent_1",
        {"version": ["2"]},
        None,
        MANAGED_AGENTS_BETA,
        id="get_agent_version",
    ),
    pytest.param(
        lambda c: c.update_session("sesn_1", {"title": "t", "metadata": {"gone": None}}),
        "POST",
        "/v1/sessions/sesn_1",
        {},
        {"title": "t", "metadata": {"gone": None}},
        MANAGED_AGENTS_BETA,
        id="update_session",
    ),
    pytest.param(
        lambda c: c.update_environment("env_1", {"description": "d", "metadata": {"k": ""}}),
        "POST",
        "/v1/environments/env_1",
        {},
        {"description": "d", "metadata": {"k": ""}},
        MANAGED_AGENTS_BETA,
        id="update_environment",
    ),
    pytest.param(
        lambda c: c.delete_environment("env_1"),
        "DELETE",
        "/v1/environments/env_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="delete_environment",
    ),
    pytest.param(
        lambda c: c.get_thread("sesn_1", "sthr_1"),
        "GET",
        "/v1/sessions/sesn_1/threads/sthr_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="get_thread",
    ),
    pytest.param(
        lambda c: c.archive_thread("sesn_1", "sthr_1"),
        "POST",
        "/v1/sessions/sesn_1/threads/sthr_1/archive",
        {},
        {},
        MANAGED_AGENTS_BETA,
        id="archive_thread",
    ),
    pytest.param(
        lambda c: c.create_memory_store({"name": "notes", "description": "d"}),
        "POST",
        "/v1/memory_stores",
        {},
        {"name": "notes", "description": "d"},
        MEMORY_AND_AGENTS_BETA,
        id="create_memory_store",
    ),
    pytest.param(
        lambda c: c.get_memory_store("memstore_1"),
        "GET",
        "/v1/memory_stores/memstore_1",
        {},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="get_memory_store",
    ),
    pytest.param(
        lambda c: c.update_memory_store("memstore_1", {"metadata": {"owner": "me"}}),
        "POST",
        "/v1/memory_stores/memstore_1",
        {},
        {"metadata": {"owner": "me"}},
        MEMORY_AND_AGENTS_BETA,
        id="update_memory_store",
    ),
    pytest.param(
        lambda c: c.archive_memory_store("memstore_1"),
        "POST",
        "/v1/memory_stores/memstore_1/archive",
        {},
        {},
        MEMORY_AND_AGENTS_BETA,
        id="archive_memory_store",
    ),
    pytest.param(
        lambda c: c.delete_memory_store("memstore_1"),
        "DELETE",
        "/v1/memory_stores/memstore_1",
        {},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="delete_memory_store",
    ),
    pytest.param(
        lambda c: c.create_memory("memstore_1", "/notes/todo.md", ""),
        "POST",
        "/v1/memory_stores/memstore_1/memories",
        {},
        {"path": "/notes/todo.md", "content": ""},
        MEMORY_AND_AGENTS_BETA,
        id="create_memory",
    ),
    pytest.param(
        lambda c: c.create_memory("memstore_1", "/a.md", "hi", view="full"),
        "POST",
        "/v1/memory_stores/memstore_1/memories",
        {"view": ["full"]},
        {"path": "/a.md", "content": "hi"},
        MEMORY_AND_AGENTS_BETA,
        id="create_memory_full_view",
    ),
    pytest.param(
        lambda c: c.get_memory("memstore_1", "mem_1"),
        "GET",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        {},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="get_memory",
    ),
    pytest.param(
        lambda c: c.get_memory("memstore_1", "mem_1", view="basic"),
        "GET",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        {"view": ["basic"]},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="get_memory_basic_view",
    ),
    pytest.param(
        lambda c: c.update_memory(
            "memstore_1", "mem_1", {"path": "/b.md", "precondition": PRECONDITION}, view="full"
        ),
        "POST",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        {"view": ["full"]},
        {"path": "/b.md", "precondition": PRECONDITION},
        MEMORY_AND_AGENTS_BETA,
        id="update_memory",
    ),
    pytest.param(
        lambda c: c.delete_memory("memstore_1", "mem_1"),
        "DELETE",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        {},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="delete_memory",
    ),
    pytest.param(
        lambda c: c.delete_memory("memstore_1", "mem_1", expected_content_sha256="ab" * 32),
        "DELETE",
        "/v1/memory_stores/memstore_1/memories/mem_1",
        {"expected_content_sha256": ["ab" * 32]},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="delete_memory_if_unchanged",
    ),
    pytest.param(
        lambda c: c.get_memory_version("memstore_1", "memver_1"),
        "GET",
        "/v1/memory_stores/memstore_1/memory_versions/memver_1",
        {},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="get_memory_version",
    ),
    pytest.param(
        lambda c: c.get_memory_version("memstore_1", "memver_1", view="basic"),
        "GET",
        "/v1/memory_stores/memstore_1/memory_versions/memver_1",
        {"view": ["basic"]},
        None,
        MEMORY_AND_AGENTS_BETA,
        id="get_memory_version_basic_view",
    ),
    pytest.param(
        lambda c: c.redact_memory_version("memstore_1", "memver_1"),
        "POST",
        "/v1/memory_stores/memstore_1/memory_versions/memver_1/redact",
        {},
        {},
        MEMORY_AND_AGENTS_BETA,
        id="redact_memory_version",
    ),
    pytest.param(
        lambda c: c.create_vault({"display_name": "prod", "metadata": {"team": "infra"}}),
        "POST",
        "/v1/vaults",
        {},
        {"display_name": "prod", "metadata": {"team": "infra"}},
        MANAGED_AGENTS_BETA,
        id="create_vault",
    ),
    pytest.param(
        lambda c: c.get_vault("vlt_1"),
        "GET",
        "/v1/vaults/vlt_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="get_vault",
    ),
    pytest.param(
        lambda c: c.update_vault("vlt_1", {"display_name": "staging"}),
        "POST",
        "/v1/vaults/vlt_1",
        {},
        {"display_name": "staging"},
        MANAGED_AGENTS_BETA,
        id="update_vault",
    ),
    pytest.param(
        lambda c: c.archive_vault("vlt_1"),
        "POST",
        "/v1/vaults/vlt_1/archive",
        {},
        {},
        MANAGED_AGENTS_BETA,
        id="archive_vault",
    ),
    pytest.param(
        lambda c: c.delete_vault("vlt_1"),
        "DELETE",
        "/v1/vaults/vlt_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="delete_vault",
    ),
    pytest.param(
        lambda c: c.create_vault_credential(
            "vlt_1", {"auth": CREDENTIAL_AUTH, "display_name": "github"}
        ),
        "POST",
        "/v1/vaults/vlt_1/credentials",
        {},
        {"auth": CREDENTIAL_AUTH, "display_name": "github"},
        MANAGED_AGENTS_BETA,
        id="create_vault_credential",
    ),
    pytest.param(
        lambda c: c.get_vault_credential("vlt_1", "cred_1"),
        "GET",
        "/v1/vaults/vlt_1/credentials/cred_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="get_vault_credential",
    ),
    pytest.param(
        lambda c: c.update_vault_credential("vlt_1", "cred_1", {"auth": CREDENTIAL_AUTH}),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1",
        {},
        {"auth": CREDENTIAL_AUTH},
        MANAGED_AGENTS_BETA,
        id="update_vault_credential",
    ),
    pytest.param(
        lambda c: c.archive_vault_credential("vlt_1", "cred_1"),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1/archive",
        {},
        {},
        MANAGED_AGENTS_BETA,
        id="archive_vault_credential",
    ),
    pytest.param(
        lambda c: c.delete_vault_credential("vlt_1", "cred_1"),
        "DELETE",
        "/v1/vaults/vlt_1/credentials/cred_1",
        {},
        None,
        MANAGED_AGENTS_BETA,
        id="delete_vault_credential",
    ),
    pytest.param(
        lambda c: c.validate_vault_credential("vlt_1", "cred_1"),
        "POST",
        "/v1/vaults/vlt_1/credentials/cred_1/mcp_oauth_validate",
        {},
        {},
        MANAGED_AGENTS_BETA,
        id="validate_vault_credential",
    ),
]


@pytest.mark.parametrize(
    ("call", "method", "path", "query", "body", "beta"), CONTROL_PLANE_ENDPOINTS
)
def test_control_plane_endpoint_sends_the_sdk_request_and_returns_the_json(
    call: Call,
    method: str,
    path: str,
    query: dict[str, list[str]],
    body: Any,
    beta: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    answer = {"id": "obj_1", "type": "thing", "nested": {"k": [1, 2]}}
    mock.add(method, API + path, json=answer)

    assert call(client) == answer

    assert len(mock.calls) == 1
    request = mock.calls[0].request
    assert (request.method, path_of(request), query_of(request)) == (method, path, query)
    assert_managed_agents_headers(request, beta)
    if body is None:
        assert not request.body
    else:
        assert request.headers["content-type"] == "application/json"
        assert json_body(request) == body


CONTROL_PLANE_LISTS = [
    pytest.param(
        lambda c: c.list_agent_versions("agent_1"),
        "/v1/agents/agent_1/versions",
        {"limit": ["100"]},
        MANAGED_AGENTS_BETA,
        id="list_agent_versions",
    ),
    pytest.param(
        lambda c: c.list_threads("sesn_1", statuses=["idle", "running"]),
        "/v1/sessions/sesn_1/threads",
        {"limit": ["100"], "statuses[]": ["idle", "running"]},
        MANAGED_AGENTS_BETA,
        id="list_threads",
    ),
    pytest.param(
        lambda c: c.list_thread_events("sesn_1", "sthr_1"),
        "/v1/sessions/sesn_1/threads/sthr_1/events",
        {"limit": ["1000"]},
        MANAGED_AGENTS_BETA,
        id="list_thread_events",
    ),
    pytest.param(
        lambda c: c.list_memory_stores(
            include_archived=True, created_at_lte="2026-05-01T00:00:00Z"
        ),
        "/v1/memory_stores",
        {
            "limit": ["100"],
            "include_archived": ["true"],
            "created_at[lte]": ["2026-05-01T00:00:00Z"],
        },
        MEMORY_AND_AGENTS_BETA,
        id="list_memory_stores",
    ),
    pytest.param(
        lambda c: c.list_memories("memstore_1", path_prefix="/notes/", depth=1, view="basic"),
        "/v1/memory_stores/memstore_1/memories",
        {"limit": ["100"], "path_prefix": ["/notes/"], "depth": ["1"], "view": ["basic"]},
        MEMORY_AND_AGENTS_BETA,
        id="list_memories",
    ),
    pytest.param(
        lambda c: c.list_memory_versions(
            "memstore_1",
            memory_id="mem_1",
            operation="deleted",
            api_key_id="apikey_1",
            created_at_gte=datetime(2026, 4, 1, tzinfo=timezone.utc),
        ),
        "/v1/memory_stores/memstore_1/memory_versions",
        {
            "limit": ["100"],
            "memory_id": ["mem_1"],
            "operation": ["deleted"],
            "api_key_id": ["apikey_1"],
            "created_at[gte]": ["2026-04-01T00:00:00+00:00"],
        },
        MEMORY_AND_AGENTS_BETA,
        id="list_memory_versions",
    ),
    pytest.param(
        lambda c: c.list_memory_versions("memstore_1", view="full"),
        "/v1/memory_stores/memstore_1/memory_versions",
        {"limit": ["20"], "view": ["full"]},
        MEMORY_AND_AGENTS_BETA,
        id="list_memory_versions_full_view_pages_of_20",
    ),
    pytest.param(
        lambda c: c.list_memory_versions("memstore_1", view="full", limit=5),
        "/v1/memory_stores/memstore_1/memory_versions",
        {"limit": ["5"], "view": ["full"]},
        MEMORY_AND_AGENTS_BETA,
        id="list_memory_versions_own_page_size",
    ),
    pytest.param(
        lambda c: c.list_vaults(include_archived=True),
        "/v1/vaults",
        {"limit": ["100"], "include_archived": ["true"]},
        MANAGED_AGENTS_BETA,
        id="list_vaults",
    ),
    pytest.param(
        lambda c: c.list_vault_credentials("vlt_1", include_archived=False),
        "/v1/vaults/vlt_1/credentials",
        {"limit": ["100"], "include_archived": ["false"]},
        MANAGED_AGENTS_BETA,
        id="list_vault_credentials",
    ),
    pytest.param(
        lambda c: c.list_events(
            "sesn_1",
            order="desc",
            types=["agent.message", "agent.tool_use"],
            created_at_gte="2026-04-01T00:00:00Z",
        ),
        "/v1/sessions/sesn_1/events",
        {
            "limit": ["1000"],
            "order": ["desc"],
            "types[]": ["agent.message", "agent.tool_use"],
            "created_at[gte]": ["2026-04-01T00:00:00Z"],
        },
        MANAGED_AGENTS_BETA,
        id="list_events_filtered",
    ),
    pytest.param(
        lambda c: c.list_events(
            "sesn_1",
            page_size=1000,
            **{"created_at[lt]": datetime(2026, 4, 2, tzinfo=timezone.utc), "types[]": ("a",)},
        ),
        "/v1/sessions/sesn_1/events",
        {"limit": ["1000"], "created_at[lt]": ["2026-04-02T00:00:00+00:00"], "types[]": ["a"]},
        MANAGED_AGENTS_BETA,
        id="list_events_wire_spelling",
    ),
    pytest.param(
        lambda c: c.list_sessions(
            statuses=("idle",), created_at_gt=datetime(2026, 4, 1, 12, tzinfo=timezone.utc)
        ),
        "/v1/sessions",
        {
            "limit": ["100"],
            "statuses[]": ["idle"],
            "created_at[gt]": ["2026-04-01T12:00:00+00:00"],
        },
        MANAGED_AGENTS_BETA,
        id="list_sessions_filtered",
    ),
]


# The control-plane lists send the SDK's query parameters in bracket form.
@pytest.mark.parametrize(("call", "path", "query", "beta"), LIST_ENDPOINTS + CONTROL_PLANE_LISTS)
def test_list_endpoint_sends_get_with_query_and_headers(
    call: Call,
    path: str,
    query: dict[str, list[str]],
    beta: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    items = [{"id": "a"}, {"id": "b"}]
    mock.add(responses.GET, API + path, json={"data": items, "next_page": None})

    assert call(client) == items

    assert len(mock.calls) == 1
    request = mock.calls[0].request
    assert request.method == "GET"
    assert path_of(request) == path
    assert query_of(request) == query
    assert_managed_agents_headers(request, beta)


@pytest.mark.parametrize(("call", "path", "query", "beta"), CONTROL_PLANE_LISTS)
def test_control_plane_list_follows_every_page_keeping_filters_and_beta(
    call: Call,
    path: str,
    query: dict[str, list[str]],
    beta: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    pages: dict[str | None, dict[str, Any]] = {
        None: {"data": [{"id": "1"}, {"id": "2"}], "next_page": "page_b"},
        "page_b": {"data": [{"id": "3"}], "next_page": "page_c"},
        "page_c": {"data": [{"id": "4"}], "next_page": None},
    }
    mock.add_callback(responses.GET, API + path, callback=paged(pages))

    assert [item["id"] for item in call(client)] == ["1", "2", "3", "4"]

    assert [query_of(c.request) for c in mock.calls] == [
        query,
        {**query, "page": ["page_b"]},
        {**query, "page": ["page_c"]},
    ]
    assert {c.request.headers["anthropic-beta"] for c in mock.calls} == {beta}


def test_list_events_filters_combine_with_page_size_and_telemetry(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(
        responses.GET, API + "/v1/sessions/sesn_1/events", json={"data": [], "next_page": None}
    )

    events = client.list_events(
        "sesn_1", page_size=7, telemetry_metadata={"run": "r1"}, order="asc"
    )

    assert events == []
    assert query_of(mock.calls[0].request) == {"limit": ["7"], "order": ["asc"]}


def test_a_changed_memory_beta_is_sent_with_the_managed_agents_beta(
    mock: responses.RequestsMock,
) -> None:
    client = ClaudeClient(
        Secret(KEY), base_url=API, timeout=5, max_retries=0, memory_beta="agent-memory-2099-01-01"
    )
    mock.add(responses.GET, API + "/v1/memory_stores/memstore_1", json={"id": "memstore_1"})

    client.get_memory_store("memstore_1")

    beta = mock.calls[0].request.headers["anthropic-beta"]
    assert beta == f"agent-memory-2099-01-01,{MANAGED_AGENTS_BETA}"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        pytest.param(lambda c: c.get_agent("agent_1", version=0), "version", id="version-0"),
        pytest.param(lambda c: c.get_agent("agent_1", version=True), "version", id="version-bool"),
        pytest.param(lambda c: c.get_agent("agent_1", version="2"), "version", id="version-str"),
        pytest.param(lambda c: c.create_memory_store({}), "name", id="memory-store-no-name"),
        pytest.param(lambda c: c.create_memory("memstore_1", "a.md", "x"), "path", id="relative"),
        pytest.param(lambda c: c.create_memory("memstore_1", "/a.md", None), "content", id="null"),
        pytest.param(lambda c: c.create_vault({"metadata": {}}), "display_name", id="vault"),
        pytest.param(
            lambda c: c.create_vault_credential("vlt_1", {"display_name": "x"}),
            "auth",
            id="credential-no-auth",
        ),
        pytest.param(
            lambda c: c.create_vault_credential("vlt_1", {"auth": {"token": "t"}}),
            "auth",
            id="credential-auth-without-type",
        ),
        pytest.param(lambda c: c.get_thread("sesn_1", ""), "id", id="empty-thread-id"),
        pytest.param(lambda c: c.get_vault_credential("", "cred_1"), "id", id="empty-vault-id"),
        pytest.param(
            lambda c: c.get_memory_version("memstore_1", ""), "id", id="empty-memory-version-id"
        ),
        pytest.param(lambda c: c.list_memory_versions(""), "id", id="empty-memory-store-id"),
    ],
)
def test_invalid_control_plane_calls_raise_value_error_before_any_request(
    call: Call, match: str, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    for method in ("GET", "POST", "DELETE"):
        mock.add(method, ANY_URL, json={"id": "x", "data": []})

    with pytest.raises(ValueError, match=match):
        call(client)

    assert len(mock.calls) == 0


# -- 8. session creation options ------------------------------------------------------------

FILE_RESOURCE = {"type": "file", "file_id": "file_1", "mount_path": "/data.csv"}
REPO_RESOURCE = {
    "type": "github_repository",
    "url": "https://github.com/acme/app",
    "authorization_token": "ghp_x",
    "checkout": {"type": "branch", "name": "main"},
}
MEMORY_RESOURCE = {"type": "memory_store", "memory_store_id": "memstore_1", "access": "read_only"}


@pytest.mark.parametrize(
    ("agent", "kwargs", "body"),
    [
        pytest.param(
            "agent_1",
            {"vault_ids": None, "resources": None, "metadata": None, "title": None},
            {"agent": "agent_1", "environment_id": "env_1"},
            id="absent-options-are-omitted",
        ),
        pytest.param(
            {"type": "agent", "id": "agent_1", "version": 3},
            {"vault_ids": ["vlt_1"]},
            {
                "agent": {"type": "agent", "id": "agent_1", "version": 3},
                "environment_id": "env_1",
                "vault_ids": ["vlt_1"],
            },
            id="pinned-version",
        ),
        pytest.param(
            {"type": "agent", "id": "agent_1"},
            {"metadata": {"team": "infra"}},
            {
                "agent": {"type": "agent", "id": "agent_1"},
                "environment_id": "env_1",
                "metadata": {"team": "infra"},
            },
            id="latest-version-as-an-object",
        ),
        pytest.param(
            {"type": "agent_with_overrides", "id": "agent_1", "system": None, "tools": []},
            {"title": "Nightly"},
            {
                "agent": {
                    "type": "agent_with_overrides",
                    "id": "agent_1",
                    "system": None,
                    "tools": [],
                },
                "environment_id": "env_1",
                "title": "Nightly",
            },
            id="overrides",
        ),
        pytest.param(
            "agent_1",
            {
                "vault_ids": ("vlt_1", "vlt_2"),
                "resources": [FILE_RESOURCE, REPO_RESOURCE, MEMORY_RESOURCE],
                "metadata": {"team": "infra"},
                "title": "",
            },
            {
                "agent": "agent_1",
                "environment_id": "env_1",
                "vault_ids": ["vlt_1", "vlt_2"],
                "resources": [FILE_RESOURCE, REPO_RESOURCE, MEMORY_RESOURCE],
                "metadata": {"team": "infra"},
                "title": "",
            },
            id="every-option",
        ),
        pytest.param(
            "agent_1",
            {"vault_ids": [], "resources": [], "metadata": {}},
            {
                "agent": "agent_1",
                "environment_id": "env_1",
                "vault_ids": [],
                "resources": [],
                "metadata": {},
            },
            id="empty-options-are-sent",
        ),
        pytest.param(
            "agent_1",
            {"metadata": {f"{n:02d}".ljust(64, "k"): "v" * 512 for n in range(16)}},
            {
                "agent": "agent_1",
                "environment_id": "env_1",
                "metadata": {f"{n:02d}".ljust(64, "k"): "v" * 512 for n in range(16)},
            },
            id="metadata-at-its-limits",
        ),
    ],
)
def test_create_session_sends_the_options_given_and_nothing_else(
    agent: Any,
    kwargs: dict[str, Any],
    body: dict[str, Any],
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    mock.add(responses.POST, API + "/v1/sessions", json={"id": "sesn_1"})

    assert client.create_session(agent, "env_1", **kwargs) == {"id": "sesn_1"}

    request = mock.calls[0].request
    sent = json_body(request)
    assert _strip_token(sent, body) == body
    # A full metadata leaves no room for the token; otherwise every create carries one.
    assert (CREATE_TOKEN_KEY in sent.get("metadata", {})) == (len(body.get("metadata", {})) < 16)
    assert_managed_agents_headers(request, MANAGED_AGENTS_BETA)


def test_create_session_with_options_is_retried_like_a_bare_one(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, API + "/v1/sessions", status=500, json=error_body())
    mock.add(responses.GET, API + "/v1/sessions", json={"data": [], "next_page": None})
    mock.add(responses.POST, API + "/v1/sessions", json={"id": "sesn_2"})

    session = client.create_session(
        {"type": "agent", "id": "agent_1", "version": 1}, "env_1", resources=[FILE_RESOURCE]
    )

    assert session == {"id": "sesn_2"}
    assert len(mock.calls) == 3
    assert mock.calls[0].request.body == mock.calls[2].request.body


@pytest.mark.parametrize(
    ("agent", "kwargs", "match"),
    [
        pytest.param("", {}, r"^agent must", id="empty-agent-id"),
        pytest.param(42, {}, r"^agent must", id="agent-not-an-id"),
        pytest.param({"id": "agent_1"}, {}, r"^agent\.type", id="agent-without-type"),
        pytest.param({"type": "pinned", "id": "a"}, {}, r"^agent\.type", id="unknown-agent-type"),
        pytest.param({"type": "agent", "id": ""}, {}, r"^agent\.id", id="empty-agent-object-id"),
        pytest.param({"type": "agent_with_overrides"}, {}, r"^agent\.id", id="overrides-no-id"),
        pytest.param({"type": "agent", "id": "a", "version": 0}, {}, r"^agent\.version", id="v0"),
        pytest.param(
            {"type": "agent", "id": "a", "version": True}, {}, r"^agent\.version", id="v-bool"
        ),
        pytest.param(
            {"type": "agent", "id": "a", "version": "2"}, {}, r"^agent\.version", id="v-str"
        ),
        pytest.param(
            {"type": "agent", "id": "a", "version": None}, {}, r"^agent\.version", id="v-null"
        ),
        pytest.param("agent_1", {"vault_ids": "vlt_1"}, r"^vault_ids must", id="vault-ids-str"),
        pytest.param("agent_1", {"vault_ids": ["vlt_1", ""]}, r"^vault_ids\[1\]", id="vault-id"),
        pytest.param("agent_1", {"vault_ids": [7]}, r"^vault_ids\[0\]", id="vault-id-int"),
        pytest.param("agent_1", {"resources": FILE_RESOURCE}, r"^resources must", id="res-dict"),
        pytest.param("agent_1", {"resources": ["file_1"]}, r"^resources\[0\] must", id="res-str"),
        pytest.param(
            "agent_1", {"resources": [{"file_id": "f"}]}, r"^resources\[0\]\.type", id="no-type"
        ),
        pytest.param(
            "agent_1",
            {"resources": [{"type": "directory", "path": "/x"}]},
            r"^resources\[0\]\.type",
            id="unknown-resource-type",
        ),
        pytest.param(
            "agent_1",
            {"resources": [{"type": "file"}]},
            r"^resources\[0\]\.file_id",
            id="file-without-id",
        ),
        pytest.param(
            "agent_1",
            {"resources": [FILE_RESOURCE, {"type": "github_repository"}]},
            r"^resources\[1\]\.url",
            id="repository-without-url",
        ),
        pytest.param(
            "agent_1",
            {"resources": [{"type": "memory_store", "memory_store_id": ""}]},
            r"^resources\[0\]\.memory_store_id",
            id="memory-store-without-id",
        ),
        pytest.param("agent_1", {"metadata": [("k", "v")]}, r"^metadata must", id="meta-list"),
        pytest.param(
            "agent_1",
            {"metadata": {f"k{n}": "v" for n in range(17)}},
            r"^metadata holds at most 16",
            id="seventeen-pairs",
        ),
        pytest.param("agent_1", {"metadata": {"": "v"}}, r"^metadata keys", id="empty-key"),
        pytest.param("agent_1", {"metadata": {"k" * 65: "v"}}, r"^metadata keys", id="long-key"),
        pytest.param("agent_1", {"metadata": {1: "v"}}, r"^metadata keys", id="int-key"),
        pytest.param("agent_1", {"metadata": {"k": 1}}, r"^metadata\['k'\]", id="int-value"),
        pytest.param("agent_1", {"metadata": {"k": None}}, r"^metadata\['k'\]", id="null-value"),
        pytest.param(
            "agent_1", {"metadata": {"k": "v" * 513}}, r"^metadata\['k'\]", id="long-value"
        ),
        pytest.param("agent_1", {"title": 5}, r"^title", id="title-not-a-string"),
    ],
)
def test_create_session_refuses_a_bad_option_naming_its_field(
    agent: Any,
    kwargs: dict[str, Any],
    match: str,
    client: ClaudeClient,
    mock: responses.RequestsMock,
) -> None:
    mock.add(responses.POST, ANY_URL, json={"id": "sesn_1"})

    with pytest.raises(ValueError, match=match):
        client.create_session(agent, "env_1", **kwargs)

    assert len(mock.calls) == 0


@pytest.mark.parametrize("environment_id", ["", None, 3])
def test_create_session_refuses_a_bad_environment_id(
    environment_id: Any, client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, ANY_URL, json={"id": "sesn_1"})

    with pytest.raises(ValueError, match=r"^environment_id"):
        client.create_session("agent_1", environment_id)

    assert len(mock.calls) == 0


def test_create_session_copies_what_it_sends(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, API + "/v1/sessions", json={"id": "sesn_1"})
    agent = {"type": "agent", "id": "agent_1", "version": 2}
    metadata = {"team": "infra"}

    client.create_session(agent, "env_1", metadata=metadata)

    assert agent == {"type": "agent", "id": "agent_1", "version": 2}
    assert metadata == {"team": "infra"}


# -- 9. authentication scheme ----------------------------------------------------------------


def test_bearer_scheme_sends_an_authorization_header_instead_of_x_api_key(
    mock: responses.RequestsMock,
) -> None:
    client = ClaudeClient(
        Secret(KEY),
        base_url=API,
        timeout=5,
        max_retries=0,
        auth_scheme="bearer",
        anthropic_version="2026-10-21",
    )
    mock.add(responses.GET, ANY_URL, json={"id": "x", "data": []})

    client.get_agent("agent_1")
    client.list_memory_stores()
    client.get_file("file_1")

    for call in mock.calls:
        headers = call.request.headers
        assert headers["authorization"] == f"Bearer {KEY}"
        assert "x-api-key" not in headers
        assert headers["anthropic-version"] == "2026-10-21"
    assert client.auth_scheme == "bearer"


def test_the_default_scheme_sends_x_api_key_and_no_authorization(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    client.get_agent("agent_1")

    headers = mock.calls[0].request.headers
    assert headers["x-api-key"] == KEY
    assert "authorization" not in headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert client.auth_scheme == "x-api-key"


@pytest.mark.parametrize("scheme", ["Bearer", "basic", "", "api-key"])
def test_an_unknown_auth_scheme_is_rejected(scheme: str) -> None:
    with pytest.raises(ValueError, match="auth_scheme"):
        ClaudeClient(Secret(KEY), base_url=API, timeout=5, max_retries=0, auth_scheme=scheme)  # type: ignore[arg-type]


def test_a_bearer_key_echoed_in_an_error_is_redacted(mock: responses.RequestsMock) -> None:
    client = ClaudeClient(Secret(KEY), base_url=API, timeout=5, max_retries=0, auth_scheme="bearer")
    mock.add(
        responses.GET,
        API + "/v1/vaults/vlt_1",
        status=401,
        json=error_body("authentication_error", f"bad header Authorization: Bearer {KEY}"),
    )

    with pytest.raises(AuthenticationError) as caught:
        client.get_vault("vlt_1")

    assert KEY not in str(caught.value)


# -- 10. over loopback, against the emulator --------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[ClaudeEmulator]:
    with ClaudeEmulator() as running:
        yield running


def test_session_options_reach_the_emulator(emulator: ClaudeEmulator) -> None:
    agent_id = emulator.add_agent()
    environment_id = emulator.add_environment()
    with emulator.provider() as provider:
        client = provider.client
        file_id = client.upload_file(b"a,b\n1,2\n", filename="data.csv")["id"]
        session = client.create_session(
            {"type": "agent", "id": agent_id, "version": 1},
            environment_id,
            resources=[{"type": "file", "file_id": file_id, "mount_path": "/data.csv"}],
            metadata={"team": "infra"},
            title="Nightly",
        )

    assert session["title"] == "Nightly"
    assert session["metadata"] == {
        "team": "infra",
        CREATE_TOKEN_KEY: session["metadata"][CREATE_TOKEN_KEY],
    }
    assert session["agent"]["id"] == agent_id
    [mounted] = session["resources"]
    assert mounted["mount_path"] == "/mnt/session/uploads/data.csv"
    sent = [r for r in emulator.requests if (r.method, r.path) == ("POST", "/v1/sessions")]
    assert [without_create_token(r.body) for r in sent] == [
        {
            "agent": {"type": "agent", "id": agent_id, "version": 1},
            "environment_id": environment_id,
            "resources": [{"type": "file", "file_id": file_id, "mount_path": "/data.csv"}],
            "metadata": {"team": "infra"},
            "title": "Nightly",
        }
    ]


def test_updating_and_deleting_an_environment_over_loopback(emulator: ClaudeEmulator) -> None:
    environment_id = emulator.add_environment("build")
    with emulator.provider(max_retries=2) as provider:
        client = provider.client
        emulator.fail_requests("POST", f"/v1/environments/{environment_id}", 500)
        updated = client.update_environment(
            environment_id, {"description": "CI", "metadata": {"team": "infra"}}
        )
        deleted = client.delete_environment(environment_id)
        with pytest.raises(NotFoundError):
            client.get_environment(environment_id)

    assert updated["description"] == "CI"
    assert updated["metadata"] == {"team": "infra"}
    assert deleted == {"id": environment_id, "type": "environment_deleted"}
    posts = [r for r in emulator.requests if r.method == "POST"]
    assert len(posts) == 2  # the 500 was retried: an update repeats to the same state


def test_bearer_auth_over_loopback(emulator: ClaudeEmulator) -> None:
    environment_id = emulator.add_environment()
    client = ClaudeClient(
        Secret(emulator.api_key),
        base_url=emulator.base_url,
        timeout=5,
        max_retries=0,
        auth_scheme="bearer",
    )
    try:
        assert client.get_environment(environment_id)["id"] == environment_id
    finally:
        client.close()

    [request] = emulator.requests
    assert request.headers["authorization"] == f"Bearer {emulator.api_key}"
    assert "x-api-key" not in request.headers


def test_listing_memories_with_their_content_takes_pages_the_api_allows(
    emulator: ClaudeEmulator,
) -> None:
    # With view="full" a page holds at most 20 memories; asking for 100 is refused.
    with emulator.provider() as provider:
        client = provider.client
        store = client.create_memory_store({"name": "notes"})["id"]
        for n in range(45):
            client.create_memory(store, f"/notes/{n:02d}.md", f"note {n}")
        full = client.list_memories(store, view="full")
        basic = client.list_memories(store)
    assert sorted(m["content"] for m in full) == sorted(f"note {n}" for n in range(45))
    assert len(basic) == 45
    pages = [r for r in emulator.requests if r.path.endswith("/memories") and r.method == "GET"]
    assert [r.query.get("limit") for r in pages[:3]] == [["20"], ["20"], ["20"]]


def test_memory_versions_over_loopback(emulator: ClaudeEmulator) -> None:
    with emulator.provider(max_retries=2) as provider:
        client = provider.client
        store = client.create_memory_store({"name": "notes"})["id"]
        memory = client.create_memory(store, "/todo.md", "buy milk")
        other = client.create_memory(store, "/other.md", "x")
        client.update_memory(store, memory["id"], {"content": "buy oat milk"})
        client.delete_memory(store, memory["id"])

        history = client.list_memory_versions(store, memory_id=memory["id"], limit=1)
        created = client.get_memory_version(store, memory["memory_version_id"])
        deletions = client.list_memory_versions(store, operation="deleted")
        full = client.list_memory_versions(store, view="full")  # pages of 20, not 100
        key_id = created["created_by"]["api_key_id"]
        mine = client.list_memory_versions(store, api_key_id=key_id)
        since = client.list_memory_versions(
            store, created_at_gte=datetime.now(timezone.utc).replace(year=2100)
        )
        # The redaction lands but its answer is lost: the retry finds it redacted already.
        emulator.reset_requests(
            "POST", f"/v1/memory_stores/{store}/memory_versions/.*/redact", after_acting=True
        )
        redacted = client.redact_memory_version(store, created["id"])
        after = client.get_memory_version(store, created["id"])
        with pytest.raises(NotFoundError) as missing:
            client.get_memory_version(store, "memver_missing")

    assert [v["operation"] for v in history] == ["deleted", "modified", "created"]
    assert (created["content"], created["path"], created["memory_id"]) == (
        "buy milk",
        "/todo.md",
        memory["id"],
    )
    assert [v["memory_id"] for v in deletions] == [memory["id"]]
    assert [v["content"] for v in full] == [None, "buy oat milk", "x", "buy milk"]
    assert {r.query.get("limit", [""])[0] for r in emulator.requests if "view" in r.query} == {"20"}
    assert len(mine) == 4
    assert since == []
    assert redacted == after
    assert (redacted["content"], redacted["path"], redacted["content_sha256"]) == (None,) * 3
    assert redacted["redacted_at"] is not None
    assert redacted["redacted_by"] == created["created_by"]
    assert other["memory_version_id"] in {v["id"] for v in mine}
    redactions = [r for r in emulator.requests if r.path.endswith("/redact")]
    assert len(redactions) == 2  # redacting again leaves the same state, so it was retried
    assert missing.value.error_type == "not_found_error"


def test_validating_a_credential_over_loopback(emulator: ClaudeEmulator) -> None:
    with emulator.provider(max_retries=2) as provider:
        client = provider.client
        vault = client.create_vault({"display_name": "team"})["id"]
        oauth = client.create_vault_credential(
            vault,
            {
                "auth": {
                    "type": "mcp_oauth",
                    "mcp_server_url": "https://mcp.test",
                    "access_token": "a",
                }
            },
        )["id"]
        bearer = client.create_vault_credential(vault, {"auth": CREDENTIAL_AUTH})["id"]
        emulator.fail_requests("POST", f"/v1/vaults/{vault}/credentials/{oauth}/.*", 500)
        validation = client.validate_vault_credential(vault, oauth)
        with pytest.raises(BadRequestError) as refused:
            client.validate_vault_credential(vault, bearer)
        with pytest.raises(NotFoundError):
            client.validate_vault_credential(vault, "vcrd_missing")

    assert validation["type"] == "vault_credential_validation"
    assert (validation["credential_id"], validation["vault_id"]) == (oauth, vault)
    assert (validation["status"], validation["has_refresh_token"]) == ("valid", False)
    assert refused.value.error_type == "invalid_request_error"
    probes = [r for r in emulator.requests if r.path.endswith("/mcp_oauth_validate")]
    assert len(probes) == 4  # the 500 was retried: a probe creates nothing


def test_a_server_saying_do_not_retry_is_not_retried(
    client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    headers = {"x-should-retry": "false"}
    mock.add(
        responses.GET, API + "/v1/agents/agent_1", status=500, json=error_body(), headers=headers
    )
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    with pytest.raises(ServerError):
        client.get_agent("agent_1")
    assert len(mock.calls) == 1
    assert sleeps == []


def test_a_server_saying_retry_is_retried_where_the_status_alone_would_not_be(
    client: ClaudeClient, mock: responses.RequestsMock, sleeps: list[float]
) -> None:
    headers = {"x-should-retry": "true"}
    mock.add(
        responses.GET, API + "/v1/agents/agent_1", status=409, json=error_body(), headers=headers
    )
    mock.add(responses.GET, API + "/v1/agents/agent_1", json={"id": "agent_1"})

    assert client.get_agent("agent_1") == {"id": "agent_1"}
    assert len(mock.calls) == 2
    assert len(sleeps) == 1


def test_a_create_takes_keywords_as_well_as_a_body(
    client: ClaudeClient, mock: responses.RequestsMock
) -> None:
    mock.add(responses.POST, API + "/v1/agents", json={"id": "agent_1"})
    mock.add(responses.POST, API + "/v1/agents", json={"id": "agent_2"})

    client.create_agent(name="helper", model="claude-sonnet-4-6")
    client.create_agent({"name": "helper"}, model="claude-sonnet-4-6")
    assert [json_body(c.request) for c in mock.calls] == [
        {"name": "helper", "model": "claude-sonnet-4-6"}
    ] * 2
    with pytest.raises(ValueError, match="name given both"):
        client.create_agent({"name": "a"}, name="b")
