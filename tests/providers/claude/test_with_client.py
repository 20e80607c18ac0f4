"""``ClaudeManagedAgents.with_client``: a provider over a client made another way - the one
acting with a work item's sessions token, sharing the worker's pool - drives a session like
any other, and closing it leaves the parent's pool open."""

from __future__ import annotations

import pytest

from req_managed_agents import ConfigurationError, Session, ToolContext, Tools
from req_managed_agents.providers import ClaudeManagedAgents, ClaudeManagedAgentsBedrock
from req_managed_agents.testing import ClaudeEmulator, Turn, call


def test_a_provider_over_an_items_client_serves_its_session_with_the_items_token() -> None:
    script = [Turn(server_tool_calls=[call("bash", command="echo hi")]), Turn(text="ok")]
    tools = Tools()

    @tools.tool
    def bash(command: str, context: ToolContext) -> str:
        """Stands in for the sandbox."""
        return f"ran {command}"

    with ClaudeEmulator(script, ping_interval=0.2) as emulator, emulator.provider() as owner:
        environment_id = emulator.add_environment("sbx", config={"type": "self_hosted"})
        session = owner.client.create_session(emulator.add_agent(), environment_id)
        queue = owner.client.with_bearer(emulator.environment_key(environment_id))
        item = queue.poll_work(environment_id)
        assert item is not None
        queue.ack_work(environment_id, item["id"])
        item_client = queue.for_work_item(item)
        item_client.heartbeat_work(
            environment_id, item["id"], expected_last_heartbeat="NO_HEARTBEAT"
        )
        owner.client.send_events(
            session["id"], [{"type": "user.message", "content": [{"type": "text", "text": "go"}]}]
        )
        before = len(emulator.requests)
        provider = ClaudeManagedAgents.with_client(item_client)
        assert provider.client is item_client
        with provider, Session(provider, handler=tools, session_id=session["id"]) as driven:
            assert driven.run(None, timeout=10).text == "ok"
        sent = emulator.requests[before:]
        assert sent
        assert all(r.headers.get("authorization", "").startswith("Bearer sesstok_") for r in sent)
        assert "x-api-key" not in {name.lower() for r in sent for name in r.headers}
        # Closing the provider closed only its view: the owner's pool still works.
        assert owner.client.get_session(session["id"])["id"] == session["id"]


def test_with_client_takes_a_claude_client_and_belongs_to_the_claude_provider() -> None:
    with pytest.raises(ConfigurationError, match="ClaudeClient"):
        ClaudeManagedAgents.with_client(object())  # type: ignore[arg-type]
    with (
        ClaudeEmulator() as emulator,
        emulator.provider() as provider,
        pytest.raises(ConfigurationError, match="ClaudeManagedAgentsBedrock"),
    ):
        ClaudeManagedAgentsBedrock.with_client(provider.client)
