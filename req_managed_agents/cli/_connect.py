"""Where ``rma run`` and ``rma batch`` send a run: the ``--provider`` and its flags, made into
the session's connect options. A flag that does not apply to the provider is refused, never
silently ignored."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from req_managed_agents.cli._common import (
    RUN_PROVIDERS,
    CliError,
    add_profile_flag,
    flag,
    harness_region,
    positive_int,
    positive_seconds,
    refuse,
    sandbox_region,
)
from req_managed_agents.cli._mcp import add_mcp_flag

__all__ = [
    "DEFAULT_TIMEOUT",
    "GEMINI_FLAGS",
    "add_connection_flags",
    "aws_region",
    "connect_options",
    "gemini_flags",
]

DEFAULT_TIMEOUT = 600.0
_CLAUDE_FLAGS = (
    "agent_id",
    "environment_id",
    "title",
    "vault_id",
    "session_metadata",
    "agent_version",
)
_AWS_FLAGS = ("region", "profile")
_AWS_ONLY = "is an AWS option; it needs --provider agentcore or claude-bedrock"
_BEDROCK_FLAGS = ("working_directory", "execution_role_arn")
_OPENAI_FLAGS = ("environment", "spend_limit")
# The Claude flags an OpenAI session does not take.
_NOT_OPENAI = ("environment_id", "title", "agent_version")
# Gemini's own flags, and the create fields they fill.
GEMINI_FLAGS = {
    "system_instruction": "system_instruction",
    "service_tier": "service_tier",
    "agent_config": "agent_config",
}
# The Claude flags a Gemini conversation does not take.
_NOT_GEMINI = ("environment_id", "title", "agent_version", "vault_id")
_GEMINI_ONLY = "needs --provider gemini"
_SERVICE_TIERS = ("flex", "standard", "priority", "deferred")


def add_connection_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that say where a run goes and with which tools (``rma run``, ``rma batch``)."""
    parser.add_argument(
        "--provider", choices=RUN_PROVIDERS, default="claude", help="which service runs the agent"
    )
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="the local tools: a Tools registry or handler importable from the current folder "
        "(default: none; a tool call then gets an unknown-tool error result)",
    )
    add_mcp_flag(parser)
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="give up waiting after this long; the remote turn goes on",
    )
    claude = parser.add_argument_group("Claude (--provider claude; OpenAI takes the starred ones)")
    claude.add_argument("--agent-id", metavar="ID", help="(*) the agent of a new session")
    claude.add_argument("--environment-id", metavar="ID", help="the environment of a new session")
    claude.add_argument(
        "--agent-version",
        type=positive_int,
        metavar="N",
        help="pin this version of the agent (default: its latest)",
    )
    claude.add_argument("--title", help="the new session's title")
    claude.add_argument(
        "--vault-id",
        action="append",
        metavar="ID",
        help="(*) a vault lending the agent stored credentials (repeatable)",
    )
    claude.add_argument(
        "--session-metadata",
        action="append",
        metavar="KEY=VALUE",
        help="(*) a metadata pair of the new session (repeatable)",
    )
    bedrock = parser.add_argument_group(
        "Claude on Amazon Bedrock (--provider claude-bedrock; the Claude flags but --vault-id, "
        "--environment-id being a sandbox ARN, and the AWS flags)"
    )
    bedrock.add_argument(
        "--working-directory", metavar="PATH", help="where the built-in tools start (absolute)"
    )
    bedrock.add_argument(
        "--execution-role-arn", metavar="ARN", help="the IAM role the new session runs as"
    )
    openai = parser.add_argument_group("OpenAI Agents (--provider openai)")
    openai.add_argument(
        "--environment",
        metavar="TYPE|JSON",
        help="the new session's environment: none (the default: the tools run here), "
        "openai_hosted, or the API's environment object as JSON; for Gemini an "
        "environment id or the API's environment object as JSON",
    )
    openai.add_argument(
        "--spend-limit",
        type=positive_int,
        metavar="CENTS",
        help="the new session's spending limit in US cents",
    )
    gemini = parser.add_argument_group(
        "Gemini Managed Agents (--provider gemini; also the starred Claude flags but "
        "--vault-id, --session-metadata being its labels, and --environment)"
    )
    gemini.add_argument(
        "--system-instruction", metavar="TEXT", help="the system instruction of each interaction"
    )
    gemini.add_argument(
        "--service-tier", choices=_SERVICE_TIERS, help="the service tier of each interaction"
    )
    gemini.add_argument(
        "--agent-config",
        metavar="JSON",
        help='the agent\'s configuration object, e.g. {"type": "dynamic"}',
    )
    agentcore = parser.add_argument_group("Bedrock AgentCore (--provider agentcore)")
    agentcore.add_argument("--harness-arn", metavar="ARN", help="the harness to invoke")
    aws = parser.add_argument_group("AWS (--provider agentcore or claude-bedrock)")
    aws.add_argument(
        "--region",
        help="must match the region of the harness ARN or sandbox ARN, which is used "
        "(default: the ARN's; continuing a claude-bedrock session: AWS_REGION, then the "
        "profile's)",
    )
    add_profile_flag(aws)


