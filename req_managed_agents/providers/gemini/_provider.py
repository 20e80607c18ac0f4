"""``GeminiManagedAgents``: Gemini Managed Agents (the Interactions API) for the drivers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import requests

from req_managed_agents._redact import Secret, get_logger
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers._base import Opening, ProviderBase, check_options, handle_id
from req_managed_agents.providers.gemini._client import API_REVISION, API_VERSION, GeminiClient
from req_managed_agents.providers.gemini._conversation import (
    PROVIDER_NAME,
    GeminiConversation,
    open_interaction,
)
from req_managed_agents.providers.gemini._events import user_input
from req_managed_agents.providers.gemini._options import CREATE_OPTIONS, OPTIONS, SESSION_OPTIONS
from req_managed_agents.providers.gemini.api._interactions import checked_labels
from req_managed_agents.transport._config import (
    check_client_limits,
    credential,
    setting,
    text_setting,
    url_setting,
)

__all__ = [
    "CREATE_TOKEN_LABEL",
    "DEFAULT_BASE_URL",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONTINUATIONS",
    "GeminiManagedAgents",
]

_log = get_logger(__name__)

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
# Silence (no event) after which the stream is resumed.
DEFAULT_IDLE_TIMEOUT = 60.0
# ``requires_continuation`` hops continued within one turn before it is given up on.
DEFAULT_MAX_CONTINUATIONS = 20
# The label under which a keyed run's create token goes on the chain's first interaction.
CREATE_TOKEN_LABEL = "rma_create"


class GeminiManagedAgents(ProviderBase):
    """Gemini Managed Agents on the Gemini API (the Interactions API).

    The API key comes from ``api_key``, else ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY`` (as
    ``google-genai`` reads them), sent as ``x-goog-api-key``; the base URL from ``base_url``,
    ``GOOGLE_GEMINI_BASE_URL`` or the public API. ``api_version`` is the path's version:
    ``v1`` by default, what ``google-genai`` 3.x sends (the REST docs show ``v1beta``);
    ``api_revision`` the ``Api-Revision`` header pinning the schema (``None``: not sent).
    ``.client`` is the API client (interactions, agents, environments). Thread-safe; share
    one instance.

    Driver options (``**connect`` of ``run_to_completion`` / ``Session``): ``agent`` (an
    agent's id - a custom one or a Google agent such as ``deep-research-pro-preview-12-2025``
    - or a provisioned handle) to start a conversation, with the create fields
    ``agent_config``, ``environment``, ``system_instruction``, ``labels``,
    ``service_tier``, ``store``, ``webhook_config`` and ``tools`` (the Gemini tools each
    interaction declares; by default the handler's functions); or ``interaction_id`` - the
    newest interaction of a conversation, its ``SessionResult.session_id`` - to continue
    one. ``idle_timeout``: seconds of stream silence before resuming (default 60);
    ``max_continuations``: ``requires_continuation`` hops continued per turn (default 20).

    A conversation is a chain of interactions: each input makes a new one, and its id is
    the conversation's from then on (:class:`GeminiConversation`). A keyed run's first
    interaction carries its create token as the label ``rma_create``; the API lists no
    interactions, so a create lost before its stream named the interaction cannot be found
    again - a later attempt creates another.
    """

    name = PROVIDER_NAME
    label = "Gemini Managed Agents"
    options = OPTIONS
    session_options = SESSION_OPTIONS

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        api_version: str = API_VERSION,
        api_revision: str | None = API_REVISION,
        timeout: float = 60.0,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        check_client_limits(timeout, max_retries)
        found = text_setting(api_key, "GOOGLE_API_KEY") or text_setting(None, "GEMINI_API_KEY")
        if not found:
            raise ConfigurationError(
                "no Gemini API key: pass it explicitly or set GOOGLE_API_KEY or GEMINI_API_KEY"
            )
        key = Secret(credential(found, "Gemini API key"))
        if not isinstance(api_version, str) or not api_version.strip("/ "):
            raise ConfigurationError(f"api_version must name a version, got {api_version!r}")
        self.client = GeminiClient(
            key,
            base_url=url_setting(base_url, "GOOGLE_GEMINI_BASE_URL", DEFAULT_BASE_URL),
            api_version=api_version.strip("/ "),
            api_revision=api_revision,
            timeout=timeout,
            max_retries=max_retries,
            http=http,
        )

    def __repr__(self) -> str:
        return f"GeminiManagedAgents(base_url={self.client.base_url!r}, api_key=***)"

    def open_conversation(self, options: Mapping[str, Any], opening: Opening) -> GeminiConversation:
        """Continue the chain ``interaction_id`` names, or create its first interaction with
        the run's first prompt, streamed, read until it is named."""
        check_options(options, self.options, self.label)
        idle_timeout = setting(options.get("idle_timeout"), None, DEFAULT_IDLE_TIMEOUT, float)
        if idle_timeout <= 0:
            raise ConfigurationError("idle_timeout must be positive")
        continuations = options.get("max_continuations", DEFAULT_MAX_CONTINUATIONS)
        if (
            isinstance(continuations, bool)
            or not isinstance(continuations, int)
            or continuations < 0
        ):
            raise ConfigurationError("max_continuations must be a non-negative integer")
        head = opening.resume or options.get("interaction_id")
        base = _base(options, opening.handler_tools) if not head else {}
        common: dict[str, Any] = {
            "idle_timeout": idle_timeout,
            "max_continuations": continuations,
            "on_event": opening.on_event,
            "metadata": opening.metadata,
            "telemetry_metadata": opening.telemetry_metadata,
            "on_text": opening.on_text,
            "moved": opening.moved,
        }
        if head:
            if not isinstance(head, str):
                raise ConfigurationError("interaction_id must be a string")
            base = _base(options, opening.handler_tools, required=False)
            return GeminiConversation(self.client, head, base=base, origin="reattached", **common)
        prompt = opening.prompt
        if not prompt:
            raise ConfigurationError("a Gemini conversation starts with a prompt")
        token = opening.create_token
        first = {**base, "input": user_input(prompt)}
        if token is not None:
            if token.look_since is not None:
                _log.info(
                    "an earlier attempt's interaction (label %s=%s) cannot be looked for: the "
                    "API lists no interactions; creating another",
                    CREATE_TOKEN_LABEL,
                    token.value,
                )
            first["labels"] = {**base.get("labels", {}), CREATE_TOKEN_LABEL: token.value}
        opened = open_interaction(
            self.client,
            first,
            idle_timeout=idle_timeout,
            cancelled=opening.cancelled,
            telemetry_metadata=opening.telemetry_metadata,
        )
        return GeminiConversation(
            self.client,
            opened.interaction_id,
            base=base,
            origin="created",
            opened=opened,
            created_with=prompt,
            **common,
        )


def _base(
    options: Mapping[str, Any],
    handler_tools: Sequence[Mapping[str, Any]] | None,
    *,
    required: bool = True,
) -> dict[str, Any]:
    """What every create of the chain carries but its input: the agent, the create options,
    the tools (by default the handler's functions)."""
    agent = options.get("agent")
    agent_id = agent if isinstance(agent, str) else handle_id(agent, "agent_id", "id", "name")
    if not agent_id:
        if required:
            raise ConfigurationError(
                "starting a Gemini conversation needs agent= (an agent id or a provisioned "
                "handle); continuing one needs interaction_id="
            )
        raise ConfigurationError(
            "continuing a Gemini conversation needs agent= too: every interaction names its agent"
        )
    body: dict[str, Any] = {"agent": agent_id}
    for option in CREATE_OPTIONS:
        if options.get(option) is not None:
            body[option] = options[option]
    if options.get("labels") is not None:
        try:
            body["labels"] = checked_labels(options["labels"])
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
    tools = options.get("tools")
    if tools is None and handler_tools:
        tools = [_function(tool) for tool in handler_tools]
    if tools is not None:
        body["tools"] = [dict(tool) for tool in tools]
    return body


def _function(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A handler tool's declaration as a Gemini function tool."""
    function: dict[str, Any] = {"type": "function", "name": tool["name"]}
    if tool.get("description"):
        function["description"] = tool["description"]
    if tool.get("input_schema") is not None:
        function["parameters"] = tool["input_schema"]
    return function
