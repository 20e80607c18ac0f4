"""The spec file of ``rma provision`` and ``rma teardown``: its documentation and its reader.

The file is checked shape by shape before the provisioner sees it, so a mistake is reported
as the spec member it concerns, never as the Python error it would cause further in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from req_managed_agents.cli._common import CliError
from req_managed_agents.cli._mcp import spec_declarations

__all__ = ["SPEC_HELP", "load_spec"]

SPEC_HELP = """\
spec file (JSON):
  {
    "agent": {                               required
      "name": "support",                     required: the base of the resource name
      "system_prompt": "Be brief.",          default ""
      "model": "claude-sonnet-4-6",          required: a Claude model id; a Bedrock
                                             model id for --provider agentcore; an
                                             inference profile ID (us.anthropic....)
                                             for --provider claude-bedrock
      "tools": [                             default []: the custom tools, run locally
        {"name": "get_weather",
         "description": "Current weather for a city.",
         "input_schema": {"type": "object",
                          "properties": {"city": {"type": "string"}},
                          "required": ["city"]}}
      ],
      "mcp_servers": [                       default []: local MCP servers whose tools
        {"command": "npx",                   the agent also gets (each is started to
         "args": ["-y", "PACKAGE", "DIR"],   list them). Only "command" is required;
         "env": {"TOKEN": "..."},            a run names the same server with --mcp
         "prefix": "files_",                 'CMD ARGS', or --mcp 'JSON' when it has a
         "allow": ["read_text_file"],        prefix, allow or confirm (the same object);
         "confirm": "destructive"}           "never": its destructive tools run unasked
      ],
      "model_config": {"effort": "high"}     default null: more model settings
    },
    "environment": {                         optional (none for claude-bedrock, openai)
      "config": {"type": "cloud"},           default {}: the provider's own environment
                                             config, sent as written
      "runtimes": [                          default []: installed with mise
        {"lang": "python", "version": "3.12.4"}
      ]
    }
  }

  Unknown members are refused. Each tool needs all three of name, description and
  input_schema (a JSON Schema object). Without "environment", a Claude agent gets a
  cloud environment with unrestricted networking. For AgentCore, "config" is the
  CreateHarness "environment" object ({"agentCoreRuntimeEnvironment": {...}}) or
  CreateHarness members such as "environmentVariables"; "model_config" is merged
  into bedrockModelConfig. For OpenAI, "model_config" is merged into the agent (e.g.
  {"reasoning": {"effort": "high"}}), and each session names its environment.

  Resources are named <name>_<digest8> after their content, so provisioning the same
  spec again finds what exists; rma teardown with the same spec (and, for AgentCore,
  the same --execution-role-arn) removes it.
"""

_HINT = "rma provision --help describes the spec file"
_TOP = frozenset({"agent", "environment"})


def load_spec(path: Path) -> tuple[Any, Any]:
    """``(AgentSpec, EnvironmentSpec or None)`` from the spec file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"cannot read the spec {path}: {reason}", hint=_HINT) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CliError(f"the spec {path} is not JSON: {exc}", hint=_HINT) from None
    _check_shapes(path, data)
    from req_managed_agents.provisioner import AgentSpec, EnvironmentSpec

    agent_data = dict(data["agent"])
    servers = agent_data.pop("mcp_servers", None) or []
    try:
        served = spec_declarations('"agent"."mcp_servers"', servers)
    except ValueError as exc:
        raise _bad(path, str(exc)) from None
    if served:
        _refuse_twice(path, [*(agent_data.get("tools") or []), *served])
        agent_data["tools"] = [*(agent_data.get("tools") or []), *served]
    try:
        agent = AgentSpec.from_dict(agent_data)
    except (TypeError, ValueError) as exc:
        raise _bad(path, f'"agent": {exc}') from None
    environment = data.get("environment")
    if environment is None:
        return agent, None
    try:
        return agent, EnvironmentSpec.from_dict(environment)
    except (TypeError, ValueError) as exc:
        raise _bad(path, f'"environment": {exc}') from None


def _refuse_twice(path: Path, tools: list[Any]) -> None:
    """A tool of the spec and an MCP server's tool under one name: the agent could not
    tell them apart."""
    seen: set[str] = set()
    for tool in tools:
        name = tool.get("name")
        if name in seen:
            raise _bad(
                path,
                f'two tools are named {name!r} ("agent"."tools" and "agent"."mcp_servers"); '
                'give the server a "prefix" or leave the tool out with "allow"',
            )
        seen.add(name)


def _bad(path: Path, problem: str) -> CliError:
    return CliError(f"the spec {path} is invalid: {problem}", hint=_HINT)


def _check_shapes(path: Path, data: Any) -> None:
    """Every member of the right JSON type; values are the provisioner's to judge."""
    if not isinstance(data, dict):
        raise _bad(path, 'it must be a JSON object with an "agent" member')
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise _bad(path, f"unknown member(s) {', '.join(map(repr, unknown))}")
    if "agent" not in data:
        raise _bad(path, 'it needs an "agent" object')
    agent = data["agent"]
    if not isinstance(agent, dict):
        raise _bad(path, f'"agent" must be an object, got {_json_type(agent)}')
    for key in ("name", "system_prompt", "model"):
        _expect(path, agent, key, f'"agent"."{key}"', str, "a string")
    _expect(path, agent, "model_config", '"agent"."model_config"', dict, "an object")
    servers = agent.get("mcp_servers")
    if servers is not None and not isinstance(servers, list):
        raise _bad(
            path, f'"agent"."mcp_servers" must be an array of objects, got {_json_type(servers)}'
        )
    tools = agent.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise _bad(
                path, f'"agent"."tools" must be an array of tool objects, got {_json_type(tools)}'
            )
        for index, tool in enumerate(tools):
            where = f'"agent"."tools"[{index}]'
            if not isinstance(tool, dict):
                raise _bad(
                    path,
                    f"{where} must be an object with name, description and input_schema, "
                    f"got {_json_type(tool)}",
                )
            _expect(path, tool, "name", f'{where}."name"', str, "a string")
            _expect(path, tool, "description", f'{where}."description"', str, "a string")
            _expect(path, tool, "input_schema", f'{where}."input_schema"', dict, "an object")
    environment = data.get("environment")
    if environment is None:
        return
    if not isinstance(environment, dict):
        raise _bad(path, '"environment" must be an object')
    _expect(path, environment, "config", '"environment"."config"', dict, "an object")
    runtimes = environment.get("runtimes")
    if runtimes is not None and not (
        isinstance(runtimes, list) and all(isinstance(r, dict) for r in runtimes)
    ):
        raise _bad(path, '"environment"."runtimes" must be an array of {"lang", "version"} objects')


def _expect(
    path: Path, parent: Mapping[str, Any], key: str, where: str, kind: type, what: str
) -> None:
    value = parent.get(key)
    if value is not None and not isinstance(value, kind):
        raise _bad(path, f"{where} must be {what}, got {_json_type(value)}")


def _json_type(value: Any) -> str:
    """What JSON calls the type of a parsed value."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string" if isinstance(value, str) else "null"
