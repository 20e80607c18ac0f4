"""Every route the ``openai`` SDK calls gets the OpenAI emulator's answer for it: a route it
serves is served, one it does not (environments, automations, vaults, a session's artifacts
and traces) is a 404 ``Invalid URL``, as the service answers an unknown route - never taken
for a route it serves ("No agent found with id 'environments'").

The routes are read from the SDK's own resources, so a route a new SDK adds lands in one of
the two kinds here and is checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")

import requests  # noqa: E402
from openai.types.shared import ErrorObject  # noqa: E402

from req_managed_agents.testing import OpenAIAgentsEmulator  # noqa: E402
from tests.support.openai_api import api_headers  # noqa: E402
from tests.support.sdk import check_strictly  # noqa: E402

# What the emulator does not serve, by path prefix (the rest of the Agents API it does).
UNSERVED = (
    "/agents/environments",
    "/agents/automations",
    "/vaults",
    "/agents/sessions/{session_id}/artifacts",
    "/agents/sessions/{session_id}/traces",
)
_CALL = re.compile(
    r'self\._(get|post|put|patch|delete)(?:_api_list)?\(\s*(?:path_template\(\s*)?"(/[^"]*)"'
)


@pytest.fixture(scope="module")
def emulator() -> Iterator[OpenAIAgentsEmulator]:
    with OpenAIAgentsEmulator(ping_interval=5.0) as started:
        yield started


def sdk_routes() -> list[tuple[str, str]]:
    """``(method, path template)`` of every call the SDK's Agents resources make."""
    root = Path(openai.__file__).parent / "resources" / "beta" / "agents"
    found = {
        (method.upper(), path)
        for module in root.rglob("*.py")
        for method, path in _CALL.findall(module.read_text())
    }
    return sorted(found, key=lambda route: (route[1], route[0]))


def test_the_sdk_routes_are_read() -> None:
    routes = sdk_routes()
    assert ("GET", "/agents/{agent_id}") in routes
    assert ("POST", "/agents/environments") in routes
    assert ("GET", "/agents/sessions/{session_id}/turns/{turn_id}/items") in routes


@pytest.mark.parametrize(("method", "template"), sdk_routes())
def test_each_sdk_route_is_served_or_unknown(
    emulator: OpenAIAgentsEmulator, method: str, template: str
) -> None:
    ids = set(re.findall(r"{(\w+)}", template))
    path = template.format(**{name: f"{name}_never_made" for name in ids})
    answer = requests.request(
        method,
        emulator.base_url + path,
        headers=api_headers(emulator),
        json={} if method in ("POST", "PUT", "PATCH") else None,
        timeout=5,
        stream=True,  # a served stream would not end
    )
    status, body = answer.status_code, _body(answer)
    answer.close()
    if template.startswith(UNSERVED):
        assert status == 404, (status, body)
        error = check_strictly(ErrorObject, body["error"], f"{method} {template}")
        assert error.message == f"Invalid URL ({method} /v1{path})"
        assert (error.type, error.code) == ("invalid_request_error", None)
        return
    assert status < 500, (status, body)
    if status == 404:  # a served route, with ids it does not know: it names one of them
        message = body["error"]["message"]
        assert "Invalid URL" not in message
        assert any(f"{name}_never_made" in message for name in ids), message


def _body(answer: requests.Response) -> Any:
    if answer.headers.get("content-type", "").startswith("application/json"):
        return answer.json()
    return None