def aws_region(args: argparse.Namespace) -> str | None:
    """The region a run goes to: the harness ARN's (AgentCore) or the sandbox ARN's (Claude
    on Bedrock), which ``--region`` may repeat but not contradict; else ``--region``."""
    if args.provider == "agentcore" and args.harness_arn:
        return harness_region(args.harness_arn, args.region)
    if args.provider == "claude-bedrock" and args.environment_id:
        return sandbox_region(args.environment_id, args.region)
    region: str | None = args.region
    return region


def connect_options(args: argparse.Namespace) -> dict[str, Any]:
    """The session's provider options from the flags; flags that do not apply are refused."""
    if args.provider == "openai":
        return _openai_options(args)
    if args.provider == "gemini":
        return _gemini_options(args)
    refuse(args, tuple(GEMINI_FLAGS), _GEMINI_ONLY, "add --provider gemini, or drop it")
    refuse(
        args,
        ("environment",),
        "needs --provider openai or gemini",
        "add --provider openai or gemini, or drop it",
    )
    refuse(args, _OPENAI_FLAGS, "needs --provider openai", "add --provider openai, or drop it")
    aws_region(args)  # a --region the ARN contradicts is refused before anything is sent
    if args.provider == "agentcore":
        refuse(
            args,
            (*_CLAUDE_FLAGS, *_BEDROCK_FLAGS),
            "is a Claude option; it does not apply with --provider agentcore",
            "drop it, or use --provider claude",
        )
        if not args.harness_arn:
            raise CliError(
                "--provider agentcore needs --harness-arn",
                hint="the ARN of the harness, e.g. arn:aws:bedrock-agentcore:REGION:ACCOUNT:"
                "harness/ID",
            )
        connect: dict[str, Any] = {"harness_arn": args.harness_arn}
        if args.session_id:
            _check_runtime_session_id(args.session_id)
            connect["runtime_session_id"] = args.session_id
        return connect
    bedrock = args.provider == "claude-bedrock"
    if bedrock:
        refuse(args, ("harness_arn",), "needs --provider agentcore", "add --provider agentcore")
        refuse(
            args,
            ("vault_id",),
            "does not apply on Amazon Bedrock (its sessions have no vaults)",
            "drop it",
        )
    else:
        refuse(args, ("harness_arn",), "needs --provider agentcore", "add --provider agentcore")
        refuse(args, _AWS_FLAGS, _AWS_ONLY, "add --provider agentcore or claude-bedrock")
        refuse(
            args,
            _BEDROCK_FLAGS,
            "needs --provider claude-bedrock",
            "add --provider claude-bedrock, or drop it",
        )
    if args.session_id:
        refuse(
            args,
            (*_CLAUDE_FLAGS, *_BEDROCK_FLAGS),
            "does not apply with --session-id: the session keeps its agent and environment",
            "drop it, or drop --session-id to start a new session",
        )
        return {"session_id": args.session_id}
    if not (args.agent_id and args.environment_id):
        missing = "--environment-id" if args.agent_id else "--agent-id"
        raise CliError(
            f"a new Claude session needs --agent-id and --environment-id; {missing} is missing",
            hint="or pass --session-id to continue a session",
        )
    connect = {"agent_id": args.agent_id, "environment_id": args.environment_id}
    if args.agent_version is not None:
        connect["agent_version"] = args.agent_version
    if args.title is not None:
        connect["title"] = args.title
    if args.vault_id:
        if not all(args.vault_id):
            raise CliError("--vault-id is empty", hint="give each --vault-id a vault id")
        connect["vault_ids"] = list(args.vault_id)
    if args.session_metadata:
        connect["session_metadata"] = _metadata(args.session_metadata)
    if bedrock and args.working_directory is not None:
        connect["working_directory"] = args.working_directory
    if bedrock and args.execution_role_arn is not None:
        connect["execution_identity"] = {"type": "aws_role", "role_arn": args.execution_role_arn}
    return connect


def _check_runtime_session_id(value: str) -> None:
    from req_managed_agents.providers.agentcore._provider import RUNTIME_SESSION_ID

    if not RUNTIME_SESSION_ID.fullmatch(value):
        raise CliError(
            f"--session-id {value!r} is not an AgentCore runtime session id",
            hint="one is 33-100 letters, digits, '-' or '_'; the summary of a run prints it",
        )


