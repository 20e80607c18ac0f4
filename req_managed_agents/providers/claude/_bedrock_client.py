"""``ClaudeBedrockClient``: the Claude control plane as Amazon Bedrock serves it.

Bedrock serves agents (and versions), sessions, events, threads, memory stores, memories
and memory versions on the Claude paths, with fields of its own. The checks here catch,
before anything is sent, what Bedrock answers with a 400 - a Claude model name where an
inference profile ID belongs, an agent with no role, the web tools, a URL MCP server, a
roster other than a coordinator, a resource it cannot mount - and the nouns Bedrock does
not have (environments, files, vaults, session resources) fail at once with a
:class:`~req_managed_agents.errors.ConfigurationError` instead of a 404 from the service.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from req_managed_agents.errors import ConfigurationError
from req_managed_agents.providers.claude._client import ClaudeClient
from req_managed_agents.providers.claude.api._core import Json, body_of, id_value
from req_managed_agents.providers.claude.api._environments import EnvironmentsAPI
from req_managed_agents.providers.claude.api._files import FilesAPI
from req_managed_agents.providers.claude.api._sessions import execution_identity_of
from req_managed_agents.providers.claude.api._vaults import VaultsAPI
from req_managed_agents.providers.claude.api._work import WorkAPI

__all__ = ["ClaudeBedrockClient"]

# ``us.anthropic.claude-…``: a geography prefix, then the model.
_PROFILE_ID = re.compile(r"[a-z][a-z-]{0,15}\.anthropic\.[a-z0-9][a-z0-9.:-]*")
_GATEWAY_ARN = re.compile(r"arn:aws[a-z-]*:bedrock-agentcore:[a-z0-9-]+:\d{12}:gateway/\S+")
_TOOL_TYPES = ("agent_toolset_20260401", "mcp_toolset", "custom", "memory_toolset_20261030")
_WEB_TOOLS = ("web_fetch", "web_search")
_SKILL_TYPES = ("sandbox_path", "s3_mount")
_MEMORY_BACKENDS = ("managed",)
_NOT_ON_BEDROCK = "Claude Managed Agents on Amazon Bedrock has no {noun}"
_Client = TypeVar("_Client", bound=ClaudeClient)


def _model(value: Any) -> None:
    model_id = value.get("id") if isinstance(value, Mapping) else value
    if not isinstance(model_id, str) or not _PROFILE_ID.fullmatch(model_id):
        raise ValueError(
            f"model must be a Bedrock inference profile ID with a geography prefix, such as "
            f"'us.anthropic.claude-sonnet-4-6', not {model_id!r}"
        )
    if isinstance(value, Mapping) and set(value) - {"id", "effort"}:
        extra = sorted(set(value) - {"id", "effort"})
        raise ValueError(f"model takes only id and effort on Amazon Bedrock, not {extra}")


def _tools(tools: Any) -> None:
    for index, tool in enumerate(tools or ()):
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind not in _TOOL_TYPES:
            raise ValueError(f"tools[{index}].type must be one of {_TOOL_TYPES}, got {kind!r}")
        for config in tool.get("configs") or ():
            name = config.get("name") if isinstance(config, Mapping) else None
            if kind == "agent_toolset_20260401" and name in _WEB_TOOLS:
                raise ValueError(
                    f"tools[{index}]: {name} is not available on Amazon Bedrock (not even "
                    "disabled); leave it out of configs"
                )


def _mcp_servers(servers: Any) -> None:
    for index, server in enumerate(servers or ()):
        if not isinstance(server, Mapping) or server.get("type") != "aws_agentcore_gateway":
            raise ValueError(
                f"mcp_servers[{index}] must be an AgentCore gateway: "
                "{'type': 'aws_agentcore_gateway', 'name': ..., 'gateway_arn': ...}"
            )
        arn = server.get("gateway_arn")
        if not isinstance(arn, str) or not _GATEWAY_ARN.fullmatch(arn):
            raise ValueError(f"mcp_servers[{index}].gateway_arn must be a gateway ARN, not {arn!r}")


def _skills(skills: Any) -> None:
    for index, skill in enumerate(skills or ()):
        kind = skill.get("type") if isinstance(skill, Mapping) else None
        if kind not in _SKILL_TYPES:
            raise ValueError(
                f"skills[{index}].type must be one of {_SKILL_TYPES} on Amazon Bedrock, "
                f"got {kind!r}"
            )


def _multiagent(value: Any) -> None:
    if value is not None and (not isinstance(value, Mapping) or value.get("type") != "coordinator"):
        raise ValueError("multiagent on Amazon Bedrock must be {'type': 'coordinator', 'agents'}")


_AGENT_FIELDS: dict[str, Callable[[Any], None]] = {
    "model": _model,
    "tools": _tools,
    "mcp_servers": _mcp_servers,
    "skills": _skills,
    "multiagent": _multiagent,
}


def _checked_agent(body: Mapping[str, Any], *, creating: bool) -> Json:
    checked = dict(body)
    for field, check in _AGENT_FIELDS.items():
        if field in checked:
            check(checked[field])
    if creating:
        if "model" not in checked:
            raise ValueError("an agent needs a model (an inference profile ID)")
        if checked.get("execution_identity") is None:
            raise ValueError(
                "an agent on Amazon Bedrock needs an execution_identity: the IAM role its "
                "sessions run as, {'type': 'aws_role', 'role_arn': ...} or a role ARN"
            )
        checked["execution_identity"] = execution_identity_of(checked["execution_identity"])
    elif "execution_identity" in checked:
        raise ValueError("an agent's execution_identity cannot change: create a new agent")
    return checked


def _unserved(name: str, noun: str) -> Callable[..., Any]:
    def unserved(self: object, *args: Any, **kwargs: Any) -> Any:
        raise ConfigurationError(f"{name}: {_NOT_ON_BEDROCK.format(noun=noun)}")

    unserved.__name__ = unserved.__qualname__ = name
    unserved.__doc__ = f"Not on Amazon Bedrock: {_NOT_ON_BEDROCK.format(noun=noun)}."
    return unserved


def _without_unserved(cls: type[_Client]) -> type[_Client]:
    """Replace the methods of the nouns Bedrock does not have with a clear refusal."""
    nouns = (
        (EnvironmentsAPI, "environments"),
        (FilesAPI, "Files API"),
        (VaultsAPI, "vaults"),
        (WorkAPI, "self-hosted environments"),
    )
    for api, noun in nouns:
        for name in [n for n in vars(api) if not n.startswith("_")]:
            setattr(cls, name, _unserved(name, noun))
    for name in ("attach_file", "list_session_resources", "delete_session_resource"):
        setattr(cls, name, _unserved(name, "session resources API"))
    return cls


@_without_unserved
class ClaudeBedrockClient(ClaudeClient):
    """Thread-safe client for Claude Managed Agents on Amazon Bedrock (one pooled session).

    The methods are :class:`~req_managed_agents.providers.claude.ClaudeClient`'s, with the
    Bedrock fields checked locally: agents take an inference profile ID as ``model`` and
    need an ``execution_identity`` (fixed once made), their tools leave out ``web_fetch`` and
    ``web_search``, their MCP servers are AgentCore gateways and their roster a
    ``coordinator``; sessions run in a sandbox ARN with Bedrock's resources (``memory_store``,
    ``s3_mount``, ``s3_object``, ``sandbox_path``) and no vaults; memory stores take a
    ``backend``. Environments (with their work queue), files, vaults and session resources raise
    :class:`~req_managed_agents.errors.ConfigurationError`: Bedrock has none.
    """

    _resource_kinds: ClassVar[Mapping[str, str]] = {
        "memory_store": "memory_store_id",
        "s3_mount": "s3_uri",
        "s3_object": "s3_uri",
        "sandbox_path": "path",
    }

    def create_agent(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/agents``: ``name``, ``model`` and ``execution_identity`` required."""
        return super().create_agent(_checked_agent(body_of(body, fields), creating=True))

    def update_agent(
        self, agent_id: str, body: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Json:
        """Update an agent (a new version); its ``execution_identity`` cannot change."""
        return super().update_agent(agent_id, _checked_agent(body_of(body, fields), creating=False))

    def _check_session(
        self, environment_id: str, vault_ids: Sequence[str] | None, working_directory: str | None
    ) -> None:
        """A session runs in a sandbox (``environment_id`` its ARN), with no vaults."""
        if vault_ids is not None:
            raise ConfigurationError(f"vault_ids: {_NOT_ON_BEDROCK.format(noun='vaults')}")
        if not id_value("environment_id", environment_id).startswith("arn:"):
            raise ValueError(
                f"environment_id on Amazon Bedrock is the ARN of a sandbox, not {environment_id!r}"
            )
        if working_directory is not None and ".." in working_directory.split("/"):
            raise ValueError(f"working_directory must not hold '..': {working_directory!r}")

    def create_memory_store(self, body: Mapping[str, Any] | None = None, /, **fields: Any) -> Json:
        """``POST /v1/memory_stores``; ``backend`` (fixed once made) is ``{"type": "managed"}``
        when left out."""
        body = body_of(body, fields)
        backend = body.get("backend")
        if backend is not None and (
            not isinstance(backend, Mapping) or backend.get("type") not in _MEMORY_BACKENDS
        ):
            raise ValueError(f"backend must be {{'type': 'managed'}} or None, not {backend!r}")
        return super().create_memory_store(body)

    def __repr__(self) -> str:
        return f"ClaudeBedrockClient(base_url={self.base_url!r}, credentials=***)"
