"""``OpenAIAgents``: the OpenAI Agents API provider for the drivers."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import requests

from req_managed_agents._redact import Secret
from req_managed_agents.errors import ConfigurationError, ManagedAgentsError
from req_managed_agents.providers._base import (
    CreateToken,
    Opening,
    Origin,
    ProviderBase,
    check_options,
    handle_id,
)
from req_managed_agents.providers.openai._client import OpenAIClient
from req_managed_agents.providers.openai._conversation import PROVIDER_NAME, OpenAIConversation
from req_managed_agents.providers.openai._feed import Opened, opening
from req_managed_agents.providers.openai._options import OPTIONS, SESSION_OPTIONS
from req_managed_agents.transport._config import (
    check_client_limits,
    credential,
    required_setting,
    setting,
    text_setting,
    url_setting,
)

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_ENVIRONMENT", "DEFAULT_IDLE_TIMEOUT", "OpenAIAgents"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Tools that run here need no sandbox at the service: sessions run without one unless told.
DEFAULT_ENVIRONMENT: Mapping[str, Any] = {"type": "none"}
# Silence (no event) after which the stream is reconnected and caught up.
DEFAULT_IDLE_TIMEOUT = 60.0


class OpenAIAgents(ProviderBase):
    """OpenAI's Agents API (``OpenAI-Beta: agents=v1``).

    The API key comes from ``api_key`` or ``OPENAI_API_KEY``; the base URL from
    ``base_url``, ``OPENAI_BASE_URL`` or the public API; ``organization`` and ``project``
    (sent as ``OpenAI-Organization``/``OpenAI-Project``) from ``OPENAI_ORG_ID`` and
    ``OPENAI_PROJECT_ID`` when not given. ``.client`` is the API client (agents, sessions,
    events, items, turns, subagents). Thread-safe; share one instance.

    Driver options (``**connect`` of ``run_to_completion`` / ``Session``): ``agent_id`` (or
    ``agent=``: a provisioned handle, or a mapping of the agent's fields to override for
    this session - with a ``model`` and no ``agent_id`` it configures the agent alone) and
    ``environment`` (``"none"``, the default: the tools run here; ``"openai_hosted"``; or
    the API's environment mapping) to start a new session, with its ``session_metadata``
    (the session's own ``metadata``), ``spend_control`` (a limit in USD cents),
    ``vault_ids``, ``review`` and ``prompt_cache_options``; or ``session_id`` to resume
    one; ``idle_timeout`` seconds of stream silence before reconnecting (default 60).

    A new session is created with the run's prompt as its input (a session without an
    environment must be), so its first turn starts with it.
    """

    name = PROVIDER_NAME
    label = "OpenAI Agents"
    options = OPTIONS
    session_options = SESSION_OPTIONS

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        organization: str | None = None,
        project: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        check_client_limits(timeout, max_retries)
        what = "OpenAI API key"
        key = Secret(credential(required_setting(api_key, "OPENAI_API_KEY", what), what))
        url = url_setting(base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        org = text_setting(organization, "OPENAI_ORG_ID")
        proj = text_setting(project, "OPENAI_PROJECT_ID")
        self.client = OpenAIClient(
            key,
            base_url=url,
            timeout=timeout,
            max_retries=max_retries,
            organization=credential(org, "organization") if org else None,
            project=credential(proj, "project") if proj else None,
            http=http,
        )

    def __repr__(self) -> str:
        return f"OpenAIAgents(base_url={self.client.base_url!r}, api_key=***)"

    def open_conversation(self, options: Mapping[str, Any], opening: Opening) -> OpenAIConversation:
        """Create a session with the run's first prompt as its input (or reattach to
        ``session_id``, or adopt the one an earlier attempt created with the opening's
        create token) and attach its event stream."""
        check_options(options, self.options, self.label)
        idle_timeout = setting(options.get("idle_timeout"), None, DEFAULT_IDLE_TIMEOUT, float)
        if idle_timeout <= 0:
            raise ConfigurationError("idle_timeout must be positive")
        telemetry_metadata, token = opening.telemetry_metadata, opening.create_token
        session_id = opening.resume or options.get("session_id")
        created_with: str | None = None
        opened: Opened | None = None
        origin: Origin = "reattached"
        if not session_id and token is not None and token.look_since is not None:
            agent_id, _ = _agent(options)
            found = self.client.find_created_session(token.value, agent_id, telemetry_metadata)
            if found is not None:
                session_id, origin = str(found["id"]), "adopted"
        if not session_id:
            session_id, opened = self._create(
                options, opening.prompt, idle_timeout, opening.cancelled, telemetry_metadata, token
            )
            created_with, origin = opening.prompt, "created"
        return OpenAIConversation(
            self.client,
            str(session_id),
            resumed=origin != "created",
            origin=origin,
            created_with=created_with,
            idle_timeout=idle_timeout,
            on_event=opening.on_event,
            metadata=opening.metadata,
            telemetry_metadata=telemetry_metadata,
            on_text=opening.on_text,
            cancelled=opening.cancelled,
            provider_name=self.name,
            opened=opened,
        )

    def _create(
        self,
        options: Mapping[str, Any],
        prompt: str | None,
        idle_timeout: float,
        cancelled: threading.Event | None,
        telemetry_metadata: Mapping[str, Any],
        create_token: CreateToken | None,
    ) -> tuple[str, Opened | None]:
        """Create the session: with ``prompt`` as its input, streaming its events from its
        creation on (the stream, read up to the event naming it, goes to the feed); without
        one, idle. A create whose stream broke before naming the session is looked up by
        its token; found, the feed catches it up."""
        agent_id, overrides = _agent(options)
        extra = {
            name: options[option]
            for option, name in self.session_options.items()
            if options.get(option) is not None
        }
        environment = options.get("environment") or DEFAULT_ENVIRONMENT
        if create_token is not None:
            extra["create_token"] = create_token.value
        try:
            if prompt is None:
                session = self.client.create_session(
                    environment,
                    agent_id=agent_id,
                    agent=overrides,
                    telemetry_metadata=telemetry_metadata,
                    **extra,
                )
                return str(session["id"]), None
            token, made = self.client.stream_new_session(
                environment,
                input=prompt,
                idle_timeout=idle_timeout,
                cancelled=cancelled,
                agent_id=agent_id,
                agent=overrides,
                telemetry_metadata=telemetry_metadata,
                **extra,
            )
        except ValueError as exc:
            if isinstance(exc, ConfigurationError):
                raise
            raise ConfigurationError(f"session option {exc}") from None
        if isinstance(made, dict):
            return str(made["id"]), None
        try:
            return opening(made, idle_timeout)
        except ManagedAgentsError:
            found = self.client.find_created_session(token, agent_id, telemetry_metadata)
            if found is None:
                raise
            return str(found["id"]), None


def _agent(options: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any] | None]:
    """The saved agent's id and the session's overrides of it, from ``agent_id`` and
    ``agent`` (a provisioned handle carries the id; a mapping without one is overrides)."""
    agent = options.get("agent")
    agent_id = options.get("agent_id")
    overrides: Mapping[str, Any] | None = None
    if isinstance(agent, Mapping) and not handle_id(agent, "agent_id"):
        overrides = agent
    elif agent is not None and not agent_id:
        agent_id = agent if isinstance(agent, str) else handle_id(agent, "agent_id", "id")
    if not agent_id and not (overrides and overrides.get("model")):
        raise ConfigurationError(
            "starting an OpenAI Agents session needs agent_id= (or agent=: a provisioned "
            "handle, or the agent's fields with a model)"
        )
    return (str(agent_id) if agent_id else None), overrides
