"""``ClaudeManagedAgentsBedrock``: Claude Managed Agents served by Amazon Bedrock.

The protocol is the Claude one (the same paths, beta, events and stream), so this provider
is :class:`~req_managed_agents.providers.ClaudeManagedAgents` with another way in: the base
URL is ``https://bedrock.{region}.amazonaws.com/anthropic`` (``base_url`` or
``ANTHROPIC_BEDROCK_BASE_URL`` replaces all of it, as in the official SDK), every request
(the long-lived stream too) is signed with SigV4 for service ``bedrock`` - or carries a
Bedrock API key as ``Authorization: Bearer`` (``api_key`` or ``AWS_BEARER_TOKEN_BEDROCK``;
the two are exclusive) - and sessions take Bedrock's own options.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import requests
from typing_extensions import TypedDict

from req_managed_agents._redact import Secret
from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers.claude._bedrock_client import ClaudeBedrockClient
from req_managed_agents.providers.claude._client import ANTHROPIC_VERSION, MANAGED_AGENTS_BETA
from req_managed_agents.providers.claude._provider import ClaudeManagedAgents
from req_managed_agents.transport._aws import (
    AwsSigner,
    load_botocore,
    resolve_credentials,
    resolve_region,
)
from req_managed_agents.transport._config import (
    check_client_limits,
    credential,
    text_setting,
    url_setting,
)

__all__ = ["BEDROCK_OPTIONS", "SIGNING_NAME", "ClaudeBedrockOptions", "ClaudeManagedAgentsBedrock"]

SIGNING_NAME = "bedrock"
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d")


class ClaudeBedrockOptions(TypedDict, total=False):
    """Connect options of a Claude session on Amazon Bedrock."""

    agent_id: str
    agent: Any  # a provisioned handle, an agent reference mapping, or an id
    agent_version: int
    environment_id: str  # the ARN of the sandbox the built-in tools run in
    session_id: str
    idle_timeout: float
    resources: Sequence[Mapping[str, Any]]
    session_metadata: Mapping[str, str]
    title: str
    budget: Mapping[str, Any]
    initial_events: Sequence[Mapping[str, Any]]
    working_directory: str  # where the built-in tools start, an absolute path
    execution_identity: Any  # {"type": "aws_role", "role_arn": ...} or a role ARN


BEDROCK_OPTIONS = frozenset(ClaudeBedrockOptions.__annotations__)
_SESSION_OPTIONS = {
    "resources": "resources",
    "session_metadata": "metadata",
    "title": "title",
    "budget": "budget",
    "initial_events": "initial_events",
    "working_directory": "working_directory",
    "execution_identity": "execution_identity",
}


class ClaudeManagedAgentsBedrock(ClaudeManagedAgents):
    """Claude Managed Agents on Amazon Bedrock (beta ``managed-agents-2026-04-01``).

    Region and credentials come from botocore's chain, as for ``BedrockAgentCore`` (the
    ``[aws]`` extra): ``region`` or ``AWS_REGION``, ``credentials=`` (a botocore
    ``Credentials`` or a mapping of ``access_key_id`` / ``secret_access_key`` /
    ``session_token``) or ``profile=``; explicit arguments win over the environment, and any
    credential or profile trouble is a :class:`ConfigurationError`, as there. A
    Bedrock API key (``api_key`` or ``AWS_BEARER_TOKEN_BEDROCK``) is sent instead of a
    signature and needs no botocore, but not together with explicit AWS credentials.
    ``.client`` is a :class:`ClaudeBedrockClient`: the Claude control plane over Bedrock,
    its Bedrock-only fields checked before they are sent.

    Driver options: as :class:`ClaudeManagedAgents`, with ``environment_id`` the ARN of a
    sandbox (no ``environment=`` handle, no ``vault_ids``), plus ``working_directory`` and
    ``execution_identity`` (the IAM role the session runs as).
    """

    name = "claude-bedrock"
    options = BEDROCK_OPTIONS
    session_options = _SESSION_OPTIONS
    label = "Claude Managed Agents on Amazon Bedrock"

    def __init__(
        self,
        region: str | None = None,
        *,
        credentials: Any = None,
        profile: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        http: requests.Session | None = None,
    ) -> None:
        check_client_limits(timeout, max_retries)
        explicit_aws = credentials is not None or profile is not None
        if api_key is not None and explicit_aws:
            raise ConfigurationError(
                "api_key (a Bedrock API key) and AWS credentials (credentials=, profile=) are "
                "exclusive: pass one of them"
            )
        if api_key is None and not explicit_aws:
            api_key = os.environ.get("AWS_BEARER_TOKEN_BEDROCK") or None
        key: Secret | None = None
        signer: AwsSigner | None = None
        if api_key is not None:
            key = Secret(credential(api_key, "Bedrock API key"))
            resolved = text_setting(region, "AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            if not resolved:
                raise ConfigurationError("no AWS region: pass region= or set AWS_REGION")
        else:
            botocore = load_botocore()
            aws_credentials, session = resolve_credentials(credentials, profile, botocore)
            resolved = resolve_region(region, session, profile, botocore)
            signer = AwsSigner(aws_credentials, resolved, botocore, SIGNING_NAME)
        if not _REGION.fullmatch(resolved):
            raise ConfigurationError(f"not an AWS region name: {resolved!r}")
        self.region = resolved
        default_url = f"https://bedrock.{resolved}.amazonaws.com/anthropic"
        url = url_setting(base_url, "ANTHROPIC_BEDROCK_BASE_URL", default_url)
        self.client = ClaudeBedrockClient(
            key,
            base_url=url,
            timeout=timeout,
            max_retries=max_retries,
            http=http,
            anthropic_version=ANTHROPIC_VERSION,
            beta=MANAGED_AGENTS_BETA,
            auth_scheme="bearer",
            signer=signer,
        )

    def __repr__(self) -> str:
        return (
            f"ClaudeManagedAgentsBedrock(region={self.region!r}, "
            f"base_url={self.client.base_url!r}, credentials=***)"
        )
