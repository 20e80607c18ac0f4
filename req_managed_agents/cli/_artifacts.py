"""``rma artifacts list|fetch SESSION [NAME] [-o FILE]`` for both providers.

Claude reads ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``); AgentCore uses the AWS
credential chain and needs ``--harness-arn`` and ``--mount`` (the region is the ARN's).
``list`` prints JSON; ``fetch`` writes the bytes to ``-o FILE``, or to standard output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from req_managed_agents.cli._common import (
    PROVIDERS,
    CliError,
    add_profile_flag,
    harness_region,
    open_provider,
    print_json,
    refuse,
)

__all__ = ["add_command", "run_command"]


def add_command(commands: Any) -> None:
    """Register ``rma artifacts`` on the ``rma`` subparsers."""
    artifacts = commands.add_parser("artifacts", help="list or fetch a session's files")
    actions = artifacts.add_subparsers(dest="action", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("session", help="the session id (AgentCore: the runtime session id)")
    common.add_argument(
        "--provider", choices=PROVIDERS, default="claude", help="where the session runs"
    )
    common.add_argument(
        "--harness-arn", metavar="ARN", help="AgentCore: the harness the session runs on"
    )
    common.add_argument("--mount", help="AgentCore: the session storage mount path")
    common.add_argument(
        "--region", help="AgentCore: must match the ARN's region, which is used (default: it)"
    )
    add_profile_flag(common)
    actions.add_parser(
        "list",
        parents=[common],
        help="the session's files, as JSON",
        description="List a session's files (Claude: its outputs and mounted inputs).",
    )
    fetch = actions.add_parser(
        "fetch",
        parents=[common],
        help="one file's bytes",
        description="Write one of a session's files to -o FILE or standard output.",
    )
    fetch.add_argument("name", help="the file's name, as rma artifacts list shows it")
    fetch.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write here (default: standard output)"
    )


def run_command(
    args: argparse.Namespace, out: TextIO | None = None, binary_out: BinaryIO | None = None
) -> int:
    """Run ``rma artifacts``; returns the exit code."""
    out = out if out is not None else sys.stdout
    region = _check_flags(args)
    with open_provider(args.provider, region, args.profile) as provider:
        store = _store(args, provider)
        if args.action == "list":
            listing = [
                {
                    "name": artifact.name,
                    "size": artifact.size,
                    "id": artifact.id,
                    "created_at": artifact.created_at.isoformat() if artifact.created_at else None,
                    "media_type": artifact.media_type,
                }
                for artifact in store.list()
            ]
            print_json(listing, out)
            return 0
        data = store.fetch(args.name)
    if args.output is not None:
        args.output.write_bytes(data)
        out.write(f"wrote {len(data)} bytes to {args.output}\n")
    else:
        sink = binary_out if binary_out is not None else sys.stdout.buffer
        if binary_out is None and sys.stdout.isatty():
            raise CliError(
                f"{args.name} is {len(data)} bytes of file content, not for a terminal",
                hint=f"pass -o FILE, or redirect: rma artifacts fetch ... > {args.name}",
            )
        sink.write(data)
        sink.flush()
    return 0


def _check_flags(args: argparse.Namespace) -> str | None:
    """The AgentCore region (from the ARN); the AgentCore flags are refused for Claude."""
    if args.provider == "claude":
        refuse(
            args,
            ["harness_arn", "mount", "region", "profile"],
            "is an AgentCore option; it needs --provider agentcore",
            "add --provider agentcore, or drop it for a Claude session",
        )
        return None
    if not args.harness_arn or not args.mount:
        raise CliError(
            "AgentCore artifacts need --harness-arn and --mount",
            hint="--mount is the session storage path the harness mounts, e.g. /mnt/data",
        )
    return harness_region(args.harness_arn, args.region)


def _store(args: argparse.Namespace, provider: Any) -> Any:
    from req_managed_agents.artifacts import AgentCoreSessionStorage, ClaudeFiles

    if args.provider == "agentcore":
        return AgentCoreSessionStorage(provider.client, args.harness_arn, args.session, args.mount)
    return ClaudeFiles(provider.client, args.session)
