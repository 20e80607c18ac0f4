"""``ClaudeManagedAgents``: the Claude Managed Agents provider for the drivers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import requests

from req_managed_agents._redact import Secret
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers._base import (
    CreateToken,
    Opening,
    Origin,
    ProviderBase,
    check_options,
    handle_id,
    handle_value,
)
from req_managed_agents.providers.claude._client import (
    ANTHROPIC_VERSION,
    MANAGED_AGENTS_BETA,
    AuthScheme,
    ClaudeClient,
)
from req_managed_agents.providers.claude._conversation import PROVIDER_NAME, ClaudeConversation
from req_managed_agents.providers.claude._options import OPTIONS, SESSION_OPTIONS
from req_managed_agents.providers.claude.api._sessions import CREATE_CLOCK_SKEW
from req_managed_agents.transport._config import (
    check_client_limits,
    credential,
    required_setting,
    setting,
    url_setting,
)

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_IDLE_TIMEOUT", "ClaudeManagedAgents"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
# Silence (no event, no heartbeat) after which the stream is reconnected and caught up.
DEFAULT_IDLE_TIMEOUT = 60.0


class ClaudeManagedAgents(ProviderBase):
    """Claude Managed Agents (beta ``managed-agents-2026-04-01``).

    The API key comes from ``api_key`` or ``ANTHROPIC_API_KEY``; the base URL from
    ``base_url``, ``ANTHROPIC_BASE_URL`` or the public API. ``.client`` is the control-plane
    client (agents, environments, sessions, events, files). Thread-safe; share one instance.

    Driver options (``**connect`` of ``run_to_completion`` / ``Session``): ``agent_id`` (or
    ``agent=``: a provisioned handle, which pins the version it was provisioned at, or an
    agent reference such as ``{"type": "agent", "id", "version"}`` or
    ``{"type": "agent_with_overrides", ...}``), ``agent_version`` (pin a version of
    ``agent_id``), and ``environment_id`` (or ``environment=`` handle) to start a new
    session, with its ``vault_ids``, ``resources``, ``session_metadata`` (the session's own
    ``metadata``; ``metadata=`` of the drivers tags ``SessionInfo``), ``title``, ``budget``
    and ``initial_events`` (the first run then follows the work they start, and its prompt,
    if any, comes after); or
    ``session_id`` to resume one; ``idle_timeout`` seconds of stream silence before
    reconnecting (default 60).

    Authentication sends the key as ``x-api-key`` with ``anthropic-version: 2023-06-01``,
    which every Managed Agents page documents; ``auth="bearer"`` sends ``Authorization:
    Bearer`` as the newer SDKs do, and ``anthropic_version=`` changes the version header.
    """

    name = PROVIDER_NAME
    label = "Claude Managed Agents"
    options = OPTIONS
    session_options = SESSION_OPTIONS  # option -> create_session's keyword
    supports_outcomes = True

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        http: requests.Session | None = None,
        anthropic_version: str | None = None,
        beta: str | None = None,
        auth: AuthScheme = "x-api-key",
    ) -> None:
        check_client_limits(timeout, max_retries)
        what = "Anthropic API key"
        key = Secret(credential(required_setting(api_key, "ANTHROPIC_API_KEY", what), what))
        url = url_setting(base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)
        self.client = ClaudeClient(
            key,
            base_url=url,
            timeout=timeout,
            max_retries=max_retries,
            http=http,
            anthropic_version=anthropic_version or ANTHROPIC_VERSION,
            beta=beta or MANAGED_AGENTS_BETA,
            auth_scheme=auth,
        )

    @classmethod
    def with_client(cls, client: ClaudeClient) -> ClaudeManagedAgents:
        """The provider over an existing client: its URL, credential, timeouts and pool.

        For a client made another way than the constructor makes one - say the one
        ``client.for_work_item(item)`` returns, which acts with a work item's sessions token
        and shares the worker's connection pool. Closing the provider closes ``client`` (a
        client from ``with_bearer`` leaves its parent's pool open). Only this class has it:
        a subclass keeps more state than a client.
        """
        if cls is not ClaudeManagedAgents:
            raise ConfigurationError(f"{cls.__name__}.with_client is not offered")
        if not isinstance(client, ClaudeClient):
            raise ConfigurationError(
                f"with_client takes a ClaudeClient, not {type(client).__name__}"
            )
        provider = cls.__new__(cls)
        provider.client = client
        return provider

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.client.base_url!r}, api_key=***)"

    def open_conversation(self, options: Mapping[str, Any], opening: Opening) -> ClaudeConversation:
        """Create a session (or reattach to ``session_id``, or adopt the one an earlier
        attempt created with the opening's create token) and attach its event stream."""
        check_options(options, self.options, self.label)
        idle_timeout = setting(options.get("idle_timeout"), None, DEFAULT_IDLE_TIMEOUT, float)
        if idle_timeout <= 0:
            raise ConfigurationError("idle_timeout must be positive")
        session_id = opening.resume or options.get("session_id")
        origin: Origin = "reattached"
        resumed = True
        if not session_id:
            agent, environment_id = _references(options)
            extra = {
                name: options[option]
                for option, name in self.session_options.items()
                if options.get(option) is not None
            }
            token = opening.create_token
            found = self._created_before(token, agent, opening.telemetry_metadata)
            if found is not None:
                session_id, origin = found, "adopted"
            else:
                try:
                    session = self.client.create_session(
                        agent,
                        environment_id,
                        create_token=token.value if token else None,
                        telemetry_metadata=opening.telemetry_metadata,
                        **extra,
                    )
                except ValueError as exc:
                    if isinstance(exc, ConfigurationError):
                        raise
                    raise ConfigurationError(f"session option {exc}") from None
                session_id, origin = session["id"], "created"
                # Initial events start work before the stream is attached: read the session
                # back as a resumed one, whose history holds what they did so far.
                resumed = bool(extra.get("initial_events"))
        return ClaudeConversation(
            self.client,
            str(session_id),
            resumed=resumed,
            idle_timeout=idle_timeout,
            on_event=opening.on_event,
            metadata=opening.metadata,
            telemetry_metadata=opening.telemetry_metadata,
            on_text=opening.on_text,
            cancelled=opening.cancelled,
            provider_name=self.name,
            origin=origin,
        )

    def _created_before(
        self,
        token: CreateToken | None,
        agent: str | Mapping[str, Any],
        telemetry_metadata: Mapping[str, Any],
    ) -> str | None:
        """The session an earlier attempt created with ``token``, if there is one."""
        if token is None or token.look_since is None:
            return None
        since = datetime.fromtimestamp(token.look_since, timezone.utc) - CREATE_CLOCK_SKEW
        agent_id = agent if isinstance(agent, str) else str(agent.get("id"))
        found = self.client.find_created_session(
            token.value, since, telemetry_metadata, agent_id=agent_id
        )
        return str(found["id"]) if found is not None else None


def _references(options: Mapping[str, Any]) -> tuple[str | dict[str, Any], str]:
    """The agent reference and environment id of a new session, from explicit ids, an agent
    reference or handles (a provisioned handle carries both, and the agent's version)."""
    agent = options.get("agent")
    agent_id, environment_id = _ids(options)
    version = options.get("agent_version")
    if version is None and agent is not None and not options.get("agent_id"):
        if isinstance(agent, Mapping) and agent.get("type") in _AGENT_REFERENCES:
            return dict(agent), environment_id  # a reference, as the API takes it
        version = handle_value(agent, "version")
    if version is None:
        return agent_id, environment_id
    return {"type": "agent", "id": agent_id, "version": version}, environment_id


_AGENT_REFERENCES = frozenset({"agent", "agent_with_overrides"})


def _ids(options: Mapping[str, Any]) -> tuple[str, str]:
    """Agent and environment ids from explicit ids or handles (a provisioned handle may
    carry both)."""
    agent = options.get("agent")
    environment = options.get("environment")
    agent_id = options.get("agent_id") or (handle_id(agent, "agent_id", "id") if agent else None)
    environment_id = options.get("environment_id") or (
        handle_id(environment, "environment_id", "id")
        if environment
        else handle_id(agent, "environment_id")
        if agent
        else None
    )
    if not agent_id:
        raise ConfigurationError("starting a Claude session needs agent_id= (or agent=)")
    if not environment_id:
        raise ConfigurationError(
            "starting a Claude session needs environment_id= (or environment=)"
        )
    return str(agent_id), str(environment_id)