def _metadata(pairs: list[str]) -> dict[str, str]:
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise CliError(
                f"--session-metadata takes KEY=VALUE, got {pair!r}",
                hint="for example --session-metadata team=support",
            )
        if key in metadata:
            raise CliError(
                f"--session-metadata gives {key!r} twice",
                hint="give each key once",
            )
        metadata[key] = value
    return metadata


def _openai_options(args: argparse.Namespace) -> dict[str, Any]:
    refuse(args, tuple(GEMINI_FLAGS), _GEMINI_ONLY, "add --provider gemini, or drop it")
    refuse(args, ("harness_arn",), "needs --provider agentcore", "add --provider agentcore")
    refuse(args, _AWS_FLAGS, _AWS_ONLY, "drop it: OpenAI is not on AWS")
    refuse(args, _BEDROCK_FLAGS, "needs --provider claude-bedrock", "drop it")
    refuse(
        args,
        _NOT_OPENAI,
        "is a Claude option; it does not apply with --provider openai",
        "drop it (--environment names an OpenAI session's environment)",
    )
    if args.session_id:
        refuse(
            args,
            ("agent_id", "vault_id", "session_metadata", *_OPENAI_FLAGS),
            "does not apply with --session-id: the session keeps its agent and environment",
            "drop it, or drop --session-id to start a new session",
        )
        return {"session_id": args.session_id}
    if not args.agent_id:
        raise CliError(
            "a new OpenAI session needs --agent-id",
            hint="or pass --session-id to continue a session",
        )
    connect: dict[str, Any] = {"agent_id": args.agent_id}
    if args.environment is not None:
        connect["environment"] = _environment(args.environment)
    if args.spend_limit is not None:
        connect["spend_control"] = {"limit": args.spend_limit}
    if args.vault_id:
        if not all(args.vault_id):
            raise CliError("--vault-id is empty", hint="give each --vault-id a vault id")
        connect["vault_ids"] = list(args.vault_id)
    if args.session_metadata:
        connect["session_metadata"] = _metadata(args.session_metadata)
    return connect


def _gemini_options(args: argparse.Namespace) -> dict[str, Any]:
    """A Gemini conversation's options: every interaction of the chain names its agent and
    carries the create fields, so continuing one (``--session-id``: its newest interaction)
    takes them as starting one does."""
    refuse(args, ("harness_arn",), "needs --provider agentcore", "add --provider agentcore")
    refuse(args, _AWS_FLAGS, _AWS_ONLY, "drop it: Gemini is not on AWS")
    refuse(args, _BEDROCK_FLAGS, "needs --provider claude-bedrock", "drop it")
    refuse(args, ("spend_limit",), "needs --provider openai", "drop it")
    refuse(
        args,
        _NOT_GEMINI,
        "is a Claude option; it does not apply with --provider gemini",
        "drop it (--environment names a Gemini interaction's environment)",
    )
    if not args.agent_id:
        raise CliError(
            "--provider gemini needs --agent-id: every interaction names its agent",
            hint="an agent's id, e.g. --agent-id deep-research-pro-preview-12-2025; with "
            "--session-id too",
        )
    connect: dict[str, Any] = {"agent": args.agent_id}
    if args.session_id:
        connect["interaction_id"] = args.session_id
    if args.environment is not None:
        connect["environment"] = _environment(args.environment, '"type": "remote"')
    if args.session_metadata:
        connect["labels"] = _metadata(args.session_metadata)
    if args.system_instruction is not None:
        connect["system_instruction"] = args.system_instruction
    if args.service_tier is not None:
        connect["service_tier"] = args.service_tier
    if args.agent_config is not None:
        connect["agent_config"] = _json_object("--agent-config", args.agent_config)
    return connect


def gemini_flags(connect: Mapping[str, Any]) -> list[str]:
    """The flags that give a Gemini conversation's next interaction the ``connect``
    options it was run with (its agent and create fields, sent with every interaction):
    what a command continuing it repeats."""
    argv = ["--agent-id", str(connect["agent"])] if connect.get("agent") else []
    environment = connect.get("environment")
    if environment is not None:
        text = environment if isinstance(environment, str) else json.dumps(environment)
        argv += ["--environment", text]
    for dest, option in GEMINI_FLAGS.items():
        value = connect.get(option)
        if value is not None:
            argv += [flag(dest), value if isinstance(value, str) else json.dumps(value)]
    for key, value in (connect.get("labels") or {}).items():
        argv += ["--session-metadata", f"{key}={value}"]
    return argv


def _json_object(flag_name: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(
            f"{flag_name} is not valid JSON: {exc}", hint=f"{flag_name} takes a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise CliError(f"{flag_name} must be a JSON object", hint='for example {"type": "dynamic"}')
    return value


def _environment(text: str, example: str = '"type": "openai_hosted"') -> Any:
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(
            f"--environment is not valid JSON: {exc}",
            hint=f"for example --environment '{{{example}}}'",
        ) from None
    return value
