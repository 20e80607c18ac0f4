"""``BedrockAgentCore``: the AWS Bedrock AgentCore Harness provider for the drivers."""

from __future__ import annotations

import hashlib
import re
import uuid
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers._base import (
    Opening,
    Origin,
    ProviderBase,
    check_options,
    handle_id,
)
from req_managed_agents.providers.agentcore._client import AgentCoreClient
from req_managed_agents.providers.agentcore._conversation import (
    PROVIDER_NAME,
    AgentCoreConversation,
)
from req_managed_agents.providers.agentcore._options import OPTIONS
from req_managed_agents.providers.agentcore._tools import as_tools, merged_tools
from req_managed_agents.providers.agentcore.api._endpoints import check_endpoint_name
from req_managed_agents.transport._aws import (
    AwsSigner,
    load_botocore,
    resolve_credentials,
    resolve_region,
)
from req_managed_agents.transport._config import setting, text_setting

__all__ = ["DEFAULT_IDLE_TIMEOUT", "SIGNING_NAME", "BedrockAgentCore", "new_runtime_session_id"]

# Both AgentCore planes are signed for this service.
SIGNING_NAME = "bedrock-agentcore"

DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_INVOKE_RETRIES = 2
# AgentCore requires runtime session ids of 33 to 100 characters of this shape.
RUNTIME_SESSION_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{32,99}$")


def new_runtime_session_id(token: str | None = None) -> str:
    """A fresh runtime session id in the shape AgentCore requires; with a keyed run's
    create ``token``, always the same one for it (the caller names AgentCore sessions)."""
    if token is None:
        return f"rma-{uuid.uuid4().hex}"
    return f"rma-{hashlib.sha256(token.encode('utf-8', 'surrogatepass')).hexdigest()[:40]}"


