"""The Claude emulator's errors name their cause as the ``anthropic`` SDK's typed errors
expect: ``error.details.error_code``, with the status the SDK pairs it with.

A user's code branches on the SDK's typed errors (``BetaEnvironmentArchivedError``, ...) or
on the library's ``error_type``, which is the code when there is one. The routes answer with
a code where the emulator models the cause (an archived or unknown environment, metadata
over the limits, a file that cannot be downloaded, ...); ``fail_requests(code=...)``
answers with any code the SDK types. The codes are enumerated from the SDK itself, so a code
a new SDK adds fails here until the emulator can send it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest

anthropic = pytest.importorskip("anthropic")

import pydantic  # noqa: E402
import requests  # noqa: E402
from anthropic._error_classes import ERROR_CLASSES  # noqa: E402
from anthropic.types.shared.error_details import ErrorDetails  # noqa: E402
from anthropic.types.shared.error_type import ErrorType  # noqa: E402

from req_managed_agents.testing import ClaudeEmulator  # noqa: E402
from tests.support.api import api_headers  # noqa: E402
from tests.support.sdk import StrictAnthropic, check_strictly, strict_client  # noqa: E402

# The platform's error page names this type for a 413; the SDK's ErrorType leaves it out.
_DOCUMENTED_TYPES = frozenset({"request_too_large"})
_CODED = sorted((status, code) for status, code in ERROR_CLASSES if code is not None)


@pytest.fixture
def sdk() -> Iterator[Callable[..., tuple[ClaudeEmulator, StrictAnthropic]]]:
    started: list[tuple[ClaudeEmulator, StrictAnthropic]] = []

    def start(**kwargs: Any) -> tuple[ClaudeEmulator, StrictAnthropic]:
        emulator = ClaudeEmulator(ping_interval=0.5, **kwargs)
        started.append((emulator, strict_client(emulator)))
        return started[-1]

    yield start
    for emulator, client in started:
        client.close()
        emulator.close()


def coded(raised: pytest.ExceptionInfo[anthropic.APIStatusError], code: str) -> Any:
    """The error's body checked strictly (its details against the SDK's union of them, its
    type against the SDK's ``ErrorType``); the details as the SDK models them."""
    error = raised.value
    body = error.body
    assert isinstance(body, dict)
    assert set(body) == {"type", "error", "request_id"}, body
    assert body["type"] == "error"
    assert body["request_id"] == error.request_id
    assert set(body["error"]) == {"type", "message", "details"}, body
    assert isinstance(body["error"]["message"], str)
    if body["error"]["type"] not in _DOCUMENTED_TYPES:
        pydantic.TypeAdapter(ErrorType).validate_python(body["error"]["type"], strict=True)
    details = check_strictly(ErrorDetails, body["error"]["details"], f"{code} details")
    assert (error.error_code, details.error_code) == (code, code)
    assert type(error) is ERROR_CLASSES[(error.status_code, code)]
    return details


def test_every_code_the_sdk_types_can_be_injected(sdk: Any) -> None:
    emulator, client = sdk()
    assert len(_CODED) > 100  # the SDK's table, not an empty one
    for status, code in _CODED:
        emulator.fail_requests("GET", "/v1/agents", status, code=code, message=f"no: {code}")
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.beta.agents.list()
        assert raised.value.status_code == status
        coded(raised, code)
        assert raised.value.api_message == f"no: {code}"
    assert emulator.pending_faults() == 0


def test_an_injected_code_must_be_one_the_sdk_types_with_its_status(sdk: Any) -> None:
    emulator, _ = sdk()
    with pytest.raises(ValueError, match="no_such_code"):
        emulator.fail_requests("GET", "/v1/agents", 400, code="no_such_code")
    with pytest.raises(ValueError, match="404"):
        emulator.fail_requests("GET", "/v1/agents", 400, code="environment_not_found")
    assert emulator.pending_faults() == 0


def test_the_routes_name_the_causes_they_model(sdk: Any) -> None:
    _, client = sdk()
    agent = client.beta.agents.create(name="a", model="claude-sonnet-4-6")
    archived = client.beta.environments.create(name="old")
    client.beta.environments.archive(archived.id)
    hosted = client.beta.environments.create(name="hosted", config={"type": "self_hosted"})

    with pytest.raises(anthropic.BadRequestError) as raised:
        client.beta.environments.update(archived.id, description="again")
    coded(raised, "environment_archived")
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.beta.sessions.create(agent=agent.id, environment_id=archived.id)
    coded(raised, "environment_archived")
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.beta.environments.update(hosted.id, config={"type": "cloud"})
    coded(raised, "invalid_config_type_change")

    for unknown in (
        lambda: client.beta.environments.retrieve("env_missing"),
        lambda: client.beta.environments.archive("env_missing"),
        lambda: client.beta.sessions.create(agent=agent.id, environment_id="env_missing"),
    ):
        with pytest.raises(anthropic.NotFoundError) as raised:
            unknown()
        coded(raised, "environment_not_found")

    too_many = {f"k{n}": "v" for n in range(17)}
    for over_the_limits in (
        lambda: client.beta.agents.create(name="b", model="claude-sonnet-4-6", metadata=too_many),
        lambda: client.beta.environments.create(name="e", metadata={"k" * 65: "v"}),
        lambda: client.beta.vaults.create(display_name="v", metadata={"k": "v" * 513}),
        lambda: client.beta.agents.update(agent.id, version=1, metadata=too_many),
    ):
        with pytest.raises(anthropic.BadRequestError) as raised:
            over_the_limits()
        coded(raised, "invalid_metadata")

    upload = client.beta.files.upload(file=("notes.txt", b"hello", "text/plain"))
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.beta.files.download(upload.id)
    coded(raised, "file_not_downloadable")


def test_a_charset_the_api_does_not_read_is_named(sdk: Any) -> None:
    emulator, _ = sdk()
    answers = {
        charset: requests.post(
            emulator.base_url + "/v1/agents",
            data=b'{"name": "a", "model": "claude-sonnet-4-6"}',
            headers={
                **api_headers(emulator),
                "content-type": f"application/json; charset={charset}",
            },
            timeout=5,
        )
        for charset in ("utf-16", "UTF-8", "iso-8859-1", '"us-ascii"')
    }
    assert {charset: a.status_code for charset, a in answers.items()} == {
        "utf-16": 400,
        "UTF-8": 200,
        "iso-8859-1": 200,
        '"us-ascii"': 200,
    }
    details = answers["utf-16"].json()["error"]["details"]
    assert check_strictly(ErrorDetails, details, "charset").error_code == "unsupported_charset"
    assert len(emulator.requests) == 4


def test_a_status_without_its_own_type_is_typed_as_the_api_documents(sdk: Any) -> None:
    """The API's error page: ``invalid_request_error`` may stand for 4xx codes it does not
    list; a server error with no type of its own is an ``api_error``."""
    emulator, client = sdk()
    for status, expected in (
        (412, "invalid_request_error"),
        (422, "invalid_request_error"),
        (503, "api_error"),
    ):
        emulator.fail_requests("GET", "/v1/agents", status)
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.beta.agents.list()
        assert raised.value.body["error"]["type"] == expected, status  # type: ignore[index]