class BedrockAgentCore(ProviderBase):
    """AWS Bedrock AgentCore Harness (``InvokeHarness`` over SigV4-signed event streams).

    Credentials and region come from botocore's standard chain unless given: environment,
    shared config and ``profile``, SSO, container and instance roles; temporary credentials
    refresh by themselves. A missing or broken profile or an unreadable config file raises
    :class:`ConfigurationError` naming the profile and the files read, as do credentials
    that fail to refresh. ``endpoint_url`` / ``control_endpoint_url`` override the data and
    control plane hosts (also ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE`` and
    ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL``). ``timeout`` bounds each control-plane
    request. ``idle_timeout`` (the longest silence tolerated inside a streamed invocation) is
    a session option, as on every provider; the constructor's is deprecated.
    Needs the ``[aws]`` extra.

    Driver options: ``harness_arn`` (or ``harness=`` handle), ``runtime_session_id``
    (generated when omitted; passing one reattaches to that session), the per-invocation
    limits ``timeout_seconds``, ``max_iterations``, ``max_tokens``, and ``system_prompt``,
    ``model`` (an id or a model config), ``tools`` (a ``Tools`` registry or declarations, sent
    as ``inline_function`` tools, with the harness's deployed tools unless
    ``harness_tools=False``), ``allowed_tools``, ``actor_id``, ``qualifier`` (the harness
    endpoint invoked; a ``harness=`` handle's ``endpoint_name`` by default),
    ``runtime_user_id`` (sent as the runtime user header), ``idle_timeout``,
    ``invoke_retries`` (default 2).
    """

    name = PROVIDER_NAME
    label = "Bedrock AgentCore"
    options = OPTIONS

    def __init__(
        self,
        region: str | None = None,
        *,
        credentials: Any = None,
        profile: str | None = None,
        endpoint_url: str | None = None,
        control_endpoint_url: str | None = None,
        timeout: float = 60.0,
        idle_timeout: float | None = None,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        if idle_timeout is None:
            idle_timeout = DEFAULT_IDLE_TIMEOUT
        else:
            warnings.warn(
                "BedrockAgentCore(idle_timeout=...) is deprecated: pass idle_timeout= to the "
                "session (run_to_completion, Session), as on every other provider",
                DeprecationWarning,
                stacklevel=2,
            )
        if timeout <= 0 or idle_timeout <= 0:
            raise ConfigurationError("timeout and idle_timeout must be positive")
        botocore = load_botocore()
        aws_credentials, session = resolve_credentials(credentials, profile, botocore)
        resolved_region = resolve_region(region, session, profile, botocore)
        data_url = text_setting(
            endpoint_url,
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE",
            f"https://bedrock-agentcore.{resolved_region}.amazonaws.com",
        )
        control_url = text_setting(
            control_endpoint_url,
            "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL",
            f"https://bedrock-agentcore-control.{resolved_region}.amazonaws.com",
        )
        self.client = AgentCoreClient(
            AwsSigner(aws_credentials, resolved_region, botocore, SIGNING_NAME),
            data_url=str(data_url),
            control_url=str(control_url),
            timeout=timeout,
            idle_timeout=idle_timeout,
            max_retries=max_retries,
            http=http,
        )

    def __repr__(self) -> str:
        return f"BedrockAgentCore(region={self.client.region!r}, credentials=***)"

    def open_conversation(
        self, options: Mapping[str, Any], opening: Opening
    ) -> AgentCoreConversation:
        """Prepare a runtime session. With local tools, the harness is read (once per client)
        so its deployed tools are sent with them; nothing is invoked until the first prompt."""
        check_options(options, self.options, self.label)
        create_token = opening.create_token
        harness = options.get("harness")
        harness_arn = options.get("harness_arn") or (
            handle_id(harness, "harness_arn", "arn") if harness else None
        )
        if not harness_arn:
            raise ConfigurationError("an AgentCore session needs harness_arn= (or harness=)")
        reattached = opening.resume or options.get("runtime_session_id")
        token = create_token.value if create_token else None
        runtime_session_id = reattached or new_runtime_session_id(token)
        origin: Origin = "reattached" if reattached else "created"
        if not reattached and create_token is not None and create_token.look_since is not None:
            origin = "adopted"  # the same id an earlier attempt used
        if not RUNTIME_SESSION_ID.fullmatch(str(runtime_session_id)):
            raise ConfigurationError(
                "runtime_session_id must be 33-100 letters, digits, '-' or '_', "
                "starting with a letter or digit"
            )
        idle_timeout = setting(options.get("idle_timeout"), None, self.client.idle_timeout, float)
        retries = setting(options.get("invoke_retries"), None, DEFAULT_INVOKE_RETRIES, int)
        if idle_timeout <= 0 or retries < 0:
            raise ConfigurationError("idle_timeout must be positive, invoke_retries >= 0")
        qualifier = options.get("qualifier") or (
            handle_id(harness, "endpoint_name") if harness else None
        )
        if qualifier is not None:
            check_endpoint_name(qualifier)
        runtime_user_id = options.get("runtime_user_id")
        if runtime_user_id is not None and (
            not isinstance(runtime_user_id, str) or not runtime_user_id.strip()
        ):
            raise ConfigurationError("runtime_user_id must be a non-empty string")
        harness_tools = options.get("harness_tools", True)
        if not isinstance(harness_tools, bool):
            raise ConfigurationError(f"harness_tools must be True or False, got {harness_tools!r}")
        request_options = _request_options(options, opening.handler_tools)
        if request_options.get("tools") and harness_tools:
            deployed = self.client.cached_harness(str(harness_arn)).get("tools")
            request_options["tools"] = merged_tools(
                deployed if isinstance(deployed, list) else [], request_options["tools"]
            )
        return AgentCoreConversation(
            self.client,
            str(harness_arn),
            str(runtime_session_id),
            request_options=request_options,
            idle_timeout=idle_timeout,
            invoke_retries=retries,
            qualifier=qualifier,
            on_event=opening.on_event,
            metadata=opening.metadata,
            telemetry_metadata=opening.telemetry_metadata,
            origin=origin,
            on_text=opening.on_text,
            runtime_user_id=runtime_user_id,
        )


def _request_options(
    options: Mapping[str, Any], handler_tools: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The optional ``InvokeHarness`` members; absent options are omitted, never null.
    Without ``tools=``, the handler's own tools are declared, if it has them."""
    body: dict[str, Any] = {}
    for option, member in (
        ("timeout_seconds", "timeoutSeconds"),
        ("max_iterations", "maxIterations"),
        ("max_tokens", "maxTokens"),
    ):
        value = options.get(option)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigurationError(f"{option} must be a positive integer")
            body[member] = value
    system_prompt = options.get("system_prompt")
    if system_prompt:
        body["systemPrompt"] = (
            [{"text": system_prompt}] if isinstance(system_prompt, str) else list(system_prompt)
        )
    model = options.get("model")
    if model:
        body["model"] = (
            {"bedrockModelConfig": {"modelId": model}} if isinstance(model, str) else dict(model)
        )
    tools = options.get("tools")
    if tools is None and handler_tools:
        tools = handler_tools
    if tools is not None:
        body["tools"] = as_tools(tools)
    if options.get("allowed_tools") is not None:
        body["allowedTools"] = list(options["allowed_tools"])
    if options.get("actor_id"):
        body["actorId"] = str(options["actor_id"])
    return body
